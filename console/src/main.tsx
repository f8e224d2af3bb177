import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { loadConfig, loadSession, saveSession, whenSessionEnds, type ConsoleConfig, type Session } from './api.ts';
import { AccountsPage } from './pages/accounts.tsx';
import { AdminsPage } from './pages/admins.tsx';
import { B2bCustomerPage, B2bPage } from './pages/b2b.tsx';
import { BlocklistPage } from './pages/blocklist.tsx';
import { DashboardPage } from './pages/dashboard.tsx';
import { FeesPage } from './pages/fees.tsx';
import { LimitsPage } from './pages/limits.tsx';
import { LoginPage } from './pages/login.tsx';
import { PlcDetailPage, PlcSearchPage } from './pages/plcs.tsx';
import { ReconcilePage } from './pages/reconcile.tsx';
import { RedemptionDetailPage, RedemptionsPage } from './pages/redemptions.tsx';
import { ReputationDetailPage, ReputationPage } from './pages/reputation.tsx';
import { RiskPage } from './pages/risk.tsx';
import { WebhooksPage } from './pages/webhooks.tsx';
import { ErrorBox } from './ui.tsx';
import './styles.css';

/**
 * The operator's web console (docs/operations-console.md, "The web console"). Every action goes
 * through the same /api/v1 routes, with the same checks, as any client; the console holds the
 * admin's token in this tab's sessionStorage only.
 */

interface Route {
  page: string;
  arg: string;
  params: URLSearchParams;
}

function parseRoute(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#\/?/, '').split('?', 2);
  const [page = 'dashboard', arg = ''] = path.split('/', 2);
  return { page: page === '' ? 'dashboard' : page, arg: decodeURIComponent(arg), params: new URLSearchParams(query) };
}

const nav = [
  ['dashboard', 'Dashboard'],
  ['plcs', 'PLCs'],
  ['redemptions', 'Redemptions'],
  ['risk', 'Risk flags'],
  ['blocklist', 'Blocklist'],
  ['limits', 'Limit requests'],
  ['reputation', 'Reputation'],
  ['accounts', 'Accounts'],
  ['b2b', 'Businesses'],
  ['webhooks', 'Webhooks'],
  ['fees', 'Fees'],
  ['reconcile', 'Reconcile'],
  ['admins', 'Administrators'],
] as const;

/** The page a detail page belongs to in the menu. */
const parentOf: Record<string, string> = { plc: 'plcs', redemption: 'redemptions', 'b2b-customer': 'b2b' };

function App() {
  const [session, setSession] = useState<Session | null>(loadSession());
  const [message, setMessage] = useState<string | null>(null);
  const [config, setConfig] = useState<ConsoleConfig>({ temporal_ui_url: '', temporal_namespace: 'default' });
  const [route, setRoute] = useState<Route>(parseRoute(location.hash));

  useEffect(() => {
    const onHash = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onHash);
    void loadConfig().then(setConfig);
    whenSessionEnds((reason) => {
      setSession(null);
      setMessage(reason);
    });
    return () => removeEventListener('hashchange', onHash);
  }, []);

  // The token's own expiry ends the session too, with a clear message, not a failed request later.
  useEffect(() => {
    if (session === null) return;
    const timer = setTimeout(() => {
      saveSession(null);
      setSession(null);
      setMessage('Your session has expired. Please log in again.');
    }, Math.max(0, session.expiresAtMs - Date.now()));
    return () => clearTimeout(timer);
  }, [session]);

  if (session === null) {
    return (
      <LoginPage
        message={message}
        onLogin={(next) => {
          saveSession(next);
          setMessage(null);
          setSession(next);
        }}
      />
    );
  }
  const endSession = () => {
    saveSession(null);
    setSession(null);
    setMessage('Your session has expired or was ended. Please log in again.');
  };
  let page;
  switch (route.page) {
    case 'dashboard':
      page = <DashboardPage session={session} config={config} onUnauthorized={endSession} />;
      break;
    case 'plcs':
      page = <PlcSearchPage session={session} query={route.params.get('q') ?? ''} />;
      break;
    case 'plc':
      page = <PlcDetailPage session={session} config={config} tokenId={route.arg} />;
      break;
    case 'redemptions':
      page = <RedemptionsPage session={session} config={config} status={route.params.get('status') ?? 'all'} offset={Number(route.params.get('offset') ?? '0')} />;
      break;
    case 'redemption':
      page = <RedemptionDetailPage session={session} config={config} redemptionId={route.arg} />;
      break;
    case 'risk':
      page = <RiskPage session={session} resolved={route.params.get('resolved') === 'true'} />;
      break;
    case 'accounts':
      page = <AccountsPage session={session} offset={Number(route.params.get('offset') ?? '0')} />;
      break;
    case 'reconcile':
      page = <ReconcilePage session={session} config={config} />;
      break;
    case 'limits':
      page = <LimitsPage session={session} config={config} />;
      break;
    case 'b2b':
      page = <B2bPage session={session} status={route.params.get('status') ?? 'PENDING_REVIEW'} offset={Number(route.params.get('offset') ?? '0')} />;
      break;
    case 'b2b-customer':
      page = <B2bCustomerPage session={session} customerId={route.arg} />;
      break;
    case 'blocklist':
      page = <BlocklistPage session={session} status={route.params.get('status') ?? 'active'} offset={Number(route.params.get('offset') ?? '0')} />;
      break;
    case 'webhooks':
      page = <WebhooksPage session={session} config={config} />;
      break;
    case 'reputation':
      page =
        route.arg === '' ? (
          <ReputationPage session={session} tier={route.params.get('tier') ?? ''} sort={route.params.get('sort') ?? 'score'} offset={Number(route.params.get('offset') ?? '0')} />
        ) : (
          <ReputationDetailPage session={session} ownerId={route.arg} />
        );
      break;
    case 'fees': {
      const version = Number(route.params.get('version') ?? 'NaN');
      page = <FeesPage session={session} version={Number.isInteger(version) && version >= 1 ? version : null} />;
      break;
    }
    case 'admins':
      page = <AdminsPage session={session} offset={Number(route.params.get('offset') ?? '0')} />;
      break;
    default:
      page = <ErrorBox error={new Error(`No page "${route.page}". Choose one above.`)} />;
  }
  const current = parentOf[route.page] ?? route.page;
  return (
    <div class="app">
      <header>
        <strong>Settlement console</strong>
        <nav>
          {nav.filter(([name]) => name !== 'admins' || session.role === 'super_admin').map(([name, label]) => (
            <a key={name} href={`#/${name}`} class={name === current ? 'active' : ''}>
              {label}
            </a>
          ))}
        </nav>
        <span class="who">
          {session.username} ({session.role}) <button class="small" onClick={() => { saveSession(null); setSession(null); setMessage('You logged out.'); }}>Log out</button>
        </span>
      </header>
      <main>{page}</main>
    </div>
  );
}

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
