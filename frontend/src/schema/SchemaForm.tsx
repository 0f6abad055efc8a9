// A params form generated from a node type's JSON Schema. Field errors come from the server
// (`{field: "routes.0.name", message}`) and from local checks of the schema's bounds.
import { useEffect, useId, useState, type ReactNode } from 'react';
import type { JSONSchema, NodeParams, Provider, ValidationIssue } from '../api/types';
import { formatCount, textOf } from '../ui/format';
import { fieldsOf, localProblem, newItem, parseInput, type FieldSpec } from './schema';

export interface FormContext {
  providers: Provider[];
  /** The models the chosen provider serves (the model picker's choices; free text is allowed too). */
  modelSuggestions: string[];
  /** Said under the model field (e.g. why the provider's models could not be listed). */
  modelHint?: ReactNode;
  /** A link to manage providers, rendered under the provider select. */
  providersLink?: ReactNode;
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
          onChange={(v) => onChange({ [field.name]: v })}
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
  const local = field.widget === 'objectList' || field.widget === 'stringList' ? null : localProblem(field, value);
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
      <FieldMessages messages={messages} />
    </div>
  );
}

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

function JsonInput({ common, value, onChange }: { common: Common; value: unknown; onChange: (v: unknown) => void }) {
  const [text, setText] = useState(() => JSON.stringify(value ?? null, null, 2));
  const [error, setError] = useState<string | null>(null);
  return (
    <>
      <textarea
        {...common}
        rows={4}
        className="mono"
        value={text}
        onChange={(e) => setText(e.target.value)}
        onBlur={() => {
          try {
            onChange(JSON.parse(text));
            setError(null);
          } catch {
            setError('Not valid JSON');
          }
        }}
      />
      {error && <div className="field-error">{error}</div>}
    </>
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
