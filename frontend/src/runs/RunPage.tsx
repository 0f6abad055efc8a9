import { useState } from 'react';
import { api } from '../api/client';
import type { FactExtraction, RunStep, SentMessage, Summarization } from '../api/types';
import { Link } from '../router';
import { formatCost, formatDateTime, formatDuration, textOf } from '../ui/format';
import { ErrorState, StatusBadge } from '../ui/States';
import { useAsync } from '../ui/useAsync';

/** A run's trace: what came in, what went out, and every node's step in order. */
export function RunPage({ runId }: { runId: number }) {
  const { data: run, error, reload } = useAsync(() => api.run(runId), [runId]);
  if (error) return <ErrorState error={error} onRetry={() => void reload()} />;
  if (!run) return <div className="page-loading">Loading run…</div>;
  const longest = Math.max(1, ...run.steps.map((s) => s.duration_ms ?? 0));

  return (
    <div className="run-page">
      <div className="page-header">
        <div>
          <div className="crumbs">
            <Link to={`/workflows/${run.workflow}/runs`}>Run history</Link>
          </div>
          <h1>
            Run #{run.id} <StatusBadge status={run.status} />
          </h1>
          <p className="muted">
            {run.trigger} trigger · {formatDateTime(run.created)}
          </p>
        </div>
        <div className="page-actions">
          {run.thread && <Link className="btn btn-sm" to={`/threads/${run.thread}/memory`}>Thread memory</Link>}
          <Link className="btn btn-sm" to={`/workflows/${run.workflow}?run=${run.id}`}>Show on canvas</Link>
          {(run.status === 'running' || run.status === 'queued') && <button className="btn btn-sm" onClick={() => void reload()}>Refresh</button>}
        </div>
      </div>

      <div className="stat-row">
        <Stat label="Duration" value={formatDuration(run.duration_ms)} />
        <Stat label="Prompt tokens" value={String(run.prompt_tokens ?? 0)} />
        <Stat label="Completion tokens" value={String(run.completion_tokens ?? 0)} />
        <Stat label="Cost" value={formatCost(run.cost)} />
        <Stat label="Steps" value={String(run.steps.length)} />
      </div>

      {run.error && <div className="issue-box" role="alert"><b>Run failed:</b> {run.error}</div>}
      {run.warnings?.length > 0 && (
        <div className="warning-box">
          {run.warnings.map((w, i) => (
            <div key={i}>⚠ {w.node && <code>{w.node}</code>} {w.message}</div>
          ))}
        </div>
      )}

      <div className="io-grid">
        <TextBlock title="Input" text={run.input} />
        <TextBlock title="Output" text={run.output} />
      </div>

      {run.summarizations.length > 0 && (
        <>
          <h2 className="section-title">Summarizations</h2>
          <p className="muted small">
            Earlier messages folded into a memory's running summary before its model answered. Their tokens are in the run's totals.
          </p>
          <ol className="steps">
            {run.summarizations.map((s, i) => (
              <SummarizationRow key={i} summarization={s} />
            ))}
          </ol>
        </>
      )}

      {run.extractions.length > 0 && (
        <>
          <h2 className="section-title">Fact extractions</h2>
          <p className="muted small">After the turn, memory.facts asked a model for new and changed facts. Their tokens are in the run's totals.</p>
          <ol className="steps">
            {run.extractions.map((e, i) => (
              <ExtractionRow key={i} extraction={e} />
            ))}
          </ol>
        </>
      )}

      <h2 className="section-title">Steps</h2>
      {run.steps.length === 0 ? (
        <p className="muted">No node ran{run.status === 'queued' ? ' yet' : ''}.</p>
      ) : (
        <ol className="steps">
          {run.steps.map((step, i) => (
            <StepRow key={`${step.node}-${i}`} step={step} longest={longest} />
          ))}
        </ol>
      )}
    </div>
  );
}

function Stat({ label, value }: { label: string; value: string }) {
  return (
    <div className="stat">
      <div className="stat-value">{value}</div>
      <div className="stat-label">{label}</div>
    </div>
  );
}

function TextBlock({ title, text }: { title: string; text: string }) {
  return (
    <div className="text-block">
      <h3>{title}</h3>
      {text ? <pre>{text}</pre> : <p className="muted small">empty</p>}
    </div>
  );
}

/** The model facts a step's details usually carry, shown as chips. */
function detailChips(details: Record<string, unknown>): [string, string][] {
  const chips: [string, string][] = [];
  const add = (label: string, value: unknown) => {
    if (value !== undefined && value !== null && value !== '') chips.push([label, textOf(value)]);
  };
  add('model', details.model);
  add('route', details.route);
  add('prompt tokens', details.prompt_tokens);
  add('completion tokens', details.completion_tokens);
  if (typeof details.cost === 'number') add('cost', formatCost(details.cost));
  if (details.cut === true) add('cut', 'at max tokens: the text ends mid-answer');
  return chips;
}

