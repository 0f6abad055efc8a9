import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '@xyflow/react/dist/style.css';
import './styles.css';
import { App } from './App';
import { useSession } from './auth/session';
import { prefetchEditorData } from './editor/data';
import { match } from './router';

// Reads start before React does, side by side: the session check and, on an editor page, the
// workflow the editor opens (it does not wait for the session: a logged-out read just fails).
void useSession.getState().check();
const editor = match('/workflows/:id', window.location.pathname);
if (editor) prefetchEditorData(Number(editor.id));

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
