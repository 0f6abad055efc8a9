// The editor's test chat: the embeddable widget's own chat view, running the saved draft. Nodes light
// up as the turn's events arrive; below the chat, the last turn's trace, the thread's memory and
// any warnings.
import { useEffect, useRef, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { api } from '../api/client';
import type { WidgetTheme } from '../api/types';
import { draftTransport, gatedTransport, manualTransport, mountChat, OWNER_MAX_MESSAGE, type ChatHandle } from '../chat/transport';
import { Link } from '../router';
import { toast } from '../ui/toast';
import { useEditor } from './store';
import { handleTestChatEvent, type Turn } from './testChat';

/** The widget's colours go on its host as custom properties (as the embed script does). */
function applyColours(host: HTMLElement, theme: WidgetTheme) {
  for (const [property, value] of [
    ['--sk-accent', theme.color],
    ['--sk-on-accent', theme.text_color],
    ['--sk-bg', theme.background],
  ] as const) {
    if (value && CSS.supports('color', value)) host.style.setProperty(property, value);
    else host.style.removeProperty(property);
  }
}

/** Saves the draft before a message; says why not when it cannot. */
async function saveDraft(): Promise<string | null> {
  const s = useEditor.getState();
  if (s.conflict) return 'Reload the workflow first: it changed elsewhere.';
  if (!(await s.save())) return `Could not save the draft: ${useEditor.getState().saveError ?? 'unknown error'}`;
  useEditor.getState().startRun();
  return null;
}

async function showRun(runId: number, warnings: { node: string | null; message: string }[]) {
  try {
    useEditor.getState().showRun(await api.run(runId), warnings);
  } catch (error) {
    toast(`Could not load the run trace: ${(error as Error).message}`, 'error');
  }
}

export function TestPanel({ workflowId }: { workflowId: number }) {
  const triggerTypes = useEditor(useShallow((s) => [...new Set(s.nodes.map((n) => n.type ?? '').filter((t) => t.startsWith('trigger.')))].sort()));
  const hasChat = triggerTypes.includes('trigger.chat');
  const hasManual = triggerTypes.includes('trigger.manual');
  const [choice, setChoice] = useState<'chat' | 'manual'>('chat');
  const mode = hasChat && hasManual ? choice : hasManual ? 'manual' : 'chat';
  const host = useRef<HTMLDivElement>(null);
  const chat = useRef<ChatHandle | null>(null);
  const [thread, setThread] = useState<string | null>(null);
  const [turn, setTurn] = useState<Turn | null>(null);
  const ready = hasChat || hasManual;
  const [participant, setParticipant] = useState(() => readParticipant(workflowId));

  useEffect(() => {
    if (!host.current) return;
    const transport = gatedTransport(mode === 'manual' ? manualTransport(workflowId) : draftTransport(workflowId, participant), saveDraft);
    const handle = mountChat(host.current, {
      transport,
      // The conversation survives a reload (as the widget's does): the thread is kept per workflow.
      storageKey: mode === 'manual' ? null : testThreadKey(workflowId, participant),
      maxLength: OWNER_MAX_MESSAGE,
      theme: { title: useEditor.getState().name || 'Test chat', placeholder: placeholderFor(mode) },
      onThread: (value) => {
        setThread(value);
        if (!value) setTurn(null);
      },
      onEvent: (event) =>
        handleTestChatEvent(event, {
          nodeEvent: useEditor.getState().nodeEvent,
          toolStarted: useEditor.getState().toolStarted,
          toolFinished: useEditor.getState().toolFinished,
          setIssues: useEditor.getState().setIssues,
          setTurn,
          showRun: (run, warnings) => void showRun(run, warnings),
        }),
    });
    chat.current = handle;
    if (!ready) handle.disable('Add a Chat message trigger (or a Manual run) to test here.');
    setThread(handle.thread);
    setTurn(null);
    return () => {
      chat.current = null;
      handle.destroy();
    };
  }, [workflowId, mode, ready, participant]);

  // The published widget's look (title, welcome, starters, colours), so the test chat previews it.
  useEffect(() => {
    let live = true;
    api.widgetSettings(workflowId).then((settings) => {
      const title = settings.theme.title || useEditor.getState().name || 'Test chat';
      if (!live) return;
      chat.current?.setTheme({ ...settings.theme, title, placeholder: placeholderFor(mode, settings.theme.placeholder) });
      if (host.current) applyColours(host.current, settings.theme);
    }, () => {});
    return () => {
      live = false;
    };
  }, [workflowId, mode, ready]);

  return (
    <div className="test-panel">
      {hasChat && hasManual && (
        <div className="segmented" role="radiogroup" aria-label="Trigger">
          <button role="radio" aria-checked={mode === 'chat'} className={mode === 'chat' ? 'active' : ''} onClick={() => setChoice('chat')}>Chat message</button>
          <button role="radio" aria-checked={mode === 'manual'} className={mode === 'manual' ? 'active' : ''} onClick={() => setChoice('manual')}>Manual run</button>
        </div>
      )}
      <p className="test-hint muted small">
        {mode === 'manual' ? 'Each message runs the draft from its Manual run.' : 'Runs the current draft; nodes light up as they run.'}
      </p>
      {mode === 'chat' && (
        <ParticipantField
          value={participant}
          onChange={(value) => {
            writeParticipant(workflowId, value);
            setParticipant(value);
          }}
        />
      )}
      <div className="test-chat-frame">
        <div className="test-chat-host" ref={host} data-testid="test-chat" />
      </div>
      <TurnFooter turn={turn} thread={mode === 'manual' ? null : thread} />
    </div>
  );
}

export function testThreadKey(workflowId: number, participant = ''): string {
  return participant ? `skein:test-thread:${workflowId}:${participant}` : `skein:test-thread:${workflowId}`;
}

const participantKey = (workflowId: number) => `skein:test-participant:${workflowId}`;

function readParticipant(workflowId: number): string {
  try {
    return localStorage.getItem(participantKey(workflowId)) ?? '';
  } catch {
    return '';
  }
}

function writeParticipant(workflowId: number, value: string) {
  try {
    if (value) localStorage.setItem(participantKey(workflowId), value);
    else localStorage.removeItem(participantKey(workflowId));
  } catch {
    /* storage refused: the choice lasts this page */
  }
}

/** "Talk as": a participant id for the test chat (applied on Enter or when leaving the field). */
function ParticipantField({ value, onChange }: { value: string; onChange: (value: string) => void }) {
  const [text, setText] = useState(value);
  const apply = () => {
    const next = text.trim();
    if (next !== value) onChange(next);
  };
  return (
    <label className="test-participant small">
      <span className="muted">Talk as participant</span>
      <input
        value={text}
        maxLength={200}
        placeholder="none (memory keyed by participant uses the thread)"
        onChange={(e) => setText(e.target.value)}
        onBlur={apply}
        onKeyDown={(e) => e.key === 'Enter' && apply()}
      />
    </label>
  );
}

function placeholderFor(mode: 'chat' | 'manual', placeholder?: string) {
  return mode === 'manual' ? 'Input for the manual run…' : placeholder || 'Message the draft…';
}

function TurnFooter({ turn, thread }: { turn: Turn | null; thread: string | null }) {
  if (!turn && !thread) return null;
  return (
    <div className="test-footer" data-testid="test-turn">
      <div className="test-footer-links small">
        {turn?.run ? (
          <>
            <span className={`badge badge-${turn.status}`}>{turn.status}</span>
            <span className="muted">Run #{turn.run}</span>
            {turn.status !== 'running' && <Link to={`/runs/${turn.run}`}>View trace →</Link>}
          </>
        ) : (
          turn?.status === 'failed' && <span className="badge badge-failed">not sent</span>
        )}
        {thread && (
          <Link to={`/threads/${thread}/memory`} className="test-footer-memory">
            Thread memory
          </Link>
        )}
      </div>
      {turn?.warnings.map((w, i) => (
        <div key={i} className="chat-warning" data-testid="chat-warning">
          ⚠ {w.node ? <b>{w.node}: </b> : null}
          {w.message}
        </div>
      ))}
    </div>
  );
}
