import { useState } from 'react';
import { api } from '../api/client';
import { Link, navigate } from '../router';
import { formatDuration, timeAgo } from '../ui/format';
import { EmptyState, ErrorState, StatusBadge } from '../ui/States';
import { useAsync } from '../ui/useAsync';
import { Pager } from '../ui/Pager';

const PAGE_SIZE = 25;
const STATUSES = ['', 'succeeded', 'failed', 'running', 'queued'];
const TRIGGERS = ['', 'chat', 'webhook', 'schedule', 'manual'];

/** Run history, of one workflow or of all; filters by status and trigger; paginated. */
export function RunsPage({ workflowId }: { workflowId?: number }) {
  const [offset, setOffset] = useState(0);
  const [status, setStatus] = useState('');
  const [trigger, setTrigger] = useState('');
  const runs = useAsync(
    () => api.runs({ workflow: workflowId, status, trigger, limit: PAGE_SIZE, offset }),
    [workflowId, status, trigger, offset],
  );
  const workflow = useAsync(() => (workflowId ? api.workflow(workflowId) : Promise.resolve(null)), [workflowId]);
  const page = runs.data;
  const filtered = status || trigger;

  return (
    <div className="runs-page">
      <div className="page-header">
        <div>
          {workflowId && (
            <div className="crumbs">
              <Link to="/">Workflows</Link> / <Link to={`/workflows/${workflowId}`}>{workflow.data?.name ?? `#${workflowId}`}</Link>
            </div>
          )}
          <h1>{workflowId ? 'Run history' : 'All runs'}</h1>
          <p className="muted">Every turn of every trigger, with its trace.</p>
        </div>
        <div className="page-actions filters">
          <FilterSelect label="Status" value={status} options={STATUSES} onChange={(v) => { setStatus(v); setOffset(0); }} />
          <FilterSelect label="Trigger" value={trigger} options={TRIGGERS} onChange={(v) => { setTrigger(v); setOffset(0); }} />
          <button className="btn btn-sm" onClick={() => void runs.reload()}>Refresh</button>
        </div>
      </div>

      {runs.error && <ErrorState error={runs.error} onRetry={() => void runs.reload()} />}
      {page && page.results.length === 0 && (
        <EmptyState title={filtered ? 'No run matches these filters' : 'No runs yet'}>
          {filtered
            ? 'Clear the filters to see every run.'
            : workflowId
              ? <>Open the <Link to={`/workflows/${workflowId}`}>editor</Link> and send a message in the Test chat; each turn appears here with its trace.</>
              : 'Runs appear here when a workflow is tested in the editor, called by a webhook, on a schedule, or from the chat widget.'}
        </EmptyState>
      )}
      {page && page.results.length > 0 && (
        <>
          <table className="table runs-table">
            <thead>
              <tr>
                <th>Run</th>
                {!workflowId && <th>Workflow</th>}
                <th>Trigger</th>
                <th>Thread</th>
                <th>Status</th>
                <th>Input</th>
                <th>Duration</th>
                <th>Tokens</th>
                <th>When</th>
              </tr>
            </thead>
            <tbody>
              {page.results.map((run) => (
                <tr key={run.id} className="clickable" onClick={() => navigate(`/runs/${run.id}`)} data-testid={`run-row-${run.id}`}>
                  <td><Link to={`/runs/${run.id}`}>#{run.id}</Link></td>
                  {!workflowId && <td><Link to={`/workflows/${run.workflow}`} onClick={(e) => e.stopPropagation()}>{run.workflow_name ?? `#${run.workflow}`}</Link></td>}
                  <td>{run.trigger}</td>
                  <td>{run.thread ? <Link to={`/threads/${run.thread}`} onClick={(e) => e.stopPropagation()} data-testid={`run-thread-${run.id}`}>#{run.thread}</Link> : <span className="muted">—</span>}</td>
                  <td><StatusBadge status={run.status} />{run.warnings?.length ? <span className="badge badge-warning" title={run.warnings.map((w) => w.message).join('\n')}>⚠ {run.warnings.length}</span> : null}</td>
                  <td className="truncate" title={run.input}>{run.input || <span className="muted">—</span>}</td>
                  <td>{formatDuration(run.duration_ms)}</td>
                  <td className="muted">{(run.prompt_tokens ?? 0) + (run.completion_tokens ?? 0) || '—'}</td>
                  <td className="muted">{timeAgo(run.created)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager offset={offset} shown={page.results.length} count={page.count} hasNext={!!page.next} pageSize={PAGE_SIZE} onOffset={setOffset} />
        </>
      )}
    </div>
  );
}

function FilterSelect({ label, value, options, onChange }: { label: string; value: string; options: string[]; onChange: (value: string) => void }) {
  return (
    <label>
      <span className="muted small">{label}</span>
      <select value={value} onChange={(e) => onChange(e.target.value)} aria-label={`Filter by ${label.toLowerCase()}`}>
        {options.map((o) => <option key={o} value={o}>{o || 'any'}</option>)}
      </select>
    </label>
  );
}
