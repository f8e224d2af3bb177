import { useEffect, useState } from 'preact/hooks';
import { api, type ConsoleConfig, type Session } from '../api.ts';
import { reconcileTools, type ReconcileTool } from '../../../src/reconciliation/tools.ts';
import { when } from '../format.ts';
import { Card, ErrorBox, Notice, Status, WorkflowLink } from '../ui.tsx';

interface Report {
  run_id: string;
  workflow_id: string | null;
  tool: string;
  dry_run: boolean;
  status: 'RUNNING' | 'COMPLETED' | 'FAILED';
  started_at: string;
  finished_at: string | null;
  complete: boolean;
  counts: { scanned: number; batches: number; items: number; planned: number; fixed: number; skipped: number; failed: number };
  items: { key: string; status: string; owner_id: string; bucket: string; currency: string; snapshot: string; computed: string; amount: string | null; detail: string | null }[];
  items_truncated: boolean;
  error?: string | null;
}
interface Accepted {
  run_id: string;
  workflow_id: string;
  status: 'RUNNING';
}

const tools = (Object.keys(reconcileTools) as ReconcileTool[]).filter((tool) => reconcileTools[tool].adminRoute);

function ReportView(props: { report: Report; config: ConsoleConfig }) {
  const { report } = props;
  return (
    <div data-testid="reconcile-report">
      <p>
        {report.dry_run ? 'Dry run' : 'Run'} <code>{report.run_id}</code> <Status value={report.status} /> · started {when(report.started_at)}
        {report.finished_at === null ? '' : ` · finished ${when(report.finished_at)}`}
        {report.workflow_id === null ? null : (
          <>
            {' '}
            · <WorkflowLink config={props.config} workflowId={report.workflow_id} />
          </>
        )}
      </p>
      {report.error === null || report.error === undefined ? null : <ErrorBox error={new Error(report.error)} />}
      <p class="counts">
        scanned {report.counts.scanned} · batches {report.counts.batches} · items {report.counts.items} (planned {report.counts.planned}, fixed{' '}
        {report.counts.fixed}, skipped {report.counts.skipped}, failed {report.counts.failed}){report.complete ? '' : ' · stopped at its bound: not complete'}
      </p>
      {report.items.length === 0 ? (
        <Notice>Nothing {report.dry_run ? 'to change' : 'changed'}.</Notice>
      ) : (
        <table class="compact">
          <thead>
            <tr>
              <th>item</th>
              <th>status</th>
              <th>snapshot → computed</th>
              <th>amount</th>
              <th>detail</th>
            </tr>
          </thead>
          <tbody>
            {report.items.map((item) => (
              <tr key={item.key}>
                <td>
                  <code>{item.key}</code>
                </td>
                <td>
                  <Status value={item.status} />
                </td>
                <td>
                  {item.snapshot} → {item.computed} {item.currency}
                </td>
                <td>{item.amount ?? ''}</td>
                <td>{item.detail ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {report.items_truncated ? <p class="muted">More items than shown: all are in reconciliation_items.</p> : null}
    </div>
  );
}

export function ReconcilePage(props: { session: Session; config: ConsoleConfig }) {
  const [tool, setTool] = useState<ReconcileTool>(tools[0] ?? 'recalculate-snapshots');
  const [ownerId, setOwnerId] = useState('');
  const [dry, setDry] = useState<{ key: string; report: Report } | null>(null);
  const [real, setReal] = useState<Report | null>(null);
  const [following, setFollowing] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const spec = reconcileTools[tool];
  const key = `${tool}|${spec.ownerScoped ? ownerId.trim() : ''}`;
  const path = spec.ownerScoped ? `/admin/reconcile/${tool}/${encodeURIComponent(ownerId.trim())}` : `/admin/reconcile/${tool}`;

  // A real run that answered 202: its counts grow as its batches record items.
  useEffect(() => {
    if (following === null) return;
    let stopped = false;
    const poll = async () => {
      while (!stopped) {
        try {
          const run = (await api<Report>(props.session, `/admin/reconcile/runs/${following}`)).body;
          if (stopped) return;
          setReal(run);
          if (run.status !== 'RUNNING') {
            setFollowing(null);
            return;
          }
        } catch (failure) {
          setError(failure);
          setFollowing(null);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    };
    void poll();
    return () => {
      stopped = true;
    };
  }, [following]);

  const run = async (dryRun: boolean) => {
    if (spec.ownerScoped && !/^[A-Za-z0-9._-]{1,128}$/.test(ownerId.trim())) {
      setError(new Error('This tool works on one owner: enter its owner id (1 to 128 letters, digits, dots, dashes or underscores).'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const answer = await api<Report | Accepted>(props.session, `${path}?dry_run=${String(dryRun)}`, { method: 'POST' });
      if (dryRun) {
        setDry({ key, report: answer.body as Report });
        setReal(null);
      } else if (answer.status === 202) {
        setReal({ ...(answer.body as Accepted), tool, dry_run: false, started_at: new Date().toISOString(), finished_at: null, complete: true, counts: { scanned: 0, batches: 0, items: 0, planned: 0, fixed: 0, skipped: 0, failed: 0 }, items: [], items_truncated: false });
        setFollowing((answer.body as Accepted).run_id);
      } else {
        setReal(answer.body as Report);
      }
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div>
      <h2>Reconcile</h2>
      <Card title="Tool" wide>
        <form
          class="reconcile"
          onSubmit={(event) => {
            event.preventDefault();
            void run(true);
          }}
        >
          <label>
            Tool
            <select
              name="tool"
              value={tool}
              onChange={(event) => {
                setTool((event.target as HTMLSelectElement).value as ReconcileTool);
                setDry(null);
                setReal(null);
              }}
            >
              {tools.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>
          {spec.ownerScoped ? (
            <label>
              Owner id
              <input name="owner" value={ownerId} onInput={(event) => setOwnerId((event.target as HTMLInputElement).value)} />
            </label>
          ) : null}
          <p class="muted">{spec.summary}</p>
          <button type="submit" disabled={busy}>
            Dry run
          </button>{' '}
          <button
            type="button"
            class="danger"
            disabled={busy || dry === null || dry.key !== key || following !== null}
            title={dry === null || dry.key !== key ? 'Run it dry first and read what it would change' : ''}
            onClick={() => {
              if (confirm(`Run ${tool} for real? It changes what the dry run showed.`)) void run(false);
            }}
          >
            Run for real
          </button>
        </form>
        <ErrorBox error={error} />
      </Card>
      {following !== null ? <p class="muted" data-testid="reconcile-progress">Running… {real?.counts.items ?? 0} item(s) so far</p> : null}
      {real !== null ? (
        <Card title="Real run" wide>
          <ReportView report={real} config={props.config} />
        </Card>
      ) : null}
      {dry !== null ? (
        <Card title="Dry run" wide>
          <ReportView report={dry.report} config={props.config} />
        </Card>
      ) : null}
    </div>
  );
}
