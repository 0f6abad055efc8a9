import { Background, BackgroundVariant, Controls, MiniMap, ReactFlow, useNodesInitialized, useReactFlow, type Node } from '@xyflow/react';
import { useCallback, useEffect, useMemo, useRef, type DragEvent } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { categoryClass } from './categories';
import { nodeTypes } from './GenericNode';
import { DRAG_MIME } from './Palette';
import { outputPorts } from './ports';
import { useEditor, type EditorState, type FlowEdge } from './store';

const NODE_WIDTH = 240;
export const FIT_OPTIONS = { padding: 0.15, maxZoom: 1 };

const MINIMAP_COLORS: Record<string, string> = {
  'cat-triggers': '#16a34a',
  'cat-ai': '#4f46e5',
  'cat-memory': '#9333ea',
  'cat-tools': '#0891b2',
  'cat-routing': '#d97706',
  'cat-transform': '#0d9488',
  'cat-output': '#475569',
};

const decorated = new WeakMap<FlowEdge, FlowEdge>();
const drawnLists = new WeakMap<FlowEdge[], FlowEdge[]>();

/**
 * Edges drawn by kind (resource edges dashed and coloured) and lit when both ends ran. The same
 * list comes back while no edge looks different, e.g. while nodes are dragged: React Flow
 * re-indexes all edges whenever it is handed a new list.
 */
export function decorateEdges(state: Pick<EditorState, 'nodes' | 'edges' | 'specs' | 'runState'>): FlowEdge[] {
  const drawn = drawEdges(state);
  const previous = drawnLists.get(state.edges);
  if (previous && previous.length === drawn.length && previous.every((edge, i) => edge === drawn[i])) return previous;
  drawnLists.set(state.edges, drawn);
  return drawn;
}

function drawEdges(state: Pick<EditorState, 'nodes' | 'edges' | 'specs' | 'runState'>): FlowEdge[] {
  const byId = new Map(state.nodes.map((n) => [n.id, n]));
  return state.edges.map((edge) => {
    const source = byId.get(edge.source);
    const kind = outputPorts(state.specs[source?.type ?? ''], source?.data ?? {}).find((p) => p.name === edge.sourceHandle)?.kind ?? 'flow';
    const ran = state.runState[edge.source]?.status === 'succeeded' && !!state.runState[edge.target];
    const className = `sk-edge sk-edge-${kind}${ran ? ' sk-edge-ran' : ''}`;
    const cached = decorated.get(edge);
    if (cached?.className === className) return cached;
    const drawn = { ...edge, className, animated: ran && kind === 'flow' };
    decorated.set(edge, drawn);
    return drawn;
  });
}

export function Canvas() {
  const { nodes, edges, onNodesChange, onEdgesChange, onConnect, isValidConnection, addNode } = useEditor(
    useShallow((s) => ({
      nodes: s.nodes,
      edges: s.edges,
      onNodesChange: s.onNodesChange,
      onEdgesChange: s.onEdgesChange,
      onConnect: s.onConnect,
      isValidConnection: s.isValidConnection,
      addNode: s.addNode,
    })),
  );
  const { screenToFlowPosition, fitView } = useReactFlow();
  const initialized = useNodesInitialized();
  // An empty workflow is not fitted later, when its first node is dropped.
  const fitted = useRef(nodes.length === 0);

  // Fit once every node of the loaded workflow has been measured.
  useEffect(() => {
    if (!initialized || fitted.current) return;
    fitted.current = true;
    void fitView(FIT_OPTIONS);
  }, [initialized, fitView]);
  const specs = useEditor((s) => s.specs);
  const runState = useEditor((s) => s.runState);
  const drawnEdges = useMemo(() => decorateEdges({ nodes, edges, specs, runState }), [nodes, edges, specs, runState]);

  const onDragOver = useCallback((event: DragEvent) => {
    if (!event.dataTransfer.types.includes(DRAG_MIME)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'move';
  }, []);

  const onDrop = useCallback(
    (event: DragEvent) => {
      const type = event.dataTransfer.getData(DRAG_MIME);
      if (!type) return;
      event.preventDefault();
      const point = screenToFlowPosition({ x: event.clientX, y: event.clientY });
      addNode(type, { x: point.x - NODE_WIDTH / 2, y: point.y - 24 });
    },
    [addNode, screenToFlowPosition],
  );

  const minimapColor = useCallback((node: Node) => {
    const spec = useEditor.getState().specs[node.type ?? ''];
    return MINIMAP_COLORS[categoryClass(spec?.category)] ?? '#94a3b8';
  }, []);

  return (
    <div className="canvas" onDragOver={onDragOver} onDrop={onDrop} data-testid="canvas">
      <ReactFlow
        nodes={nodes}
        edges={drawnEdges}
        nodeTypes={nodeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={onConnect}
        isValidConnection={isValidConnection}
        deleteKeyCode={null}
        selectionKeyCode="Shift"
        multiSelectionKeyCode={['Control', 'Meta']}
        minZoom={0.1}
        maxZoom={2}
        defaultEdgeOptions={{ type: 'smoothstep' }}
        proOptions={{ hideAttribution: true }}
      >
        <Background variant={BackgroundVariant.Dots} gap={20} size={1.2} color="#cbd5e1" />
        <MiniMap pannable zoomable nodeColor={minimapColor} nodeStrokeWidth={2} ariaLabel="Minimap" />
        <Controls showInteractive={false} />
      </ReactFlow>
      {nodes.length === 0 && (
        <div className="canvas-empty">
          <h3>Drag a node here to start</h3>
          <p>Begin with a <b>Chat message</b> trigger, add an <b>LLM</b>, and finish with an <b>Output</b>. Connect them by dragging from a port to another.</p>
        </div>
      )}
    </div>
  );
}
