// Reading a node type's params schema (pydantic v2 JSON Schema) into form fields and defaults.
// Handles $defs/$ref, `anyOf: [X, {type: null}]` (optional fields), enums and Literal, numbers
// with bounds, prompt strings (`format: "prompt"`), arrays of objects and the model/provider refs;
// a tool's params by their formats: `json` (a JSON Schema), `headers` (templates that may use
// stored secrets), `secret_names`, `secret`, `workflow` and `mcp_tools` (the owner's secrets,
// published workflows and an MCP server's tools to choose from).
import type { JSONSchema } from '../api/types';

export type Widget =
  | 'text'
  | 'prompt'
  | 'textarea'
  | 'number'
  | 'integer'
  | 'boolean'
  | 'select'
  | 'model'
  | 'provider'
  | 'objectList'
  | 'stringList'
  | 'json'
  | 'headers'
  | 'secretNames'
  | 'secret'
  | 'workflow'
  | 'mcpTools';

/** Widgets picked by a field's `format`, whatever its type (the params classes set it). */
const FORMAT_WIDGETS: Record<string, Widget> = {
  json: 'json',
  headers: 'headers',
  secret_names: 'secretNames',
  secret: 'secret',
  workflow: 'workflow',
  mcp_tools: 'mcpTools',
};

const LONG_TEXT = 2000;

export interface FieldSpec {
  name: string;
  title: string;
  description?: string;
  widget: Widget;
  /** `anyOf` with null: clearing the field sends null. */
  nullable: boolean;
  required: boolean;
  default?: unknown;
  hasDefault: boolean;
  options?: unknown[];
  /** For `default_route`-style fields: the sibling list whose item names are the options. */
  optionsFrom?: string;
  min?: number;
  max?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  /** Fields of each item, for lists of objects. */
  itemFields?: FieldSpec[];
  itemSchema?: JSONSchema;
}

export function resolveRef(root: JSONSchema, schema: JSONSchema): JSONSchema {
  let current = schema;
  const seen = new Set<string>();
  while (current.$ref) {
    const ref = current.$ref;
    if (seen.has(ref)) break;
    seen.add(ref);
    const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
    const target = match ? (root as Record<string, Record<string, JSONSchema> | undefined>)[match[1]]?.[match[2]] : undefined;
    if (!target) break;
    const { $ref: _omit, ...rest } = current;
    void _omit;
    current = { ...target, ...rest };
  }
  return current;
}

/** Splits `anyOf: [X, {type: "null"}]` into X and whether null is allowed; keeps outer keys. */
export function unwrapNullable(root: JSONSchema, schema: JSONSchema): { schema: JSONSchema; nullable: boolean } {
  const resolved = resolveRef(root, schema);
  const variants = resolved.anyOf ?? resolved.oneOf;
  if (variants) {
    const nonNull = variants.filter((v) => v.type !== 'null');
    const nullable = nonNull.length < variants.length;
    if (nonNull.length === 1) {
      const { anyOf: _a, oneOf: _o, ...outer } = resolved;
      void _a;
      void _o;
      return { schema: { ...resolveRef(root, nonNull[0]), ...outer }, nullable };
    }
    return { schema: resolved, nullable };
  }
  if (Array.isArray(resolved.type)) {
    const types = resolved.type.filter((t) => t !== 'null');
    return { schema: { ...resolved, type: types.length === 1 ? types[0] : types }, nullable: types.length < resolved.type.length };
  }
  return { schema: resolved, nullable: false };
}

