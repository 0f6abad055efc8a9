// The conversation tests API (DESIGN.md §9), typed for the Tests tab, the results and the comparison.
import { request } from '../api/client';
import type { Page } from '../api/types';

export type Check = Record<string, unknown>;

export interface Turn {
  message: string;
  expect: Check[];
  reference?: string;
}

export interface TestIssue {
  turn: number | null;
  check: number | null;
  field: string | null;
  message: string;
}

export type Verdict = 'queued' | 'running' | 'passed' | 'failed' | 'error';

export interface ConversationTest {
  id: number;
  workflow: number;
  name: string;
  turns: Turn[];
  errors: TestIssue[];
  last: { test_run: number; version: number | 'draft'; status: Verdict; finished: string | null } | null;
}

export interface CheckResult {
  check: Check;
  kind: string;
  passed: boolean | null;
  status: 'passed' | 'failed' | 'error';
  detail: string;
  sent?: { role: string; content: string }[];
  tokens?: number;
  summary?: string;
  reason?: string;
}

export interface TurnResult {
  message: string;
  reply: string;
  reference?: string;
  run: number;
  status: string;
  error: string;
  checks: CheckResult[];
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
}

export interface TestResult {
  id: number;
  test: number | null;
  name: string;
  status: Verdict;
  error: string;
  thread: number | null;
  script: Turn[];
  turns: TurnResult[];
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  duration_ms: number | null;
}

export interface TestRunSummary {
  id: number;
  workflow: number;
  status: Verdict;
  version: number | 'draft';
  purpose: string;
  total: number;
  passed: number;
  failed: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  created: string;
  finished: string | null;
}

export interface TestRun extends TestRunSummary {
  results: TestResult[];
}

export interface ComparedTurn {
  turn: number;
  message: string;
  a: { reply: string; status: string; run: number; failed_checks: CheckResult[] } | null;
  b: { reply: string; status: string; run: number; failed_checks: CheckResult[] } | null;
  reply_changed: boolean;
  verdict_changed: boolean;
}

export interface Comparison {
  a: { id: number; version: number | 'draft'; status: Verdict; passed: number; failed: number; errors: number };
  b: { id: number; version: number | 'draft'; status: Verdict; passed: number; failed: number; errors: number };
  verdicts_changed: number;
  replies_changed: number;
  tests: {
    test: number | null;
    name: string;
    a: { status: Verdict; error: string } | null;
    b: { status: Verdict; error: string } | null;
    verdict_changed: boolean;
    replies_changed: number;
    turns: ComparedTurn[];
  }[];
}

export const testsApi = {
  list: (workflowId: number) => request<ConversationTest[]>('GET', `/api/workflows/${workflowId}/tests/`),
  create: (workflowId: number, body: { name: string; turns: Turn[] }) =>
    request<ConversationTest>('POST', `/api/workflows/${workflowId}/tests/`, body),
  update: (id: number, body: { name: string; turns: Turn[] }) => request<ConversationTest>('PUT', `/api/tests/${id}/`, body),
  remove: (id: number) => request<void>('DELETE', `/api/tests/${id}/`),
  fromThread: (threadId: number, name?: string) =>
    request<ConversationTest>('POST', `/api/threads/${threadId}/save-as-test/`, name ? { name } : {}),
  run: (workflowId: number, body: { version?: number | 'draft'; tests?: number[] }) =>
    request<{ test_run: number; status: Verdict }>('POST', `/api/workflows/${workflowId}/tests/run/`, body),
  runs: (workflowId: number, limit = 10) => request<Page<TestRunSummary>>('GET', `/api/workflows/${workflowId}/test-runs/?limit=${limit}`),
  testRun: (id: number) => request<TestRun>('GET', `/api/test-runs/${id}/`),
  compare: (a: number, b: number) => request<Comparison>('GET', `/api/test-runs/${a}/compare/${b}/`),
  settings: (workflowId: number) => request<{ publish_requires_passing: boolean }>('GET', `/api/workflows/${workflowId}/tests/settings/`),
  setSettings: (workflowId: number, publish_requires_passing: boolean) =>
    request<{ publish_requires_passing: boolean }>('PATCH', `/api/workflows/${workflowId}/tests/settings/`, { publish_requires_passing }),
  importFile: (workflowId: number, format: 'jsonl' | 'csv', content: string) =>
    request<ConversationTest[]>('POST', `/api/workflows/${workflowId}/tests/import/`, { format, content }),
};
