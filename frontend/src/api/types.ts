// The Django API's shapes (docs/api.md), named for the app. Each is taken from ./openapi.d.ts,
// which scripts/api-types.sh generates from the API's OpenAPI schema (drf-spectacular), so a
// field the server renames or drops breaks the build here. Written by hand are only what the
// schema has no shape for: JSON fields and dicts (the graph, a node type's ports and JSON
// Schema, triggers), and the values of statuses the app tells apart (the schema says "string").
import type { Theme } from '../../widget/src/protocol';
import type { components } from './openapi';

/** Every shape of the OpenAPI schema, by its component name. */
export type Schemas = components['schemas'];

/** A schema shape with some fields made precise: each must be a field the schema has, and its
 * type one the schema's accepts (a JSON field's `unknown` becomes the shape the app knows). */
export type Refine<T, Known extends { [K in keyof Known]: K extends keyof T ? T[K] : never }> = Omit<T, keyof Known> & Known;

export type PortKind = 'flow' | 'memory' | 'llm' | 'tool';

/** A node type's port (`inputs`, `outputs`: dicts in the schema). */
export type PortSpec = {
  name: string;
  kind: PortKind;
  label: string;
  multiple: boolean;
};

/** A node type's params as pydantic v2 describes them (`params_schema`: a dict in the schema). */
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

/** `GET /api/node-types/`; `summary`: parts like "{model}" or " · {timezone}", each naming a param. */
export type NodeTypeSpec = Refine<Schemas['NodeTypeOutput'], { inputs: PortSpec[]; outputs: PortSpec[]; params_schema: JSONSchema }>;

// A graph is React Flow's JSON, stored as it is (a JSON field in the schema).
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
export type Template = Refine<Schemas['TemplateOutput'], { graph: Graph }>;

export type ValidationIssue = Schemas['Issue'];

/** A workflow as `GET /api/workflows/` lists it: no validation, no triggers. */
export type WorkflowSummary = Refine<Schemas['WorkflowListItem'], { graph: Graph }>;

/** A workflow as the editor opens it: the draft with its problems, whether it differs from the
 * published version, and the published version's triggers (none before the first publish). */
export type Workflow = Refine<Schemas['WorkflowOutput'], { graph: Graph; triggers: TriggerInfo[] }>;

export type WorkflowCreate = Refine<Schemas['WorkflowCreateInputRequest'], { graph: Graph }>;

/** A save: PUT with the graph, PATCH without; the revision it is based on always. */
export type WorkflowSave = Refine<Schemas['PatchedWorkflowUpdateInputRequest'], { graph?: Graph; revision: number }>;

/** A trigger of the published version (`GET /api/workflows/{id}/` → `triggers`, dicts in the
 * schema; also what `POST .../webhooks/{node}/regenerate/` answers, "an object" there). */
export type TriggerInfo = {
  node: string;
  type: string;
  webhook_url?: string;
  require_signature?: boolean;
  signing_secret?: string;
  next_run?: string | null;
  next_runs?: string[];
  /** Schedules: whether a beat has ticked lately, and what to do if not. */
  scheduler?: { running: boolean; message: string };
};

/** `GET /api/providers/default/`: the model a new node starts with on this installation. */
export type ModelDefault = Schemas['ModelDefaultOutput'];

/** `GET /api/providers/{id}/models/` */
export type ModelList = Schemas['ModelListOutput'];

/** `A` when it is `B` too, else `never`. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? A : never) : never;

/** The widget's look. The widget, a package of its own, declares the theme it draws; this is the
 * API's, and `never` (so the build fails) if the two ever differ. */
export type WidgetTheme = Same<Schemas['Theme'], Theme>;

/** `GET /api/workflows/{id}/widget/`; `identity_secret` signs a logged-in user's id for
 * data-participant-signature (hex HMAC-SHA256 of the id). */
export type WidgetSettings = Schemas['WidgetSettingsOutput'];

export type WidgetSettingsUpdate = Schemas['PatchedWidgetSettingsInputRequest'];

/** `POST /api/providers/{id}/test/` */
export type ProviderTestResult = Schemas['ProviderTestOutput'];

/** A page of a list endpoint (LimitOffsetPagination). The schema describes these lists as plain
 * arrays: its views paginate by hand, which drf-spectacular does not see. */
export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export type User = Schemas['User'];

export type Provider = Schemas['ProviderOutput'];

export type ProviderInput = Schemas['ProviderInputRequest'];

export type RunWarning = Schemas['Warning'];

/** A run's status (the Django model's `Run.Status`). */
export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed';

/** What the blocking endpoints answer (the manual run): a failed turn answers 200 with its error. */
export type ChatReply = Refine<Schemas['TurnResult'], { status: RunStatus }>;

/** One node's step of a run; its status is the Django model's `RunStep.Status`. */
export type RunStep = Refine<Schemas['StepOutput'], { status: 'running' | 'succeeded' | 'failed' }>;

export type SentMessage = Schemas['SentMessageOutput'];

/** One round of a model that called tools: what it was sent and offered, and the calls it asked for. */
export type RunRound = Schemas['RoundOutput'];

/** A tool call of a round, with what the tool answered (`error` when it failed). */
export type ToolCall = Schemas['ToolCallOutput'];

/** One of the owner's stored secrets: its name only (a value is write-only). */
export type Secret = Schemas['SecretOutput'];

export type SecretInput = Schemas['SecretInputRequest'];

/** `POST /api/tools/mcp/`: the tools an MCP server offers, or why it could not be listed. */
export type MCPListing = Schemas['MCPListOutput'];

export type MCPListInput = Schemas['MCPListInputRequest'];

/** One summarizer call of a run (`GET /api/runs/{id}/` → `summarizations`). */
export type Summarization = Schemas['SummarizationOutput'];

export type RunSummary = Refine<Schemas['RunSummaryOutput'], { status: RunStatus }>;

/** One memory.facts extraction after a run's turn (`GET /api/runs/{id}/` → `extractions`). */
export type FactExtraction = Schemas['FactExtractionOutput'];

export type Run = Refine<Schemas['RunOutput'], { status: RunStatus; steps: RunStep[] }>;

/** A message of a thread's memory as the server shows it (with its token count). */
export type MemoryMessage = Schemas['MessageIO'];

/** A message of a memory as it is written back (the server counts the tokens). */
export type MemoryMessageInput = Schemas['MessageIORequest'];

/** One memory of a thread; `summarizes`: it keeps a running summary (whose text can be edited). */
export type MemoryHistory = Schemas['MemoryOutput'];

/** `GET /api/threads/{id}/memory-export/` */
export type MemoryExport = Schemas['MemoryExport'];

/** `POST /api/threads/{id}/memory-import/`: an exported file (its thread and workflow are not read). */
export type MemoryImport = Schemas['MemoryExportRequest'];

export type TranscriptMessage = Schemas['MessageOutput'];
