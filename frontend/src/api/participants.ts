// Participants, their memories and facts (docs/participants.md).
import { request } from './client';
import { query } from './ecosystem';
import type { Page, Schemas } from './types';

/** A participant; `participant` is the id the caller named (`visitor:…` for an anonymous widget visitor). */
export type Participant = Schemas['ParticipantOutput'];

/** A fact memory.facts keeps; `source`: extracted (after a turn) or owner (added or edited by you). */
export type Fact = Schemas['FactOutput'];

// `GET /api/participants/{id}/` has no shape in the schema: what the page reads of it.
export interface ParticipantMemory {
  workflow: number;
  workflow_name: string;
  history: string;
  name: string;
  message_count: number;
  messages: { seq: number; role: string; content: string; tool_calls?: { [key: string]: unknown }[]; tool_call_id?: string }[];
  summaries: { node: string; text: string; through_seq: number }[];
}

export interface ParticipantDetail extends Participant {
  threads: { id: number; workflow: number; workflow_name: string; title: string; message_count: number; updated: string }[];
  memories: ParticipantMemory[];
  facts: Fact[];
  extractions: { id: number; workflow: number; node: string; run: number | null; status: string; model: string; added: number; updated: number; error: string; created: string }[];
}

export const participants = {
  list: (params: { workflow?: number; search?: string; limit?: number; offset?: number }) =>
    request<Page<Participant>>('GET', `/api/participants/${query(params)}`),
  get: (id: number) => request<ParticipantDetail>('GET', `/api/participants/${id}/`),
  forget: (id: number) => request<void>('DELETE', `/api/participants/${id}/`),
  addFact: (id: number, body: Schemas['FactCreateInputRequest']) => request<Fact>('POST', `/api/participants/${id}/facts/`, body),
  editFact: (id: number, body: Schemas['PatchedFactPatchInputRequest']) => request<Fact>('PATCH', `/api/facts/${id}/`, body),
  deleteFact: (id: number) => request<void>('DELETE', `/api/facts/${id}/`),
};

/** Facts grouped by workflow, current first, each key's superseded values after it (newest first). */
export function groupFacts(facts: Fact[]): { workflow: number; workflow_name: string; current: Fact[]; superseded: Fact[] }[] {
  const groups = new Map<number, { workflow: number; workflow_name: string; current: Fact[]; superseded: Fact[] }>();
  for (const fact of facts) {
    const group = groups.get(fact.workflow) ?? { workflow: fact.workflow, workflow_name: fact.workflow_name, current: [], superseded: [] };
    (fact.current ? group.current : group.superseded).push(fact);
    groups.set(fact.workflow, group);
  }
  for (const group of groups.values()) {
    group.current.sort((a, b) => a.key.localeCompare(b.key));
    group.superseded.sort((a, b) => a.key.localeCompare(b.key) || (b.superseded ?? '').localeCompare(a.superseded ?? ''));
  }
  return [...groups.values()];
}
