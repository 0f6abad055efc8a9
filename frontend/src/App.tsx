import { lazy, type ReactNode } from 'react';
import { LoginPage } from './auth/LoginPage';
import { useSession } from './auth/session';
import { EditorPage } from './editor/EditorPage';
import { match, useLocation } from './router';
import { AppShell } from './ui/AppShell';
import { Deferred } from './ui/Deferred';
import { Toaster } from './ui/toast';
import { WorkflowsPage } from './workflows/WorkflowsPage';

// The editor and the workflow list come with the app; the other pages load when first opened.
const RunsPage = lazy(() => import('./runs/RunsPage').then((m) => ({ default: m.RunsPage })));
const RunPage = lazy(() => import('./runs/RunPage').then((m) => ({ default: m.RunPage })));
const MemoryPage = lazy(() => import('./memory/MemoryPage').then((m) => ({ default: m.MemoryPage })));
const TestRunPage = lazy(() => import('./conversationTests/TestRunPage').then((m) => ({ default: m.TestRunPage })));
const ComparePage = lazy(() => import('./conversationTests/ComparePage').then((m) => ({ default: m.ComparePage })));
const ProvidersPage = lazy(() => import('./providers/ProvidersPage').then((m) => ({ default: m.ProvidersPage })));
const SecretsPage = lazy(() => import('./secrets/SecretsPage').then((m) => ({ default: m.SecretsPage })));
const ThreadsPage = lazy(() => import('./threads/ThreadsPage').then((m) => ({ default: m.ThreadsPage })));
const ThreadPage = lazy(() => import('./threads/ThreadsPage').then((m) => ({ default: m.ThreadPage })));
const ParticipantsPage = lazy(() => import('./participants/ParticipantsPage').then((m) => ({ default: m.ParticipantsPage })));
const ParticipantPage = lazy(() => import('./participants/ParticipantsPage').then((m) => ({ default: m.ParticipantPage })));
const AccountPage = lazy(() => import('./auth/AccountPage').then((m) => ({ default: m.AccountPage })));

function shell(page: ReactNode): ReactNode {
  return (
    <AppShell>
      <Deferred>{page}</Deferred>
    </AppShell>
  );
}

function routeFor(pathname: string): ReactNode {
  let params: Record<string, string> | null;
  if ((params = match('/workflows/:id', pathname))) return <EditorPage key={params.id} workflowId={Number(params.id)} />;
  if ((params = match('/workflows/:id/runs', pathname))) return shell(<RunsPage workflowId={Number(params.id)} />);
  if (match('/runs', pathname)) return shell(<RunsPage />);
  if ((params = match('/runs/:id', pathname))) return shell(<RunPage key={params.id} runId={Number(params.id)} />);
  if ((params = match('/threads/:id/memory', pathname))) return shell(<MemoryPage key={params.id} threadId={Number(params.id)} />);
  if (match('/threads', pathname)) return shell(<ThreadsPage />);
  if ((params = match('/threads/:id', pathname))) return shell(<ThreadPage key={params.id} threadId={Number(params.id)} />);
  if (match('/participants', pathname)) return shell(<ParticipantsPage />);
  if ((params = match('/participants/:id', pathname))) return shell(<ParticipantPage key={params.id} participantId={Number(params.id)} />);
  if ((params = match('/test-runs/:id', pathname))) return shell(<TestRunPage key={params.id} testRunId={Number(params.id)} />);
  if ((params = match('/test-runs/:a/compare/:b', pathname))) return shell(<ComparePage key={pathname} a={Number(params.a)} b={Number(params.b)} />);
  if (match('/providers', pathname)) return shell(<ProvidersPage />);
  if (match('/secrets', pathname)) return shell(<SecretsPage />);
  if (match('/account', pathname)) return shell(<AccountPage />);
  return <AppShell><WorkflowsPage /></AppShell>;
}

/** The app; main.tsx starts the session check before mounting it. */
export function App() {
  const status = useSession((s) => s.status);
  const { pathname } = useLocation();

  let page: ReactNode;
  if (status === 'loading') page = <div className="page-loading">Loading…</div>;
  else if (status === 'anonymous') page = <LoginPage />;
  else page = routeFor(pathname);

  return (
    <>
      {page}
      <Toaster />
    </>
  );
}
