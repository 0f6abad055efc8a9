// The conversation tests API (docs/conversation-tests.md), typed for the Tests tab, the results and the comparison.
import { request } from '../api/client';
import type { Page, Refine, Schemas, SentMessage } from '../api/types';

// What the schema has no shape for is written here: a test's turns and checks (JSON fields),
// the comparison's tests (a JSON field), the values of verdicts and of "version" (a published
// version's number or "draft").

/** A check as written: `{kind: params}` (docs/conversation-tests.md). */
export type Check = Record<string, unknown>;

export interface Turn {
  message: string;
  expect: Check[];
  reference?: string;
}

/** A check naming what the draft does not have (the turn's and the check's index). */
export type TestIssue = Schemas['IssueOutput'];

/** A test run's or a test result's status. */
export type Verdict = 'queued' | 'running' | 'passed' | 'failed' | 'error';

/** A published version's number, or the draft. */
export type TestedVersion = number | 'draft';

export type ConversationTest = Refine<
  Schemas['TestOutput'],
  { turns: Turn[]; last: Refine<Schemas['LastResultOutput'], { version: TestedVersion; status: Verdict }> | null }
>;

export type CheckResult = Refine<Schemas['CheckResultOutput'], { check: Check; status: 'passed' | 'failed' | 'error'; sent?: SentMessage[] }>;

export type TurnResult = Refine<Schemas['TurnResultOutput'], { checks: CheckResult[] }>;

export type TestResult = Refine<Schemas['ResultOutput'], { status: Verdict; script: Turn[]; turns: TurnResult[] }>;

export type TestRunSummary = Refine<Schemas['TestRunSummaryOutput'], { status: Verdict; version: TestedVersion }>;

export type TestRun = Refine<Schemas['TestRunOutput'], { status: Verdict; version: TestedVersion; results: TestResult[] }>;

interface ComparedReply {
  reply: string;
  status: string;
  run: number;
  failed_checks: CheckResult[];
}

export interface ComparedTurn {
  turn: number;
  message: string;
  a: ComparedReply | null;
  b: ComparedReply | null;
  reply_changed: boolean;
  verdict_changed: boolean;
}

type ComparedRun = Refine<Schemas['RunSideOutput'], { version: TestedVersion; status: Verdict }>;

export type Comparison = Refine<
  Schemas['CompareOutput'],
  {
    a: ComparedRun;
    b: ComparedRun;
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
>;

type TestInput = Refine<Schemas['TestInputRequest'], { turns: Turn[] }>;

export const testsApi = {
  list: (workflowId: number) => request<ConversationTest[]>('GET', `/api/workflows/${workflowId}/tests/`),
  create: (workflowId: number, body: TestInput) =>
    request<ConversationTest>('POST', `/api/workflows/${workflowId}/tests/`, body),
  update: (id: number, body: TestInput) => request<ConversationTest>('PUT', `/api/tests/${id}/`, body),
  remove: (id: number) => request<void>('DELETE', `/api/tests/${id}/`),
  fromThread: (threadId: number, name?: string) =>
    request<ConversationTest>('POST', `/api/threads/${threadId}/save-as-test/`, name ? { name } : {}),
  run: (workflowId: number, body: Schemas['RunInputRequest']) =>
    request<Refine<Schemas['RunStartedOutput'], { status: Verdict }>>('POST', `/api/workflows/${workflowId}/tests/run/`, body),
  runs: (workflowId: number, limit = 10) => request<Page<TestRunSummary>>('GET', `/api/workflows/${workflowId}/test-runs/?limit=${limit}`),
  testRun: (id: number) => request<TestRun>('GET', `/api/test-runs/${id}/`),
  compare: (a: number, b: number) => request<Comparison>('GET', `/api/test-runs/${a}/compare/${b}/`),
  settings: (workflowId: number) => request<Schemas['SettingsIO']>('GET', `/api/workflows/${workflowId}/tests/settings/`),
  setSettings: (workflowId: number, publish_requires_passing: boolean) =>
    request<Schemas['SettingsIO']>('PATCH', `/api/workflows/${workflowId}/tests/settings/`, { publish_requires_passing }),
  importFile: (workflowId: number, format: Schemas['FormatEnum'], content: string) =>
    request<ConversationTest[]>('POST', `/api/workflows/${workflowId}/tests/import/`, { format, content }),
};
