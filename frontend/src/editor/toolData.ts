// What a tool node's form chooses from: the owner's secrets (names only) and published workflows.
// Read when a node that needs them is inspected, and kept a few seconds (selecting nodes one after
// another asks once); the secrets page forgets its list when it changes one.
import { useEffect, useState } from 'react';
import { api } from '../api/client';
import type { JSONSchema } from '../api/types';
import { fieldsOf, type Widget } from '../schema/schema';

const FRESH_MS = 15_000;

function cached<T>(read: () => Promise<T>) {
  let entry: { at: number; value: Promise<T> } | null = null;
  return {
    get(): Promise<T> {
      if (entry && Date.now() - entry.at < FRESH_MS) return entry.value;
      const value = read();
      entry = { at: Date.now(), value };
      value.catch(() => (entry = null)); // a failure is not remembered
      return value;
    },
    forget() {
      entry = null;
    },
  };
}

const secrets = cached(() => api.secrets().then((list) => list.map((s) => s.name).sort()));
const workflows = cached(() => api.publishedWorkflows().then((page) => page.results.map((w) => ({ id: w.id, name: w.name }))));

export const forgetSecrets = () => secrets.forget();

/** Which of the owner's lists a node type's form uses. */
export function listsUsed(schema: JSONSchema | undefined): { secrets: boolean; workflows: boolean } {
  const widgets = new Set<Widget>(schema ? fieldsOf(schema).map((f) => f.widget) : []);
  return { secrets: ['headers', 'secretNames', 'secret'].some((w) => widgets.has(w as Widget)), workflows: widgets.has('workflow') };
}

function useList<T>(enabled: boolean, source: { get(): Promise<T> }): T | undefined {
  const [value, setValue] = useState<T | undefined>(undefined);
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    source.get().then(
      (got) => live && setValue(got),
      () => live && setValue(undefined),
    );
    return () => {
      live = false;
    };
  }, [enabled, source]);
  return value;
}

export const useSecretNames = (enabled: boolean) => useList(enabled, secrets);

/** The published workflows a workflow tool of ``workflowId`` can call (not itself). */
export function usePublishedWorkflows(enabled: boolean, workflowId: number | null) {
  const listed = useList(enabled, workflows);
  return listed?.filter((w) => w.id !== workflowId);
}
