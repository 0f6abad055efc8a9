import { ReactFlowProvider, useReactFlow } from '@xyflow/react';
import { lazy, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api, ApiError } from '../api/client';
import type { Provider } from '../api/types';
import { Link } from '../router';
import { TopBar } from '../ui/AppShell';
import { Deferred } from '../ui/Deferred';
import { ErrorState } from '../ui/States';
import { toast } from '../ui/toast';
import { download, exportFilename, exportWorkflow, toExport } from '../workflows/transfer';
import { Canvas, FIT_OPTIONS } from './Canvas';
import { loadEditorData } from './data';
import { registerNodeTypes } from './GenericNode';
import { useAutosave, useEditorShortcuts, saveNow } from './hooks';
import { Inspector } from './Inspector';
import { Palette } from './Palette';
import { VersionsMenu } from './VersionsMenu';
import { saveStatus, toGraph, useEditor } from './store';

// Loaded when first opened: the test chat (the widget's chat view) and the Share / Triggers panel.
const TestPanel = lazy(() => import('./TestPanel').then((m) => ({ default: m.TestPanel })));
const SharePanel = lazy(() => import('../publish/SharePanel').then((m) => ({ default: m.SharePanel })));
const TestsTab = lazy(() => import('../conversationTests/TestsTab').then((m) => ({ default: m.TestsTab })));

type Loaded = { status: 'loading' } | { status: 'ready' } | { status: 'error'; error: Error };

export function EditorPage({ workflowId }: { workflowId: number }) {
  const [loaded, setLoaded] = useState<Loaded>({ status: 'loading' });
  const [providers, setProviders] = useState<Provider[]>([]);

  const load = useCallback(async () => {
    setLoaded({ status: 'loading' });
    try {
      const { specs, workflow, providers: providerList, modelDefault } = await loadEditorData(workflowId);
      registerNodeTypes([...specs.map((s) => s.type), ...(workflow.graph?.nodes ?? []).map((n) => n.type)]);
      useEditor.getState().setSpecs(specs);
      useEditor.getState().setModelDefault(modelDefault);
      useEditor.getState().load(workflow);
      setProviders(providerList);
      setLoaded({ status: 'ready' });
      // `?run=12` (from a run trace): light the nodes up as that run left them.
      const runParam = Number(new URLSearchParams(window.location.search).get('run'));
      if (runParam) {
        api.run(runParam).then((run) => useEditor.getState().showRun(run), () => toast('Could not load that run.', 'error'));
      }
    } catch (error) {
      setLoaded({ status: 'error', error: error as Error });
    }
  }, [workflowId]);

  useEffect(() => {
    void load();
  }, [load]);

  if (loaded.status !== 'ready') {
    return (
      <div className="app">
        <TopBar />
        <main className="page">
          {loaded.status === 'loading' ? (
            <div className="page-loading">Opening workflow…</div>
          ) : (
            <ErrorState
              error={loaded.error instanceof ApiError && loaded.error.status === 404 ? new Error('This workflow does not exist (or is not yours).') : loaded.error}
              onRetry={() => void load()}
            />
          )}
        </main>
      </div>
    );
  }
  return (
    <ReactFlowProvider>
      <Editor workflowId={workflowId} providers={providers} onReload={load} />
    </ReactFlowProvider>
  );
}

