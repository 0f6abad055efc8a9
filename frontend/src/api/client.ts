// The one place that talks HTTP to Django: JSON in and out, session cookie, CSRF header,
// and errors turned into typed exceptions (a stale revision is a ConflictError, never retried).
import type {
  ChatReply,
  MCPListInput,
  MCPListing,
  MemoryExport,
  MemoryHistory,
  MemoryImport,
  MemoryMessageInput,
  ModelDefault,
  ModelList,
  NodeTypeSpec,
  Page,
  Provider,
  ProviderInput,
  ProviderTestResult,
  Run,
  RunSummary,
  Secret,
  SecretInput,
  Template,
  TranscriptMessage,
  TriggerInfo,
  User,
  ValidationIssue,
  WidgetSettings,
  WidgetSettingsUpdate,
  Workflow,
  WorkflowCreate,
  WorkflowSave,
  WorkflowSummary,
} from './types';

export class ApiError extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(status: number, body: unknown, message?: string) {
    super(message ?? describeError(status, body));
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }

  /** Validation issues in a 400 answer (`{errors: [...]}`), if any. */
  get issues(): ValidationIssue[] {
    const errors = (this.body as { errors?: unknown } | null)?.errors;
    return Array.isArray(errors) ? (errors as ValidationIssue[]) : [];
  }
}

/** 409: the draft changed since the revision we hold. */
export class ConflictError extends ApiError {
  readonly revision: number | null;

  constructor(body: unknown) {
    super(409, body, 'This workflow was changed elsewhere since you loaded it.');
    this.name = 'ConflictError';
    const revision = (body as { revision?: unknown } | null)?.revision;
    this.revision = typeof revision === 'number' ? revision : null;
  }
}

export function describeError(status: number, body: unknown): string {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    if (typeof b.detail === 'string') return b.detail;
    if (Array.isArray(b.errors) && b.errors.length) {
      return (b.errors as ValidationIssue[]).map((e) => e.message).join('; ');
    }
    if (Array.isArray(b.non_field_errors)) return b.non_field_errors.join(' ');
    const fieldMessages = Object.entries(b).flatMap(([k, v]) =>
      Array.isArray(v) ? [`${k}: ${v.join(' ')}`] : typeof v === 'string' ? [`${k}: ${v}`] : [],
    );
    if (fieldMessages.length) return fieldMessages.join('; ');
  }
  if (typeof body === 'string' && body.trim() && body.length < 300 && !body.trimStart().startsWith('<')) return body;
  if (status >= 500) return `The server failed to answer (${status}). Try again; if it keeps failing, check the server log.`;
  return `Request failed (${status})`;
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const unauthorizedListeners = new Set<() => void>();

/** Called when any request (other than /api/auth/) answers 401/403 for lack of a session. */
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

export function readCookie(name: string): string | null {
  for (const part of document.cookie.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return decodeURIComponent(rest.join('='));
  }
  return null;
}

async function csrfToken(): Promise<string | null> {
  let token = readCookie('csrftoken');
  if (!token) {
    await fetch('/api/auth/csrf/', { credentials: 'same-origin' });
    token = readCookie('csrftoken');
  }
  return token;
}

