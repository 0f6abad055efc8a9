// Two test runs side by side (the draft against the published version, v3 against v4): which tests
// changed verdict, and turn by turn the replies of both, with the changed ones marked.
import { useEffect, useState } from 'react';
import { Link } from '../router';
import { ErrorState } from '../ui/States';
import { useAsync } from '../ui/useAsync';
import { testsApi, type Comparison } from './api';
import { countsLine, describeCheck, isFinished, versionLabel } from './checks';
import { useTestRun } from './progress';
import './tests.css';

export function ComparePage({ a, b }: { a: number; b: number }) {
  const left = useTestRun(a);
  const right = useTestRun(b);
  const done = !!left.run && !!right.run && isFinished(left.run.status) && isFinished(right.run.status);
  const compared = useAsync(() => testsApi.compare(a, b), [a, b]);
  const { reload } = compared;
  // Compared again once both runs are over: the final verdicts and replies.
  useEffect(() => {
    if (done) void reload();
  }, [done, reload]);
  const [onlyChanged, setOnlyChanged] = useState(false);

  if (compared.error) return <ErrorState error={compared.error} onRetry={() => void compared.reload()} />;
  const data: Comparison | undefined = compared.data;
  if (!data) return <div className="page-loading">Comparing…</div>;
  const tests = onlyChanged ? data.tests.filter((t) => t.verdict_changed || t.replies_changed) : data.tests;

  return (
    <div className="ct-compare" data-testid="compare-page">
      <div className="page-header">
        <div>
          <h1>{versionLabel(data.a.version)} vs {versionLabel(data.b.version)}</h1>
          <p className="muted">
            <Link to={`/test-runs/${data.a.id}`}>Run #{data.a.id}</Link> ({countsLine(data.a)}) ·{' '}
            <Link to={`/test-runs/${data.b.id}`}>Run #{data.b.id}</Link> ({countsLine(data.b)})
          </p>
          <p data-testid="compare-summary">
            <b>{data.verdicts_changed}</b> test{data.verdicts_changed === 1 ? '' : 's'} changed verdict · <b>{data.replies_changed}</b> repl{data.replies_changed === 1 ? 'y' : 'ies'} changed
            {!done && <span className="muted"> · still running…</span>}
          </p>
        </div>
        <label className="field-check"><input type="checkbox" checked={onlyChanged} onChange={(e) => setOnlyChanged(e.target.checked)} /> Only what changed</label>
      </div>
      {tests.map((test) => (
        <article key={`${test.test}-${test.name}`} className={`ct-result ${test.verdict_changed ? 'ct-changed' : ''}`} data-testid={`compare-${test.name}`}>
          <div className="ct-result-head">
            <b>{test.name}</b>
            <span className={`badge badge-${test.a?.status ?? 'queued'}`}>{test.a?.status ?? 'absent'}</span>→
            <span className={`badge badge-${test.b?.status ?? 'queued'}`}>{test.b?.status ?? 'absent'}</span>
            {test.verdict_changed && <span className="badge badge-warning">verdict changed</span>}
          </div>
          <table className="table ct-compare-table">
            <thead><tr><th>Message</th><th>{versionLabel(data.a.version)}</th><th>{versionLabel(data.b.version)}</th></tr></thead>
            <tbody>
              {test.turns.map((turn) => (
                <tr key={turn.turn} className={turn.reply_changed ? 'ct-reply-changed' : ''}>
                  <td>{turn.message}</td>
                  {[turn.a, turn.b].map((side, i) => (
                    <td key={i}>
                      {side ? side.reply : <span className="muted">not run</span>}
                      {side?.failed_checks.map((c, k) => <div key={k} className={`small ct-check-${c.status}`}>✕ {describeCheck(c.check)}</div>)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </article>
      ))}
    </div>
  );
}
