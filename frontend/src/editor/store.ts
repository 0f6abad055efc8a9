// The editor's one store: the draft's nodes and edges with their change handlers, the
// connection rule, undo/redo, clipboard, server validation issues, saving with the revision,
// and the last run's per-node status. React Flow is controlled from here.
import {
  addEdge,
  applyEdgeChanges,
  applyNodeChanges,
  type Connection,
  type Edge,
  type EdgeChange,
  type Node,
  type NodeChange,
  type XYPosition,
} from '@xyflow/react';
import { create } from 'zustand';
import { api, ConflictError } from '../api/client';
import type { Graph, GraphEdge, NodeParams, NodeTypeSpec, Run, RunWarning, ValidationIssue, Workflow } from '../api/types';
import { defaultsFor } from '../schema/schema';
import { withModel, type ModelChoice } from './models';
import { checkConnection, outputPorts, type ConnectionCandidate, type GraphLookup } from './ports';

export type FlowNode = Node<NodeParams>;
export type FlowEdge = Edge;

interface Snapshot {
  nodes: FlowNode[];
  edges: FlowEdge[];
}

export interface NodeRunState {
  status: 'running' | 'succeeded' | 'failed' | 'skipped';
  error?: string;
  warnings: string[];
  durationMs?: number | null;
}

export type SaveStatus = 'saved' | 'unsaved' | 'saving' | 'error' | 'conflict';

const HISTORY_LIMIT = 100;
/** Keystrokes in one field within this window are one undo step. */
const COALESCE_MS = 1200;

export interface EditorState {
  specs: Record<string, NodeTypeSpec>;
  workflowId: number | null;
  name: string;
  revision: number;
  publishedVersion: number | null;
  /** The saved draft differs from the published version (the server compares them). */
  unpublishedChanges: boolean;
  /** The model a dropped node starts with (the installation's default). */
  modelDefault: ModelChoice | null;
  nodes: FlowNode[];
  edges: FlowEdge[];
  issues: ValidationIssue[];

  /** Content edits so far; the draft is saved when savedCount catches up. */
  changeCount: number;
  savedCount: number;
  saving: boolean;
  saveError: string | null;
  conflict: { revision: number | null } | null;

  past: Snapshot[];
  future: Snapshot[];
  clipboard: Snapshot | null;
  runState: Record<string, NodeRunState>;
  lastRunId: number | null;

  /** Bookkeeping the canvas never draws: the field edit an undo step may extend, the nodes as a
   * drag began, how many pastes of the clipboard so far, the save on its way. */
  lastEdit: { key: string; at: number } | null;
  dragStart: Snapshot | null;
  pasteCount: number;
  inflightSave: Promise<boolean> | null;

  setSpecs: (specs: NodeTypeSpec[]) => void;
  setModelDefault: (choice: ModelChoice | null) => void;
  load: (workflow: Workflow) => void;
  onNodesChange: (changes: NodeChange<FlowNode>[]) => void;
  onEdgesChange: (changes: EdgeChange<FlowEdge>[]) => void;
  onConnect: (connection: Connection) => void;
  isValidConnection: (connection: Connection | FlowEdge) => boolean;
  addNode: (type: string, position: XYPosition) => string | null;
  updateNodeData: (id: string, patch: NodeParams) => void;
  setName: (name: string) => void;
  selectOnly: (ids: string[]) => void;
  selectAll: () => void;
  deleteSelected: () => void;
  copySelection: () => number;
  paste: () => number;
  undo: () => void;
  redo: () => void;
  save: () => Promise<boolean>;
  setIssues: (issues: ValidationIssue[]) => void;
  startRun: () => void;
  showRun: (run: Run, extraWarnings?: RunWarning[]) => void;
  /** A live event of the running turn: a node started or finished, or a memory warned. */
  nodeEvent: (node: string, change: { status?: NodeRunState['status']; error?: string; durationMs?: number; warning?: string }) => void;
  clearRun: () => void;
}

type Actions = { [K in keyof EditorState as EditorState[K] extends (...args: never[]) => unknown ? K : never]: EditorState[K] };
type Data = Omit<EditorState, keyof Actions>;

/** A workflow's editing state as it starts: written once, for the store and for ``load``. */
const FRESH_DRAFT = {
  issues: [],
  changeCount: 0,
  savedCount: 0,
  saving: false,
  saveError: null,
  conflict: null,
  past: [],
  future: [],
  runState: {},
  lastRunId: null,
  lastEdit: null,
  dragStart: null,
  pasteCount: 0,
} satisfies Partial<Data>;

const INITIAL: Data = {
  specs: {},
  workflowId: null,
  name: '',
  revision: 0,
  publishedVersion: null,
  unpublishedChanges: false,
  modelDefault: null,
  nodes: [],
  edges: [],
  clipboard: null,
  inflightSave: null,
  ...FRESH_DRAFT,
};

