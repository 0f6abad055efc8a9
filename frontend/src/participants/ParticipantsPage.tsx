// Participants: the people talking to your workflows (widget visitors, API callers), with their
// threads, the memories kept under them and their facts. Facts can be added, corrected and
// deleted; forgetting a participant deletes everything of theirs.
import { useState, type FormEvent } from 'react';
import { groupFacts, participants, type Fact, type ParticipantDetail } from '../api/participants';
import { Link, navigate, useLocation } from '../router';
import { formatDateTime, timeAgo } from '../ui/format';
import { EmptyState, ErrorState } from '../ui/States';
import { toast } from '../ui/toast';
import { useAsync } from '../ui/useAsync';
import { Pager } from '../ui/Pager';
import { ToolRoundPart } from '../memory/toolRounds';

const PAGE_SIZE = 25;

export function ParticipantsPage() {
  const { search: params } = useLocation();
  const workflow = Number(params.get('workflow')) || undefined;
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [offset, setOffset] = useState(0);
  const list = useAsync(() => participants.list({ workflow, search: applied || undefined, limit: PAGE_SIZE, offset }), [workflow, applied, offset]);
  const page = list.data;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setOffset(0);
    setApplied(search.trim());
  };

  return (
    <div className="participants-page">
      <div className="page-header">
        <div>
          <h1>Participants</h1>
          <p className="muted">The people talking to your workflows: memory keyed by participant follows them across threads.</p>
        </div>
        <form className="page-actions filters" onSubmit={submit} role="search">
          <input type="search" aria-label="Search participants" placeholder="Search ids…" value={search} onChange={(e) => setSearch(e.target.value)} maxLength={200} />
          <button className="btn btn-sm" type="submit">Search</button>
        </form>
      </div>
      {list.error && <ErrorState error={list.error} onRetry={() => void list.reload()} />}
      {page && page.results.length === 0 && (
        <EmptyState title={applied ? 'No participant has that id' : 'No participants yet'}>
          {applied ? 'Try another part of the id.' : 'A run names its participant: the widget visitor, the chat API’s participant, the OpenAI endpoint’s user.'}
        </EmptyState>
      )}
      {page && page.results.length > 0 && (
        <>
          <table className="table participants-table">
            <thead>
              <tr><th>Participant</th><th>Threads</th><th>Last seen</th></tr>
            </thead>
            <tbody>
              {page.results.map((p) => (
                <tr key={p.id} className="clickable" onClick={() => navigate(`/participants/${p.id}`)} data-testid={`participant-row-${p.id}`}>
                  <td>
                    <Link to={`/participants/${p.id}`}>{p.anonymous ? 'Anonymous visitor' : p.participant}</Link>
                    {p.anonymous && <span className="muted small"> {p.participant.slice(8, 16)}…</span>}
                  </td>
                  <td className="muted">{p.thread_count ?? 0}</td>
                  <td className="muted">{timeAgo(p.last_seen)}</td>
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

export function ParticipantPage({ participantId }: { participantId: number }) {
  const detail = useAsync(() => participants.get(participantId), [participantId]);
  const p = detail.data;

  const forget = async () => {
    if (!p) return;
    const name = p.anonymous ? 'this anonymous visitor' : `“${p.participant}”`;
    if (!window.confirm(`Forget ${name}? Their ${p.threads.length} threads, transcripts, memories, facts and runs are deleted for good.`)) return;
    try {
      await participants.forget(participantId);
      toast('Participant forgotten: nothing of theirs is kept.', 'success');
      navigate('/participants');
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };

  if (detail.error) return <ErrorState error={detail.error} onRetry={() => void detail.reload()} />;
  return (
    <div className="participant-page">
      <div className="page-header">
        <div>
          <div className="crumbs"><Link to="/participants">Participants</Link></div>
          <h1 data-testid="participant-name">{p ? (p.anonymous ? 'Anonymous visitor' : p.participant) : `Participant #${participantId}`}</h1>
          {p && (
            <p className="muted small">
              {p.anonymous ? <>visitor id <code>{p.participant.slice(8)}</code> · </> : null}
              first seen {formatDateTime(p.created)} · last seen {timeAgo(p.last_seen)}
            </p>
          )}
        </div>
        <div className="page-actions">
          <button className="btn btn-sm btn-danger" onClick={() => void forget()} disabled={!p}>Forget participant</button>
        </div>
      </div>
      {p && (
        <>
          <FactsSection detail={p} onChange={() => void detail.reload()} />
          <section aria-labelledby="participant-memories">
            <h2 className="section-title" id="participant-memories">Memories</h2>
            {p.memories.length === 0 && <p className="muted small">No memory is keyed by this participant (memory nodes with <code>key: participant</code> keep one).</p>}
            {p.memories.map((m) => (
              <div key={`${m.workflow}-${m.history}-${m.name}`} className="participant-memory" data-testid="participant-memory">
                <h3>
                  <Link to={`/workflows/${m.workflow}`}>{m.workflow_name}</Link> · {m.history === 'global' ? 'conversation' : `${m.history} ${m.name}`}
                  <span className="muted small"> ({m.message_count} messages)</span>
                </h3>
                {m.summaries.filter((s) => s.text).map((s) => (
                  <div key={s.node} className="text-block"><h3>Summary by <code>{s.node}</code></h3><pre>{s.text}</pre></div>
                ))}
                <ol className="sent-list">
                  {m.messages.map((msg) => (
                    <li key={msg.seq} className={`sent-msg sent-${msg.role}`}><span className={`role role-${msg.role}`}>{msg.role}</span><pre>{msg.content}</pre><ToolRoundPart message={msg} /></li>
                  ))}
                </ol>
              </div>
            ))}
          </section>
          <section aria-labelledby="participant-threads">
            <h2 className="section-title" id="participant-threads">Threads</h2>
            {p.threads.length === 0 && <p className="muted small">No threads.</p>}
            <ul className="participant-threads">
              {p.threads.map((t) => (
                <li key={t.id}>
                  <Link to={`/threads/${t.id}`}>{t.title || `Thread #${t.id}`}</Link>{' '}
                  <span className="muted small">{t.workflow_name} · {t.message_count} messages · {timeAgo(t.updated)}</span>
                </li>
              ))}
            </ul>
          </section>
        </>
      )}
    </div>
  );
}

function FactsSection({ detail, onChange }: { detail: ParticipantDetail; onChange: () => void }) {
  const groups = groupFacts(detail.facts);
  const workflows = [...new Map([...detail.threads.map((t) => [t.workflow, t.workflow_name] as const), ...groups.map((g) => [g.workflow, g.workflow_name] as const)])];
  const [adding, setAdding] = useState({ workflow: workflows[0]?.[0] ?? 0, key: '', value: '' });

  const act = async (work: () => Promise<unknown>, done: string) => {
    try {
      await work();
      toast(done, 'success');
      onChange();
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };

  const add = (event: FormEvent) => {
    event.preventDefault();
    void act(() => participants.addFact(detail.id, adding), 'Fact added.').then(() => setAdding({ ...adding, key: '', value: '' }));
  };

  return (
    <section aria-labelledby="participant-facts">
      <h2 className="section-title" id="participant-facts">Facts</h2>
      <p className="muted small">What memory.facts nodes keep about this participant. Current facts are sent to the model; superseded ones are kept as history only.</p>
      {groups.length === 0 && <p className="muted small">No facts yet.</p>}
      {groups.map((g) => (
        <div key={g.workflow} className="facts-group">
          <h3><Link to={`/workflows/${g.workflow}`}>{g.workflow_name}</Link></h3>
          <table className="table facts-table">
            <thead><tr><th>Key</th><th>Value</th><th>From the message</th><th>When</th><th aria-label="Actions" /></tr></thead>
            <tbody>
              {g.current.map((f) => <FactRow key={f.id} fact={f} act={act} />)}
              {g.superseded.map((f) => <FactRow key={f.id} fact={f} act={act} />)}
            </tbody>
          </table>
        </div>
      ))}
      {workflows.length > 0 && (
        <form className="fact-add" onSubmit={add} aria-label="Add a fact">
          <select aria-label="Workflow" value={adding.workflow} onChange={(e) => setAdding({ ...adding, workflow: Number(e.target.value) })}>
            {workflows.map(([id, name]) => <option key={id} value={id}>{name}</option>)}
          </select>
          <input aria-label="New fact key" placeholder="key (e.g. city)" value={adding.key} maxLength={100} required onChange={(e) => setAdding({ ...adding, key: e.target.value })} />
          <input aria-label="New fact value" placeholder="value" value={adding.value} maxLength={1000} required onChange={(e) => setAdding({ ...adding, value: e.target.value })} />
          <button className="btn btn-sm" type="submit">Add fact</button>
        </form>
      )}
    </section>
  );
}

function FactRow({ fact: f, act }: { fact: Fact; act: (work: () => Promise<unknown>, done: string) => Promise<void> }) {
  const [editing, setEditing] = useState<string | null>(null);
  const save = (event: FormEvent) => {
    event.preventDefault();
    if (editing === null) return;
    void act(() => participants.editFact(f.id, { value: editing }), 'Fact saved.').then(() => setEditing(null));
  };
  return (
    <tr className={f.current ? 'fact-current' : 'fact-superseded muted'} data-testid={`fact-${f.key}${f.current ? '' : '-superseded'}`}>
      <td><code>{f.key}</code></td>
      <td>
        {editing === null ? (
          <>{f.value}{!f.current && <span className="small"> (superseded {formatDateTime(f.superseded)})</span>}{f.source === 'owner' && <span className="chip small">edited</span>}</>
        ) : (
          <form onSubmit={save} className="fact-edit">
            <input aria-label={`Value of ${f.key}`} value={editing} maxLength={1000} autoFocus onChange={(e) => setEditing(e.target.value)} />
            <button className="btn btn-primary btn-sm" type="submit">Save</button>
            <button className="btn btn-ghost btn-sm" type="button" onClick={() => setEditing(null)}>Cancel</button>
          </form>
        )}
      </td>
      <td className="small">
        {f.source_message ? <q data-testid="fact-source">{f.source_message}</q> : <span className="muted">added by you</span>}
        {f.run ? <> · <Link to={`/runs/${f.run}`}>run #{f.run}</Link></> : null}
      </td>
      <td className="muted small">{timeAgo(f.created)}</td>
      <td className="row-actions">
        {f.current && editing === null && <button className="btn btn-ghost btn-sm" onClick={() => setEditing(f.value)}>Edit</button>}
        <button className="btn btn-ghost btn-sm btn-danger" aria-label={`Delete fact ${f.key}`}
          onClick={() => window.confirm(`Delete the fact “${f.key}”${f.current ? ' and the values it replaced' : ''}?`) && void act(() => participants.deleteFact(f.id), 'Fact deleted.')}>Delete</button>
      </td>
    </tr>
  );
}
