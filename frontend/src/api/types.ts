// Shapes of the Django API (DESIGN.md §6). Only what the front end reads is typed.
import type { Theme } from '../../widget/src/protocol';

export type PortKind = 'flow' | 'memory' | 'llm';

export interface PortSpec {
  name: string;
  kind: PortKind;
  label: string;
  multiple: boolean;
}

export type JSONSchema = {
  type?: string | string[];
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  items?: JSONSchema;
  properties?: Record<string, JSONSchema>;
  required?: string[];
  anyOf?: JSONSchema[];
  oneOf?: JSONSchema[];
  allOf?: JSONSchema[];
  $ref?: string;
  $defs?: Record<string, JSONSchema>;
  additionalProperties?: boolean | JSONSchema;
};

export interface NodeTypeSpec {
  type: string;
  label: string;
  category: string;
  description: string;
  inputs: PortSpec[];
  outputs: PortSpec[];
  dynamic_outputs: string | null;
  is_trigger: boolean;
  /** What the node shows under its title: parts like "{model}" or " · {timezone}", each naming a param. */
  summary?: string[];
  params_schema: JSONSchema;
}

export type NodeParams = Record<string, unknown>;

export interface GraphNode {
  id: string;
  type: string;
  position: { x: number; y: number };
  data: NodeParams;
}

export interface GraphEdge {
  id: string;
  source: string;
  sourceHandle: string | null;
  target: string;
  targetHandle: string | null;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

/** A starter workflow from `GET /api/templates/` (workflows/samples.py): its nodes that call a
 * model are already on the installation's default model. */
export interface Template {
  key: string;
  name: string;
  description: string;
  graph: Graph;
}

export interface ValidationIssue {
  node: string | null;
  field: string | null;
  message: string;
}

/** A workflow as `GET /api/workflows/` lists it: no validation, no triggers. */
export interface WorkflowSummary {
  id: number;
  name: string;
  graph: Graph;
  revision: number;
  published_version: number | null;
  created: string;
  updated: string;
}

export interface Workflow extends WorkflowSummary {
  errors: ValidationIssue[];
  /** The draft differs from the published version (which webhooks, schedules and the widget run). */
  unpublished_changes?: boolean;
  /** The published version's triggers (empty before the first publish). */
  triggers?: TriggerInfo[];
}

/** A trigger of the published version (`GET /api/workflows/{id}/` → `triggers`). */
export interface TriggerInfo {
  node: string;
  type: string;
  webhook_url?: string;
  require_signature?: boolean;
  signing_secret?: string;
  next_run?: string | null;
  next_runs?: string[];
  /** Schedules: whether a beat has ticked lately, and what to do if not. */
  scheduler?: { running: boolean; message: string };
}

/** `GET /api/providers/default/`: the model a new node starts with on this installation. */
export interface ModelDefault {
  provider: number | null;
  model: string;
  /** Models the server's environment keys reach (for nodes with no provider). */
  environment_models: string[];
}

/** `GET /api/providers/{id}/models/` */
export interface ModelList {
  models: string[];
  error: string;
}

/** The widget's look: the widget's own type. */
export type WidgetTheme = Theme;

/** `GET /api/workflows/{id}/widget/` */
export interface WidgetSettings {
  public_key: string;
  published: boolean;
  allowed_origins: string[];
  theme: WidgetTheme;
  script_url: string;
  embed_snippet: string;
  /** Signs a logged-in user's id for data-participant-signature (hex HMAC-SHA256 of the id). */
  identity_secret?: string;
}

/** `POST /api/providers/{id}/test/` */
export interface ProviderTestResult {
  ok: boolean;
  model: string;
  reply?: string;
  reason?: string;
  error?: string;
  latency_ms?: number;
}

export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export interface User {
  id: number;
  username: string;
}

export interface Provider {
  id: number;
  name: string;
  kind: string;
  api_base: string;
  has_api_key: boolean;
}

export interface RunWarning {
  node: string | null;
  message: string;
}

export interface ChatReply {
  run: number;
  thread: number;
  reply: string;
  warnings: RunWarning[];
  /** Set by the blocking endpoints: a failed turn answers 200 with its error. */
  status?: RunStatus;
  error?: string;
}

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface RunStep {
  node: string;
  type: string;
  status: 'running' | 'succeeded' | 'failed';
  duration_ms: number | null;
  input: string;
  output: string;
  error: string;
  details: Record<string, unknown>;
  /** Exactly what this step's model was sent; null for a node that called no model. */
  messages?: SentMessage[] | null;
}

export interface SentMessage {
  role: string;
  content: string;
}

/** One summarizer call of a run (`GET /api/runs/{id}/` → `summarizations`). */
export interface Summarization {
  node: string;
  status: 'ok' | 'failed';
  model: string;
  from_seq: number;
  through_seq: number;
  message_count: number;
  prompt_tokens: number;
  completion_tokens: number;
  duration_ms: number;
  error: string;
  messages: SentMessage[];
}

export interface RunSummary {
  id: number;
  workflow: number;
  workflow_name?: string;
  status: RunStatus;
  trigger: string;
  thread: number | null;
  input: string;
  output: string;
  error: string;
  warnings: RunWarning[];
  created: string;
  duration_ms: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
}

/** One memory.facts extraction after a run's turn (`GET /api/runs/{id}/` → `extractions`). */
export interface FactExtraction {
  node: string;
  status: 'ok' | 'failed';
  model: string;
  added: number;
  updated: number;
  prompt_tokens: number;
  completion_tokens: number;
  duration_ms: number;
  error: string;
  messages: SentMessage[];
  reply: string;
}

export interface Run extends RunSummary {
  steps: RunStep[];
  summarizations?: Summarization[];
  extractions?: FactExtraction[];
  participant?: number | null;
}

export interface MemoryMessage {
  role: string;
  content: string;
  token_count?: number;
}

export interface MemoryHistory {
  name: string;
  node: string | null;
  type?: string;
  history: string;
  /** Whether this memory keeps a running summary (its text can be edited). */
  summarizes?: boolean;
  summary: string;
  summary_through?: number;
  summarize_next?: boolean;
  tokenizer?: string;
  messages: MemoryMessage[];
  token_count: number;
}

/** `GET /api/threads/{id}/memory-export/` */
export interface MemoryExport {
  thread?: number;
  workflow?: number;
  histories: {
    history: string;
    name: string;
    messages: { seq?: number; role: string; content: string }[];
    summaries?: { node: string; text: string; through_seq: number }[];
  }[];
}

export interface TranscriptMessage {
  role: string;
  content: string;
  created: string;
  run?: number | null;
}
