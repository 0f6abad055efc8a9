// Memory inspector for a thread: the transcript (never trimmed) beside each memory history as
// the model will see it next (summary, kept messages, token counts), with edit-and-replace.
import { useState } from 'react';
import { api } from '../api/client';
import type { MemoryHistory, MemoryImport, MemoryMessageInput } from '../api/types';
import { editable, ToolRoundPart } from './toolRounds';
import { formatDateTime } from '../ui/format';
import { SaveAsTestButton } from '../conversationTests/SaveAsTestButton';
import { EmptyState, ErrorState } from '../ui/States';
import { toast } from '../ui/toast';
import { useAsync } from '../ui/useAsync';

const ROLES: MemoryMessageInput['role'][] = ['system', 'user', 'assistant', 'tool'];

export function MemoryPage({ threadId }: { threadId: number }) {
  const memory = useAsync(() => api.threadMemory(threadId), [threadId]);
  const transcript = useAsync(() => api.threadMessages(threadId), [threadId]);

  return (
    <div className="memory-page">
      <div className="page-header">
        <div>
          <h1>Thread #{threadId} · memory</h1>
          <p className="muted">What each memory will send to its model next turn, next to the full transcript.</p>
        </div>
        <div className="page-actions">
          <SaveAsTestButton threadId={threadId} />
          <button className="btn btn-sm" onClick={() => void exportMemory(threadId)}>Export</button>
          <label className="btn btn-sm">
            Import…
            <input
              type="file"
              accept="application/json,.json"
              hidden
              data-testid="memory-import"
              onChange={(e) => {
                const file = e.target.files?.[0];
                e.target.value = '';
                if (file) void importMemory(threadId, file).then(() => void memory.reload());
              }}
            />
          </label>
          <button className="btn btn-sm" onClick={() => { void memory.reload(); void transcript.reload(); }}>Refresh</button>
        </div>
      </div>
      <div className="memory-layout">
        <section className="memory-histories" aria-label="Memory histories">
          {memory.error && <ErrorState error={memory.error} onRetry={() => void memory.reload()} />}
          {memory.data && memory.data.length === 0 && (
            <EmptyState title="No memory in this thread">
              Attach a memory node (buffer, window or summarizing) to an LLM's diamond <b>memory</b> port, then chat again.
            </EmptyState>
          )}
          {memory.data?.map((history) => (
            <HistoryCard key={history.name} threadId={threadId} history={history} onReplaced={() => void memory.reload()} />
          ))}
        </section>
        <section className="transcript" aria-label="Transcript">
          <h2 className="section-title">Transcript</h2>
          <p className="muted small">Everything the participant and the bot said. Memory strategies never delete from it.</p>
          {transcript.error && <ErrorState error={transcript.error} />}
          {transcript.data?.length === 0 && <p className="muted">No messages yet.</p>}
          {transcript.data?.map((m, i) => (
            <div key={i} className={`transcript-msg transcript-${m.role}`}>
              <div className="transcript-meta">
                <b>{m.role}</b> <span className="muted small">{formatDateTime(m.created)}</span>
              </div>
              <div className="transcript-text">{m.content}</div>
            </div>
          ))}
        </section>
      </div>
    </div>
  );
}

/** Every history of the thread, with its summaries, as a JSON file (the import's format). */
async function exportMemory(threadId: number) {
  try {
    const file = await api.exportMemory(threadId);
    const url = URL.createObjectURL(new Blob([JSON.stringify(file, null, 2)], { type: 'application/json' }));
    const link = Object.assign(document.createElement('a'), { href: url, download: `thread-${threadId}-memory.json` });
    link.click();
    URL.revokeObjectURL(url);
  } catch (error) {
    toast((error as Error).message, 'error');
  }
}

async function importMemory(threadId: number, file: File) {
  // The server checks the file: what is wrong with it comes back as the error.
  let parsed: MemoryImport;
  try {
    parsed = JSON.parse(await file.text()) as MemoryImport;
  } catch {
    toast(`${file.name} is not JSON: export a thread's memory to see the format`, 'error');
    return;
  }
  if (!window.confirm('Importing replaces each history in the file (and its summaries). Continue?')) return;
  try {
    await api.importMemory(threadId, parsed);
    toast(`Imported ${parsed.histories?.length ?? 0} histories`, 'success');
  } catch (error) {
    toast((error as Error).message, 'error');
  }
}