function snapshot(state: Pick<EditorState, 'nodes' | 'edges'>): Snapshot {
  return { nodes: state.nodes, edges: state.edges };
}

function typeKey(type: string): string {
  const short = type.split('.').pop() || type;
  return short.replace(/[^A-Za-z0-9_]/g, '_');
}

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
    edges: (graph?.edges ?? []).map((e: GraphEdge) => ({
      id: e.id,
      source: e.source,
      sourceHandle: e.sourceHandle,
      target: e.target,
      targetHandle: e.targetHandle,
    })),
  };
}

function lookup(state: Pick<EditorState, 'nodes' | 'edges' | 'specs'>): GraphLookup {
  const byId = new Map(state.nodes.map((n) => [n.id, n]));
  return {
    nodeType: (id) => state.specs[byId.get(id)?.type ?? ''],
    nodeData: (id) => byId.get(id)?.data,
    edges: state.edges as unknown as GraphEdge[],
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

export const useEditor = create<EditorState>()((set, get) => {
  /** Apply a content change as one undo step. */
  const commit = (next: Partial<Snapshot> & Partial<EditorState>, options: { coalesceKey?: string } = {}) => {
    const state = get();
    const now = Date.now();
    const { lastEdit } = state;
    const coalesce = options.coalesceKey && lastEdit?.key === options.coalesceKey && now - lastEdit.at < COALESCE_MS;
    set({
      ...next,
      lastEdit: options.coalesceKey ? { key: options.coalesceKey, at: now } : null,
      past: coalesce ? state.past : [...state.past, snapshot(state)].slice(-HISTORY_LIMIT),
      future: [],
      changeCount: state.changeCount + 1,
    });
  };

  return {
    ...INITIAL,

    setSpecs: (specs) => set({ specs: Object.fromEntries(specs.map((s) => [s.type, s])) }),

    setModelDefault: (choice) => set({ modelDefault: choice }),

    load: (workflow) => {
      set({
        ...FRESH_DRAFT,
        workflowId: workflow.id,
        name: workflow.name,
        revision: workflow.revision,
        publishedVersion: workflow.published_version ?? null,
        unpublishedChanges: workflow.unpublished_changes ?? false,
        ...fromGraph(workflow.graph),
        issues: workflow.errors ?? [],
      });
    },

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
      const before = state.dragStart ?? snapshot(state);
      set({
        nodes,
        edges,
        dragStart: null,
        lastEdit: null,
        past: [...state.past, before].slice(-HISTORY_LIMIT),
        future: [],
        changeCount: state.changeCount + 1,
      });
    },

    onEdgesChange: (changes) => {
      const state = get();
      const edges = applyEdgeChanges(changes, state.edges);
      if (changes.every((c) => c.type === 'select')) set({ edges });
      else commit({ edges });
    },

    isValidConnection: (connection) => checkConnection(connection as ConnectionCandidate, lookup(get())).ok,

    onConnect: (connection) => {
      const state = get();
      if (!checkConnection(connection, lookup(state)).ok) return;
      commit({ edges: addEdge({ ...connection, id: edgeId(connection) }, state.edges) });
    },

    addNode: (type, position) => {
      const state = get();
      const spec = state.specs[type];
      if (!spec) return null;
      const id = uniqueNodeId(type, state.nodes.map((n) => n.id));
      const node: FlowNode = { id, type, position, data: withModel(defaultsFor(spec.params_schema), spec, state.modelDefault), selected: true };
      commit({ nodes: [...state.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node] });
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
      const { [id]: _stale, ...runState } = state.runState;
      void _stale;
      commit(
        { nodes: state.nodes.map((n) => (n.id === id ? { ...n, data } : n)), edges, runState },
        { coalesceKey: `${id}:${Object.keys(patch).sort().join(',')}` },
      );
    },

    setName: (name) => set((s) => ({ name, changeCount: s.changeCount + 1 })),

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
      commit({ nodes: state.nodes.filter((n) => !removed.has(n.id)), edges });
    },

    copySelection: () => {
      const state = get();
      const nodes = state.nodes.filter((n) => n.selected);
      const ids = new Set(nodes.map((n) => n.id));
      const edges = state.edges.filter((e) => ids.has(e.source) && ids.has(e.target));
      if (nodes.length) set({ clipboard: { nodes, edges }, pasteCount: 0 });
      return nodes.length;
    },

    paste: () => {
      const state = get();
      const clip = state.clipboard;
      if (!clip?.nodes.length) return 0;
      const pasteCount = state.pasteCount + 1;
      const offset = 40 * pasteCount;
      const taken = state.nodes.map((n) => n.id);
      const ids = new Map<string, string>();
      const pasted: FlowNode[] = clip.nodes.map((n) => {
        const id = uniqueNodeId(n.type ?? 'node', taken);
        taken.push(id);
        ids.set(n.id, id);
        return {
          id,
          type: n.type,
          position: { x: n.position.x + offset, y: n.position.y + offset },
          data: JSON.parse(JSON.stringify(n.data)) as NodeParams,
          selected: true,
        };
      });
      const pastedEdges: FlowEdge[] = clip.edges.map((e) => {
        const edge = { ...e, source: ids.get(e.source)!, target: ids.get(e.target)!, selected: false };
        return { ...edge, id: edgeId(edge) };
      });
      commit({
        nodes: [...state.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), ...pasted],
        edges: [...state.edges.map((e) => (e.selected ? { ...e, selected: false } : e)), ...pastedEdges],
        pasteCount,
      });
      return pasted.length;
    },

    undo: () => {
      const state = get();
      const previous = state.past[state.past.length - 1];
      if (!previous) return;
      set({
        ...previous,
        lastEdit: null,
        past: state.past.slice(0, -1),
        future: [snapshot(state), ...state.future],
        changeCount: state.changeCount + 1,
      });
    },

    redo: () => {
      const state = get();
      const next = state.future[0];
      if (!next) return;
      set({
        ...next,
        lastEdit: null,
        past: [...state.past, snapshot(state)],
        future: state.future.slice(1),
        changeCount: state.changeCount + 1,
      });
    },

    save: async () => {
      while (get().inflightSave) await get().inflightSave;
      const state = get();
      if (state.workflowId === null || state.conflict) return false;
      if (state.changeCount === state.savedCount) return true;
      const sent = state.changeCount;
      const saving = (async () => {
        set({ saving: true });
        try {
          const saved = await api.saveWorkflow(state.workflowId!, {
            // An empty name is refused by the server: the graph is saved without it (the page says so).
            ...(state.name.trim() ? { name: state.name } : {}),
            graph: toGraph(state.nodes, state.edges),
            revision: state.revision,
          });
          set({
            revision: saved.revision,
            issues: saved.errors ?? [],
            unpublishedChanges: saved.unpublished_changes ?? false,
            savedCount: sent,
            saving: false,
            saveError: null,
          });
          return true;
        } catch (error) {
          if (error instanceof ConflictError) set({ conflict: { revision: error.revision }, saving: false });
          else set({ saveError: (error as Error).message, saving: false });
          return false;
        } finally {
          set({ inflightSave: null });
        }
      })();
      set({ inflightSave: saving });
      return saving;
    },

    setIssues: (issues) => set({ issues }),

    startRun: () => set({ runState: {}, lastRunId: null }),

    showRun: (run, extraWarnings = []) => {
      const runState: Record<string, NodeRunState> = {};
      for (const step of run.steps ?? []) {
        runState[step.node] = { status: step.status, error: step.error || undefined, warnings: [], durationMs: step.duration_ms };
      }
      const seen = new Set<string>();
      for (const warning of [...(run.warnings ?? []), ...extraWarnings]) {
        if (!warning.node || seen.has(`${warning.node}:${warning.message}`)) continue;
        seen.add(`${warning.node}:${warning.message}`);
        const entry = (runState[warning.node] ??= { status: 'skipped', warnings: [] });
        entry.warnings.push(warning.message);
      }
      set({ runState, lastRunId: run.id });
    },

    nodeEvent: (node, change) =>
      set((s) => {
        const current = s.runState[node] ?? { status: 'skipped' as const, warnings: [] };
        const next: NodeRunState = {
          ...current,
          status: change.status ?? current.status,
          error: change.error ?? current.error,
          durationMs: change.durationMs ?? current.durationMs,
          warnings: change.warning ? [...current.warnings, change.warning] : current.warnings,
        };
        return { runState: { ...s.runState, [node]: next } };
      }),

    clearRun: () => set({ runState: {}, lastRunId: null }),
  };
});

