// Editing one conversation test: its name, its turns (message, the reply given then, if saved from a
// thread) and each turn's checks, with the nodes and memories of this workflow offered by name.
import { useEffect, useMemo, useState } from 'react';
import { api, ApiError } from '../api/client';
import type { Provider } from '../api/types';
import { toast } from '../ui/toast';
import { testsApi, type Check, type ConversationTest, type TestIssue, type Turn } from './api';
import { CHECK_KINDS, defaultCheck, fieldsOf, kindOf, kindSpec, makeCheck, type Field, type Targets } from './checks';

interface Props {
  workflowId: number;
  test: ConversationTest | null; // null: a new test
  targets: Targets;
  onClose: () => void;
  onSaved: (test: ConversationTest) => void;
  onDeleted: (id: number) => void;
}

const issuesAt = (issues: TestIssue[], turn: number | null, check: number | null) =>
  issues.filter((i) => i.turn === turn && i.check === check);

export function TestEditor({ workflowId, test, targets, onClose, onSaved, onDeleted }: Props) {
  const [name, setName] = useState(test?.name ?? 'New test');
  const [turns, setTurns] = useState<Turn[]>(test?.turns.map((t) => ({ ...t, expect: [...t.expect] })) ?? [{ message: '', expect: [] }]);
  const [issues, setIssues] = useState<TestIssue[]>([]);
  const [saving, setSaving] = useState(false);
  const [providers, setProviders] = useState<Provider[]>([]);

  useEffect(() => {
    api.providers().then(setProviders, () => {});
    const onKey = (event: KeyboardEvent) => event.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);

  const shown = issues.length ? issues : (test?.errors ?? []);
  const changeTurn = (index: number, patch: Partial<Turn>) => setTurns((list) => list.map((t, i) => (i === index ? { ...t, ...patch } : t)));
  const changeCheck = (turn: number, index: number, check: Check | null) =>
    changeTurn(turn, { expect: check ? turns[turn].expect.map((c, i) => (i === index ? check : c)) : turns[turn].expect.filter((_, i) => i !== index) });

  const save = async () => {
    setSaving(true);
    try {
      const body = { name, turns };
      const saved = test ? await testsApi.update(test.id, body) : await testsApi.create(workflowId, body);
      setIssues([]);
      toast(saved.errors.length ? `Saved “${saved.name}”; it cannot run until its problems are fixed.` : `Saved “${saved.name}”.`, saved.errors.length ? 'error' : 'success');
      onSaved(saved);
    } catch (error) {
      const body = error instanceof ApiError ? (error.body as { errors?: TestIssue[] }) : null;
      if (body?.errors?.length) setIssues(body.errors);
      toast((error as Error).message, 'error');
    } finally {
      setSaving(false);
    }
  };

  const remove = async () => {
    if (!test || !window.confirm(`Delete the test “${test.name}”? Its past results stay.`)) return;
    await testsApi.remove(test.id).then(() => onDeleted(test.id), (error: Error) => toast(error.message, 'error'));
  };

  return (
    <div className="modal-backdrop" onClick={onClose}>
      <div className="modal ct-editor" role="dialog" aria-modal="true" aria-labelledby="ct-editor-title" onClick={(e) => e.stopPropagation()} data-testid="test-editor">
        <div className="modal-header">
          <h2 id="ct-editor-title">{test ? 'Edit test' : 'New test'}</h2>
          <button className="btn btn-ghost btn-icon" onClick={onClose} aria-label="Close">×</button>
        </div>
        <div className="ct-editor-body">
          <label className="field">
            <span className="field-label">Name</span>
            <input value={name} onChange={(e) => setName(e.target.value)} aria-label="Test name" maxLength={200} />
          </label>
          {issuesAt(shown, null, null).map((i, k) => <div key={k} className="field-error">{i.message}</div>)}
          {turns.map((turn, t) => (
            <section key={t} className="ct-turn" data-testid={`turn-${t}`}>
              <div className="ct-turn-head">
                <b>Turn {t + 1}</b>
                <button className="btn btn-ghost btn-sm" onClick={() => setTurns(turns.filter((_, i) => i !== t))} aria-label={`Remove turn ${t + 1}`} disabled={turns.length === 1}>Remove</button>
              </div>
              <textarea rows={2} value={turn.message} onChange={(e) => changeTurn(t, { message: e.target.value })} aria-label={`Message of turn ${t + 1}`} placeholder="What the participant says" />
              {turn.reference && (
                <div className="ct-reference">
                  <span className="muted small">Reply given then (a reference, not a check):</span>
                  <div className="ct-reference-text">{turn.reference}</div>
                  <button className="btn btn-sm" onClick={() => changeTurn(t, { expect: [...turn.expect, defaultCheck('reply_contains', targets, turn.reference)] })}>
                    Expect this reply
                  </button>
                </div>
              )}
              {issuesAt(shown, t, null).map((i, k) => <div key={k} className="field-error">{i.field ? `${i.field}: ` : ''}{i.message}</div>)}
              {turn.expect.map((check, c) => (
                <CheckRow
                  key={c}
                  label={`Turn ${t + 1}, check ${c + 1}`}
                  check={check}
                  targets={targets}
                  providers={providers}
                  issues={issuesAt(shown, t, c)}
                  onChange={(value) => changeCheck(t, c, value)}
                />
              ))}
              <button className="btn btn-ghost btn-sm" onClick={() => changeTurn(t, { expect: [...turn.expect, defaultCheck('reply_contains', targets)] })}>
                + Check
              </button>
            </section>
          ))}
          <button className="btn btn-sm" onClick={() => setTurns([...turns, { message: '', expect: [] }])}>+ Turn</button>
        </div>
        <div className="button-row ct-editor-actions">
          {test && <button className="btn btn-danger btn-sm" onClick={() => void remove()}>Delete</button>}
          <div className="toolbar-spacer" />
          <button className="btn btn-sm" onClick={onClose}>Cancel</button>
          <button className="btn btn-primary btn-sm" onClick={() => void save()} disabled={saving}>{saving ? 'Saving…' : 'Save test'}</button>
        </div>
      </div>
    </div>
  );
}

const FIELD_LABELS: Record<Field, string> = {
  text: 'text', pattern: 'pattern', node: 'node', memory: 'memory', tokens: 'tokens', rubric: 'rubric', model: 'model', provider: 'provider',
};

function CheckRow({ label, check, targets, providers, issues, onChange }: {
  label: string; check: Check; targets: Targets; providers: Provider[]; issues: TestIssue[]; onChange: (check: Check | null) => void;
}) {
  const kind = kindOf(check);
  const spec = kindSpec(kind);
  const fields = fieldsOf(check);
  const set = (field: Field, value: string) => onChange(makeCheck(kind, { ...fields, [field]: value }));
  const choices = useMemo(() => ({ node: targets.modelNodes, memory: targets.summaryMemories }), [targets]);

  return (
    <div className={`ct-check ${issues.length ? 'field-invalid' : ''}`} data-testid="check-row">
      <select value={kind} onChange={(e) => onChange(defaultCheck(e.target.value, targets, String(fields.text ?? '')))} aria-label={`${label}: kind`}>
        {CHECK_KINDS.map((k) => <option key={k.kind} value={k.kind}>{k.label}</option>)}
        {!spec && <option value={kind}>{kind}</option>}
      </select>
      {spec?.fields.map((field) => {
        const aria = `${label}: ${FIELD_LABELS[field]}`;
        const value = fields[field] ?? '';
        if (field === 'node' || field === 'memory') {
          const options = choices[field];
          return (
            <select key={field} value={String(value)} onChange={(e) => set(field, e.target.value)} aria-label={aria}>
              {!options.includes(String(value)) && <option value={String(value)}>{String(value) || `(no ${field})`}</option>}
              {options.map((o) => <option key={o} value={o}>{o}</option>)}
            </select>
          );
        }
        if (field === 'provider') {
          return (
            <select key={field} value={String(value)} onChange={(e) => set(field, e.target.value)} aria-label={aria}>
              <option value="">keys from the environment</option>
              {providers.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
            </select>
          );
        }
        if (field === 'rubric') return <textarea key={field} rows={2} value={String(value)} onChange={(e) => set(field, e.target.value)} aria-label={aria} placeholder="What a good reply does" />;
        return (
          <input key={field} type={field === 'tokens' ? 'number' : 'text'} min={field === 'tokens' ? 1 : undefined} value={String(value)}
            onChange={(e) => set(field, e.target.value)} aria-label={aria} placeholder={field} />
        );
      })}
      <button className="btn btn-ghost btn-icon" onClick={() => onChange(null)} aria-label={`Remove ${label.toLowerCase()}`}>✕</button>
      {issues.map((i, k) => <div key={k} className="field-error ct-check-error">{i.message}</div>)}
    </div>
  );
}
