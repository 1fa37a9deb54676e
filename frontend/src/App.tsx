import { useEffect, useRef } from 'react';
import { Navigate, NavLink, Route, Routes, useLocation, useSearchParams } from 'react-router';
import { useAuth } from './auth';
import { Spinner } from './components/ui';
import { useToast } from './components/toast';
import { errorMessage } from './lib/errors';
import { closeLive } from './lib/live';
import { allowedPath, homeFor, isRoot, pagesFor } from './lib/roles';
import { ThemeSelect } from './components/ThemeSelect';
import { AccountPage, MustChangePasswordPage } from './pages/Account';
import { AllowlistPage } from './pages/Allowlist';
import { AssetHitsPage, AssetsPage } from './pages/Assets';
import { AuditLogPage } from './pages/AuditLog';
import { FeedDetailPage } from './pages/FeedDetail';
import { FeedsPage } from './pages/Feeds';
import { IocsPage } from './pages/Iocs';
import { OverviewPage } from './pages/Overview';
import { LoginPage } from './pages/Login';
import { NotificationsPage } from './pages/Notifications';
import { TenantGroupsPage } from './pages/TenantGroups';
import { TenantsPage } from './pages/Tenants';
import { UsersPage } from './pages/Users';

/** App routes every page; all but the login page need a signed-in user. */
export function App() {
  const { user, loading } = useAuth();
  const location = useLocation();
  if (loading) return <Spinner label="Starting…" />;
  if (!user) {
    if (location.pathname === '/login') return <LoginPage />;
    const next = location.pathname + location.search;
    return <Navigate to={`/login${next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}`} replace />;
  }
  // After a password reset the session may only choose a new password.
  if (user.mustChangePassword) return <MustChangePasswordPage />;
  const home = homeFor(user.scope);
  // A page the API would refuse this user is not rendered at all (it would
  // only show FORBIDDEN errors): the address says it is not for them.
  const rootOnly = (page: React.ReactNode) => (isRoot(user.scope) ? page : <NotAllowed home={home} />);
  return (
    <Shell>
      <Routes>
        <Route path="/" element={<Navigate to={home} replace />} />
        <Route path="/login" element={<AfterLogin home={home} />} />
        <Route path="/overview" element={<OverviewPage />} />
        <Route path="/feeds" element={rootOnly(<FeedsPage />)} />
        <Route path="/feeds/:id" element={rootOnly(<FeedDetailPage />)} />
        <Route path="/iocs" element={<IocsPage />} />
        <Route path="/tenants" element={<TenantsPage />} />
        <Route path="/groups" element={rootOnly(<TenantGroupsPage />)} />
        <Route path="/allowlist" element={rootOnly(<AllowlistPage />)} />
        <Route path="/users" element={rootOnly(<UsersPage />)} />
        <Route path="/account" element={<AccountPage />} />
        <Route path="/audit" element={rootOnly(<AuditLogPage />)} />
        <Route path="/notifications" element={<NotificationsPage />} />
        <Route path="/assets" element={<AssetsPage />} />
        <Route path="/hits" element={<AssetHitsPage />} />
        <Route path="*" element={<NotFound home={home} />} />
      </Routes>
    </Shell>
  );
}

function Shell({ children }: { children: React.ReactNode }) {
  const { user, logout } = useAuth();
  const toast = useToast();
  const { pathname } = useLocation();
  const first = useRef(true);
  // After client-side navigation, move focus to the new page so keyboard and
  // screen-reader users start there (a full page load does this by itself).
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [pathname]);
  // Drop-down menus (<details class="menu">) close on Escape and on a click elsewhere.
  useEffect(() => {
    const closeOthers = (target: EventTarget | null) =>
      document.querySelectorAll<HTMLDetailsElement>('details.menu[open]').forEach((d) => {
        if (!(target instanceof Node && d.contains(target))) d.open = false;
      });
    const onClick = (e: MouseEvent) => closeOthers(e.target);
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      const open = document.querySelector<HTMLDetailsElement>('details.menu[open]');
      if (open) {
        open.open = false;
        open.querySelector('summary')?.focus();
      }
    };
    document.addEventListener('click', onClick);
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('click', onClick);
      document.removeEventListener('keydown', onKey);
    };
  }, []);
  const links = pagesFor(user?.scope).map((p) => [p.path, p.label] as const);
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand">
          <svg viewBox="0 0 32 32" width="24" height="24" aria-hidden="true">
            <rect width="32" height="32" rx="7" fill="currentColor" />
            <path d="M9 16a7 7 0 0 1 14 0M12 16a4 4 0 0 1 8 0" stroke="#fff" strokeWidth="2.5" fill="none" />
            <circle cx="16" cy="17" r="2" fill="#fff" />
          </svg>
          tifeeds
        </span>
        <nav aria-label="Main" className="mainnav">
          {links.map(([to, label]) => (
            <NavLink key={to} to={to} className={({ isActive }) => (isActive ? 'navlink active' : 'navlink')}>
              {label}
            </NavLink>
          ))}
        </nav>
        <div className="user">
          <ThemeSelect />
          <NavLink to="/account" className="user-name" data-testid="signed-in-user" title={`Your account (scope: ${user?.scope.toLowerCase()})`}>
            {user?.username}
            <span className="badge">{user?.scope.toLowerCase()}</span>
          </NavLink>
          <button
            type="button"
            className="btn btn-small"
            onClick={() => {
              closeLive();
              logout().catch((err) => toast.error(errorMessage(err)));
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

/**
 * AfterLogin sends a freshly signed-in user where they were going (same-site
 * paths they may open only), else to their home page.
 */
function AfterLogin({ home }: { home: string }) {
  const { user } = useAuth();
  const [params] = useSearchParams();
  const next = params.get('next');
  const ok = next && next.startsWith('/') && !next.startsWith('//') && allowedPath(user?.scope, new URL(next, 'http://x').pathname);
  return <Navigate to={ok ? next : home} replace />;
}

function NotFound({ home }: { home: string }) {
  return (
    <section className="page">
      <h1>Page not found</h1>
      <p>
        There is nothing at this address. Go to the <NavLink to={home}>start page</NavLink>.
      </p>
    </section>
  );
}

/** NotAllowed stands for a page the signed-in user's scope may not use. */
function NotAllowed({ home }: { home: string }) {
  return (
    <section className="page" aria-labelledby="not-allowed-title">
      <h1 id="not-allowed-title">Not available to your account</h1>
      <p>
        This page is for root users: feeds and tenant groups are managed by the service's operators. Go to the{' '}
        <NavLink to={home}>start page</NavLink>.
      </p>
    </section>
  );
}
