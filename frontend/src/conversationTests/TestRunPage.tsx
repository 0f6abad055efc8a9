// A test run's results: every test, turn by turn, the message, the reply and each check's verdict
// with why; a failed sent_* check shows exactly what the model was sent. Live while it runs.
import { useState } from 'react';
import { Link } from '../router';
import { formatCost, formatDateTime, formatDuration } from '../ui/format';
import { ErrorState, StatusBadge } from '../ui/States';
import type { CheckResult, TestResult } from './api';
import { countsLine, describeCheck, isFinished, versionLabel } from './checks';
import { useTestRun } from './progress';
import './tests.css';

export function TestRunPage({ testRunId }: { testRunId: number }) {
  const { run, error, reload } = useTestRun(testRunId);
  if (error) return <ErrorState error={error} onRetry={reload} />;
  if (!run) return <div className="page-loading">Loading test run…</div>;
  return (
    <div className="ct-run-page" data-testid="test-run-page" data-status={run.status}>
      <div className="page-header">
        <div>
          <div className="crumbs"><Link to={`/workflows/${run.workflow}?tab=tests`}>Workflow tests</Link></div>
          <h1>Test run #{run.id} <StatusBadge status={run.status} /></h1>
          <p className="muted">
            {versionLabel(run.version)} · {countsLine(run)} · {formatDateTime(run.created)}
            {run.purpose === 'publish' ? ' · run by publishing' : run.purpose === 'cli' ? ' · run by skein_test' : ''}
          </p>
        </div>
        <div className="stat-row">
          <div className="stat"><div className="stat-value">{run.prompt_tokens + run.completion_tokens}</div><div className="stat-label">Tokens</div></div>
          <div className="stat"><div className="stat-value">{formatCost(run.cost)}</div><div className="stat-label">Cost</div></div>
        </div>
      </div>
      {!isFinished(run.status) && <p className="muted small">Running… results appear as each turn finishes.</p>}
      {run.results.map((result) => <ResultCard key={result.id} result={result} />)}
    </div>
  );
}

function ResultCard({ result }: { result: TestResult }) {
  const [open, setOpen] = useState(result.status !== 'passed');
  return (
    <article className={`ct-result ct-result-${result.status}`} data-testid={`result-${result.name}`}>
      <button className="ct-result-head" onClick={() => setOpen(!open)} aria-expanded={open}>
        <span className={`badge badge-${result.status}`}>{result.status}</span>
        <b>{result.name}</b>
        <span className="muted small">{result.turns.length}/{result.script.length} turns · {formatDuration(result.duration_ms)}</span>
        {result.thread && <Link to={`/threads/${result.thread}/memory`} className="small" onClick={(e) => e.stopPropagation()}>thread #{result.thread}</Link>}
      </button>
      {result.error && <div className="issue-box">{result.error}</div>}
      {open && result.turns.map((turn, t) => (
        <div key={t} className="ct-result-turn">
          <div className="ct-bubble ct-bubble-user"><span className="muted small">Turn {t + 1}</span> {turn.message}</div>
          <div className="ct-bubble ct-bubble-reply">
            {turn.reply || <span className="muted">(no reply)</span>}
            {' '}<Link to={`/runs/${turn.run}`} className="small">trace</Link>
          </div>
          {turn.reference !== undefined && turn.reference !== turn.reply && (
            <div className="muted small">Reply when the test was saved: {turn.reference}</div>
          )}
          <ul className="ct-checks">
            {turn.checks.map((check, c) => <CheckLine key={c} check={check} />)}
          </ul>
        </div>
      ))}
    </article>
  );
}

function CheckLine({ check }: { check: CheckResult }) {
  const [showSent, setShowSent] = useState(check.status !== 'passed');
  return (
    <li className={`ct-check-result ct-check-${check.status}`} data-testid="check-result" data-status={check.status}>
      <span className="ct-check-mark" aria-hidden="true">{check.status === 'passed' ? '✓' : check.status === 'failed' ? '✕' : '!'}</span>
      <span className="ct-check-what">{describeCheck(check.check)}</span>
      <div className="ct-check-detail small">{check.detail}</div>
      {check.sent && (
        <div className="ct-sent">
          <button className="link-button small" onClick={() => setShowSent(!showSent)}>{showSent ? 'Hide' : 'Show'} what the model was sent ({check.sent.length} messages)</button>
          {showSent && (
            <table className="table memory-table" data-testid="sent-messages">
              <tbody>
                {check.sent.map((m, i) => (
                  <tr key={i}><td className={`role role-${m.role}`}>{m.role}</td><td className="memory-content">{m.content}</td></tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
    </li>
  );
}
