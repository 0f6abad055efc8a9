// Copy and paste of the selected nodes and the edges between them; each paste of the same copy
// lands a step further down and right.
import type { NodeParams } from '../../api/types';
import { edgeId, uniqueNodeId, type FlowEdge, type FlowNode, type Snapshot } from './flow';
import { commit } from './history';
import type { EditorSlice } from './types';

const PASTE_OFFSET = 40;

export interface ClipboardSlice {
  /** Kept when another workflow opens: copy in one, paste in the other. */
  clipboard: Snapshot | null;
  /** How many pastes of the clipboard so far. */
  pasteCount: number;
  /** Copies the selection; returns how many nodes it copied. */
  copySelection: () => number;
  /** Pastes the clipboard, selected; returns how many nodes it pasted. */
  paste: () => number;
}

export const FRESH_CLIPBOARD = { pasteCount: 0 } satisfies Partial<ClipboardSlice>;

export const createClipboardSlice: EditorSlice<ClipboardSlice> = (set, get) => ({
  clipboard: null,
  ...FRESH_CLIPBOARD,

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
    const offset = PASTE_OFFSET * pasteCount;
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
    commit(set, get, {
      nodes: [...state.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), ...pasted],
      edges: [...state.edges.map((e) => (e.selected ? { ...e, selected: false } : e)), ...pastedEdges],
      pasteCount,
    });
    return pasted.length;
  },
});
