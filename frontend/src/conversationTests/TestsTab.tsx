// The editor's Tests tab: the workflow's conversation tests with their last verdicts, Run (on the
// draft or a published version) with live progress, the publish gate, files, and the recent runs to
// open or compare. The test editor opens over the canvas.
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api, ApiError } from '../api/client';
import { useEditor } from '../editor/store';
import { Link, navigate } from '../router';
import { formatCost, timeAgo } from '../ui/format';
import { toast } from '../ui/toast';
import { testsApi, type ConversationTest, type TestRunSummary } from './api';
import { countsLine, isFinished, targetsOf, versionLabel } from './checks';
import { useTestRun } from './progress';
import { TestEditor } from './TestEditor';
import './tests.css';

export function TestsTab({ workflowId, openTest }: { workflowId: number; openTest?: number | null }) {
  const [tests, setTests] = useState<ConversationTest[] | null>(null);
  const [runs, setRuns] = useState<TestRunSummary[]>([]);
  const [gate, setGate] = useState<boolean | null>(null);
  const [editing, setEditing] = useState<ConversationTest | 'new' | null>(null);
  const [version, setVersion] = useState<number | 'draft'>('draft');
  const [current, setCurrent] = useState<number | null>(null);
  const [picked, setPicked] = useState<number[]>([]);
  const nodes = useEditor((s) => s.nodes);
  const targets = useMemo(() => targetsOf(nodes), [nodes]);
  const publishedVersion = useEditor((s) => s.publishedVersion);
  const live = useTestRun(current);

  const reload = useCallback(async () => {
    try {
      const [list, recent] = await Promise.all([testsApi.list(workflowId), testsApi.runs(workflowId)]);
      setTests(list);
      setRuns(recent.results);
    } catch (error) {
      toast(`Could not load the tests: ${(error as Error).message}`, 'error');
    }
  }, [workflowId]);

  useEffect(() => {
    void reload();
    testsApi.settings(workflowId).then((s) => setGate(s.publish_requires_passing), () => {});
  }, [reload, workflowId]);

  // `?test=ID` (from "Save as test"): open that test once it is loaded.
  const opened = useRef(false);
  useEffect(() => {
    if (opened.current || !openTest || !tests) return;
    const test = tests.find((t) => t.id === openTest);
    if (test) {
      opened.current = true;
      setEditing(test);
    }
  }, [openTest, tests]);

  const finished = live.run !== null && isFinished(live.run.status);
  useEffect(() => {
    if (finished) void reload();
  }, [finished, reload]);

  const start = async (ids?: number[]) => {
    const editor = useEditor.getState();
    if (version === 'draft' && !(await editor.save())) {
      toast('Save the draft before running its tests.', 'error');
      return;
    }
    try {
      const { test_run } = await testsApi.run(workflowId, { version, ...(ids ? { tests: ids } : {}) });
      setCurrent(test_run);
    } catch (error) {
      if (error instanceof ApiError && error.issues.length && version === 'draft') editor.setIssues(error.issues);
      toast(`Could not run the tests: ${(error as Error).message}`, 'error', 6000);
    }
  };

  const toggleGate = async (value: boolean) => {
    try {
      setGate((await testsApi.setSettings(workflowId, value)).publish_requires_passing);
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };

  const importFile = async (file: File) => {
    const format = file.name.toLowerCase().endsWith('.csv') ? 'csv' : 'jsonl';
    try {
      const added = await testsApi.importFile(workflowId, format, await file.text());
      toast(`Imported ${added.length} test${added.length === 1 ? '' : 's'}.`, 'success');
      void reload();
    } catch (error) {
      const issues = error instanceof ApiError ? ((error.body as { errors?: { line: number | null; message: string }[] })?.errors ?? []) : [];
      toast(issues.length ? issues.slice(0, 3).map((i) => (i.line ? `line ${i.line}: ` : '') + i.message).join('; ') : (error as Error).message, 'error', 8000);
    }
  };

  const versions: (number | 'draft')[] = ['draft', ...Array.from({ length: publishedVersion ?? 0 }, (_, i) => (publishedVersion ?? 0) - i)];

  return (
    <div className="ct-tab" data-testid="tests-tab">
      <p className="muted small">Scripted conversations with checks on the replies, on what each model was sent and on memory. Each runs in a fresh thread.</p>
      <div className="ct-run-bar">
        <select value={String(version)} onChange={(e) => setVersion(e.target.value === 'draft' ? 'draft' : Number(e.target.value))} aria-label="Version to test">
          {versions.map((v) => <option key={v} value={String(v)}>{v === 'draft' ? 'Draft' : `Version ${v}`}</option>)}
        </select>
        <button className="btn btn-primary btn-sm" onClick={() => void start()} disabled={!tests?.length || (live.run !== null && !finished)}>
          ▶ Run all
        </button>
      </div>
      {current !== null && <Progress run={live.run} id={current} live={live.live} />}

      <div className="ct-section-head">
        <h3>Tests {tests ? `(${tests.length})` : ''}</h3>
        <div className="button-row">
          <button className="btn btn-sm" onClick={() => setEditing('new')}>+ New test</button>
          <ThreadPicker workflowId={workflowId} onSaved={(test) => { void reload(); setEditing(test); }} />
        </div>
      </div>
      {tests?.length === 0 && <p className="muted small">No tests yet. Write one, or chat in the test chat and save the thread as a test.</p>}
      <ul className="ct-list">
        {tests?.map((test) => (
          <li key={test.id} className="ct-list-item" data-testid={`test-${test.id}`}>
            <button className="link-button ct-test-name" onClick={() => setEditing(test)}>{test.name}</button>
            <span className="muted small">{test.turns.length} turn{test.turns.length === 1 ? '' : 's'}</span>
            {test.errors.length > 0 && <span className="badge badge-warning" title={test.errors.map((e) => e.message).join('\n')}>cannot run</span>}
            {test.last && (
              <Link to={`/test-runs/${test.last.test_run}`} className={`badge badge-${test.last.status}`} title={`last run on ${versionLabel(test.last.version)} ${timeAgo(test.last.finished)}`}>
                {test.last.status}
              </Link>
            )}
            <button className="btn btn-ghost btn-sm" onClick={() => void start([test.id])} aria-label={`Run ${test.name}`} title="Run this test">▶</button>
          </li>
        ))}
      </ul>

      <label className="ct-gate field-check">
        <input type="checkbox" checked={!!gate} disabled={gate === null} onChange={(e) => void toggleGate(e.target.checked)} />
        Publish only when the tests pass
      </label>
      <div className="button-row ct-files">
        <label className="btn btn-ghost btn-sm">
          Import…
          <input type="file" accept=".jsonl,.json,.csv" hidden onChange={(e) => { const f = e.target.files?.[0]; e.target.value = ''; if (f) void importFile(f); }} />
        </label>
        <a className="btn btn-ghost btn-sm" href={`/api/workflows/${workflowId}/tests/export/?format=jsonl`} download>Export JSONL</a>
        <a className="btn btn-ghost btn-sm" href={`/api/workflows/${workflowId}/tests/export/?format=csv`} download>Export CSV</a>
      </div>

      {runs.length > 0 && (
        <>
          <div className="ct-section-head">
            <h3>Recent runs</h3>
            <button className="btn btn-sm" disabled={picked.length !== 2} onClick={() => navigate(`/test-runs/${picked[0]}/compare/${picked[1]}`)}
              title="Tick two runs (e.g. the draft and the published version) to see them side by side">
              Compare
            </button>
          </div>
          <ul className="ct-runs">
            {runs.map((run) => (
              <li key={run.id}>
                <input type="checkbox" aria-label={`Pick run ${run.id} to compare`} checked={picked.includes(run.id)}
                  onChange={(e) => setPicked(e.target.checked ? [...picked.filter((p) => p !== run.id), run.id].slice(-2) : picked.filter((p) => p !== run.id))} />
                <Link to={`/test-runs/${run.id}`}>#{run.id}</Link>
                <span className={`badge badge-${run.status}`}>{run.status}</span>
                <span className="small">{versionLabel(run.version)}</span>
                <span className="muted small">{isFinished(run.status) ? countsLine(run) : 'running'} · {timeAgo(run.created)}</span>
              </li>
            ))}
          </ul>
        </>
      )}

      {editing && (
        <TestEditor
          workflowId={workflowId}
          test={editing === 'new' ? null : editing}
          targets={targets}
          onClose={() => setEditing(null)}
          onSaved={() => { setEditing(null); void reload(); }}
          onDeleted={() => { setEditing(null); void reload(); }}
        />
      )}
    </div>
  );
}

function Progress({ run, id, live }: { run: ReturnType<typeof useTestRun>['run']; id: number; live: boolean }) {
  if (!run) return <div className="ct-progress muted small">Starting test run #{id}…</div>;
  return (
    <div className="ct-progress" data-testid="test-progress" data-status={run.status} data-live={live}>
      <div className="ct-progress-head">
        <span className={`badge badge-${run.status}`}>{run.status}</span>
        <span className="small">{countsLine(run)}</span>
        <Link to={`/test-runs/${run.id}`} className="small">Results →</Link>
      </div>
      <ul className="ct-progress-list">
        {run.results.map((r) => (
          <li key={r.id}>
            <span className={`ct-dot ct-dot-${r.status}`} aria-hidden="true" />
            <span className="truncate">{r.name}</span>
            <span className="muted small">{r.turns.length}/{r.script.length} turns{r.cost ? ` · ${formatCost(r.cost)}` : ''}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** "From a thread…": save one of this workflow's recent threads as a test. */
function ThreadPicker({ workflowId, onSaved }: { workflowId: number; onSaved: (test: ConversationTest) => void }) {
  const [threads, setThreads] = useState<{ thread: number; input: string; created: string }[] | null>(null);
  const open = async () => {
    const runs = await api.runs({ workflow: workflowId, trigger: 'chat', limit: 100 }).catch(() => null);
    const seen = new Map<number, { thread: number; input: string; created: string }>();
    for (const run of runs?.results ?? []) if (run.thread && !seen.has(run.thread)) seen.set(run.thread, { thread: run.thread, input: run.input, created: run.created });
    setThreads([...seen.values()].slice(0, 15));
  };
  const save = async (thread: number) => {
    try {
      const test = await testsApi.fromThread(thread);
      setThreads(null);
      toast(`Saved thread #${thread} as “${test.name}”: add checks to its turns.`, 'success');
      onSaved(test);
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };
  return (
    <span className="ct-picker">
      <button className="btn btn-sm" onClick={() => (threads ? setThreads(null) : void open())}>From a thread…</button>
      {threads && (
        <div className="ct-picker-menu" role="menu">
          {threads.length === 0 && <div className="muted small">No chat threads yet: chat in the test chat first.</div>}
          {threads.map((t) => (
            <button key={t.thread} role="menuitem" className="ct-picker-item" onClick={() => void save(t.thread)}>
              <b>#{t.thread}</b> <span className="truncate">{t.input}</span> <span className="muted small">{timeAgo(t.created)}</span>
            </button>
          ))}
        </div>
      )}
    </span>
  );
}
