// "Save as test" on a thread: its user messages become a test's turns (with the replies given then
// as references), and the editor opens it in the Tests tab to add checks.
import { useState } from 'react';
import { navigate } from '../router';
import { toast } from '../ui/toast';
import { testsApi } from './api';

export function SaveAsTestButton({ threadId }: { threadId: number }) {
  const [saving, setSaving] = useState(false);
  const save = async () => {
    setSaving(true);
    try {
      const test = await testsApi.fromThread(threadId);
      toast(`Saved as the test “${test.name}”: add checks to its turns.`, 'success');
      navigate(`/workflows/${test.workflow}?tab=tests&test=${test.id}`);
    } catch (error) {
      toast((error as Error).message, 'error');
    } finally {
      setSaving(false);
    }
  };
  return (
    <button className="btn btn-sm" onClick={() => void save()} disabled={saving} title="Turn this conversation into a conversation test">
      {saving ? 'Saving…' : 'Save as test'}
    </button>
  );
}
