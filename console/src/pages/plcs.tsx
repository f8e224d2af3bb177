import { useState } from 'preact/hooks';
import { api, type ConsoleConfig, type Session } from '../api.ts';
import { money, pubkeyPattern, shortId, uuidPattern, when } from '../format.ts';
import { AmountCell, Card, ErrorBox, ListTable, PlcLink, RedemptionLink, Status, useLoad, WorkflowLink } from '../ui.tsx';

interface PlcStatus {
  token_id: string;
  status: string;
  amount: string;
  currency: string;
  issuer_pubkey: string;
  bearer_pubkey: string;
  chain_length: number;
  head_hash: string;
  created_at: string;
  expires_at: string;
  redemption_in_flight: boolean;
}
interface ChainEntry {
  position: number;
  sender_pubkey: string;
  recipient_pubkey: string;
  timestamp: string;
  nonce: string;
  prev_hash: string;
  hash: string;
  registered_at: string;
}
interface RiskFlag {
  id: string;
  flag_type: string;
  severity: string;
  subject_pubkey: string | null;
  details: Record<string, unknown>;
  occurrences: number;
  resolved: boolean;
  created_at: string;
}
interface RedemptionItem {
  redemption_id: string;
  status: string;
  amount: string;
  currency: string;
  gateway_status: string | null;
  workflow_id: string;
  created_at: string;
}
interface PlcDetail {
  status: PlcStatus;
  chain: ChainEntry[];
  device_id: string;
  workflow_id: string;
  transactions: { id: string; tx_type: string; created_at: string; description: string | null; entries: { owner_id: string; bucket: string; currency: string; amount: string }[] }[];
  risk_flags: RiskFlag[];
  redemptions: RedemptionItem[];
}

/** What the search box holds: a token id, a public key (issuer or bearer), or nothing usable. */
function searchPlan(query: string): { kind: 'token'; tokenId: string } | { kind: 'key'; key: string } | { kind: 'bad'; message: string } {
  const text = query.trim().toLowerCase();
  if (uuidPattern.test(text)) return { kind: 'token', tokenId: text };
  if (pubkeyPattern.test(text)) return { kind: 'key', key: text };
  return { kind: 'bad', message: 'Enter a token id (a UUID) or an issuer or owner public key (64 hex digits).' };
}

export function PlcSearchPage(props: { session: Session; query: string }) {
  const [text, setText] = useState(props.query);
  const plan = props.query === '' ? null : searchPlan(props.query);
  const { data, error, loading } = useLoad(async () => {
    if (plan === null || plan.kind === 'bad') return null;
    if (plan.kind === 'token') {
      location.hash = `#/plc/${plan.tokenId}`;
      return null;
    }
    const [issued, held] = await Promise.all([
      api<PlcStatus[]>(props.session, `/admin/plcs?issuer_pubkey=${plan.key}&limit=100`),
      api<PlcStatus[]>(props.session, `/admin/plcs?bearer_pubkey=${plan.key}&limit=100`),
    ]);
    const seen = new Set<string>();
    return [...issued.body, ...held.body].filter((plc) => !seen.has(plc.token_id) && seen.add(plc.token_id) !== undefined);
  }, [props.query]);
  return (
    <div>
      <h2>PLCs</h2>
      <form
        class="search"
        onSubmit={(event) => {
          event.preventDefault();
          location.hash = `#/plcs?q=${encodeURIComponent(text.trim())}`;
        }}
      >
        <input
          name="q"
          value={text}
          onInput={(event) => setText((event.target as HTMLInputElement).value)}
          placeholder="token id, issuer key or owner key"
          aria-label="token id, issuer key or owner key"
        />
        <button type="submit">Find</button>
      </form>
      {plan?.kind === 'bad' ? <ErrorBox error={new Error(plan.message)} /> : null}
      <ErrorBox error={error} />
      {loading && plan !== null ? <p class="muted">Searching…</p> : null}
      <ListTable
        testId="plc-results"
        heads={['token', 'status', 'amount', 'hops', 'issuer', 'bearer', 'created']}
        items={data}
        none="No PLC issued by or held by this key."
        row={(plc) => (
          <tr key={plc.token_id}>
            <td>
              <PlcLink tokenId={plc.token_id} />
            </td>
            <td>
              <Status value={plc.status} />
            </td>
            <AmountCell amount={plc.amount} currency={plc.currency} />
            <td class="num">{plc.chain_length}</td>
            <td>{shortId(plc.issuer_pubkey)}</td>
            <td>{shortId(plc.bearer_pubkey)}</td>
            <td>{when(plc.created_at)}</td>
          </tr>
        )}
      />
    </div>
  );
}

function Evidence(props: { flag: RiskFlag }) {
  const details = props.flag.details;
  return (
    <li class={props.flag.flag_type === 'DOUBLE_SPEND_FORK' ? 'fork' : ''}>
      <Status value={props.flag.flag_type} /> {props.flag.severity} · signer {shortId(props.flag.subject_pubkey, 16)} · seen {props.flag.occurrences}×{' '}
      {props.flag.resolved ? '(resolved)' : <a href="#/risk">resolve…</a>}
      <pre>{JSON.stringify(details, null, 1)}</pre>
    </li>
  );
}

