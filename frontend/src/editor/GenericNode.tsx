// The one node component: every node type is drawn from its schema. Flow ports sit on the
// left (inputs) and right (outputs) as circles; resource ports (memory, llm) are diamonds,
// resource outputs on top and resource inputs at the bottom, so attached memories and models
// hang under the node that uses them.
import { Handle, Position, useUpdateNodeInternals, type NodeProps, type NodeTypes } from '@xyflow/react';
import { memo, useEffect, useRef } from 'react';
import type { JSONSchema, PortSpec } from '../api/types';
import { defaultsFor } from '../schema/schema';
import { textOf } from '../ui/format';
import { categoryClass } from './categories';
import { inputPorts, isResource, outputPorts } from './ports';
import { issuesOf, useEditor, type FlowNode, type NodeRunState } from './store';

/** Each type's param defaults, read once per schema (only read here, never handed out to edit). */
const schemaDefaults = new WeakMap<JSONSchema, Record<string, unknown>>();

function defaultsOf(schema: JSONSchema): Record<string, unknown> {
  let defaults = schemaDefaults.get(schema);
  if (!defaults) {
    defaults = defaultsFor(schema);
    schemaDefaults.set(schema, defaults);
  }
  return defaults;
}

/** The node type's summary (``NodeTypeSpec.summary``) filled in: a part whose param is empty is
 * left out; each value shows its first line, at most 40 characters. */
export function summaryOf(parts: string[] | undefined, data: Record<string, unknown>): string | null {
  const shown = (parts ?? []).flatMap((part) => {
    const named = /\{(\w+)\}/.exec(part);
    const value = named ? data[named[1]] : undefined;
    if (!named || value === undefined || value === null || value === '' || typeof value === 'object') return [];
    return [part.replace(named[0], textOf(value).split('\n')[0].slice(0, 40))];
  });
  return shown.length ? shown.join('') : null;
}

const SIDE = { left: Position.Left, right: Position.Right, top: Position.Top, bottom: Position.Bottom };

/** One port's handle: its id is the port name; inputs are targets, outputs sources. */
function PortHandle({ port, side, nodeIssues }: { port: PortSpec; side: keyof typeof SIDE; nodeIssues: Set<string> }) {
  return (
    <Handle
      type={side === 'left' || side === 'bottom' ? 'target' : 'source'}
      position={SIDE[side]}
      id={port.name}
      className={`sk-handle sk-handle-${port.kind}${nodeIssues.has(port.name) ? ' sk-handle-error' : ''}`}
      data-port={port.name}
    />
  );
}

function PortRow({ input, output, nodeIssues }: { input?: PortSpec; output?: PortSpec; nodeIssues: Set<string> }) {
  return (
    <div className="sk-port-row">
      <div className="sk-port sk-port-in">
        {input && <PortHandle port={input} side="left" nodeIssues={nodeIssues} />}
        {input && <span>{input.label}</span>}
      </div>
      <div className="sk-port sk-port-out">
        {output && <span>{output.label}</span>}
        {output && <PortHandle port={output} side="right" nodeIssues={nodeIssues} />}
      </div>
    </div>
  );
}

function ResourcePorts({ ports, side, nodeIssues }: { ports: PortSpec[]; side: 'top' | 'bottom'; nodeIssues: Set<string> }) {
  if (!ports.length) return null;
  return (
    <div className={`sk-res-ports sk-res-${side}`}>
      {ports.map((port) => (
        <div key={port.name} className={`sk-res-port sk-kind-${port.kind}`}>
          <span>{port.label}</span>
          <PortHandle port={port} side={side} nodeIssues={nodeIssues} />
        </div>
      ))}
    </div>
  );
}