function humanize(name: string): string {
  const text = name.replace(/_/g, ' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function widgetFor(name: string, schema: JSONSchema, root: JSONSchema): Pick<FieldSpec, 'widget' | 'options' | 'itemFields' | 'itemSchema'> {
  if (name === 'model' && schema.type === 'string') return { widget: 'model' };
  if (name === 'provider' && (schema.type === 'integer' || schema.type === 'string')) return { widget: 'provider' };
  if (schema.format && FORMAT_WIDGETS[schema.format]) return { widget: FORMAT_WIDGETS[schema.format] };
  if (name === 'url' && schema.type === 'string') return { widget: 'text' };
  if (schema.enum) return { widget: 'select', options: schema.enum };
  if (schema.const !== undefined) return { widget: 'select', options: [schema.const] };
  switch (schema.type) {
    case 'string':
      if (schema.format === 'prompt') return { widget: 'prompt' };
      // Long free text (message contents, descriptions) gets a plain multi-line box.
      return { widget: (schema.maxLength ?? 0) >= LONG_TEXT ? 'textarea' : 'text' };
    case 'integer':
      return { widget: 'integer' };
    case 'number':
      return { widget: 'number' };
    case 'boolean':
      return { widget: 'boolean' };
    case 'array': {
      const items = schema.items ? unwrapNullable(root, schema.items).schema : undefined;
      if (items?.type === 'object' && items.properties) {
        return { widget: 'objectList', itemFields: fieldsOf(items, root), itemSchema: items };
      }
      if (items?.type === 'string') return { widget: 'stringList', itemSchema: items };
      return { widget: 'json' };
    }
    default:
      return { widget: 'json' };
  }
}

/** The form fields of an object schema, in declaration order. */
export function fieldsOf(schema: JSONSchema, root: JSONSchema = schema): FieldSpec[] {
  const object = resolveRef(root, schema);
  const required = new Set(object.required ?? []);
  const properties = object.properties ?? {};
  return Object.entries(properties).map(([name, raw]) => {
    const { schema: inner, nullable } = unwrapNullable(root, raw);
    const outer = resolveRef(root, raw);
    const field: FieldSpec = {
      name,
      title: outer.title ?? inner.title ?? humanize(name),
      description: outer.description ?? inner.description,
      nullable,
      required: required.has(name),
      hasDefault: 'default' in outer || 'default' in inner,
      default: 'default' in outer ? outer.default : inner.default,
      min: inner.minimum ?? inner.exclusiveMinimum,
      max: inner.maximum ?? inner.exclusiveMaximum,
      minLength: inner.minLength,
      maxLength: inner.maxLength,
      pattern: inner.pattern,
      minItems: inner.minItems,
      maxItems: inner.maxItems,
      ...widgetFor(name, inner, root),
    };
    const listName = /^default_(\w+)$/.exec(name)?.[1];
    if (field.widget === 'text' && listName) {
      const list = properties[`${listName}s`];
      const listItems = list ? unwrapNullable(root, list).schema.items : undefined;
      if (listItems && resolveRef(root, listItems).properties?.name) {
        field.widget = 'select';
        field.optionsFrom = `${listName}s`;
      }
    }
    return field;
  });
}

function clone<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/** A new list item: its schema defaults, and a unique `name` when items are named. */
export function newItem(field: FieldSpec, existing: unknown[], hint?: string): unknown {
  if (field.widget === 'stringList') return '';
  const item: Record<string, unknown> = {};
  for (const sub of field.itemFields ?? []) {
    if (sub.hasDefault) item[sub.name] = clone(sub.default);
    else if (sub.widget === 'select' && sub.options?.length) item[sub.name] = sub.options[0];
    else if (sub.widget === 'text' || sub.widget === 'textarea' || sub.widget === 'prompt') item[sub.name] = '';
  }
  if (field.itemFields?.some((f) => f.name === 'name')) {
    const taken = new Set(existing.map((e) => (e as Record<string, unknown>)?.name));
    const base = field.name.replace(/s$/, '');
    let name = hint && !taken.has(hint) ? hint : '';
    for (let i = existing.length + 1; !name; i++) {
      if (!taken.has(`${base}_${i}`)) name = `${base}_${i}`;
    }
    item.name = name;
  }
  return item;
}

/**
 * The params a new node starts with: every schema default. A required list with `minItems`
 * and no default (a router's routes) gets that many items, the first named after its
 * `default_<item>` sibling so the node is valid as dropped.
 */
export function defaultsFor(schema: JSONSchema): Record<string, unknown> {
  const fields = fieldsOf(schema);
  const data: Record<string, unknown> = {};
  for (const field of fields) {
    if (field.hasDefault) data[field.name] = clone(field.default);
  }
  for (const field of fields) {
    if (field.hasDefault || field.widget !== 'objectList' || !field.minItems) continue;
    const hint = data[`default_${field.name.replace(/s$/, '')}`];
    const items: unknown[] = [];
    while (items.length < field.minItems) {
      items.push(newItem(field, items, items.length === 0 && typeof hint === 'string' ? hint : undefined));
    }
    data[field.name] = items;
  }
  return data;
}

/** What an input's text becomes in params: numbers parsed, empty optional fields null. */
export function parseInput(field: FieldSpec, text: string): unknown {
  if (field.widget === 'integer' || field.widget === 'number' || field.widget === 'provider' || field.widget === 'workflow') {
    if (text.trim() === '') return field.nullable ? null : undefined;
    const value = Number(text);
    if (Number.isNaN(value)) return text;
    return value;
  }
  if ((field.widget === 'select' || field.widget === 'secret') && text === '' && field.nullable) return null;
  return text;
}

/** Client-side checks that mirror the schema, shown before the server answers. */
export function localProblem(field: FieldSpec, value: unknown): string | null {
  if (value === null || value === undefined) {
    return field.required && !field.nullable ? 'Required' : null;
  }
  if ((field.widget === 'integer' || field.widget === 'number') && typeof value === 'number') {
    if (field.widget === 'integer' && !Number.isInteger(value)) return 'Must be a whole number';
    if (field.min !== undefined && value < field.min) return `Must be at least ${field.min}`;
    if (field.max !== undefined && value > field.max) return `Must be at most ${field.max}`;
  }
  if ((field.widget === 'integer' || field.widget === 'number') && typeof value !== 'number') return 'Must be a number';
  if (typeof value === 'string') {
    if (field.minLength !== undefined && value.length < field.minLength) {
      return field.minLength === 1 ? 'Required' : `At least ${field.minLength} characters`;
    }
    if (field.maxLength !== undefined && value.length > field.maxLength) return `At most ${field.maxLength} characters`;
    if (field.pattern && !new RegExp(field.pattern).test(value)) return 'Invalid format';
  }
  return null;
}
