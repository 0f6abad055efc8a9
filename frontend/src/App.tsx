import { useEffect, type ReactNode } from 'react';
import { LoginPage } from './auth/LoginPage';
import { useSession } from './auth/session';
import { EditorPage } from './editor/EditorPage';
import { MemoryPage } from './memory/MemoryPage';
import { ProvidersPage } from './providers/ProvidersPage';
import { match, useLocation } from './router';
import { RunPage } from './runs/RunPage';
import { RunsPage } from './runs/RunsPage';
import { Toaster } from './ui/toast';
import { AppShell } from './ui/AppShell';
import { WorkflowsPage } from './workflows/WorkflowsPage';

function routeFor(pathname: string): ReactNode {
  let params: Record<string, string> | null;
  if ((params = match('/workflows/:id', pathname))) return <EditorPage key={params.id} workflowId={Number(params.id)} />;
  if ((params = match('/workflows/:id/runs', pathname)))
    return <AppShell><RunsPage workflowId={Number(params.id)} /></AppShell>;
  if (match('/runs', pathname)) return <AppShell><RunsPage /></AppShell>;
  if ((params = match('/runs/:id', pathname))) return <AppShell><RunPage key={params.id} runId={Number(params.id)} /></AppShell>;
  if ((params = match('/threads/:id/memory', pathname)))
    return <AppShell><MemoryPage key={params.id} threadId={Number(params.id)} /></AppShell>;
  if (match('/providers', pathname)) return <AppShell><ProvidersPage /></AppShell>;
  return <AppShell><WorkflowsPage /></AppShell>;
}

export function App() {
  const { status, check } = useSession();
  const { pathname } = useLocation();

  useEffect(() => {
    void check();
  }, [check]);

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
