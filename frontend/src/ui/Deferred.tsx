// Parts of the app loaded on first use, from their own chunks (see App.tsx and EditorPage.tsx):
// a loading line meanwhile, and an error with a way out if the chunk cannot be loaded (e.g. the
// app was updated since this page was opened: a reload fetches the new one).
import { Component, Suspense, type ReactNode } from 'react';
import { ErrorState } from './States';

class LoadBoundary extends Component<{ children: ReactNode }, { error: Error | null }> {
  state: { error: Error | null } = { error: null };

  static getDerivedStateFromError(error: Error) {
    return { error };
  }

  render() {
    if (this.state.error) return <ErrorState error={this.state.error} onRetry={() => window.location.reload()} />;
    return this.props.children;
  }
}

/** Renders lazily loaded `children`, showing `fallback` until their code has arrived. */
export function Deferred({ children, fallback = <div className="page-loading">Loading…</div> }: { children: ReactNode; fallback?: ReactNode }) {
  return (
    <LoadBoundary>
      <Suspense fallback={fallback}>{children}</Suspense>
    </LoadBoundary>
  );
}
