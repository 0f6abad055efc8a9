import { useRef, useState, type ChangeEvent, type KeyboardEvent } from 'react';
import { api } from '../api/client';
import type { Graph, Template, WorkflowSummary } from '../api/types';
import { Link, navigate } from '../router';
import { timeAgo } from '../ui/format';
import { EmptyState, ErrorState } from '../ui/States';
import { toast } from '../ui/toast';
import { useAsync } from '../ui/useAsync';
import { exportWorkflow, importWorkflow } from './transfer';

const UNTITLED = 'Untitled workflow';

export function WorkflowsPage() {
  const { data, error, loading, reload } = useAsync(() => api.workflows(), []);
  // The server's sample library, already on the model a new node gets here, so a workflow made
  // from a template answers at once.
  const templates = useAsync(() => api.templates(), []);
  const fileInput = useRef<HTMLInputElement>(null);
  const [busy, setBusy] = useState(false);
  const workflows = data?.results ?? [];

  const create = async (name: string, graph: Graph) => {
    setBusy(true);
    try {
      const created = await api.createWorkflow({ name, graph });
      navigate(`/workflows/${created.id}`);
    } catch (err) {
      toast((err as Error).message, 'error');
    } finally {
      setBusy(false);
    }
  };

  const fromTemplate = (template: Template) => create(template.graph.nodes.length ? template.name : UNTITLED, template.graph);

  const importFile = async (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.target.files?.[0];
    event.target.value = '';
    if (!file) return;
    setBusy(true);
    try {
      const created = await importWorkflow(await file.text());
      navigate(`/workflows/${created.id}`);
    } catch (err) {
      toast((err as Error).message, 'error', 7000);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="workflows-page">
      <div className="page-header">
        <div>
          <h1>Workflows</h1>
          <p className="muted">Chatbots and automations you build by connecting nodes.</p>
        </div>
        <div className="page-actions">
          <input ref={fileInput} type="file" accept=".json,application/json" hidden onChange={(e) => void importFile(e)} data-testid="import-input" />
          <button className="btn" onClick={() => fileInput.current?.click()} disabled={busy}>
            Import JSON
          </button>
          <button className="btn btn-primary" onClick={() => void create(UNTITLED, { nodes: [], edges: [] })} disabled={busy}>
            New workflow
          </button>
        </div>
      </div>

      <section className="templates" aria-label="Start from a template">
        <h2 className="section-title">Start from a template</h2>
        {templates.error && <ErrorState error={templates.error} onRetry={() => void templates.reload()} />}
        {!templates.error && !templates.data && <div className="skeleton-list" />}
        <div className="template-grid">
          {(templates.data ?? []).map((t) => (
            <button key={t.key} className="template-card" onClick={() => void fromTemplate(t)} disabled={busy}>
              <TemplatePreview template={t} />
              <strong>{t.name}</strong>
              <span className="muted small">{t.description}</span>
            </button>
          ))}
        </div>
      </section>

      <section aria-label="Your workflows">
        <h2 className="section-title">Your workflows {data ? <span className="count">{data.count}</span> : null}</h2>
        {error && <ErrorState error={error} onRetry={() => void reload()} />}
        {!error && loading && !data && <div className="skeleton-list" />}
        {data && workflows.length === 0 && (
          <EmptyState title="No workflows yet">
            Pick a template above to get a working chatbot in one click, or import a <code>.skein.json</code> file exported
            from another Skein.
          </EmptyState>
        )}
        {workflows.length > 0 && (
          <table className="table workflows-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Nodes</th>
                <th>Status</th>
                <th>Updated</th>
                <th aria-label="Actions" />
              </tr>
            </thead>
            <tbody>
              {workflows.map((wf) => (
                <WorkflowRow key={wf.id} workflow={wf} onChanged={reload} onDuplicate={() => void create(`${wf.name} (copy)`, wf.graph)} />
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}

function WorkflowRow({ workflow, onChanged, onDuplicate }: { workflow: WorkflowSummary; onChanged: () => Promise<void>; onDuplicate: () => void }) {
  const [renaming, setRenaming] = useState(false);
  const [name, setName] = useState(workflow.name);

  const rename = async () => {
    setRenaming(false);
    const trimmed = name.trim();
    if (!trimmed || trimmed === workflow.name) {
      setName(workflow.name);
      return;
    }
    try {
      await api.saveWorkflow(workflow.id, { name: trimmed, revision: workflow.revision });
      await onChanged();
    } catch (err) {
      toast((err as Error).message, 'error');
      setName(workflow.name);
    }
  };

  const remove = async () => {
    if (!window.confirm(`Delete “${workflow.name}” with its runs and threads? This cannot be undone.`)) return;
    try {
      await api.deleteWorkflow(workflow.id);
      toast(`Deleted “${workflow.name}”`);
      await onChanged();
    } catch (err) {
      toast((err as Error).message, 'error');
    }
  };

  const onKey = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === 'Enter') void rename();
    if (event.key === 'Escape') {
      setName(workflow.name);
      setRenaming(false);
    }
  };

  return (
    <tr data-testid={`workflow-row-${workflow.id}`}>
      <td>
        {renaming ? (
          <input className="inline-input" aria-label="Workflow name" value={name} autoFocus onChange={(e) => setName(e.target.value)} onBlur={() => void rename()} onKeyDown={onKey} />
        ) : (
          <Link to={`/workflows/${workflow.id}`} className="workflow-name">
            {workflow.name}
          </Link>
        )}
      </td>
      <td className="muted">{workflow.graph?.nodes?.length ?? 0}</td>
      <td>
        {workflow.published_version ? <span className="badge badge-succeeded">published</span> : <span className="badge">draft</span>}
      </td>
      <td className="muted">{timeAgo(workflow.updated)}</td>
      <td className="row-actions">
        <button className="btn btn-ghost btn-sm" onClick={() => setRenaming(true)}>Rename</button>
        <button className="btn btn-ghost btn-sm" onClick={onDuplicate}>Duplicate</button>
        <button className="btn btn-ghost btn-sm" onClick={() => void exportWorkflow(workflow.id, workflow.name)}>Export</button>
        <Link className="btn btn-ghost btn-sm" to={`/workflows/${workflow.id}/runs`}>Runs</Link>
        <Link className="btn btn-ghost btn-sm" to={`/threads?workflow=${workflow.id}`}>Threads</Link>
        <button className="btn btn-ghost btn-sm btn-danger" onClick={() => void remove()}>Delete</button>
      </td>
    </tr>
  );
}

/** A thumbnail of a template's graph: its nodes as dots, its edges as lines. */
function TemplatePreview({ template }: { template: Template }) {
  const nodes = template.graph.nodes;
  if (!nodes.length) {
    return (
      <svg className="template-preview" viewBox="0 0 120 48" aria-hidden="true">
        <rect x="46" y="14" width="28" height="20" rx="5" className="tp-blank" />
        <path d="M60 19v10M55 24h10" className="tp-plus" />
      </svg>
    );
  }
  const xs = nodes.map((n) => n.position.x);
  const ys = nodes.map((n) => n.position.y);
  const [minX, maxX, minY, maxY] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const at = (id: string) => {
    const n = nodes.find((m) => m.id === id)!;
    return {
      x: 12 + ((n.position.x - minX) / Math.max(1, maxX - minX)) * 96,
      y: 10 + ((n.position.y - minY) / Math.max(1, maxY - minY)) * 28,
    };
  };
  return (
    <svg className="template-preview" viewBox="0 0 120 48" aria-hidden="true">
      {template.graph.edges.map((e) => {
        const a = at(e.source);
        const b = at(e.target);
        return <line key={e.id} x1={a.x} y1={a.y} x2={b.x} y2={b.y} className={e.targetHandle === 'memory' ? 'tp-edge tp-edge-res' : 'tp-edge'} />;
      })}
      {nodes.map((n) => {
        const p = at(n.id);
        return <rect key={n.id} x={p.x - 7} y={p.y - 5} width="14" height="10" rx="3" className={`tp-node tp-${n.type.split('.')[0]}`} />;
      })}
    </svg>
  );
}
