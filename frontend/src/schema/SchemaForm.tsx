// A params form generated from a node type's JSON Schema. Field errors come from the server
// (`{field: "routes.0.name", message}`) and from local checks of the schema's bounds.
import { useEffect, useId, useState, type ReactNode } from 'react';
import type { JSONSchema, MCPListing, NodeParams, Provider, ValidationIssue } from '../api/types';
import { formatCount, textOf } from '../ui/format';
import { fieldsOf, localProblem, newItem, parseInput, type FieldSpec } from './schema';
import { secretNamesIn, secretRef, withSecret } from './secrets';

export interface FormContext {
  providers: Provider[];
  /** The models the chosen provider serves (the model picker's choices; free text is allowed too). */
  modelSuggestions: string[];
  /** Said under the model field (e.g. why the provider's models could not be listed). */
  modelHint?: ReactNode;
  /** A link to manage providers, rendered under the provider select. */
  providersLink?: ReactNode;
  /** The owner's stored secrets, by name (never a value); undefined while they are read. */
  secretNames?: string[];
  /** A link to manage secrets, rendered under the fields that use them. */
  secretsLink?: ReactNode;
  /** The owner's published workflows (what a workflow tool can call). */
  publishedWorkflows?: { id: number; name: string }[];
  /** Lists an MCP server's tools, for choosing the ones the model may call. */
  listMcpTools?: (url: string, secret: string | null) => Promise<MCPListing>;
}

interface SchemaFormProps {
  schema: JSONSchema;
  value: NodeParams;
  onChange: (patch: NodeParams) => void;
  issues: ValidationIssue[];
  context: FormContext;
}

/** Server messages for exactly this path (`routes`, `routes.0.name`). */
function messagesAt(issues: ValidationIssue[], path: string): string[] {
  return issues.filter((i) => i.field === path).map((i) => i.message);
}

/** Issues that no field of this form shows (model-level, ports, graph). */
export function unplacedIssues(schema: JSONSchema, issues: ValidationIssue[]): ValidationIssue[] {
  const names = new Set(fieldsOf(schema).map((f) => f.name));
  return issues.filter((i) => !i.field || !names.has(i.field.split('.')[0]));
}

function valueOf(field: FieldSpec, data: NodeParams): unknown {
  return field.name in data ? data[field.name] : field.default;
}

/** A field's change as the params get it: headers bring the list of secrets they use along. */
function patchFor(field: FieldSpec, fields: FieldSpec[], value: unknown): NodeParams {
  const patch: NodeParams = { [field.name]: value };
  if (field.widget === 'headers') {
    for (const list of fields.filter((f) => f.widget === 'secretNames')) patch[list.name] = secretNamesIn((value ?? {}) as Record<string, string>);
  }
  return patch;
}

export function SchemaForm({ schema, value, onChange, issues, context }: SchemaFormProps) {
  const fields = fieldsOf(schema);
  if (!fields.length) return <p className="muted small">This node has no settings.</p>;
  return (
    <div className="schema-form">
      {fields.map((field) => (
        <Field
          key={field.name}
          field={field}
          path={field.name}
          value={valueOf(field, value)}
          siblings={value}
          onChange={(v) => onChange(patchFor(field, fields, v))}
          issues={issues}
          context={context}
        />
      ))}
    </div>
  );
}

interface FieldProps {
  field: FieldSpec;
  path: string;
  value: unknown;
  siblings: NodeParams;
  onChange: (value: unknown) => void;
  issues: ValidationIssue[];
  context: FormContext;
  compact?: boolean;
}

function Field({ field, path, value, siblings, onChange, issues, context, compact }: FieldProps) {
  const id = useId();
  const server = messagesAt(issues, path);
  const local = LISTS.has(field.widget) ? null : localProblem(field, value);
  // The local check answers at once and in plain words; the server's message covers the rest.
  const messages = local ? [local] : server;
  const invalid = messages.length > 0;
  const control = <Control field={field} id={id} path={path} value={value} siblings={siblings} onChange={onChange} issues={issues} context={context} invalid={invalid} />;

  if (field.widget === 'boolean') {
    return (
      <div className={`field field-check${invalid ? ' field-invalid' : ''}`} data-field={path}>
        <label htmlFor={id}>
          {control}
          <span className="field-label">{field.title}</span>
        </label>
        {field.description && !compact && <p className="field-help">{field.description}</p>}
        <FieldMessages messages={messages} />
      </div>
    );
  }
  return (
    <div className={`field${invalid ? ' field-invalid' : ''}`} data-field={path}>
      <label className="field-label" htmlFor={id}>
        {field.title}
        {field.required && !field.hasDefault && <span className="required" aria-label="required">*</span>}
      </label>
      {control}
      {field.description && !compact && <p className="field-help">{field.description}</p>}
      {field.widget === 'provider' && context.providersLink}
      {field.widget === 'model' && context.modelHint}
      {(field.widget === 'headers' || field.widget === 'secret') && context.secretsLink}
      <FieldMessages messages={messages} />
    </div>
  );
}

