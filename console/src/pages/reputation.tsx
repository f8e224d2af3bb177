import { api, type Session } from '../api.ts';
import { money, pubkeyPattern, shortId, when } from '../format.ts';
import { Card, ErrorBox, ListTable, Status, useLoad } from '../ui.tsx';

/** Reputation: owners by score, one owner's detail and history (docs/operations-console.md, "Reputation"). */

const tiers = ['RESTRICTED', 'BASIC', 'STANDARD', 'TRUSTED', 'PREMIUM'] as const;
const sortKeys = ['score', 'updated_at', 'settled_volume', 'events'] as const;
const pageSize = 50;

interface Reputation {
  owner_id: string;
  score: number;
  tier: string;
  current_score: number;
  current_tier: string;
  counterparties: number;
  last_credit_at: string;
  sanctioned: boolean;
  settled_volume: string;
  account_age_credits: number;
  events: number;
  opened_at: string;
  updated_at: string;
}
interface ReputationDetail extends Reputation {
  tier_bounds: { score_min: number; score_max: number };
  next_tier: { tier: string; points_needed: number } | null;
  limits: { max_amount: string; daily_limit: string };
}
interface ReputationEvent {
  id: string;
  kind: string;
  delta: number;
  reason: string;
  reference: string | null;
  amount: string | null;
  severity: string | null;
  counterparty: string | null;
  score_after: number;
  tier_after: string;
  created_at: string;
}
interface Stats {
  owners: number;
  sanctioned: number;
  average_score: number | null;
  events_last_24h: number;
  tiers: { tier: string; score_min: number; score_max: number; owners: number; max_amount: string; daily_limit: string }[];
}