function GenericNodeView({ id, type, data, selected }: NodeProps<FlowNode>) {
  const spec = useEditor((s) => s.specs[type]);
  const issues = useEditor((s) => issuesOf(s.issues, id));
  const run: NodeRunState | undefined = useEditor((s) => s.runState[id]);
  const updateNodeInternals = useUpdateNodeInternals();

  const outputs = outputPorts(spec, data);
  const inputs = inputPorts(spec);
  const flowIn = inputs.filter((p) => !isResource(p.kind));
  const flowOut = outputs.filter((p) => !isResource(p.kind));
  const resIn = inputs.filter((p) => isResource(p.kind));
  const resOut = outputs.filter((p) => isResource(p.kind));
  const handleKey = outputs.map((p) => p.name).join('|');

  // React Flow caches handle positions; a router's handles change with its routes. (On mount
  // React Flow measures the node itself: re-measuring every node there is slow for big graphs.)
  const measuredKey = useRef(handleKey);
  useEffect(() => {
    if (measuredKey.current === handleKey) return;
    measuredKey.current = handleKey;
    updateNodeInternals(id);
  }, [id, handleKey, updateNodeInternals]);

  const portIssues = new Set(issues.map((i) => i.field ?? ''));
  const rows = Math.max(flowIn.length, flowOut.length);
  const summary = spec ? summaryOf(spec.summary, { ...defaultsOf(spec.params_schema), ...data }) : null;
  const classes = [
    'sk-node',
    categoryClass(spec?.category),
    selected ? 'selected' : '',
    issues.length ? 'sk-node-invalid' : '',
    run ? `sk-run-${run.status}` : '',
    run?.warnings.length ? 'sk-run-warning' : '',
  ];

  return (
    <div className={classes.filter(Boolean).join(' ')} data-testid={`node-${id}`} data-run-status={run?.status ?? ''} data-invalid={issues.length > 0}>
      <ResourcePorts ports={resOut} side="top" nodeIssues={portIssues} />
      <div className="sk-node-header">
        <span className="sk-node-dot" aria-hidden="true" />
        <span className="sk-node-title">{spec?.label ?? type}</span>
        {run && run.status !== 'skipped' && (
          <span className={`sk-run-badge sk-run-badge-${run.status}`} title={run.durationMs != null ? `${run.durationMs} ms` : undefined}>
            {run.status === 'succeeded' ? '✓' : run.status === 'failed' ? '✕' : '…'}
          </span>
        )}
      </div>
      <div className="sk-node-meta">
        <span className="sk-node-id">{id}</span>
        {summary && <span className="sk-node-summary">{summary}</span>}
      </div>
      {!spec && <div className="sk-node-msg sk-msg-error">Unknown node type “{type}”</div>}
      {rows > 0 && (
        <div className="sk-ports">
          {Array.from({ length: rows }, (_, i) => (
            <PortRow key={i} input={flowIn[i]} output={flowOut[i]} nodeIssues={portIssues} />
          ))}
        </div>
      )}
      {spec?.dynamic_outputs && flowOut.length === 0 && <div className="sk-node-msg sk-msg-error">Add a route to connect this router</div>}
      {issues.slice(0, 3).map((issue, i) => (
        <div key={i} className="sk-node-msg sk-msg-error" data-testid="node-error" title={issue.message}>
          {issue.field ? <b>{issue.field}: </b> : null}
          {issue.message}
        </div>
      ))}
      {issues.length > 3 && <div className="sk-node-msg sk-msg-error">+{issues.length - 3} more</div>}
      {run?.error && (
        <div className="sk-node-msg sk-msg-error sk-msg-run" data-testid="node-run-error" title={run.error}>
          {run.error}
        </div>
      )}
      {run?.warnings.slice(0, 2).map((w, i) => (
        <div key={i} className="sk-node-msg sk-msg-warning sk-msg-run" data-testid="node-warning" title={w}>
          ⚠ {w}
        </div>
      ))}
      {run && run.warnings.length > 2 && <div className="sk-node-msg sk-msg-warning sk-msg-run">+{run.warnings.length - 2} more warnings</div>}
      <ResourcePorts ports={resIn} side="bottom" nodeIssues={portIssues} />
    </div>
  );
}

/**
 * What the node draws from its props: React Flow also passes its position, size and z-index,
 * which change on every drag frame and when the node is measured but are not drawn here, so
 * they do not re-render it (the wrapper around it moves it).
 */
function sameDrawing(before: NodeProps<FlowNode>, after: NodeProps<FlowNode>): boolean {
  return before.id === after.id && before.type === after.type && before.data === after.data && before.selected === after.selected;
}

export const GenericNode = memo(GenericNodeView, sameDrawing);

/**
 * React Flow's `nodeTypes`, defined once outside components: every registered type name maps to
 * GenericNode. Filled when the registry loads (before the canvas renders), never replaced.
 */
export const nodeTypes: NodeTypes = {};

export function registerNodeTypes(typeNames: Iterable<string>) {
  for (const name of typeNames) nodeTypes[name] ??= GenericNode;
}
