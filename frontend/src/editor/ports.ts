// Ports of a node as drawn and connected: the type's declared ports, except that a node whose
// type has `dynamic_outputs: "routes"` has one flow output per `data.routes[i].name`.
// The connection rule lives here too (one place; the store's isValidConnection calls it).
import type { NodeParams, NodeTypeSpec, PortKind, PortSpec } from '../api/types';

const NO_PORTS: PortSpec[] = [];
/** Dynamic outputs by the list they are read from: node data is never changed in place, so a list
 * keeps its ports (drawing and decorating edges ask for them often, e.g. on every drag frame). */
const dynamicPorts = new WeakMap<unknown[], PortSpec[]>();

export function outputPorts(spec: NodeTypeSpec | undefined, data: NodeParams): PortSpec[] {
  if (!spec) return NO_PORTS;
  if (!spec.dynamic_outputs) return spec.outputs;
  const items = data[spec.dynamic_outputs];
  if (!Array.isArray(items)) return NO_PORTS;
  let ports = dynamicPorts.get(items);
  if (!ports) {
    ports = portsOfItems(items);
    dynamicPorts.set(items, ports);
  }
  return ports;
}

function portsOfItems(items: unknown[]): PortSpec[] {
  const seen = new Set<string>();
  const ports: PortSpec[] = [];
  for (const item of items) {
    const name = (item as { name?: unknown })?.name;
    if (typeof name !== 'string' || !name || seen.has(name)) continue;
    seen.add(name);
    ports.push({ name, kind: 'flow', label: name, multiple: false });
  }
  return ports;
}

export function inputPorts(spec: NodeTypeSpec | undefined): PortSpec[] {
  return spec?.inputs ?? [];
}

export const isResource = (kind: PortKind) => kind !== 'flow';

export interface ConnectionCandidate {
  source: string | null;
  sourceHandle?: string | null;
  target: string | null;
  targetHandle?: string | null;
}

const FACTS_TYPE = 'memory.facts';

/** An edge as the rule reads it: a saved one (GraphEdge) or one on the canvas (React Flow's Edge). */
export interface LinkedEdge {
  source: string;
  sourceHandle?: string | null;
  target: string;
  targetHandle?: string | null;
}

export interface GraphLookup {
  nodeType: (nodeId: string) => NodeTypeSpec | undefined;
  nodeData: (nodeId: string) => NodeParams | undefined;
  edges: LinkedEdge[];
}

export type ConnectionVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Whether an edge may be drawn: ports exist, kinds match (flow→flow, memory→memory, llm→llm,
 * tool→tool: a tool node's output only to an LLM's `tools` port, which takes many), no self-loop
 * or duplicate, a single resource input takes one resource, and flow edges do not close a cycle.
 */
export function checkConnection(c: ConnectionCandidate, g: GraphLookup): ConnectionVerdict {
  if (!c.source || !c.target || !c.sourceHandle || !c.targetHandle) return { ok: false, reason: 'incomplete' };
  if (c.source === c.target) return { ok: false, reason: 'a node cannot connect to itself' };
  const sourceSpec = g.nodeType(c.source);
  const targetSpec = g.nodeType(c.target);
  const out = outputPorts(sourceSpec, g.nodeData(c.source) ?? {}).find((p) => p.name === c.sourceHandle);
  const inp = inputPorts(targetSpec).find((p) => p.name === c.targetHandle);
  if (!out || !inp) return { ok: false, reason: 'no such port' };
  if (out.kind !== inp.kind) {
    if (out.kind === 'tool') return { ok: false, reason: "a tool attaches to an LLM's tools port" };
    return { ok: false, reason: `cannot connect a ${out.kind} output to a ${inp.kind} input` };
  }
  const duplicate = g.edges.some(
    (e) => e.source === c.source && e.sourceHandle === c.sourceHandle && e.target === c.target && e.targetHandle === c.targetHandle,
  );
  if (duplicate) return { ok: false, reason: 'already connected' };
  if (isResource(inp.kind) && !inp.multiple) {
    const taken = g.edges.some((e) => e.target === c.target && e.targetHandle === c.targetHandle);
    if (taken) return { ok: false, reason: `only one ${inp.kind} can attach here` };
  }
  if (inp.kind === 'memory' && inp.multiple) {
    // A consumer takes one history memory and one memory.facts (the server's rule too).
    const isFacts = (id: string) => g.nodeType(id)?.type === FACTS_TYPE;
    const facts = isFacts(c.source);
    const clash = g.edges.some((e) => e.target === c.target && e.targetHandle === c.targetHandle && isFacts(e.source) === facts);
    if (clash) return { ok: false, reason: facts ? 'only one memory.facts can attach here' : 'only one history memory can attach here (and one memory.facts)' };
  }
  if (out.kind === 'flow' && reaches(c.target, c.source, g)) {
    return { ok: false, reason: 'flow edges must not loop back' };
  }
  return { ok: true };
}

/** Whether `to` is downstream of `from` along flow edges. */
function reaches(from: string, to: string, g: GraphLookup): boolean {
  const flowKind = (e: LinkedEdge) =>
    outputPorts(g.nodeType(e.source), g.nodeData(e.source) ?? {}).find((p) => p.name === e.sourceHandle)?.kind ?? 'flow';
  const next = new Map<string, string[]>();
  for (const e of g.edges) {
    if (flowKind(e) !== 'flow') continue;
    next.set(e.source, [...(next.get(e.source) ?? []), e.target]);
  }
  const seen = new Set([from]);
  const stack = [from];
  while (stack.length) {
    const current = stack.pop()!;
    if (current === to) return true;
    for (const n of next.get(current) ?? []) {
      if (!seen.has(n)) {
        seen.add(n);
        stack.push(n);
      }
    }
  }
  return false;
}
