// Editor behaviours that hang off the store: debounced autosave and keyboard shortcuts.
import { useEffect } from 'react';
import { toast } from '../ui/toast';
import { useEditor } from './store';

export const AUTOSAVE_MS = 800;

/** Saves the draft shortly after the last edit; stops on a conflict; warns before leaving unsaved work. */
export function useAutosave() {
  const changeCount = useEditor((s) => s.changeCount);
  const savedCount = useEditor((s) => s.savedCount);
  const conflict = useEditor((s) => s.conflict);
  const save = useEditor((s) => s.save);

  useEffect(() => {
    if (changeCount === savedCount || conflict) return;
    const timer = window.setTimeout(() => void save(), AUTOSAVE_MS);
    return () => window.clearTimeout(timer);
  }, [changeCount, savedCount, conflict, save]);

  useEffect(() => {
    const warn = (event: BeforeUnloadEvent) => {
      const s = useEditor.getState();
      if (s.changeCount !== s.savedCount) event.preventDefault();
    };
    window.addEventListener('beforeunload', warn);
    return () => {
      window.removeEventListener('beforeunload', warn);
      // Leaving the editor inside the app: save what is pending.
      void useEditor.getState().save();
    };
  }, []);
}

function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el) return false;
  return el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName);
}

export async function saveNow() {
  const ok = await useEditor.getState().save();
  const s = useEditor.getState();
  if (ok) toast('Saved', 'success', 1500);
  else if (s.conflict) toast('Not saved: this workflow changed elsewhere. Reload to continue.', 'error');
  else if (s.saveError) toast(`Not saved: ${s.saveError}`, 'error');
}

/** Ctrl+Z, Ctrl+Shift+Z / Ctrl+Y, Ctrl+C, Ctrl+V, Ctrl+A, Delete/Backspace, Ctrl+S. */
export function useEditorShortcuts() {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const mod = event.ctrlKey || event.metaKey;
      const key = event.key.toLowerCase();
      const s = useEditor.getState();
      if (mod && key === 's') {
        event.preventDefault();
        void saveNow();
        return;
      }
      // In a form field the browser's own undo, copy and delete apply.
      if (isTyping(event.target) || document.querySelector('.modal-backdrop')) return;
      if (mod && key === 'z') {
        event.preventDefault();
        if (event.shiftKey) s.redo();
        else s.undo();
      } else if (mod && key === 'y') {
        event.preventDefault();
        s.redo();
      } else if (mod && key === 'c') {
        if (window.getSelection()?.toString()) return;
        const n = s.copySelection();
        if (n) toast(`Copied ${n} node${n === 1 ? '' : 's'}`, 'info', 1500);
      } else if (mod && key === 'v') {
        event.preventDefault();
        s.paste();
      } else if (mod && key === 'a') {
        event.preventDefault();
        s.selectAll();
      } else if (event.key === 'Delete' || event.key === 'Backspace') {
        event.preventDefault();
        s.deleteSelected();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
}
