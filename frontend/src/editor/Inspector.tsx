// The side panel: the selected node's params form and its problems, or, with nothing selected,
// the workflow's problems and how to get going.
import { useReactFlow } from '@xyflow/react';
import { api } from '../api/client';
import { useShallow } from 'zustand/react/shallow';
import type { Provider, ValidationIssue } from '../api/types';
import { Link } from '../router';
import { SchemaForm, unplacedIssues } from '../schema/SchemaForm';
import { formatDuration, textOf } from '../ui/format';
import { categoryClass } from './categories';
import { modelsFor, useModelList } from './modelList';
import { takesModel } from './models';
import { issuesOf, useEditor, type FlowNode } from './store';
import { listsUsed, usePublishedWorkflows, useSecretNames } from './toolData';

const listMcpTools = (url: string, secret: string | null) => api.mcpTools({ url, secret });

export function Inspector({ providers }: { providers: Provider[] }) {
  // The selected ids, not the nodes: a node dragged around is a new object on every frame.
  const selected = useEditor(useShallow((s) => s.nodes.filter((n) => n.selected).map((n) => n.id)));
  if (selected.length === 1) return <SelectedNode key={selected[0]} id={selected[0]} providers={providers} />;
  if (selected.length > 1) return <MultiSelection count={selected.length} />;
  return <WorkflowOverview />;
}

/** The selected node as the inspector draws it: its id, type and params (not where it is). */
function SelectedNode({ id, providers }: { id: string; providers: Provider[] }) {
  const node = useEditor(
    useShallow((s) => {
      const found = s.nodes.find((n) => n.id === id);
      return found ? { id: found.id, type: found.type, data: found.data } : null;
    }),
  );
  return node ? <NodeInspector node={node} providers={providers} /> : null;
}

type InspectedNode = Pick<FlowNode, 'id' | 'type' | 'data'>;

function NodeInspector({ node, providers }: { node: InspectedNode; providers: Provider[] }) {
  const spec = useEditor((s) => s.specs[node.type ?? '']);
  const issues = useEditor((s) => issuesOf(s.issues, node.id));
  const run = useEditor((s) => s.runState[node.id]);
  const lastRunId = useEditor((s) => s.lastRunId);
  const updateNodeData = useEditor((s) => s.updateNodeData);
  const callsModel = takesModel(spec);
  const provider = typeof node.data.provider === 'number' ? node.data.provider : null;
  const served = useModelList(callsModel ? provider : undefined);
  const uses = listsUsed(spec?.params_schema);
  const workflowId = useEditor((s) => s.workflowId);
  const secretNames = useSecretNames(uses.secrets);
  const publishedWorkflows = usePublishedWorkflows(uses.workflows, workflowId);

  /** Choosing a provider also picks a model it serves (unless the node's model is one already). */
  const change = (patch: Record<string, unknown>) => {
    updateNodeData(node.id, patch);
    if (!callsModel || !('provider' in patch)) return;
    const chosen = typeof patch.provider === 'number' ? patch.provider : null;
    void modelsFor(chosen).then(({ models }) => {
      const now = useEditor.getState().nodes.find((n) => n.id === node.id)?.data;
      if (models.length && now?.provider === patch.provider && !models.includes(textOf(now?.model))) updateNodeData(node.id, { model: models[0] });
    });
  };

  if (!spec) {
    return (
      <div className="inspector">
        <div className="inspector-head">
          <h2>Unknown node</h2>
        </div>
        <p className="muted">The type “{node.type}” is not in this server's registry. Delete the node or install the node type.</p>
      </div>
    );
  }

  const other = unplacedIssues(spec.params_schema, issues);
  return (
    <div className="inspector" aria-label={`${spec.label} settings`}>
      <div className={`inspector-head ${categoryClass(spec.category)}`}>
        <span className="sk-node-dot" aria-hidden="true" />
        <div>
          <h2>{spec.label}</h2>
          <div className="muted small">
            <code>{node.id}</code> · {spec.type}
          </div>
        </div>
      </div>
      {spec.description && <p className="inspector-desc">{spec.description}</p>}

      {run && (
        <div className={`run-note run-note-${run.status}`}>
          <div>
            <b>Last run:</b> {run.status === 'skipped' ? 'not run' : run.status}
            {run.durationMs != null && <span className="muted"> · {formatDuration(run.durationMs)}</span>}
            {lastRunId && (
              <>
                {' · '}
                <Link to={`/runs/${lastRunId}`}>trace</Link>
              </>
            )}
          </div>
          {run.error && <div className="run-note-error">{run.error}</div>}
          {run.warnings.map((w, i) => (
            <div key={i} className="run-note-warning">⚠ {w}</div>
          ))}
        </div>
      )}

      {other.length > 0 && (
        <div className="issue-box" role="alert">
          {other.map((issue, i) => (
            <div key={i}>
              {issue.field && <b>{issue.field}: </b>}
              {issue.message}
            </div>
          ))}
        </div>
      )}

      <SchemaForm
        schema={spec.params_schema}
        value={node.data}
        issues={issues}
        onChange={change}
        context={{
          providers,
          modelSuggestions: served.models,
          modelHint: callsModel && <ModelHint served={served} hasProvider={provider !== null} />,
          providersLink: (
            <Link to="/providers" className="small field-link">
              {providers.length ? 'Manage providers' : 'Add a provider (API key or local server)'}
            </Link>
          ),
          secretNames,
          secretsLink: (
            <Link to="/secrets" className="small field-link">
              {secretNames?.length ? 'Manage secrets' : 'Store a secret (an API key the tool sends)'}
            </Link>
          ),
          publishedWorkflows,
          listMcpTools,
        }}
      />
      <PortsHelp node={node} />
    </div>
  );
}

