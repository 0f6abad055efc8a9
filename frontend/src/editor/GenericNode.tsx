// The one node component: every node type is drawn from its schema. Flow ports sit on the
// left (inputs) and right (outputs) as circles; resource ports (memory, llm) are diamonds,
// resource outputs on top and resource inputs at the bottom, so attached memories and models
// hang under the node that uses them.
import { Handle, Position, useUpdateNodeInternals, type NodeProps, type NodeTypes } from '@xyflow/react';
import { memo, useEffect, useMemo, useRef } from 'react';
import { useShallow } from 'zustand/react/shallow';
import type { PortSpec, ValidationIssue } from '../api/types';
import { defaultsFor } from '../schema/schema';
import { categoryClass } from './categories';
import { inputPorts, isResource, outputPorts } from './ports';
import { useEditor, type FlowNode } from './store';

const NO_ISSUES: ValidationIssue[] = [];

function summaryOf(data: Record<string, unknown>): string | null {
  if (typeof data.model === 'string' && data.model) return data.model;
  if (typeof data.cron === 'string') return `${data.cron}${data.timezone ? ` · ${data.timezone}` : ''}`;
  if (typeof data.history === 'string') {
    const limit = typeof data.max_messages === 'number' ? ` · ${data.max_messages} msgs` : '';
    return `${data.history} history${limit}`;
  }
  if (typeof data.template === 'string') return data.template.split('\n')[0].slice(0, 40);
  return null;
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
  const issues = useEditor(useShallow((s) => s.issues.filter((i) => i.node === id)));
  const stableIssues = issues.length ? issues : NO_ISSUES;
  const run = useEditor((s) => s.runState[id]);
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

  const portIssues = new Set(stableIssues.map((i) => i.field ?? ''));
  const rows = Math.max(flowIn.length, flowOut.length);
  const defaults = useMemo(() => (spec ? defaultsFor(spec.params_schema) : {}), [spec]);
  const summary = summaryOf({ ...defaults, ...data });
  const classes = [
    'sk-node',
    categoryClass(spec?.category),
    selected ? 'selected' : '',
    stableIssues.length ? 'sk-node-invalid' : '',
    run ? `sk-run-${run.status}` : '',
    run?.warnings.length ? 'sk-run-warning' : '',
  ];

  return (
    <div className={classes.filter(Boolean).join(' ')} data-testid={`node-${id}`} data-run-status={run?.status ?? ''} data-invalid={stableIssues.length > 0}>
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
      {stableIssues.slice(0, 3).map((issue, i) => (
        <div key={i} className="sk-node-msg sk-msg-error" data-testid="node-error">
          {issue.field ? <b>{issue.field}: </b> : null}
          {issue.message}
        </div>
      ))}
      {stableIssues.length > 3 && <div className="sk-node-msg sk-msg-error">+{stableIssues.length - 3} more</div>}
      {run?.error && (
        <div className="sk-node-msg sk-msg-error" data-testid="node-run-error">
          {run.error}
        </div>
      )}
      {run?.warnings.map((w, i) => (
        <div key={i} className="sk-node-msg sk-msg-warning" data-testid="node-warning">
          ⚠ {w}
        </div>
      ))}
      <ResourcePorts ports={resIn} side="bottom" nodeIssues={portIssues} />
    </div>
  );
}

export const GenericNode = memo(GenericNodeView);

/**
 * React Flow's `nodeTypes`, defined once outside components: every registered type name maps to
 * GenericNode. Filled when the registry loads (before the canvas renders), never replaced.
 */
export const nodeTypes: NodeTypes = {};

export function registerNodeTypes(typeNames: Iterable<string>) {
  for (const name of typeNames) nodeTypes[name] ??= GenericNode;
}
