import { useState } from 'react';
import { api } from '../api/client';
import type { FactExtraction, RunRound, RunStep, SentMessage, Summarization, ToolCall } from '../api/types';
import { Link } from '../router';
import { formatCost, formatDateTime, formatDuration, textOf } from '../ui/format';
import { ErrorState, StatusBadge } from '../ui/States';
import { useAsync } from '../ui/useAsync';
import { callCount, callsIn, offeredTools, prettyJson, roundSummary } from './rounds';

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
  const calls = callCount(step);
  if (step.rounds?.length) chips.push(['tool calls', `${calls} in ${step.rounds.length} round${step.rounds.length === 1 ? '' : 's'}`]);
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
          {step.rounds?.length ? (
            <Rounds rounds={step.rounds} answer={step.output} failed={step.status === 'failed'} />
          ) : (
            step.messages && <SentMessages messages={step.messages} title="Sent to the model" />
          )}
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
            <div className="sent-body">
              {m.tool_call_id && <div className="muted small">answers {m.tool_call_id}</div>}
              {(m.content || !m.tool_calls?.length) && <pre>{m.content}</pre>}
              {callsIn(m).map((call) => (
                <div key={call.id} className="sent-call small">
                  calls <code>{call.name}</code> <span className="muted">({call.id})</span>
                  <pre>{prettyJson(call.arguments)}</pre>
                </div>
              ))}
            </div>
          </li>
        ))}
      </ol>
    </div>
  );
}

/** A model that called tools: each round, what it was sent and offered, the calls it asked for
 * with what each tool answered, then its final answer. */
function Rounds({ rounds, answer, failed }: { rounds: RunRound[]; answer: string; failed: boolean }) {
  return (
    <div className="rounds" data-testid="rounds">
      <h3>
        Rounds <span className="muted small">(each request to the model, and the tools it called)</span>
      </h3>
      <ol className="round-list">
        {rounds.map((round, i) => (
          <RoundView key={i} round={round} number={i + 1} />
        ))}
      </ol>
      {!failed && <TextBlock title="Final answer" text={answer} />}
    </div>
  );
}

function RoundView({ round, number }: { round: RunRound; number: number }) {
  const tools = offeredTools(round);
  return (
    <li className="round" data-testid={`round-${number}`}>
      <div className="round-head">
        <b>Round {number}</b> <span className="muted small">{roundSummary(round)}</span>
      </div>
      <details className="round-sent">
        <summary>
          Sent to the model: {round.messages.length} message{round.messages.length === 1 ? '' : 's'}, {tools.length} tool{tools.length === 1 ? '' : 's'}
          {round.tool_choice ? ` (tool_choice: ${round.tool_choice})` : ''}
        </summary>
        <SentMessages messages={round.messages} title="Messages" />
        {tools.length > 0 && (
          <div className="text-block" data-testid="offered-tools">
            <h3>Tools offered</h3>
            {tools.map((tool) => (
              <details key={tool.name} className="offered-tool">
                <summary>
                  <code>{tool.name}</code> <span className="muted small">{tool.description}</span>
                </summary>
                <pre>{JSON.stringify(tool.parameters, null, 2)}</pre>
              </details>
            ))}
          </div>
        )}
      </details>
      {round.tool_calls.length > 0 && (
        <ol className="tool-calls">
          {round.tool_calls.map((call, i) => (
            <ToolCallView key={`${call.id}-${i}`} call={call} />
          ))}
        </ol>
      )}
    </li>
  );
}

function ToolCallView({ call }: { call: ToolCall }) {
  return (
    <li className={`tool-call${call.error ? ' tool-call-failed' : ''}`} data-testid={`tool-call-${call.id}`}>
      <div className="tool-call-head">
        <span className={`step-icon step-icon-${call.error ? 'failed' : 'succeeded'}`} aria-hidden="true">{call.error ? '✕' : '✓'}</span>
        <code className="tool-call-name">{call.name}</code>
        <span className="muted small">{call.tool_node ? `tool node ${call.tool_node}` : 'no such tool'} · {call.id}</span>
        <span className="step-duration">{formatDuration(call.duration_ms)}</span>
      </div>
      {call.error && <div className="step-error" data-testid="tool-call-error">{call.error}</div>}
      <div className="io-grid">
        <div className="text-block" data-testid="tool-call-arguments">
          <h3>Arguments</h3>
          <pre>{prettyJson(call.arguments)}</pre>
        </div>
        <div className="text-block" data-testid="tool-call-result">
          <h3>Result</h3>
          {call.result ? <pre>{prettyJson(call.result)}</pre> : <p className="muted small">{call.error ? 'none: the model was told the error' : 'empty'}</p>}
        </div>
      </div>
    </li>
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
