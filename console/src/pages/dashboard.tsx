import { useEffect, useState } from 'preact/hooks';
import { api, type ConsoleConfig, type Session } from '../api.ts';
import { BarChart, LineChart } from '../charts.tsx';
import { bucketLabel, duration, money, shortId, when } from '../format.ts';
import { followEvents, type LiveEvent } from '../sse.ts';
import { Card, ErrorBox, Status, useLoad } from '../ui.tsx';

interface StatusTotal {
  status: string;
  currency: string;
  count: number;
  amount: string;
}
/** The histogram bucket holding a quantile: all the counters can vouch for (the API's _ms values are interpolations). */
interface Bucket {
  above_ms: number;
  at_most_ms: number | null;
}
/** What a chart can draw of a bucket: its upper bound (the open last bucket: its lower one). */
const bucketTop = (bucket: Bucket | null): number | null => (bucket === null ? null : (bucket.at_most_ms ?? bucket.above_ms));

interface Stats {
  generated_at: string;
  plcs: { by_status: StatusTotal[]; promised: { currency: string; count: number; amount: string }[]; redeemed: { currency: string; count: number; amount: string }[] };
  redemptions: { by_status: StatusTotal[]; time_to_settle: { window_days: number; settled: number; p50_bucket: Bucket | null; p95_bucket: Bucket | null } };
  charges: { by_status: StatusTotal[] };
  ledger: {
    stale: boolean;
    check_interval_s: number;
    last_check: null | { checked_at: string; age_s: number; ok: boolean; violations_count: number; source: string; totals: { currency: string; bucket: string; users: string; system: string }[] };
  };
  webhooks: { received_waiting: number; processing: number; dead: number; oldest_age_ms: number | null; lagging: boolean; ok: boolean };
  queues: { ok: boolean; plc_status_outbox: { pending: number; failing: number; oldest_age_ms: number | null; lagging: boolean } };
  series: {
    date: string;
    plcs_issued: number;
    plcs_redeemed: number;
    settled: number;
    settle_p50_bucket: Bucket | null;
    settle_p95_bucket: Bucket | null;
    webhooks_received: number;
    webhooks_processed: number;
    webhooks_ignored: number;
    webhooks_dead: number;
  }[];
}