export function PlcDetailPage(props: { session: Session; config: ConsoleConfig; tokenId: string }) {
  const valid = uuidPattern.test(props.tokenId);
  const { data, error } = useLoad(
    async () => (valid ? (await api<PlcDetail>(props.session, `/admin/plcs/${props.tokenId}/detail`)).body : null),
    [props.tokenId],
  );
  if (!valid) return <ErrorBox error={new Error(`"${props.tokenId}" is not a token id (a UUID).`)} />;
  if (error !== null) return <ErrorBox error={error} />;
  if (data === null) return <p class="muted">Loading…</p>;
  const plc = data.status;
  const forks = data.risk_flags.filter((flag) => flag.flag_type === 'DOUBLE_SPEND_FORK');
  return (
    <div data-testid="plc-detail">
      <h2>
        PLC <code>{plc.token_id}</code> <Status value={plc.status} />
      </h2>
      <div class="grid">
        <Card title="State">
          <dl>
            <dt>amount</dt>
            <dd>
              {money(plc.amount, plc.currency)}
            </dd>
            <dt>issuer</dt>
            <dd>
              <a href={`#/plcs?q=${plc.issuer_pubkey}`}>{shortId(plc.issuer_pubkey, 16)}</a>
            </dd>
            <dt>bearer</dt>
            <dd>
              <a href={`#/plcs?q=${plc.bearer_pubkey}`}>{shortId(plc.bearer_pubkey, 16)}</a>
            </dd>
            <dt>created · expires</dt>
            <dd>
              {when(plc.created_at)} · {when(plc.expires_at)}
            </dd>
            <dt>redemption in flight</dt>
            <dd>{plc.redemption_in_flight ? 'yes' : 'no'}</dd>
            <dt>device</dt>
            <dd>{data.device_id}</dd>
            <dt>workflow</dt>
            <dd>
              <WorkflowLink config={props.config} workflowId={data.workflow_id} />
            </dd>
          </dl>
        </Card>
        <Card title={forks.length === 0 ? 'Risk flags' : 'Fork evidence'}>
          {data.risk_flags.length === 0 ? <p class="muted">No risk flag about this PLC.</p> : <ul class="flags">{data.risk_flags.map((flag) => <Evidence key={flag.id} flag={flag} />)}</ul>}
        </Card>
        <Card title={`Chain (${data.chain.length} ${data.chain.length === 1 ? 'hop' : 'hops'})`} wide>
          <table class="compact" data-testid="plc-chain">
            <thead>
              <tr>
                <th>#</th>
                <th>sender</th>
                <th>recipient</th>
                <th>signed at</th>
                <th>prev hash</th>
                <th>hash</th>
              </tr>
            </thead>
            <tbody>
              <tr class="muted">
                <td>0</td>
                <td colSpan={5}>issued by {shortId(plc.issuer_pubkey, 16)} (the chain starts at the commitment hash)</td>
              </tr>
              {data.chain.map((entry) => (
                <tr key={entry.position}>
                  <td>{entry.position + 1}</td>
                  <td>{shortId(entry.sender_pubkey, 12)}</td>
                  <td>{shortId(entry.recipient_pubkey, 12)}</td>
                  <td>{when(entry.timestamp)}</td>
                  <td>
                    <code>{shortId(entry.prev_hash, 12)}</code>
                  </td>
                  <td>
                    <code>{shortId(entry.hash, 12)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Card>
        <Card title="Redemptions" wide>
          {data.redemptions.length === 0 ? (
            <p class="muted">Not redeemed.</p>
          ) : (
            <table class="compact">
              <tbody>
                {data.redemptions.map((redemption) => (
                  <tr key={redemption.redemption_id}>
                    <td>
                      <RedemptionLink redemptionId={redemption.redemption_id} />
                    </td>
                    <td>
                      <Status value={redemption.status} />
                    </td>
                    <td>{redemption.gateway_status ?? '—'}</td>
                    <td>{when(redemption.created_at)}</td>
                    <td>
                      <WorkflowLink config={props.config} workflowId={redemption.workflow_id} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Card>
        <Card title="Ledger transactions" wide>
          {data.transactions.length === 0 ? (
            <p class="muted">No ledger transaction about this PLC.</p>
          ) : (
            <table class="compact" data-testid="plc-ledger">
              <thead>
                <tr>
                  <th>transaction</th>
                  <th>when</th>
                  <th>owner</th>
                  <th>bucket</th>
                  <th class="num">amount</th>
                </tr>
              </thead>
              {data.transactions.map((tx) => (
                <tbody key={tx.id} class="ledger-tx">
                  {tx.entries.map((entry, index) => (
                    <tr key={index}>
                      {index === 0 ? (
                        <>
                          <td rowSpan={tx.entries.length}>
                            {tx.tx_type} <code title={tx.id}>{shortId(tx.id)}</code>
                          </td>
                          <td rowSpan={tx.entries.length}>{when(tx.created_at)}</td>
                        </>
                      ) : null}
                      <td title={entry.owner_id}>
                        {pubkeyPattern.test(entry.owner_id) ? <a href={`#/plcs?q=${entry.owner_id}`}>{shortId(entry.owner_id, 12)}</a> : shortId(entry.owner_id, 20)}
                      </td>
                      <td>{entry.bucket}</td>
                      <td class={entry.amount.startsWith('-') ? 'num bad' : 'num'}>{money(entry.amount, entry.currency, { signed: true })}</td>
                    </tr>
                  ))}
                </tbody>
              ))}
            </table>
          )}
        </Card>
      </div>
    </div>
  );
}