function ModelHint({ served, hasProvider }: { served: { models: string[]; error: string; loading: boolean }; hasProvider: boolean }) {
  if (served.loading) return <p className="field-help">Reading the provider's models…</p>;
  if (served.error) return <p className="field-help field-warning" data-testid="model-list-error">Could not list this provider's models ({served.error}); type the model's name.</p>;
  if (!served.models.length && !hasProvider) {
    return <p className="field-help">No API key is set in the server's environment: choose a provider to pick from its models.</p>;
  }
  return null;
}

function PortsHelp({ node }: { node: InspectedNode }) {
  const spec = useEditor((s) => s.specs[node.type ?? '']);
  const resources = [...(spec?.inputs ?? []), ...(spec?.outputs ?? [])].filter((p) => p.kind !== 'flow');
  if (!resources.length) return null;
  return (
    <p className="field-help ports-help">
      Diamond ports carry resources, not messages:{' '}
      {resources.map((p) => `${p.label} (${p.kind})`).join(', ')}. Connect a memory's or a tool's top port to an LLM's memory or tools port at its bottom.
    </p>
  );
}

function MultiSelection({ count }: { count: number }) {
  const { copySelection, deleteSelected } = useEditor(useShallow((s) => ({ copySelection: s.copySelection, deleteSelected: s.deleteSelected })));
  return (
    <div className="inspector">
      <div className="inspector-head">
        <h2>{count} nodes selected</h2>
      </div>
      <p className="muted">Drag to move them together. Copy with Ctrl+C and paste with Ctrl+V, or delete them.</p>
      <div className="button-row">
        <button className="btn" onClick={() => copySelection()}>Copy</button>
        <button className="btn btn-danger" onClick={() => deleteSelected()}>Delete</button>
      </div>
    </div>
  );
}

function WorkflowOverview() {
  const issues = useEditor((s) => s.issues);
  const nodeCount = useEditor((s) => s.nodes.length);
  return (
    <div className="inspector">
      <div className="inspector-head">
        <h2>Workflow</h2>
      </div>
      {nodeCount === 0 ? (
        <div className="getting-started">
          <ol>
            <li>Drag <b>Chat message</b> from the palette onto the canvas.</li>
            <li>Add an <b>LLM</b> and an <b>Output</b>, and connect the ports: drag from a right-hand circle to a left-hand one.</li>
            <li>Optionally hang a <b>memory</b> under the LLM (diamond ports).</li>
            <li>Open <b>Test chat</b> and talk to your workflow.</li>
          </ol>
        </div>
      ) : (
        <p className="muted">Select a node to edit its settings. Shift-drag to select several.</p>
      )}
      <ProblemList issues={issues} />
      <Shortcuts />
    </div>
  );
}

export function ProblemList({ issues }: { issues: ValidationIssue[] }) {
  const selectOnly = useEditor((s) => s.selectOnly);
  const { fitView } = useReactFlow();
  if (!issues.length) {
    return <div className="ok-box">No problems found. The workflow can be tested and published.</div>;
  }
  const focus = (nodeId: string | null) => {
    if (!nodeId) return;
    selectOnly([nodeId]);
    void fitView({ nodes: [{ id: nodeId }], maxZoom: 1.2, duration: 300 });
  };
  return (
    <div className="problems">
      <h3>
        {issues.length} problem{issues.length === 1 ? '' : 's'} to fix
      </h3>
      <ul>
        {issues.map((issue, i) => (
          <li key={i}>
            {issue.node ? (
              <button className="link-button" onClick={() => focus(issue.node)}>
                {issue.node}
              </button>
            ) : (
              <span className="muted">workflow</span>
            )}
            {issue.field && <code>{issue.field}</code>} {issue.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

function Shortcuts() {
  const keys: [string, string][] = [
    ['Ctrl Z / Ctrl Shift Z', 'undo / redo'],
    ['Ctrl C / Ctrl V', 'copy / paste'],
    ['Delete', 'delete selection'],
    ['Ctrl A', 'select all'],
    ['Ctrl S', 'save now'],
    ['Shift drag', 'select an area'],
  ];
  return (
    <div className="shortcuts">
      <h3>Shortcuts</h3>
      <dl>
        {keys.map(([k, v]) => (
          <div key={k}>
            <dt><kbd>{k}</kbd></dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
    </div>
  );
}
