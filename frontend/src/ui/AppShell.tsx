import type { ReactNode } from 'react';
import { useSession } from '../auth/session';
import { Link, useLocation } from '../router';
import { Logo } from './Logo';

const NAV = [
  { to: '/', label: 'Workflows', active: (p: string) => p === '/' || p.startsWith('/workflows') },
  { to: '/runs', label: 'Runs', active: (p: string) => p.startsWith('/runs') },
  { to: '/threads', label: 'Threads', active: (p: string) => p.startsWith('/threads') },
  { to: '/participants', label: 'Participants', active: (p: string) => p.startsWith('/participants') },
  { to: '/providers', label: 'Providers', active: (p: string) => p.startsWith('/providers') },
  { to: '/secrets', label: 'Secrets', active: (p: string) => p.startsWith('/secrets') },
];

/** The header every page shares; the editor puts its own toolbar in `children` of TopBar. */
export function TopBar({ children }: { children?: ReactNode }) {
  const { user, logout } = useSession();
  const { pathname } = useLocation();
  return (
    <header className="topbar">
      <Link to="/" className="brand" aria-label="Skein home">
        <Logo />
        <span>Skein</span>
      </Link>
      {children ?? (
        <nav className="topnav">
          {NAV.map((item) => (
            <Link key={item.to} to={item.to} className={item.active(pathname) ? 'active' : ''}>
              {item.label}
            </Link>
          ))}
        </nav>
      )}
      <div className="topbar-user">
        <Link to="/account" className="muted" title="Account: change your password">{user?.username}</Link>
        <button className="btn btn-ghost btn-sm" onClick={() => void logout()}>
          Log out
        </button>
      </div>
    </header>
  );
}

export function AppShell({ children }: { children: ReactNode }) {
  return (
    <div className="app">
      <TopBar />
      <main className="page">{children}</main>
    </div>
  );
}
