import { useState } from 'preact/hooks';
import { api, type Session } from '../api.ts';
import { money, pubkeyPattern, when } from '../format.ts';
import { Card, ErrorBox, ListTable, Notice, Status, useAction, useLoad } from '../ui.tsx';

/**
 * The fee schedule: a version's rules, the versions published, and an estimate priced by them
 * (docs/operations-console.md, "Fee schedule"). Publishing a version stays `npm run admin --
 * fees-publish`: a price change is a reviewed file, not a form.
 */

interface FeeRule {
  rail: string;
  tier: string | null;
  fixed: string;
  rate_bps: number;
  min: string;
  max: string | null;
}
interface Schedule {
  version: number;
  current_version: number;
  description: string;
  published_at: string;
  rounding: string;
  rules: FeeRule[];
  versions: { version: number; description: string; published_at: string }[];
}
interface Estimate {
  amount: string;
  currency: string;
  rail: string;
  tier: string;
  schedule_version: number;
  fee: string;
  net_amount: string;
  fixed_part: string;
  proportional_part: string;
  bound: string;
  consent_required: boolean;
}

const tiers = ['RESTRICTED', 'BASIC', 'STANDARD', 'TRUSTED', 'PREMIUM'] as const;

/** Basis points as a percentage: 150 -> "1.50 %". */
const percent = (bps: number): string => `${(bps / 100).toFixed(2)} %`;

function EstimateForm(props: { session: Session; version: number }) {
  const [amount, setAmount] = useState('100.00');
  const [rail, setRail] = useState('pix');
  const [who, setWho] = useState('BASIC');
  const [answer, setAnswer] = useState<Estimate | null>(null);
  const { busy, error, fail, run } = useAction();
  return (
    <form
      class="create"
      onSubmit={async (event) => {
        event.preventDefault();
        if (!/^\d+(\.\d{1,2})?$/.test(amount.trim())) {
          fail(new Error('An amount in reais with at most 2 decimals, e.g. 150.00.'));
          return;
        }
        const owner = who.trim().toLowerCase();
        const isOwner = pubkeyPattern.test(owner);
        if (!isOwner && !(tiers as readonly string[]).includes(who)) {
          fail(new Error("Price for a tier, or an owner's key (64 hex characters)."));
          return;
        }
        await run(async () => {
          const body = { amount: amount.trim(), currency: 'BRL', rail, schedule_version: props.version, ...(isOwner ? { owner_id: owner } : { tier: who }) };
          setAnswer((await api<Estimate>(props.session, '/fees/estimate', { method: 'POST', body })).body);
        });
      }}
    >
      <label>
        Amount (BRL)
        <input value={amount} onInput={(event) => setAmount((event.target as HTMLInputElement).value)} size={10} />
      </label>
      <label>
        Rail
        <select value={rail} onChange={(event) => setRail((event.target as HTMLSelectElement).value)}>
          <option value="pix">pix</option>
          <option value="boleto">boleto</option>
        </select>
      </label>
      <label>
        Tier or owner key
        <input value={who} onInput={(event) => setWho((event.target as HTMLInputElement).value)} list="fee-tiers" size={24} />
        <datalist id="fee-tiers">
          {tiers.map((tier) => (
            <option key={tier} value={tier} />
          ))}
        </datalist>
      </label>
      <button type="submit" disabled={busy}>
        Estimate
      </button>
      <ErrorBox error={error} />
      {answer === null ? null : (
        <div class="notice" role="status" data-testid="fee-estimate">
          {money(answer.amount, answer.currency)} over {answer.rail} for {answer.tier} (version {answer.schedule_version}): fee <strong>{money(answer.fee, answer.currency)}</strong> ={' '}
          {money(answer.fixed_part, answer.currency)} fixed + {money(answer.proportional_part, answer.currency)} proportional ({answer.bound}), paid out{' '}
          {money(answer.net_amount, answer.currency)}
          {answer.consent_required ? ' · the owner must consent to this version first' : ''}
        </div>
      )}
    </form>
  );
}

export function FeesPage(props: { session: Session; version: number | null }) {
  const { data, error } = useLoad(
    async () => (await api<Schedule>(props.session, `/fees/schedule${props.version === null ? '' : `?version=${props.version}`}`)).body,
    [props.version],
  );
  if (error !== null) return <ErrorBox error={error} />;
  if (data === null) return <p class="muted">Loading…</p>;
  return (
    <div>
      <h2>
        Fee schedule version {data.version} {data.version === data.current_version ? <Status value="CURRENT" /> : <Status value="SUPERSEDED" />}
      </h2>
      <p>
        {data.description} <span class="muted">· published {when(data.published_at)}</span>
      </p>
      <ListTable
        testId="fee-rules"
        heads={['rail', 'tier', 'fixed', 'rate', 'minimum', 'maximum']}
        items={data.rules}
        none={<>This version has no rule.</>}
        row={(rule) => (
          <tr key={`${rule.rail}-${rule.tier ?? 'all'}`}>
            <td>{rule.rail}</td>
            <td>{rule.tier ?? <span class="muted">every other tier</span>}</td>
            <td class="num">{money(rule.fixed, 'BRL')}</td>
            <td class="num">{percent(rule.rate_bps)}</td>
            <td class="num">{money(rule.min, 'BRL')}</td>
            <td class="num">{rule.max === null ? 'none' : money(rule.max, 'BRL')}</td>
          </tr>
        )}
      />
      <p class="muted">{data.rounding}</p>
      <div class="grid">
        <Card title="Estimate a fee with this version">
          <EstimateForm session={props.session} version={data.version} />
        </Card>
        <Card title="Versions (newest 20)">
          <table class="compact" data-testid="fee-versions">
            <tbody>
              {data.versions.map((row) => (
                <tr key={row.version}>
                  <td>
                    <a href={`#/fees?version=${row.version}`}>v{row.version}</a>
                    {row.version === data.current_version ? ' (current)' : ''}
                  </td>
                  <td>{row.description}</td>
                  <td>{when(row.published_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <Notice>
            A new version is published from a reviewed JSON file: <code>npm run admin -- fees-publish schedule.json</code>. A published version never changes; owners'
            consents keep their prices.
          </Notice>
        </Card>
      </div>
    </div>
  );
}