function StepRow({ step, longest }: { step: RunStep; longest: number }) {
  const [open, setOpen] = useState(step.status === 'failed');
  const chips = detailChips(step.details ?? {});
  return (
    <li className={`step step-${step.status}`} data-testid={`step-${step.node}`}>
      <button className="step-head" onClick={() => setOpen(!open)} aria-expanded={open}>
        <span className={`step-icon step-icon-${step.status}`} aria-hidden="true">
          {step.status === 'succeeded' ? '✓' : step.status === 'failed' ? '✕' : '…'}
        </span>
        <span className="step-node">{step.node}</span>
        <span className="muted small">{step.type}</span>
        <span className="step-chips">
          {chips.map(([label, value]) => (
            <span key={label} className="chip"><span className="muted">{label}</span> {value}</span>
          ))}
        </span>
        <span className="step-bar" aria-hidden="true">
          <span style={{ width: `${Math.max(2, ((step.duration_ms ?? 0) / longest) * 100)}%` }} />
        </span>
        <span className="step-duration">{formatDuration(step.duration_ms)}</span>
      </button>
      {step.error && <div className="step-error">{step.error}</div>}
      {open && (
        <div className="step-body">
          <div className="io-grid">
            <TextBlock title="Input" text={step.input} />
            <TextBlock title="Output" text={step.output} />
          </div>
          {step.messages && <SentMessages messages={step.messages} title="Sent to the model" />}
          {Object.keys(step.details ?? {}).length > 0 && (
            <div className="text-block">
              <h3>Details</h3>
              <pre>{JSON.stringify(step.details, null, 2)}</pre>
            </div>
          )}
        </div>
      )}
    </li>
  );
}

/** Exactly the messages a model was sent, as recorded when they were sent. */
function SentMessages({ messages, title }: { messages: SentMessage[]; title: string }) {
  return (
    <div className="text-block sent-messages" data-testid="sent-messages">
      <h3>
        {title} <span className="muted small">({messages.length} message{messages.length === 1 ? '' : 's'}, exactly as sent)</span>
      </h3>
      <ol className="sent-list">
        {messages.map((m, i) => (
          <li key={i} className={`sent-msg sent-${m.role}`}>
            <span className={`role role-${m.role}`}>{m.role}</span>
            <pre>{m.content}</pre>
          </li>
        ))}
      </ol>
    </div>
  );
}

function SummarizationRow({ summarization: s }: { summarization: Summarization }) {
  const [open, setOpen] = useState(s.status === 'failed');
  const ok = s.status === 'ok';
  return (
    <li className={`step step-${ok ? 'succeeded' : 'failed'}`} data-testid={`summarization-${s.node}`}>
      <button className="step-head" onClick={() => setOpen(!open)} aria-expanded={open}>
        <span className={`step-icon step-icon-${ok ? 'succeeded' : 'failed'}`} aria-hidden="true">{ok ? '✓' : '✕'}</span>
        <span className="step-node">{s.node}</span>
        <span className="muted small">summary of messages {s.from_seq}–{s.through_seq} ({s.message_count})</span>
        <span className="step-chips">
          {s.model && <span className="chip"><span className="muted">model</span> {s.model}</span>}
          <span className="chip"><span className="muted">prompt tokens</span> {s.prompt_tokens}</span>
          <span className="chip"><span className="muted">completion tokens</span> {s.completion_tokens}</span>
        </span>
        <span className="step-duration">{formatDuration(s.duration_ms)}</span>
      </button>
      {s.error && <div className="step-error">{ok ? s.error : `Fell back to the uncompressed history: ${s.error}`}</div>}
      {open && s.messages?.length > 0 && (
        <div className="step-body">
          <SentMessages messages={s.messages} title="Sent to the summarizer" />
        </div>
      )}
    </li>
  );
}

function ExtractionRow({ extraction: e }: { extraction: FactExtraction }) {
  const [open, setOpen] = useState(e.status === 'failed');
  const ok = e.status === 'ok';
  return (
    <li className={`step step-${ok ? 'succeeded' : 'failed'}`} data-testid={`extraction-${e.node}`}>
      <button className="step-head" onClick={() => setOpen(!open)} aria-expanded={open}>
        <span className={`step-icon step-icon-${ok ? 'succeeded' : 'failed'}`} aria-hidden="true">{ok ? '✓' : '✕'}</span>
        <span className="step-node">{e.node}</span>
        <span className="muted small">{ok ? `${e.added} new, ${e.updated} changed` : 'facts unchanged'}</span>
        <span className="step-chips">
          {e.model && <span className="chip"><span className="muted">model</span> {e.model}</span>}
          <span className="chip"><span className="muted">prompt tokens</span> {e.prompt_tokens}</span>
          <span className="chip"><span className="muted">completion tokens</span> {e.completion_tokens}</span>
        </span>
        <span className="step-duration">{formatDuration(e.duration_ms)}</span>
      </button>
      {e.error && <div className="step-error">{e.error}</div>}
      {open && (
        <div className="step-body">
          {e.messages?.length > 0 && <SentMessages messages={e.messages} title="Sent to the extracting model" />}
          {e.reply && <TextBlock title="Its answer" text={e.reply} />}
        </div>
      )}
    </li>
  );
}