/** The save indicator's state. */
export function saveStatus(s: Pick<EditorState, 'conflict' | 'saving' | 'saveError' | 'changeCount' | 'savedCount'>): SaveStatus {
  if (s.conflict) return 'conflict';
  if (s.saving) return 'saving';
  if (s.saveError) return 'error';
  return s.changeCount === s.savedCount ? 'saved' : 'unsaved';
}

const issueIndex = new WeakMap<ValidationIssue[], Map<string, ValidationIssue[]>>();
const NO_ISSUES: ValidationIssue[] = [];

/** Issues grouped by node id ('' for graph-level ones), grouped once per issues list. */
export function issuesByNode(issues: ValidationIssue[]): Map<string, ValidationIssue[]> {
  let map = issueIndex.get(issues);
  if (!map) {
    map = new Map();
    for (const issue of issues) {
      const key = issue.node ?? '';
      const list = map.get(key);
      if (list) list.push(issue);
      else map.set(key, [issue]);
    }
    issueIndex.set(issues, map);
  }
  return map;
}

/** One node's issues: the same array for as long as the issues list is the same (a stable selector result). */
export function issuesOf(issues: ValidationIssue[], nodeId: string): ValidationIssue[] {
  return issuesByNode(issues).get(nodeId) ?? NO_ISSUES;
}