const LISTS = new Set(['objectList', 'stringList', 'secretNames', 'mcpTools']);

function FieldMessages({ messages }: { messages: string[] }) {
  if (!messages.length) return null;
  return (
    <div className="field-error" role="alert">
      {messages.map((m, i) => (
        <div key={i}>{m}</div>
      ))}
    </div>
  );
}

function humanOption(value: unknown): string {
  if (value === null) return '—';
  return textOf(value).replace(/_/g, ' ');
}

interface ControlProps extends Omit<FieldProps, 'compact'> {
  id: string;
  invalid: boolean;
}

function Control({ field, id, path, value, siblings, onChange, issues, context, invalid }: ControlProps) {
  const common = { id, name: path, 'aria-invalid': invalid || undefined };
  switch (field.widget) {
    case 'boolean':
      return <input {...common} type="checkbox" className="switch" checked={value === true} onChange={(e) => onChange(e.target.checked)} />;

    case 'select': {
      const options = field.optionsFrom
        ? ((siblings[field.optionsFrom] as { name?: string }[] | undefined) ?? []).map((item) => item?.name).filter(Boolean)
        : (field.options ?? []);
      const known = options.some((o) => o === value);
      return (
        <select {...common} value={textOf(value)} onChange={(e) => onChange(parseInput(field, e.target.value))}>
          {(field.nullable || value === undefined || value === null) && <option value="">{field.nullable ? '— none —' : 'Choose…'}</option>}
          {!known && value !== null && value !== undefined && <option value={textOf(value)}>{textOf(value)} (not available)</option>}
          {options.map((o) => (
            <option key={String(o)} value={String(o)}>
              {humanOption(o)}
            </option>
          ))}
        </select>
      );
    }

    case 'provider': {
      const current = textOf(value);
      const known = context.providers.some((p) => String(p.id) === current);
      return (
        <select {...common} value={current} onChange={(e) => onChange(parseInput(field, e.target.value))}>
          <option value="">Environment keys (no provider)</option>
          {!known && current && <option value={current}>Provider #{current} (missing)</option>}
          {context.providers.map((p) => (
            <option key={p.id} value={String(p.id)}>
              {p.name} · {p.kind.replace(/_/g, ' ')}
            </option>
          ))}
        </select>
      );
    }

    case 'model':
      return <ModelPicker common={common} value={(value as string) ?? ''} models={context.modelSuggestions} onChange={onChange} />;

    case 'prompt':
      return (
        <PromptEditor
          common={common}
          title={field.title}
          value={(value as string) ?? ''}
          defaultValue={typeof field.default === 'string' && field.default ? field.default : undefined}
          maxLength={field.maxLength}
          onChange={onChange}
        />
      );

    case 'integer':
    case 'number':
      return <NumberInput common={common} field={field} value={value} onChange={onChange} />;

    case 'objectList':
      return <ObjectList field={field} path={path} value={Array.isArray(value) ? value : []} onChange={onChange} issues={issues} context={context} />;

    case 'stringList': {
      const items = Array.isArray(value) ? (value as string[]) : [];
      return (
        <div className="list-editor">
          {items.map((item, i) => (
            <div key={i} className="list-row">
              <input type="text" name={`${path}.${i}`} value={item} onChange={(e) => onChange(items.map((x, j) => (j === i ? e.target.value : x)))} />
              <button type="button" className="btn btn-ghost btn-icon" aria-label="Remove" onClick={() => onChange(items.filter((_, j) => j !== i))}>✕</button>
            </div>
          ))}
          <button type="button" className="btn btn-sm" onClick={() => onChange([...items, ''])}>+ Add</button>
        </div>
      );
    }

    case 'textarea':
      return <textarea {...common} rows={3} value={(value as string) ?? ''} maxLength={field.maxLength} onChange={(e) => onChange(e.target.value)} />;

    case 'json':
      return <JsonInput common={common} value={value} onChange={onChange} />;

    case 'headers':
      return <HeadersEditor path={path} value={isRecord(value) ? (value as Record<string, string>) : {}} secretNames={context.secretNames} onChange={onChange} />;

    case 'secretNames':
      return <SecretNames value={Array.isArray(value) ? (value as string[]) : []} known={context.secretNames} />;

    case 'secret': {
      const current = textOf(value);
      const names = context.secretNames ?? [];
      return (
        <select {...common} value={current} onChange={(e) => onChange(parseInput(field, e.target.value))}>
          <option value="">— none —</option>
          {current && !names.includes(current) && <option value={current}>{current} (no such secret)</option>}
          {names.map((name) => (
            <option key={name} value={name}>{name}</option>
          ))}
        </select>
      );
    }

    case 'workflow': {
      const current = textOf(value);
      const workflows = context.publishedWorkflows ?? [];
      return (
        <select {...common} value={current} onChange={(e) => onChange(parseInput(field, e.target.value))}>
          {!current && <option value="">{workflows.length ? 'Choose a published workflow…' : 'No published workflow yet'}</option>}
          {current && !workflows.some((w) => String(w.id) === current) && <option value={current}>Workflow #{current} (not published)</option>}
          {workflows.map((w) => (
            <option key={w.id} value={String(w.id)}>{w.name} · #{w.id}</option>
          ))}
        </select>
      );
    }

    case 'mcpTools':
      return <McpToolList path={path} value={Array.isArray(value) ? (value as string[]) : []} siblings={siblings} onChange={onChange} list={context.listMcpTools} />;

    default:
      return <input {...common} type="text" value={(value as string) ?? ''} maxLength={field.maxLength} onChange={(e) => onChange(parseInput(field, e.target.value))} />;
  }
}

type Common = { id: string; name: string; 'aria-invalid'?: boolean };

const OTHER_MODEL = '\u0000other';

/** A choice among the models the provider serves, or any name typed in ("Other model…"). */
function ModelPicker({ common, value, models, onChange }: { common: Common; value: string; models: string[]; onChange: (v: string) => void }) {
  const [typing, setTyping] = useState(false);
  const listed = models.includes(value);
  if (!models.length || typing || (value && !listed)) {
    const listId = `${common.id}-models`;
    return (
      <div className="model-picker">
        <input {...common} type="text" list={listId} value={value} placeholder="the model's name, e.g. gpt-4o-mini" autoComplete="off" spellCheck={false} onChange={(e) => onChange(e.target.value)} />
        <datalist id={listId}>
          {models.map((m) => (
            <option key={m} value={m} />
          ))}
        </datalist>
        {models.length > 0 && (
          <button type="button" className="link-button small" onClick={() => { setTyping(false); if (!listed) onChange(models[0]); }}>
            Choose from the {models.length} served models
          </button>
        )}
      </div>
    );
  }
  return (
    <select {...common} value={value} onChange={(e) => (e.target.value === OTHER_MODEL ? setTyping(true) : onChange(e.target.value))}>
      {!value && <option value="">Choose a model…</option>}
      {models.map((m) => (
        <option key={m} value={m}>
          {m}
        </option>
      ))}
      <option value={OTHER_MODEL}>Other model (type its name)…</option>
    </select>
  );
}

/** Keeps the typed text (so "0." or "-" survive) while the params get the parsed number. */
function NumberInput({ common, field, value, onChange }: { common: Common; field: FieldSpec; value: unknown; onChange: (v: unknown) => void }) {
  const shown = textOf(value);
  const [text, setText] = useState(shown);
  useEffect(() => {
    setText((current) => (Number(current) === value || (current === '' && (value === null || value === undefined)) ? current : shown));
  }, [shown, value]);
  const step = field.widget === 'integer' ? 1 : field.max !== undefined && field.max <= 2 ? 0.1 : 'any';
  return (
    <input
      {...common}
      type="number"
      inputMode={field.widget === 'integer' ? 'numeric' : 'decimal'}
      min={field.min}
      max={field.max}
      step={step}
      value={text}
      placeholder={field.nullable ? 'not set' : undefined}
      onChange={(e) => {
        setText(e.target.value);
        const parsed = parseInput(field, e.target.value);
        if (parsed !== undefined) onChange(parsed);
      }}
    />
  );
}

/** A prompt; one with a default (the summary prompt) shows it when empty and can go back to it,
 * so a user starts from the default rather than from nothing. */
function PromptEditor({ common, title, value, defaultValue, maxLength, onChange }: { common: Common; title: string; value: string; defaultValue?: string; maxLength?: number; onChange: (v: string) => void }) {
  const [expanded, setExpanded] = useState(false);
  return (
    <div className="prompt-editor">
      <textarea {...common} rows={6} value={value} placeholder={defaultValue} maxLength={maxLength} spellCheck onChange={(e) => onChange(e.target.value)} />
      <div className="prompt-bar">
        <span className="muted small">
          {formatCount(value.length)} chars · Jinja: {'{{ input }}'}, {'{{ payload.x }}'}
          {defaultValue !== undefined && value === defaultValue && ' · the default'}
        </span>
        {defaultValue !== undefined && value !== defaultValue && (
          <button type="button" className="btn btn-ghost btn-sm" onClick={() => onChange(defaultValue)}>Use the default</button>
        )}
        <button type="button" className="btn btn-ghost btn-sm" onClick={() => setExpanded(true)}>Expand</button>
      </div>
      {expanded && (
        <div className="modal-backdrop" onClick={() => setExpanded(false)}>
          <div className="modal prompt-modal" role="dialog" aria-label={title} onClick={(e) => e.stopPropagation()}>
            <div className="modal-header">
              <h3>{title}</h3>
              <button type="button" className="btn btn-primary btn-sm" onClick={() => setExpanded(false)}>Done</button>
            </div>
            <textarea autoFocus value={value} maxLength={maxLength} spellCheck onChange={(e) => onChange(e.target.value)} />
          </div>
        </div>
      )}
    </div>
  );
}

const isRecord = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Why ``text`` is not JSON (the parser's words), or null when it is. */
export function jsonProblem(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch (error) {
    return `Not valid JSON: ${(error as Error).message}`;
  }
}

/** JSON typed as text: each valid edit goes to the params at once; while the text does not parse,
 * the params keep their last valid value and the parser's error shows under the box. */
function JsonInput({ common, value, onChange }: { common: Common; value: unknown; onChange: (v: unknown) => void }) {
  const [text, setText] = useState(() => JSON.stringify(value ?? null, null, 2));
  const [seen, setSeen] = useState(value);
  // A change from elsewhere (undo, a reload) rewrites the text; this box's own edits parse back equal.
  if (value !== seen) {
    setSeen(value);
    if (jsonProblem(text) || JSON.stringify(JSON.parse(text)) !== JSON.stringify(value ?? null)) setText(JSON.stringify(value ?? null, null, 2));
  }
  const problem = jsonProblem(text);
  return (
    <>
      <textarea
        {...common}
        aria-invalid={common['aria-invalid'] || !!problem || undefined}
        rows={Math.min(14, Math.max(4, text.split('\n').length))}
        className="mono"
        spellCheck={false}
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          if (!jsonProblem(e.target.value)) onChange(JSON.parse(e.target.value));
        }}
      />
      {problem && (
        <div className="field-error" role="alert" data-testid="json-error">
          {problem}
        </div>
      )}
    </>
  );
}

type HeaderRow = [name: string, value: string];

/** Rows as the params keep them: named rows only (a row being typed may have no name yet). */
function headersOf(rows: HeaderRow[]): Record<string, string> {
  return Object.fromEntries(rows.filter(([name]) => name.trim()).map(([name, value]) => [name.trim(), value]));
}

const sameHeaders = (a: Record<string, string>, b: Record<string, string>) => JSON.stringify(a) === JSON.stringify(b);

/** A request's headers as rows of name and template, and the owner's secrets to put into one
 * (`{{ secrets.NAME }}`: the value is filled in when the request is sent, never shown). */
function HeadersEditor({ path, value, secretNames, onChange }: { path: string; value: Record<string, string>; secretNames?: string[]; onChange: (v: unknown) => void }) {
  const [rows, setRows] = useState<HeaderRow[]>(() => Object.entries(value));
  const [seen, setSeen] = useState(value);
  const [target, setTarget] = useState(0);
  if (value !== seen) {
    setSeen(value);
    if (!sameHeaders(headersOf(rows), value)) setRows(Object.entries(value));
  }
  const update = (next: HeaderRow[]) => {
    setRows(next);
    onChange(headersOf(next));
  };
  const insertSecret = (name: string) => {
    if (!rows.length) return update([['Authorization', `Bearer ${secretRef(name)}`]]);
    const at = Math.min(target, rows.length - 1);
    update(rows.map((row, i): HeaderRow => (i === at ? [row[0], withSecret(row[1], name)] : row)));
  };
  return (
    <div className="list-editor headers-editor" data-list={path}>
      {rows.length === 0 && <p className="muted small">No headers.</p>}
      {rows.map(([name, template], i) => (
        <div key={i} className="list-row header-row">
          <input type="text" name={`${path}.${i}.name`} aria-label={`Header ${i + 1} name`} placeholder="Name" value={name} maxLength={100} spellCheck={false}
            onFocus={() => setTarget(i)}
            onChange={(e) => update(rows.map((row, j): HeaderRow => (j === i ? [e.target.value, row[1]] : row)))} />
          <input type="text" name={`${path}.${i}.value`} aria-label={`Header ${i + 1} value`} placeholder="Value (a template)" value={template} maxLength={4000} spellCheck={false} className="mono"
            onFocus={() => setTarget(i)}
            onChange={(e) => update(rows.map((row, j): HeaderRow => (j === i ? [row[0], e.target.value] : row)))} />
          <button type="button" className="btn btn-ghost btn-icon" aria-label={`Remove header ${i + 1}`} onClick={() => update(rows.filter((_, j) => j !== i))}>✕</button>
        </div>
      ))}
      <button type="button" className="btn btn-sm" onClick={() => { setRows([...rows, ['', '']]); setTarget(rows.length); }}>+ Add header</button>
      <div className="secret-hint small" data-testid="secret-hint">
        {secretNames === undefined ? (
          <span className="muted">Reading your secrets…</span>
        ) : secretNames.length === 0 ? (
          <span className="muted">No stored secrets yet. A header can use one as {'{{ secrets.NAME }}'}.</span>
        ) : (
          <>
            <span className="muted">Insert a secret{rows.length ? ` into header ${Math.min(target, rows.length - 1) + 1}` : ''}:</span>
            {secretNames.map((name) => (
              <button key={name} type="button" className="chip chip-button" onClick={() => insertSecret(name)} title={`Adds {{ secrets.${name} }}; its value is never shown`}>
                {name}
              </button>
            ))}
          </>
        )}
      </div>
    </div>
  );
}

/** The secrets the headers use (kept in step with them), each flagged when the owner has none by that name. */
function SecretNames({ value, known }: { value: string[]; known?: string[] }) {
  if (!value.length) return <p className="muted small">None: no header uses a secret.</p>;
  return (
    <div className="chip-row">
      {value.map((name) => {
        const missing = known !== undefined && !known.includes(name);
        return (
          <span key={name} className={`chip${missing ? ' chip-missing' : ''}`} data-testid="used-secret">
            {name}
            {missing && <span className="muted"> · no such secret</span>}
          </span>
        );
      })}
    </div>
  );
}

type MCPTool = MCPListing['tools'][number];

/** The MCP server's tools the model may call: all (an empty list), or the ones checked. "Refresh
 * tools" asks the server what it offers; a server that cannot be listed says why. */
function McpToolList({ path, value, siblings, onChange, list }: { path: string; value: string[]; siblings: NodeParams; onChange: (v: unknown) => void; list?: FormContext['listMcpTools'] }) {
  const [listed, setListed] = useState<MCPTool[] | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const url = textOf(siblings.url).trim();
  const secret = typeof siblings.secret === 'string' && siblings.secret ? siblings.secret : null;
  const all = value.length === 0;
  const offered = listed?.map((t) => t.name) ?? [];
  const rows: { name: string; description?: string; offered: boolean }[] = [
    ...(listed ?? []).map((t) => ({ name: t.name, description: t.description, offered: true })),
    ...value.filter((name) => !offered.includes(name)).map((name) => ({ name, offered: listed === null })),
  ];

  const refresh = async () => {
    if (!list || !url) return;
    setBusy(true);
    setError('');
    try {
      const answer = await list(url, secret);
      setListed(answer.tools);
      setError(answer.error);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const toggle = (name: string, on: boolean) => onChange(on ? [...value, name] : value.filter((n) => n !== name));

  return (
    <div className="mcp-tools" data-list={path}>
      <div className="button-row">
        <button type="button" className="btn btn-sm" disabled={busy || !url || !list} onClick={() => void refresh()}>
          {busy ? 'Listing…' : 'Refresh tools'}
        </button>
        {!url && <span className="muted small">Set the server's URL first.</span>}
        {listed && !error && <span className="muted small">{listed.length} tool{listed.length === 1 ? '' : 's'} offered</span>}
      </div>
      {error && (
        <div className="field-error mcp-error" role="alert" data-testid="mcp-error">
          The server's tools could not be listed: {error}
        </div>
      )}
      <label className="field-check mcp-all">
        {/* Choosing some needs the server's list: unchecking "All" checks each listed tool. */}
        <input type="checkbox" name={`${path}.all`} checked={all} onChange={(e) => onChange(e.target.checked ? [] : offered)} disabled={all && !offered.length} />
        <span>All of the server's tools</span>
      </label>
      {rows.length > 0 && (
        <ul className="mcp-tool-list">
          {rows.map((tool) => {
            const checked = all || value.includes(tool.name);
            // An empty list means every tool, so the last one chosen cannot be unchecked.
            const last = !all && value.length === 1 && checked;
            return (
              <li key={tool.name}>
                <label className="field-check">
                  <input type="checkbox" name={`${path}.${tool.name}`} checked={checked} disabled={all || last} onChange={(e) => toggle(tool.name, e.target.checked)} />
                  <span>
                    <code>{tool.name}</code>
                    {!tool.offered && <span className="field-warning small"> · not offered by the server</span>}
                    {tool.description && <span className="muted small"> — {tool.description}</span>}
                  </span>
                </label>
              </li>
            );
          })}
        </ul>
      )}
      {!all && value.length === 1 && <p className="muted small">At least one tool stays chosen: none chosen means all of them.</p>}
      {all && listed === null && <p className="muted small">Refresh to see the server's tools and choose some.</p>}
    </div>
  );
}

function ObjectList({ field, path, value, onChange, issues, context }: { field: FieldSpec; path: string; value: unknown[]; onChange: (v: unknown) => void; issues: ValidationIssue[]; context: FormContext }) {
  const itemTitle = field.title.replace(/s$/, '');
  const canRemove = value.length > (field.minItems ?? 0);
  const canAdd = field.maxItems === undefined || value.length < field.maxItems;
  const update = (index: number, patch: NodeParams) =>
    onChange(value.map((item, i) => (i === index ? { ...(item as NodeParams), ...patch } : item)));
  const move = (index: number, by: number) => {
    const next = [...value];
    const [item] = next.splice(index, 1);
    next.splice(index + by, 0, item);
    onChange(next);
  };
  return (
    <div className="list-editor" data-list={path}>
      {value.length === 0 && <p className="muted small">None yet.</p>}
      {value.map((item, index) => (
        <div key={index} className="list-item" data-item={`${path}.${index}`}>
          <div className="list-item-head">
            <span className="muted small">
              {itemTitle} {index + 1}
            </span>
            <span className="list-item-tools">
              <button type="button" className="btn btn-ghost btn-icon" aria-label="Move up" disabled={index === 0} onClick={() => move(index, -1)}>↑</button>
              <button type="button" className="btn btn-ghost btn-icon" aria-label="Move down" disabled={index === value.length - 1} onClick={() => move(index, 1)}>↓</button>
              <button type="button" className="btn btn-ghost btn-icon" aria-label={`Remove ${itemTitle.toLowerCase()} ${index + 1}`} disabled={!canRemove} onClick={() => onChange(value.filter((_, i) => i !== index))}>✕</button>
            </span>
          </div>
          {(field.itemFields ?? []).map((sub) => (
            <Field
              key={sub.name}
              field={sub}
              path={`${path}.${index}.${sub.name}`}
              value={(item as NodeParams)?.[sub.name] ?? sub.default}
              siblings={item as NodeParams}
              onChange={(v) => update(index, { [sub.name]: v })}
              issues={issues}
              context={context}
              compact
            />
          ))}
        </div>
      ))}
      {canAdd && (
        <button type="button" className="btn btn-sm" onClick={() => onChange([...value, newItem(field, value)])}>
          + Add {itemTitle.toLowerCase()}
        </button>
      )}
    </div>
  );
}