export function ReputationPage(props: { session: Session; tier: string; sort: string; offset: number }) {
  const tier = (tiers as readonly string[]).includes(props.tier) ? props.tier : '';
  const sort = (sortKeys as readonly string[]).includes(props.sort) ? props.sort : 'score';
  const offset = Number.isInteger(props.offset) && props.offset >= 0 ? props.offset : 0;
  const stats = useLoad(async () => (await api<Stats>(props.session, '/admin/reputation/stats')).body, []);
  const list = useLoad(
    async () => (await api<Reputation[]>(props.session, `/admin/reputation/list?limit=${pageSize}&offset=${offset}&sort_by=${sort}&sort_dir=desc${tier === '' ? '' : `&tier=${tier}`}`)).body,
    [tier, sort, offset],
  );
  const link = (next: { tier?: string; sort?: string; offset?: number }) =>
    `#/reputation?tier=${next.tier ?? tier}&sort=${next.sort ?? sort}&offset=${next.offset ?? 0}`;
  return (
    <div>
      <h2>Reputation</h2>
      <ErrorBox error={stats.error} />
      {stats.data === null ? null : (
        <table class="compact" data-testid="reputation-tiers">
          <thead>
            <tr>
              <th>tier</th>
              <th>score</th>
              <th class="num">owners</th>
              <th class="num">per PLC</th>
              <th class="num">per day</th>
            </tr>
          </thead>
          <tbody>
            {stats.data.tiers.map((row) => (
              <tr key={row.tier}>
                <td>
                  <a href={link({ tier: row.tier })}>
                    <Status value={row.tier} />
                  </a>
                </td>
                <td>
                  {row.score_min} – {row.score_max}
                </td>
                <td class="num">{row.owners}</td>
                <td class="num">{money(row.max_amount, 'BRL')}</td>
                <td class="num">{money(row.daily_limit, 'BRL')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {stats.data === null ? null : (
        <p class="muted">
          {stats.data.owners} owners, {stats.data.sanctioned} sanctioned, average score {stats.data.average_score === null ? '—' : Math.round(stats.data.average_score)},{' '}
          {stats.data.events_last_24h} events in the last 24 hours.
        </p>
      )}
      <nav class="tabs">
        <a href={link({ tier: '' })} class={tier === '' ? 'active' : ''}>
          every tier
        </a>
        {tiers.map((value) => (
          <a key={value} href={link({ tier: value })} class={value === tier ? 'active' : ''}>
            {value}
          </a>
        ))}
        <span class="muted">sorted by</span>
        {sortKeys.map((value) => (
          <a key={value} href={link({ sort: value })} class={value === sort ? 'active' : ''}>
            {value.replace('_', ' ')}
          </a>
        ))}
      </nav>
      <ErrorBox error={list.error} />
      <ListTable
        testId="reputation-list"
        heads={['owner', 'score now', 'tier now', 'counterparties', 'settled', 'events', 'updated']}
        items={list.data}
        none={<>No owner{tier === '' ? '' : ` in ${tier}`} yet.</>}
        row={(row) => (
          <tr key={row.owner_id}>
            <td title={row.owner_id}>
              <a href={`#/reputation/${row.owner_id}`}>{shortId(row.owner_id, 16)}</a>
            </td>
            <td class="num">{row.current_score}</td>
            <td>
              <Status value={row.current_tier} />
              {row.sanctioned ? <span class="bad"> sanctioned</span> : null}
            </td>
            <td class="num">{row.counterparties}</td>
            <td class="num">{money(row.settled_volume, 'BRL')}</td>
            <td class="num">{row.events}</td>
            <td>{when(row.updated_at)}</td>
          </tr>
        )}
      />
      <nav class="pager">
        {offset > 0 ? <a href={link({ offset: Math.max(0, offset - pageSize) })}>← previous</a> : null}
        {list.data !== null && list.data.length === pageSize ? <a href={link({ offset: offset + pageSize })}>next →</a> : null}
      </nav>
    </div>
  );
}

export function ReputationDetailPage(props: { session: Session; ownerId: string }) {
  const valid = pubkeyPattern.test(props.ownerId);
  const detail = useLoad(async () => (valid ? (await api<ReputationDetail>(props.session, `/admin/reputation/${props.ownerId}`)).body : null), [props.ownerId]);
  const history = useLoad(
    async () => (valid ? (await api<ReputationEvent[]>(props.session, `/admin/reputation/${props.ownerId}/history?limit=200`)).body : null),
    [props.ownerId],
  );
  if (!valid) return <ErrorBox error={new Error(`"${props.ownerId}" is not an owner's key (64 hex characters).`)} />;
  if (detail.error !== null) return <ErrorBox error={detail.error} />;
  const data = detail.data;
  if (data === null) return <p class="muted">Loading…</p>;
  return (
    <div data-testid="reputation-detail">
      <h2>
        Owner <code>{shortId(data.owner_id, 16)}</code> <Status value={data.current_tier} /> {data.sanctioned ? <Status value="SANCTIONED" /> : null}
      </h2>
      <div class="grid">
        <Card title="Score">
          <dl>
            <dt>score now</dt>
            <dd>
              {data.current_score} <span class="muted">(stored {data.score}, before the decay since its last credit)</span>
            </dd>
            <dt>tier</dt>
            <dd>
              {data.current_tier} ({data.tier_bounds.score_min} – {data.tier_bounds.score_max})
              {data.next_tier === null ? '' : ` · ${data.next_tier.points_needed} points to ${data.next_tier.tier}`}
            </dd>
            <dt>independent counterparties</dt>
            <dd>{data.counterparties}</dd>
            <dt>settled volume</dt>
            <dd>{money(data.settled_volume, 'BRL')}</dd>
            <dt>last credit</dt>
            <dd>{when(data.last_credit_at)}</dd>
            <dt>owner</dt>
            <dd>
              <a href={`#/plcs?q=${data.owner_id}`}>
                <code>{data.owner_id}</code>
              </a>
            </dd>
          </dl>
        </Card>
        <Card title="Automatic PLC limits">
          <dl>
            <dt>per PLC</dt>
            <dd>{money(data.limits.max_amount, 'BRL')}</dd>
            <dt>per 24 hours</dt>
            <dd>{money(data.limits.daily_limit, 'BRL')}</dd>
          </dl>
          <p class="muted">An approved increase request of one device may raise them (Limit requests).</p>
        </Card>
        <Card title={`History (${data.events} events, newest 200)`} wide>
          <ErrorBox error={history.error} />
          <ListTable
            testId="reputation-history"
            heads={['when', 'event', 'delta', 'reason', 'about', 'amount', 'score after']}
            items={history.data}
            none={<>No event.</>}
            row={(event) => (
              <tr key={event.id}>
                <td>{when(event.created_at)}</td>
                <td>{event.kind}</td>
                <td class={event.delta < 0 ? 'num bad' : 'num'}>{event.delta > 0 ? `+${event.delta}` : event.delta}</td>
                <td>{event.reason}</td>
                <td>
                  <code>{shortId(event.reference, 12)}</code>
                </td>
                <td class="num">{event.amount === null ? (event.severity ?? '—') : money(event.amount, 'BRL')}</td>
                <td class="num">
                  {event.score_after} <Status value={event.tier_after} />
                </td>
              </tr>
            )}
          />
        </Card>
      </div>
    </div>
  );
}
