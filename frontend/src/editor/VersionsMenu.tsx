// The editor's Versions menu: every published version with who published it and when, what
// changed since (against the draft), and restoring one into the draft as a new revision.
import { useEffect, useState } from 'react';
import { ApiError } from '../api/client';
import { ecosystem, type GraphDiff, type Version } from '../api/ecosystem';
import { formatDateTime } from '../ui/format';
import { ErrorState } from '../ui/States';
import { toast } from '../ui/toast';
import { useAsync } from '../ui/useAsync';
import { useEditor } from './store';
import { describeDiff } from './versions';

export function VersionsMenu({ workflowId }: { workflowId: number }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button className="btn btn-ghost btn-sm" onClick={() => setOpen(true)} title="Published versions: compare, restore">
        Versions
      </button>
      {open && <VersionsDialog workflowId={workflowId} onClose={() => setOpen(false)} />}
    </>
  );
}

function VersionsDialog({ workflowId, onClose }: { workflowId: number; onClose: () => void }) {
  const versions = useAsync(() => ecosystem.versions(workflowId), [workflowId]);
  const [compared, setCompared] = useState<{ version: number; diff: GraphDiff } | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => event.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);

  const compare = async (version: number) => {
    try {
      setCompared({ version, diff: await ecosystem.diff(workflowId, version, 'draft') });
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };

  const restore = async (version: number) => {
    const editor = useEditor.getState();
    if (!window.confirm(`Replace the draft with version ${version}? The draft's current graph is kept only in its published versions.`)) return;
    setBusy(true);
    try {
      if (!(await editor.save())) {
        toast('Save the draft before restoring a version.', 'error');
        return;
      }
      const workflow = await ecosystem.restore(workflowId, version, useEditor.getState().revision);
      useEditor.getState().load(workflow);
      toast(`The draft is now version ${version}. Publish to make it live.`, 'success', 5000);
      onClose();
    } catch (error) {
      toast(error instanceof ApiError && error.status === 409 ? 'The draft changed meanwhile: reload and try again.' : (error as Error).message, 'error');
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="modal-backdrop" onClick={onClose}>
      <div className="modal versions-modal" role="dialog" aria-modal="true" aria-labelledby="versions-title" onClick={(e) => e.stopPropagation()} data-testid="versions-panel">
        <div className="modal-header">
          <h2 id="versions-title">Versions</h2>
          <button className="btn btn-ghost btn-icon" onClick={onClose} aria-label="Close">×</button>
        </div>
        {versions.error && <ErrorState error={versions.error} onRetry={() => void versions.reload()} />}
        {versions.data?.length === 0 && <p className="muted">Nothing published yet: each Publish makes a version you can come back to.</p>}
        {versions.data && versions.data.length > 0 && (
          <ul className="versions-list">
            {versions.data.map((v: Version) => (
              <li key={v.version} data-testid={`version-${v.version}`}>
                <div>
                  <b>v{v.version}</b> {v.live && <span className="badge badge-succeeded">live</span>}
                  <div className="muted small">
                    {formatDateTime(v.created)} · {v.published_by ?? 'a deleted account'} · {v.graph.nodes?.length ?? 0} nodes
                  </div>
                </div>
                <div className="button-row">
                  <button className="btn btn-sm btn-ghost" onClick={() => void compare(v.version)}>Compare with draft</button>
                  <button className="btn btn-sm" onClick={() => void restore(v.version)} disabled={busy}>Restore</button>
                </div>
              </li>
            ))}
          </ul>
        )}
        {compared && <DiffView version={compared.version} diff={compared.diff} />}
      </div>
    </div>
  );
}

function DiffView({ version, diff }: { version: number; diff: GraphDiff }) {
  const lines = describeDiff(diff);
  return (
    <section className="versions-diff" aria-label={`Changes from version ${version} to the draft`} data-testid="version-diff">
      <h3>From v{version} to the draft</h3>
      {lines.length === 0 ? (
        <p className="muted small">No differences.</p>
      ) : (
        <ul>
          {lines.map((line, i) => (
            <li key={i} className={`diff-${line.kind}`}>
              <span className="diff-mark">{{ added: '+', removed: '−', changed: '~', moved: '↔' }[line.kind]}</span> {line.text}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