/** Sends a request with the session cookie and, for unsafe methods, the CSRF header. */
export async function send(method: string, url: string, body?: unknown, accept = 'application/json'): Promise<Response> {
  const headers: Record<string, string> = { Accept: accept };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (UNSAFE.has(method)) {
    const token = await csrfToken();
    if (token) headers['X-CSRFToken'] = token;
  }
  return fetch(url, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The typed error for a failed response (ConflictError for 409); tells listeners when the session is gone. */
export async function errorFrom(response: Response, url: string): Promise<ApiError> {
  const parsed = await readBody(response);
  if (response.status === 409) return new ConflictError(parsed);
  if ((response.status === 401 || response.status === 403) && !url.startsWith('/api/auth/') && isAuthFailure(parsed)) {
    unauthorizedListeners.forEach((listener) => listener());
  }
  return new ApiError(response.status, parsed);
}

export async function request<T>(method: string, url: string, body?: unknown): Promise<T> {
  const response = await send(method, url, body);
  if (!response.ok) throw await errorFrom(response, url);
  return (await readBody(response)) as T;
}

function isAuthFailure(body: unknown): boolean {
  const detail = (body as { detail?: unknown } | null)?.detail;
  return typeof detail === 'string' && /credentials|authenticat|log ?in/i.test(detail);
}

function query(params: Record<string, string | number | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

export const api = {
  me: () => request<User>('GET', '/api/auth/me/'),
  login: (username: string, password: string) => request<User>('POST', '/api/auth/login/', { username, password }),
  logout: () => request<void>('POST', '/api/auth/logout/'),
  changePassword: (oldPassword: string, newPassword: string) =>
    request<void>('POST', '/api/auth/password/', { old_password: oldPassword, new_password: newPassword }),

  nodeTypes: () => request<NodeTypeSpec[]>('GET', '/api/node-types/'),
  templates: () => request<Template[]>('GET', '/api/templates/'),

  providers: () => request<Provider[] | Page<Provider>>('GET', '/api/providers/').then(unpage),
  createProvider: (body: ProviderInput) =>
    request<Provider>('POST', '/api/providers/', body),
  deleteProvider: (id: number) => request<void>('DELETE', `/api/providers/${id}/`),
  modelDefault: () => request<ModelDefault>('GET', '/api/providers/default/'),
  providerModels: (id: number) => request<ModelList>('GET', `/api/providers/${id}/models/`),
  testProvider: (id: number, model?: string) =>
    request<ProviderTestResult>('POST', `/api/providers/${id}/test/`, model ? { model } : {}),

  workflows: (params: { limit?: number; offset?: number } = {}) =>
    request<Page<WorkflowSummary>>('GET', `/api/workflows/${query({ limit: params.limit ?? 100, offset: params.offset })}`),
  /** The workflows with a published version (what a workflow tool can call), first 200. */
  publishedWorkflows: () => request<Page<WorkflowSummary>>('GET', `/api/workflows/${query({ published: 'true', limit: 200 })}`),
  workflow: (id: number) => request<Workflow>('GET', `/api/workflows/${id}/`),
  createWorkflow: (body: WorkflowCreate) => request<Workflow>('POST', '/api/workflows/', body),
  /** PUT when the graph is sent, else PATCH; a stale revision throws ConflictError. */
  saveWorkflow: (id: number, body: WorkflowSave) =>
    request<Workflow>(body.graph ? 'PUT' : 'PATCH', `/api/workflows/${id}/`, body),
  deleteWorkflow: (id: number) => request<void>('DELETE', `/api/workflows/${id}/`),
  publish: (id: number) => request<{ version: number }>('POST', `/api/workflows/${id}/publish/`),
  widgetSettings: (id: number) => request<WidgetSettings>('GET', `/api/workflows/${id}/widget/`),
  updateWidget: (id: number, body: WidgetSettingsUpdate) =>
    request<WidgetSettings>('PATCH', `/api/workflows/${id}/widget/`, body),
  rotateWidgetKey: (id: number) => request<WidgetSettings>('POST', `/api/workflows/${id}/widget/`),
  rotateIdentitySecret: (id: number) => request<WidgetSettings>('POST', `/api/workflows/${id}/widget/`, { rotate: 'identity_secret' }),
  regenerateWebhook: (id: number, node: string) =>
    request<TriggerInfo[]>('POST', `/api/workflows/${id}/webhooks/${encodeURIComponent(node)}/regenerate/`),
  runManual: (id: number, message: string) => request<ChatReply>('POST', `/api/workflows/${id}/run/`, { message }),

  secrets: () => request<Secret[]>('GET', '/api/secrets/'),
  createSecret: (body: SecretInput) => request<Secret>('POST', '/api/secrets/', body),
  replaceSecret: (id: number, value: string) => request<Secret>('PUT', `/api/secrets/${id}/`, { value }),
  deleteSecret: (id: number) => request<void>('DELETE', `/api/secrets/${id}/`),
  mcpTools: (body: MCPListInput) => request<MCPListing>('POST', '/api/tools/mcp/', body),

  runs: (params: { workflow?: number; status?: string; trigger?: string; thread?: number; limit?: number; offset?: number }) =>
    request<Page<RunSummary>>('GET', `/api/runs/${query(params)}`),
  run: (id: number) => request<Run>('GET', `/api/runs/${id}/`),

  threadMessages: (id: number) => request<TranscriptMessage[] | Page<TranscriptMessage>>('GET', `/api/threads/${id}/messages/`).then(unpage),
  threadMemory: (id: number) => request<MemoryHistory[]>('GET', `/api/threads/${id}/memory/`),
  replaceMemory: (id: number, name: string, messages: MemoryMessageInput[]) =>
    request<MemoryHistory>('PUT', `/api/threads/${id}/memory/${encodeURIComponent(name)}/`, { messages }),
  editSummary: (id: number, name: string, summary: string) =>
    request<MemoryHistory>('PATCH', `/api/threads/${id}/memory/${encodeURIComponent(name)}/`, { summary }),
  exportMemory: (id: number) => request<MemoryExport>('GET', `/api/threads/${id}/memory-export/`),
  importMemory: (id: number, file: MemoryImport) => request<MemoryHistory[]>('POST', `/api/threads/${id}/memory-import/`, file),
};

/** Some list endpoints may come paginated; the pages that need one list read it whole. */
function unpage<T>(value: T[] | Page<T>): T[] {
  return Array.isArray(value) ? value : value.results;
}