function Editor({ workflowId, providers, onReload }: { workflowId: number; providers: Provider[]; onReload: () => Promise<void> }) {
  useAutosave();
  useEditorShortcuts();
  const specs = useEditor((s) => s.specs);
  const specList = useMemo(() => Object.values(specs), [specs]);
  const addNode = useEditor((s) => s.addNode);
  const selectedId = useEditor((s) => (s.nodes.filter((n) => n.selected).length === 1 ? s.nodes.find((n) => n.selected)!.id : null));
  const issueCount = useEditor((s) => s.issues.length);
  // `?tab=tests` (and `&test=ID`, from "Save as test") opens the Tests tab.
  const [linked] = useState(() => new URLSearchParams(window.location.search));
  const [tab, setTab] = useState<'inspect' | 'test' | 'tests'>(linked.get('tab') === 'tests' ? 'tests' : 'inspect');
  const [testsOpened, setTestsOpened] = useState(tab === 'tests'); // then kept, with a run's progress
  // The test chat is set up the first time its tab opens, and then kept (with its conversation).
  const [testOpened, setTestOpened] = useState(false);
  const { screenToFlowPosition } = useReactFlow();
  const canvasRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (selectedId) setTab('inspect');
  }, [selectedId]);

  const addAtCenter = (type: string) => {
    const box = canvasRef.current?.getBoundingClientRect();
    const center = box ? screenToFlowPosition({ x: box.left + box.width / 2, y: box.top + box.height / 2 }) : { x: 0, y: 0 };
    const jitter = (useEditor.getState().nodes.length % 5) * 24;
    addNode(type, { x: center.x - 120 + jitter, y: center.y - 40 + jitter });
  };

  return (
    <div className="editor">
      <TopBar>
        <EditorToolbar workflowId={workflowId} />
      </TopBar>
      <ConflictBanner onReload={onReload} />
      <UnpublishedBanner />
      <div className="editor-body">
        <Palette specs={specList} onAdd={addAtCenter} />
        <div className="canvas-wrap" ref={canvasRef}>
          <Canvas />
          {issueCount > 0 && (
            <button className="problems-pill" onClick={() => { useEditor.getState().selectOnly([]); setTab('inspect'); }} data-testid="problems-pill">
              ⚠ {issueCount} problem{issueCount === 1 ? '' : 's'}
            </button>
          )}
        </div>
        <aside className="side-panel">
          <div className="tabs" role="tablist">
            <button role="tab" aria-selected={tab === 'inspect'} className={tab === 'inspect' ? 'active' : ''} onClick={() => setTab('inspect')}>
              {selectedId ? 'Node' : 'Workflow'}
            </button>
            <button role="tab" aria-selected={tab === 'test'} className={tab === 'test' ? 'active' : ''} onClick={() => { setTab('test'); setTestOpened(true); }}>
              Test chat
            </button>
            <button role="tab" aria-selected={tab === 'tests'} className={tab === 'tests' ? 'active' : ''} onClick={() => { setTab('tests'); setTestsOpened(true); }}>
              Tests
            </button>
          </div>
          <div className="tab-body" hidden={tab !== 'inspect'}>
            <Inspector providers={providers} />
          </div>
          <div className="tab-body tab-body-chat" hidden={tab !== 'test'}>
            {testOpened && (
              <Deferred>
                <TestPanel workflowId={workflowId} />
              </Deferred>
            )}
          </div>
          <div className="tab-body" hidden={tab !== 'tests'}>
            {testsOpened && (
              <Deferred>
                <TestsTab workflowId={workflowId} openTest={Number(linked.get('test')) || null} />
              </Deferred>
            )}
          </div>
        </aside>
      </div>
    </div>
  );
}

const STATUS_TEXT = { saved: 'Saved', unsaved: 'Unsaved changes', saving: 'Saving…', error: 'Save failed', conflict: 'Changed elsewhere' };

