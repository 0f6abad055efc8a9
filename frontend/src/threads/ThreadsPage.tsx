// Threads as objects: every conversation (test chat, widget visitors, API callers), searchable,
// with rename and delete (transcript, memory and runs go with it, after a confirmation).
import { useState, type FormEvent } from 'react';
import { api } from '../api/client';
import { ecosystem, type Thread } from '../api/ecosystem';
import { Link, navigate, useLocation } from '../router';
import { formatDateTime, timeAgo } from '../ui/format';
import { EmptyState, ErrorState } from '../ui/States';
import { toast } from '../ui/toast';
import { useAsync } from '../ui/useAsync';
import { Pager } from '../ui/Pager';

const PAGE_SIZE = 25;
// A thread's `source` (the schema says a string), as the list names it.
const SOURCES: Partial<Record<string, string>> = { widget: 'widget visitor', api: 'API caller', chat: 'chat' };

export function confirmDelete(thread: Pick<Thread, 'title' | 'id' | 'message_count'>): boolean {
  return window.confirm(
    `Delete “${thread.title || `thread #${thread.id}`}”? Its ${thread.message_count} messages, its memory and its runs are deleted for good.`,
  );
}

export function ThreadsPage() {
  const { search: params } = useLocation();
  const workflow = Number(params.get('workflow')) || undefined;
  const [search, setSearch] = useState(params.get('search') ?? '');
  const [applied, setApplied] = useState(search);
  const [offset, setOffset] = useState(0);
  const threads = useAsync(() => ecosystem.threads({ workflow, search: applied || undefined, limit: PAGE_SIZE, offset }), [workflow, applied, offset]);
  const page = threads.data;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setOffset(0);
    setApplied(search.trim());
  };

  const remove = async (thread: Thread) => {
    if (!confirmDelete(thread)) return;
    try {
      await ecosystem.deleteThread(thread.id);
      toast('Thread deleted.', 'success');
      await threads.reload();
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };

  return (
    <div className="threads-page">
      <div className="page-header">
        <div>
          <h1>Threads</h1>
          <p className="muted">Every conversation: the test chat, widget visitors and API callers.</p>
        </div>
        <form className="page-actions filters" onSubmit={submit} role="search">
          <input type="search" aria-label="Search messages" placeholder="Search messages…" value={search} onChange={(e) => setSearch(e.target.value)} maxLength={200} />
          <button className="btn btn-sm" type="submit">Search</button>
          {workflow && <Link className="btn btn-sm btn-ghost" to="/threads">All workflows</Link>}
        </form>
      </div>
      {threads.error && <ErrorState error={threads.error} onRetry={() => void threads.reload()} />}
      {page && page.results.length === 0 && (
        <EmptyState title={applied ? 'No thread mentions that' : 'No threads yet'}>
          {applied ? 'Try other words.' : 'A thread starts with the first message of a conversation.'}
        </EmptyState>
      )}
      {page && page.results.length > 0 && (
        <>
          <table className="table threads-table">
            <thead>
              <tr>
                <th>Thread</th>
                <th>Workflow</th>
                <th>From</th>
                <th>Messages</th>
                <th>Last activity</th>
                <th aria-label="Actions" />
              </tr>
            </thead>
            <tbody>
              {page.results.map((t) => (
                <tr key={t.id} className="clickable" onClick={() => navigate(`/threads/${t.id}`)} data-testid={`thread-row-${t.id}`}>
                  <td><Link to={`/threads/${t.id}`}>{t.title || `#${t.id}`}</Link></td>
                  <td><Link to={`/workflows/${t.workflow}`} onClick={(e) => e.stopPropagation()}>{t.workflow_name}</Link></td>
                  <td className="muted">
                    {SOURCES[t.source] ?? t.source}
                    {t.participant ? <> · <Link to={`/participants/${t.participant}`} onClick={(e) => e.stopPropagation()}>participant</Link></> : null}
                  </td>
                  <td className="muted">{t.message_count}</td>
                  <td className="muted">{timeAgo(t.updated)}</td>
                  <td className="row-actions" onClick={(e) => e.stopPropagation()}>
                    <button className="btn btn-ghost btn-sm btn-danger" onClick={() => void remove(t)}>Delete</button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager offset={offset} shown={page.results.length} count={page.count} hasNext={!!page.next} pageSize={PAGE_SIZE} onOffset={setOffset} />
        </>
      )}
    </div>
  );
}

export function ThreadPage({ threadId }: { threadId: number }) {
  const thread = useAsync(() => ecosystem.thread(threadId), [threadId]);
  const messages = useAsync(() => api.threadMessages(threadId), [threadId]);
  const [title, setTitle] = useState<string | null>(null);

  const rename = async (event: FormEvent) => {
    event.preventDefault();
    if (title === null) return;
    try {
      thread.setData(await ecosystem.renameThread(threadId, title.trim()));
      setTitle(null);
      toast('Renamed.', 'success');
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };

  const remove = async () => {
    if (!thread.data || !confirmDelete(thread.data)) return;
    try {
      await ecosystem.deleteThread(threadId);
      toast('Thread deleted.', 'success');
      navigate(`/threads?workflow=${thread.data.workflow}`);
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };

  if (thread.error) return <ErrorState error={thread.error} onRetry={() => void thread.reload()} />;
  const t = thread.data;
  return (
    <div className="thread-page">
      <div className="page-header">
        <div>
          <div className="crumbs">
            <Link to="/threads">Threads</Link>
            {t && <> / <Link to={`/workflows/${t.workflow}`}>{t.workflow_name}</Link></>}
          </div>
          {title === null ? (
            <h1>
              {t?.title || `Thread #${threadId}`}{' '}
              <button className="btn btn-ghost btn-sm" onClick={() => setTitle(t?.title ?? '')} disabled={!t}>Rename</button>
            </h1>
          ) : (
            <form onSubmit={(e) => void rename(e)} className="rename-form">
              <input aria-label="Thread title" value={title} maxLength={200} autoFocus onChange={(e) => setTitle(e.target.value)} />
              <button className="btn btn-primary btn-sm" type="submit">Save</button>
              <button className="btn btn-ghost btn-sm" type="button" onClick={() => setTitle(null)}>Cancel</button>
            </form>
          )}
          {t && (
            <p className="muted small">
              {SOURCES[t.source] ?? t.source}{t.key ? <> · key <code>{t.key}</code></> : null}
              {t.participant ? <> · <Link to={`/participants/${t.participant}`}>participant</Link></> : null} · started {formatDateTime(t.created)} · {t.message_count} messages
            </p>
          )}
        </div>
        <div className="page-actions">
          <Link className="btn btn-sm" to={`/threads/${threadId}/memory`}>Memory</Link>
          <button className="btn btn-sm btn-danger" onClick={() => void remove()} disabled={!t}>Delete</button>
        </div>
      </div>
      <section className="transcript" aria-label="Transcript">
        {messages.error && <ErrorState error={messages.error} />}
        {messages.data?.length === 0 && <p className="muted">No messages yet.</p>}
        {messages.data?.map((m, i) => (
          <div key={i} className={`transcript-msg transcript-${m.role}`}>
            <div className="transcript-meta">
              <b>{m.role}</b> <span className="muted small">{formatDateTime(m.created)}</span>
              {m.run ? <> · <Link to={`/runs/${m.run}`}>run #{m.run}</Link></> : null}
            </div>
            <div className="transcript-text">{m.content}</div>
          </div>
        ))}
      </section>
    </div>
  );
}