function Totals(props: { rows: StatusTotal[] }) {
  if (props.rows.length === 0) return <p class="muted">none yet</p>;
  return (
    <table class="compact">
      <tbody>
        {props.rows.map((row) => (
          <tr key={`${row.status}-${row.currency}`}>
            <td>
              <Status value={row.status} />
            </td>
            <td class="num">{row.count}</td>
            <td class="num">{money(row.amount, row.currency)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const feedMax = 50;

function LiveFeed(props: { session: Session; onUnauthorized: () => void }) {
  const [events, setEvents] = useState<LiveEvent[]>([]);
  const [state, setState] = useState<'connecting' | 'live' | 'retrying'>('connecting');
  useEffect(
    () =>
      followEvents(props.session, {
        onEvent: (event) => {
          if (event.event === 'closing' || event.event === 'reset') return;
          setEvents((previous) => [event, ...previous].slice(0, feedMax));
        },
        onState: setState,
        onUnauthorized: props.onUnauthorized,
      }),
    [props.session.token],
  );
  return (
    <Card title="Live feed" wide>
      <p class={`feed-state feed-${state}`} data-testid="feed-state">
        {state === 'live' ? 'live' : state === 'connecting' ? 'connecting…' : 'reconnecting…'}
      </p>
      {events.length === 0 ? (
        <p class="muted">Changes of PLCs, redemptions and charges appear here as they happen.</p>
      ) : (
        <table class="compact feed" data-testid="live-feed">
          <tbody>
            {events.map((event) => {
              const data = event.data as { kind?: string; subject_id?: string; token_id?: string | null; status?: string; amount?: string | null; currency?: string; at?: string };
              const link = data.kind === 'redemption' ? `#/redemption/${data.subject_id ?? ''}` : data.kind === 'plc' ? `#/plc/${data.subject_id ?? ''}` : null;
              return (
                <tr key={event.id}>
                  <td class="muted">{when(data.at).slice(11)}</td>
                  <td>{data.kind}</td>
                  <td>{link === null ? shortId(data.subject_id) : <a href={link}>{shortId(data.subject_id)}</a>}</td>
                  <td>
                    <Status value={data.status} />
                  </td>
                  <td class="num">{data.amount === null || data.amount === undefined ? '' : money(data.amount, data.currency ?? '')}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </Card>
  );
}

export function DashboardPage(props: { session: Session; config: ConsoleConfig; onUnauthorized: () => void }) {
  const { data, error, reload } = useLoad(async () => (await api<Stats>(props.session, '/admin/stats')).body, [props.session.token]);
  useEffect(() => {
    const timer = setInterval(reload, 15_000);
    return () => clearInterval(timer);
  }, [reload]);
  const labels = data?.series.map((day) => day.date) ?? [];
  return (
    <div>
      <h2>
        Dashboard <button class="small" onClick={reload}>Refresh</button>
      </h2>
      <ErrorBox error={error} />
      {data === null ? (
        error === null ? <p class="muted">Loading…</p> : null
      ) : (
        <div class="grid">
          <Card title="PLCs">
            <Totals rows={data.plcs.by_status} />
            <p>
              Promised: {data.plcs.promised.map((row) => money(row.amount, row.currency)).join(', ') || '0'} · Redeemed:{' '}
              {data.plcs.redeemed.map((row) => money(row.amount, row.currency)).join(', ') || '0'}
            </p>
          </Card>
          <Card title="Redemptions">
            <Totals rows={data.redemptions.by_status} />
            <p data-testid="time-to-settle" title="From histogram buckets (100 ms, 250 ms, 500 ms, 1 s, 2 s, 5 s ... 24 h): the bucket that holds each percentile, not an exact figure">
              Time to settle ({data.redemptions.time_to_settle.window_days} d, {data.redemptions.time_to_settle.settled} settled): p50{' '}
              {bucketLabel(data.redemptions.time_to_settle.p50_bucket)} · p95 {bucketLabel(data.redemptions.time_to_settle.p95_bucket)}
              <br />
              <span class="muted">bucket bounds of a histogram, not exact times</span>
            </p>
          </Card>
          <Card title="Charges">
            <Totals rows={data.charges.by_status} />
          </Card>
          <Card title="Ledger">
            {data.ledger.last_check === null ? (
              <p class="warn">No ledger check yet (it runs every {Math.round(data.ledger.check_interval_s / 60)} min).</p>
            ) : (
              <>
                <p class={data.ledger.last_check.ok ? 'ok' : 'bad'}>
                  {data.ledger.last_check.ok ? 'Every invariant held' : `${data.ledger.last_check.violations_count} violation(s)`} · checked{' '}
                  {duration(data.ledger.last_check.age_s * 1000)} ago{data.ledger.stale ? ' (stale)' : ''}
                </p>
                <table class="compact">
                  <tbody>
                    {data.ledger.last_check.totals.map((row) => (
                      <tr key={`${row.currency}-${row.bucket}`}>
                        <td>{row.bucket}</td>
                        <td class="num">{money(row.users, row.currency)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </>
            )}
          </Card>
          <Card title="Webhooks and queues">
            <p class={data.webhooks.ok ? 'ok' : 'bad'}>
              Inbox: {data.webhooks.received_waiting} waiting, {data.webhooks.processing} processing, {data.webhooks.dead} dead
              {data.webhooks.oldest_age_ms === null ? '' : `, oldest ${duration(data.webhooks.oldest_age_ms)}`}
            </p>
            <p class={data.queues.plc_status_outbox.lagging ? 'bad' : 'ok'}>
              Status outbox: {data.queues.plc_status_outbox.pending} pending, {data.queues.plc_status_outbox.failing} failing
            </p>
          </Card>
          <BarChart
            title="PLCs issued and redeemed per day"
            labels={labels}
            series={[
              { name: 'issued', values: data.series.map((day) => day.plcs_issued), className: 'c1' },
              { name: 'redeemed', values: data.series.map((day) => day.plcs_redeemed), className: 'c2' },
            ]}
          />
          <LineChart
            title="Time to settle per day: p50 and p95 are at most (bucket bound)"
            labels={labels}
            format={(value) => (value === 0 ? '0' : duration(Math.round(value)))}
            series={[
              { name: 'p50', values: data.series.map((day) => bucketTop(day.settle_p50_bucket)), className: 'c1' },
              { name: 'p95', values: data.series.map((day) => bucketTop(day.settle_p95_bucket)), className: 'c3' },
            ]}
          />
          <BarChart
            title="Webhook events per day"
            labels={labels}
            series={[
              { name: 'processed', values: data.series.map((day) => day.webhooks_processed), className: 'c2' },
              { name: 'ignored', values: data.series.map((day) => day.webhooks_ignored), className: 'c4' },
              { name: 'dead', values: data.series.map((day) => day.webhooks_dead), className: 'c3' },
            ]}
          />
          <LiveFeed session={props.session} onUnauthorized={props.onUnauthorized} />
        </div>
      )}
    </div>
  );
}