function EditorToolbar({ workflowId }: { workflowId: number }) {
  const name = useEditor((s) => s.name);
  const publishedVersion = useEditor((s) => s.publishedVersion);
  const canUndo = useEditor((s) => s.past.length > 0);
  const canRedo = useEditor((s) => s.future.length > 0);
  const hasManualTrigger = useEditor((s) => s.nodes.some((n) => n.type === 'trigger.manual'));
  const { setName, undo, redo } = useEditor.getState();
  const status = useEditor((s) => saveStatus(s));
  const saveError = useEditor((s) => s.saveError);
  const nameMissing = !name.trim();
  const { fitView } = useReactFlow();
  const [publishing, setPublishing] = useState(false);
  const [sharing, setSharing] = useState(false);

  const publish = async () => {
    setPublishing(true);
    try {
      if (!(await useEditor.getState().save())) {
        toast('Save the draft before publishing.', 'error');
        return;
      }
      const { version } = await api.publish(workflowId);
      useEditor.setState({ publishedVersion: version, unpublishedChanges: false });
      toast(`Published version ${version}. Webhooks, schedules and the widget now run it.`, 'success', 5000);
      setSharing(true);
    } catch (error) {
      const testRun = error instanceof ApiError ? (error.body as { test_run?: number } | null)?.test_run : undefined;
      if (testRun) {
        toast(`${error instanceof Error ? error.message : 'Not published'}: see test run #${testRun} in the Tests tab.`, 'error', 8000);
      } else if (error instanceof ApiError && error.issues.length) {
        useEditor.getState().setIssues(error.issues);
        useEditor.getState().selectOnly([]);
        toast(`Fix ${error.issues.length} problem${error.issues.length === 1 ? '' : 's'} before publishing.`, 'error', 6000);
      } else toast((error as Error).message, 'error');
    } finally {
      setPublishing(false);
    }
  };

  const [running, setRunning] = useState(false);
  /** The Run button: saves, runs the draft from its manual trigger with the trigger's input, lights up the nodes. */
  const runManual = async () => {
    setRunning(true);
    const editor = useEditor.getState();
    try {
      if (!(await editor.save())) {
        toast('Save the draft before running it.', 'error');
        return;
      }
      editor.startRun();
      const reply = await api.runManual(workflowId, '');
      editor.showRun(await api.run(reply.run), reply.warnings);
      if (reply.status === 'failed') toast(`Run failed: ${reply.error || 'see the trace'}`, 'error', 6000);
      else toast(`Run finished: ${reply.reply.slice(0, 120) || '(empty output)'}`, 'success', 6000);
    } catch (error) {
      if (error instanceof ApiError && error.issues.length) editor.setIssues(error.issues);
      toast(`Run failed: ${(error as Error).message}`, 'error', 6000);
    } finally {
      setRunning(false);
    }
  };

  const exportDraft = async () => {
    if (!(await useEditor.getState().save())) {
      toast('Save the draft before exporting it.', 'error');
      return;
    }
    await exportWorkflow(workflowId, useEditor.getState().name);
  };

  return (
    <div className="editor-toolbar">
      <Link to="/" className="crumb">Workflows</Link>
      <span className="crumb-sep">/</span>
      <input
        className={`name-input${nameMissing ? ' name-input-invalid' : ''}`}
        aria-label="Workflow name"
        aria-invalid={nameMissing || undefined}
        aria-describedby={nameMissing || saveError ? 'save-problem' : undefined}
        value={name}
        onChange={(e) => setName(e.target.value)}
        size={Math.max(8, Math.min(name.length + 1, 36))}
      />
      <span className={`save-status save-${status}`} data-testid="save-status" data-status={status}>
        {status === 'error' ? (
          <button className="link-button" onClick={() => void saveNow()}>
            Save failed · retry
          </button>
        ) : (
          STATUS_TEXT[status]
        )}
      </span>
      {(nameMissing || (status === 'error' && saveError)) && (
        <span className="save-problem" id="save-problem" role="alert" data-testid="save-problem">
          {nameMissing ? 'The name is not saved: a workflow needs a name.' : `Not saved: ${saveError}`}
        </span>
      )}
      <div className="toolbar-spacer" />
      <div className="toolbar-group">
        <button className="btn btn-ghost btn-icon" onClick={undo} disabled={!canUndo} title="Undo (Ctrl+Z)" aria-label="Undo">↶</button>
        <button className="btn btn-ghost btn-icon" onClick={redo} disabled={!canRedo} title="Redo (Ctrl+Shift+Z)" aria-label="Redo">↷</button>
        <button className="btn btn-ghost btn-sm" onClick={() => void fitView({ ...FIT_OPTIONS, duration: 250 })} title="Fit the whole workflow in view">Fit view</button>
      </div>
      <div className="toolbar-group">
        <button className="btn btn-ghost btn-sm" onClick={() => void exportDraft()} title="A workflow file: no secrets, providers by name">Export</button>
        <VersionsMenu workflowId={workflowId} />
        <Link className="btn btn-ghost btn-sm" to={`/workflows/${workflowId}/runs`}>Runs</Link>
        {hasManualTrigger && (
          <button className="btn btn-sm" onClick={() => void runManual()} disabled={running || status === 'conflict'} title="Run the draft from its Manual run trigger, with the trigger's input">
            {running ? 'Running…' : '▶ Run'}
          </button>
        )}
        <button className="btn btn-sm" onClick={() => setSharing(true)} title="The widget embed code, webhook URLs and schedules of the published version">
          Share / Triggers
        </button>
        <button className="btn btn-primary btn-sm" onClick={() => void publish()} disabled={publishing || status === 'conflict'}>
          {publishing ? 'Publishing…' : publishedVersion ? `Publish (live: v${publishedVersion})` : 'Publish'}
        </button>
      </div>
      {sharing && (
        <Deferred fallback={null}>
          <SharePanel workflowId={workflowId} onClose={() => setSharing(false)} />
        </Deferred>
      )}
    </div>
  );
}

/** The draft differs from what is live: webhooks, schedules and the widget still run the published version. */
function UnpublishedBanner() {
  const version = useEditor((s) => s.publishedVersion);
  const changed = useEditor((s) => s.unpublishedChanges);
  if (!version || !changed) return null;
  return (
    <div className="unpublished-banner" role="status" data-testid="unpublished-banner">
      <b>Unpublished changes.</b> The test chat runs this draft; the webhooks, schedules and widget still run version {version}. Publish to make them
      run it.
    </div>
  );
}

function ConflictBanner({ onReload }: { onReload: () => Promise<void> }) {
  const conflict = useEditor((s) => s.conflict);
  if (!conflict) return null;
  const keepCopy = () => {
    const s = useEditor.getState();
    download(exportFilename(`${s.name} (my edits)`), toExport({ name: `${s.name} (my edits)`, graph: toGraph(s.nodes, s.edges) }));
  };
  return (
    <div className="conflict-banner" role="alert" data-testid="conflict-banner">
      <div>
        <b>This workflow was changed somewhere else</b>
        {conflict.revision ? ` (now revision ${conflict.revision})` : ''}. Your latest edits here are <b>not saved</b>, and
        nothing was overwritten. Reload to continue from the saved version.
      </div>
      <div className="button-row">
        <button className="btn btn-sm" onClick={keepCopy}>Download my edits</button>
        <button className="btn btn-primary btn-sm" onClick={() => void onReload()}>Reload latest</button>
      </div>
    </div>
  );
}
