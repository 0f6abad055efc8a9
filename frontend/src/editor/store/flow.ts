// React Flow's nodes and edges as the store holds them, the saved graph they come from and go
// to, and the ids the editor gives new nodes and edges.
import type { Edge, Node } from '@xyflow/react';
import type { Graph, NodeParams } from '../../api/types';

export type FlowNode = Node<NodeParams>;
export type FlowEdge = Edge;

/** The drawn graph at one moment: an undo step, the clipboard. */
export interface Snapshot {
  nodes: FlowNode[];
  edges: FlowEdge[];
}

export function snapshot(state: Snapshot): Snapshot {
  return { nodes: state.nodes, edges: state.edges };
}

function typeKey(type: string): string {
  const short = type.split('.').pop() || type;
  return short.replace(/[^A-Za-z0-9_]/g, '_');
}

/** A new node's id: the type's last part and the first number not taken (`llm_1`, `llm_2`). */
export function uniqueNodeId(type: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  const base = typeKey(type);
  for (let i = 1; ; i++) {
    const id = `${base}_${i}`;
    if (!used.has(id)) return id;
  }
}

export function edgeId(c: { source: string; sourceHandle?: string | null; target: string; targetHandle?: string | null }): string {
  return `e_${c.source}.${c.sourceHandle ?? ''}-${c.target}.${c.targetHandle ?? ''}`;
}

/** The saved shape: React Flow's JSON without UI state (selection, measured sizes). */
export function toGraph(nodes: FlowNode[], edges: FlowEdge[]): Graph {
  return {
    nodes: nodes.map((n) => ({
      id: n.id,
      type: n.type ?? '',
      position: { x: Math.round(n.position.x), y: Math.round(n.position.y) },
      data: n.data,
    })),
    edges: edges.map((e) => ({
      id: e.id,
      source: e.source,
      sourceHandle: e.sourceHandle ?? null,
      target: e.target,
      targetHandle: e.targetHandle ?? null,
    })),
  };
}

export function fromGraph(graph: Partial<Graph> | null | undefined): Snapshot {
  return {
    nodes: (graph?.nodes ?? []).map((n) => ({ id: n.id, type: n.type, position: n.position ?? { x: 0, y: 0 }, data: n.data ?? {} })),
    edges: (graph?.edges ?? []).map((e) => ({
      id: e.id,
      source: e.source,
      sourceHandle: e.sourceHandle,
      target: e.target,
      targetHandle: e.targetHandle,
    })),
  };
}
