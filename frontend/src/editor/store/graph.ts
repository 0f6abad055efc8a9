// The drawn graph: nodes and edges with React Flow's change handlers, the connection rule,
// adding and editing nodes, selection and deleting.
import { addEdge, applyEdgeChanges, applyNodeChanges, type Connection, type EdgeChange, type NodeChange, type XYPosition } from '@xyflow/react';
import type { NodeParams, NodeTypeSpec } from '../../api/types';
import { defaultsFor } from '../../schema/schema';
import { withModel } from '../models';
import { checkConnection, outputPorts, type GraphLookup } from '../ports';
import { edgeId, snapshot, uniqueNodeId, type FlowEdge, type FlowNode } from './flow';
import { commit } from './history';
import type { EditorSlice, EditorState } from './types';

export interface GraphSlice {
  nodes: FlowNode[];
  edges: FlowEdge[];
  onNodesChange: (changes: NodeChange<FlowNode>[]) => void;
  onEdgesChange: (changes: EdgeChange<FlowEdge>[]) => void;
  onConnect: (connection: Connection) => void;
  isValidConnection: (connection: Connection | FlowEdge) => boolean;
  addNode: (type: string, position: XYPosition) => string | null;
  updateNodeData: (id: string, patch: NodeParams) => void;
  selectOnly: (ids: string[]) => void;
  selectAll: () => void;
  deleteSelected: () => void;
}

function lookup(state: Pick<EditorState, 'nodes' | 'edges' | 'specs'>): GraphLookup {
  const byId = new Map(state.nodes.map((n) => [n.id, n]));
  return {
    nodeType: (id) => state.specs[byId.get(id)?.type ?? ''],
    nodeData: (id) => byId.get(id)?.data,
    edges: state.edges,
  };
}

/** When a router's route list changes: renamed routes keep their edges, removed ones lose them. */
function followDynamicOutputs(spec: NodeTypeSpec, nodeId: string, before: NodeParams, after: NodeParams, edges: FlowEdge[]): FlowEdge[] {
  const oldNames = outputPorts(spec, before).map((p) => p.name);
  const newNames = outputPorts(spec, after).map((p) => p.name);
  const oldItems = (before[spec.dynamic_outputs!] as { name?: string }[] | undefined) ?? [];
  const newItems = (after[spec.dynamic_outputs!] as { name?: string }[] | undefined) ?? [];
  const renames = new Map<string, string>();
  if (oldItems.length === newItems.length) {
    oldItems.forEach((item, i) => {
      const from = item?.name;
      const to = newItems[i]?.name;
      if (from && to && from !== to && !oldNames.includes(to)) renames.set(from, to);
    });
  }
  const live = new Set(newNames);
  return edges.flatMap((e) => {
    if (e.source !== nodeId) return [e];
    const handle = renames.get(e.sourceHandle ?? '') ?? e.sourceHandle ?? '';
    if (!live.has(handle)) return [];
    return handle === e.sourceHandle ? [e] : [{ ...e, sourceHandle: handle, id: edgeId({ ...e, sourceHandle: handle }) }];
  });
}

export const createGraphSlice: EditorSlice<GraphSlice> = (set, get) => ({
  nodes: [],
  edges: [],

  onNodesChange: (changes) => {
    const state = get();
    const content = changes.filter((c) => c.type !== 'select' && c.type !== 'dimensions');
    const dragging = content.some((c) => c.type === 'position' && c.dragging);
    const dragEnded = content.some((c) => c.type === 'position' && !c.dragging);
    const nodes = applyNodeChanges(changes, state.nodes);
    if (content.length === 0 || (dragging && !dragEnded)) {
      set(dragging && !state.dragStart ? { nodes, dragStart: snapshot(state) } : { nodes });
      return;
    }
    const removed = new Set(content.filter((c) => c.type === 'remove').map((c) => c.id));
    const edges = removed.size ? state.edges.filter((e) => !removed.has(e.source) && !removed.has(e.target)) : state.edges;
    // A drag is one undo step, back to where it began.
    commit(set, get, { nodes, edges, dragStart: null }, { before: state.dragStart ?? undefined });
  },

  onEdgesChange: (changes) => {
    const edges = applyEdgeChanges(changes, get().edges);
    if (changes.every((c) => c.type === 'select')) set({ edges });
    else commit(set, get, { edges });
  },

  isValidConnection: (connection) => checkConnection(connection, lookup(get())).ok,

  onConnect: (connection) => {
    const state = get();
    if (!checkConnection(connection, lookup(state)).ok) return;
    commit(set, get, { edges: addEdge({ ...connection, id: edgeId(connection) }, state.edges) });
  },

  addNode: (type, position) => {
    const state = get();
    const spec = state.specs[type];
    if (!spec) return null;
    const id = uniqueNodeId(type, state.nodes.map((n) => n.id));
    const node: FlowNode = { id, type, position, data: withModel(defaultsFor(spec.params_schema), spec, state.modelDefault), selected: true };
    commit(set, get, { nodes: [...state.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node] });
    return id;
  },

  updateNodeData: (id, patch) => {
    const state = get();
    const node = state.nodes.find((n) => n.id === id);
    if (!node) return;
    const data = { ...node.data, ...patch };
    const spec = state.specs[node.type ?? ''];
    const edges = spec?.dynamic_outputs && spec.dynamic_outputs in patch
      ? followDynamicOutputs(spec, id, node.data, data, state.edges)
      : state.edges;
    // The node's last run said nothing about the node as it is now: its error and status go.
    const runState = { ...state.runState };
    delete runState[id];
    commit(
      set,
      get,
      { nodes: state.nodes.map((n) => (n.id === id ? { ...n, data } : n)), edges, runState },
      { coalesceKey: `${id}:${Object.keys(patch).sort().join(',')}` },
    );
  },

  selectOnly: (ids) => {
    const wanted = new Set(ids);
    set((s) => ({
      nodes: s.nodes.map((n) => (!!n.selected === wanted.has(n.id) ? n : { ...n, selected: wanted.has(n.id) })),
      edges: s.edges.map((e) => (e.selected ? { ...e, selected: false } : e)),
    }));
  },

  selectAll: () => set((s) => ({ nodes: s.nodes.map((n) => ({ ...n, selected: true })), edges: s.edges.map((e) => ({ ...e, selected: true })) })),

  deleteSelected: () => {
    const state = get();
    const removed = new Set(state.nodes.filter((n) => n.selected).map((n) => n.id));
    const edges = state.edges.filter((e) => !e.selected && !removed.has(e.source) && !removed.has(e.target));
    if (removed.size === 0 && edges.length === state.edges.length) return;
    commit(set, get, { nodes: state.nodes.filter((n) => !removed.has(n.id)), edges });
  },
});