/** A summarizing memory's running summary: shown, and editable (the messages it covers stay covered). */
function SummaryBox({ threadId, history, onSaved }: { threadId: number; history: MemoryHistory; onSaved: () => void }) {
  const [draft, setDraft] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const save = async () => {
    if (draft === null) return;
    setSaving(true);
    try {
      await api.editSummary(threadId, history.name, draft);
      toast(`Saved the summary of “${history.name}”`, 'success');
      setDraft(null);
      onSaved();
    } catch (error) {
      toast((error as Error).message, 'error');
    } finally {
      setSaving(false);
    }
  };
  return (
    <div className="summary-box" data-testid={`summary-${history.name}`}>
      <div className="summary-head">
        <span className="muted small">
          Running summary (sent before the kept messages)
          {history.summary_through ? ` · covers messages through #${history.summary_through}` : ''}
        </span>
        {draft === null ? (
          <button className="btn btn-sm btn-ghost" onClick={() => setDraft(history.summary)}>Edit summary</button>
        ) : (
          <span className="button-row">
            <button className="btn btn-sm" onClick={() => setDraft(null)} disabled={saving}>Cancel</button>
            <button className="btn btn-sm btn-primary" onClick={() => void save()} disabled={saving}>{saving ? 'Saving…' : 'Save summary'}</button>
          </span>
        )}
      </div>
      {draft === null ? (
        history.summary ? <p>{history.summary}</p> : <p className="muted small">No summary yet: it is made once the history reaches the memory's threshold.</p>
      ) : (
        <textarea rows={5} value={draft} onChange={(e) => setDraft(e.target.value)} aria-label={`Summary of ${history.name}`} />
      )}
      {history.summarize_next && <p className="muted small">A summarization is due: it runs before the model's next answer.</p>}
    </div>
  );
}

function HistoryCard({ threadId, history, onReplaced }: { threadId: number; history: MemoryHistory; onReplaced: () => void }) {
  const [editing, setEditing] = useState<MemoryMessageInput[] | null>(null);
  const [saving, setSaving] = useState(false);

  const replace = async () => {
    if (!editing) return;
    if (history.summary && !window.confirm('Replacing the history resets its summary. Continue?')) return;
    setSaving(true);
    try {
      await api.replaceMemory(threadId, history.name, editing);
      toast(`Replaced “${history.name}” (${editing.length} messages)`, 'success');
      setEditing(null);
      onReplaced();
    } catch (error) {
      toast((error as Error).message, 'error');
    } finally {
      setSaving(false);
    }
  };

  const change = (index: number, patch: Partial<MemoryMessageInput>) =>
    setEditing((list) => list!.map((m, i) => (i === index ? { ...m, ...patch } : m)));

  return (
    <article className="history-card" data-testid={`memory-${history.name}`}>
      <header>
        <div>
          <h3>{history.name}</h3>
          <div className="muted small">
            {history.history} history{history.node ? <> · node <code>{history.node}</code></> : null} · {history.messages.length} messages ·{' '}
            {history.token_count} tokens{history.tokenizer ? ` (${history.tokenizer})` : ''}
          </div>
        </div>
        {editing ? (
          <div className="button-row">
            <button className="btn btn-sm" onClick={() => setEditing(null)} disabled={saving}>Cancel</button>
            <button className="btn btn-primary btn-sm" onClick={() => void replace()} disabled={saving}>
              {saving ? 'Replacing…' : 'Replace history'}
            </button>
          </div>
        ) : (
          <button className="btn btn-sm" onClick={() => setEditing(history.messages.map(editable))}>Edit</button>
        )}
      </header>

      {(history.summarizes || history.summary) && !editing && <SummaryBox threadId={threadId} history={history} onSaved={onReplaced} />}

      {editing ? (
        <div className="memory-edit">
          {editing.map((m, i) => (
            <div key={i} className="memory-edit-row">
              <select value={m.role} onChange={(e) => change(i, { role: ROLES.find((r) => r === e.target.value) ?? m.role })} aria-label={`Role of message ${i + 1}`}>
                {ROLES.map((r) => <option key={r}>{r}</option>)}
              </select>
              <div className="memory-edit-text">
                <textarea rows={2} value={m.content} onChange={(e) => change(i, { content: e.target.value })} aria-label={`Message ${i + 1}`} />
                <ToolRoundPart message={m} />
              </div>
              <button className="btn btn-ghost btn-icon" aria-label={`Remove message ${i + 1}`} onClick={() => setEditing(editing.filter((_, j) => j !== i))}>✕</button>
            </div>
          ))}
          <button className="btn btn-sm" onClick={() => setEditing([...editing, { role: 'user', content: '' }])}>+ Add message</button>
          <p className="muted small">Replacing sets exactly these messages as the history and clears the summary. The transcript is not changed.</p>
        </div>
      ) : history.messages.length === 0 ? (
        <p className="muted small">Empty.</p>
      ) : (
        <table className="table memory-table">
          <tbody>
            {history.messages.map((m, i) => (
              <tr key={i}>
                <td className={`role role-${m.role}`}>{m.role}</td>
                <td className="memory-content">
                  {m.content}
                  <ToolRoundPart message={m} />
                </td>
                <td className="muted small num">{m.token_count ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </article>
  );
}
