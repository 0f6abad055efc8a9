// The editor's test chat: runs the saved draft, then lights up the nodes from the run's steps.
import { useMemo, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { api, ApiError } from '../api/client';
import { ChatPanel } from '../chat/ChatPanel';
import { httpTransport, sseTransport, TurnFailedError, type ChatEvent } from '../chat/transport';
import { Link } from '../router';
import { toast } from '../ui/toast';
import { useEditor } from './store';

export function TestPanel({ workflowId }: { workflowId: number }) {
  const triggerTypes = useEditor(useShallow((s) => [...new Set(s.nodes.map((n) => n.type ?? '').filter((t) => t.startsWith('trigger.')))].sort()));
  const hasChat = triggerTypes.includes('trigger.chat');
  const hasManual = triggerTypes.includes('trigger.manual');
  const [choice, setChoice] = useState<'chat' | 'manual'>('chat');
  const mode = hasChat && hasManual ? choice : hasManual ? 'manual' : 'chat';
  // Chat turns stream (nodes light up as they run); the manual trigger answers in one response.
  const transport = useMemo(() => (mode === 'manual' ? httpTransport(workflowId, 'manual') : sseTransport(workflowId)), [workflowId, mode]);

  const onEvent = (event: ChatEvent) => {
    const { nodeEvent } = useEditor.getState();
    if (event.type === 'node') nodeEvent(event.node, { status: event.status, error: event.error, durationMs: event.durationMs });
    if (event.type === 'warning' && event.warning.node) nodeEvent(event.warning.node, { warning: event.warning.message });
    if (event.type === 'accepted') useEditor.setState({ lastRunId: event.run });
  };

  const beforeSend = async () => {
    const s = useEditor.getState();
    if (s.conflict) {
      toast('Reload the workflow first: it changed elsewhere.', 'error');
      return false;
    }
    const ok = await s.save();
    if (!ok) toast(`Could not save the draft: ${useEditor.getState().saveError ?? 'unknown error'}`, 'error');
    return ok;
  };

  const showRun = async (runId: number, warnings: { node: string | null; message: string }[] = []) => {
    try {
      useEditor.getState().showRun(await api.run(runId), warnings);
    } catch (error) {
      toast(`Could not load the run trace: ${(error as Error).message}`, 'error');
    }
  };

  return (
    <div className="test-panel">
      {hasChat && hasManual && (
        <div className="segmented" role="radiogroup" aria-label="Trigger">
          <button role="radio" aria-checked={mode === 'chat'} className={mode === 'chat' ? 'active' : ''} onClick={() => setChoice('chat')}>Chat message</button>
          <button role="radio" aria-checked={mode === 'manual'} className={mode === 'manual' ? 'active' : ''} onClick={() => setChoice('manual')}>Manual run</button>
        </div>
      )}
      <ChatPanel
        transport={transport}
        beforeSend={beforeSend}
        onTurnStart={() => useEditor.getState().startRun()}
        onReply={(reply) => void showRun(reply.run, reply.warnings)}
        onEvent={onEvent}
        onFailure={(error) => {
          if (error instanceof TurnFailedError && error.run) void showRun(error.run);
          if (error instanceof ApiError) {
            if (error.issues.length) useEditor.getState().setIssues(error.issues);
            const run = (error.body as { run?: unknown } | null)?.run;
            if (typeof run === 'number') void showRun(run);
          }
        }}
        renderRunLink={(runId) => <Link to={`/runs/${runId}`}>View trace →</Link>}
        renderThreadLinks={(threadId) => (
          <>
            {' · '}
            <Link to={`/threads/${threadId}/memory`}>memory</Link>
          </>
        )}
        placeholder={mode === 'manual' ? 'Input for the manual run…' : undefined}
        emptyHint={
          hasChat || hasManual ? (
            <>
              <b>Test your workflow.</b>
              <br />
              Messages run the current draft; nodes light up green or red as the turn ends.
            </>
          ) : (
            <>
              <b>No chat trigger yet.</b>
              <br />
              Add a <b>Chat message</b> trigger (or a <b>Manual run</b>) to test here.
            </>
          )
        }
      />
    </div>
  );
}
