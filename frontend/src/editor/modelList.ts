// The models a provider serves, for the model picker: read from the server once a minute at most
// per provider (GET /api/providers/{id}/models/; with no provider, the models the server's
// environment keys reach).
import { useEffect, useState } from 'react';
import { api } from '../api/client';
import type { ModelList } from '../api/types';

const FRESH_MS = 60_000;
const cache = new Map<string, { at: number; list: Promise<ModelList> }>();

export function modelsFor(provider: number | null): Promise<ModelList> {
  const key = provider === null ? 'environment' : String(provider);
  const cached = cache.get(key);
  if (cached && Date.now() - cached.at < FRESH_MS) return cached.list;
  const list = (
    provider === null
      ? api.modelDefault().then((d): ModelList => ({ models: d.environment_models, error: '', reason: '' }))
      : api.providerModels(provider)
  ).catch((error: Error): ModelList => {
    cache.delete(key); // a failure is not remembered: the next look asks again
    return { models: [], error: error.message, reason: '' };
  });
  cache.set(key, { at: Date.now(), list });
  return list;
}

/** The served models of ``provider`` (``undefined``: the node calls no model, nothing is read). */
export function useModelList(provider: number | null | undefined): ModelList & { loading: boolean } {
  const [state, setState] = useState<ModelList & { loading: boolean }>({
    models: [],
    error: '',
    reason: '',
    loading: provider !== undefined,
  });
  useEffect(() => {
    if (provider === undefined) return;
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    void modelsFor(provider).then((list) => live && setState({ ...list, loading: false }));
    return () => {
      live = false;
    };
  }, [provider]);
  return state;
}
