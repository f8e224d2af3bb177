import { useState } from 'preact/hooks';
import { api, ApiError, type ConsoleConfig, type Session } from '../api.ts';
import { money, shortId, uuidPattern, when } from '../format.ts';
import { AmountCell, Card, ErrorBox, ListTable, PlcLink, RedemptionLink, Status, useAction, useLoad, WorkflowLink } from '../ui.tsx';

interface Redemption {
  redemption_id: string;
  token_id: string;
  status: string;
  amount: string;
  fee: string;
  currency: string;
  bearer_pubkey: string;
  destination_masked: string;
  gateway_transfer_id: string | null;
  gateway_status: string | null;
  failure_reason: string | null;
  workflow_id: string;
  created_at: string;
  finished_at: string | null;
}
interface RedemptionDetail extends Redemption {
  payout_attempt: number;
  payout_error: string | null;
  attempts: { attempt: number; gateway_transfer_id: string | null; gateway_status: string | null; closed_reason: string; closed_at: string }[];
  retries: { retry_id: string; requested_by: string; reason: string; requested_at: string; outcome: string | null; detail: string | null; attempt: number | null }[];
}
interface RetryAnswer {
  retry_id: string;
  outcome: string;
  detail: string;
  attempt: number;
  redemption: Redemption;
}

const statuses = ['all', 'PENDING_PAYMENT', 'SETTLED', 'FAILED'] as const;
const pageSize = 100;

/**
 * Every redemption by default (newest first: what is happening now), or one status. A stuck
 * payout is a PENDING_PAYMENT one with a payout problem; that tab is one click away.
 */
export function RedemptionsPage(props: { session: Session; config: ConsoleConfig; status: string; offset: number }) {
  const status = (statuses as readonly string[]).includes(props.status) ? props.status : 'all';
  const offset = Number.isInteger(props.offset) && props.offset >= 0 ? props.offset : 0;
  const { data, error, reload } = useLoad(
    async () => (await api<Redemption[]>(props.session, `/admin/redemptions?limit=${pageSize}&offset=${offset}${status === 'all' ? '' : `&status=${status}`}`)).body,
    [status, offset],
  );
  return (
    <div>
      <h2>
        Redemptions <button class="small" onClick={reload}>Refresh</button>
      </h2>
      <nav class="tabs">
        {statuses.map((value) => (
          <a key={value} href={`#/redemptions?status=${value}`} class={value === status ? 'active' : ''}>
            {value}
          </a>
        ))}
      </nav>
      <ErrorBox error={error} />
      <ListTable
        testId="redemptions"
        heads={['redemption', 'PLC', 'status', 'gateway', 'amount', 'opened', 'workflow']}
        items={data}
        none={<>No {status === 'all' ? '' : `${status} `}redemption{offset > 0 ? ' on this page' : ''}.</>}
        row={(row) => (
          <tr key={row.redemption_id}>
            <td>
              <RedemptionLink redemptionId={row.redemption_id} />
            </td>
            <td>
              <PlcLink tokenId={row.token_id} />
            </td>
            <td>
              <Status value={row.status} />
            </td>
            <td>{row.gateway_status ?? '—'}</td>
            <AmountCell amount={row.amount} currency={row.currency} />
            <td>{when(row.created_at)}</td>
            <td>
              <WorkflowLink config={props.config} workflowId={row.workflow_id} />
            </td>
          </tr>
        )}
      />
      <nav class="pager">
        {offset > 0 ? <a href={`#/redemptions?status=${status}&offset=${Math.max(0, offset - pageSize)}`}>← previous</a> : null}
        {data !== null && data.length === pageSize ? <a href={`#/redemptions?status=${status}&offset=${offset + pageSize}`}>next →</a> : null}
      </nav>
    </div>
  );
}

function RetryForm(props: { session: Session; redemption: RedemptionDetail; onDone: (answer: RetryAnswer | null) => void }) {
  const [reason, setReason] = useState('');
  const { busy, error, fail, run } = useAction();
  const [answer, setAnswer] = useState<RetryAnswer | null>(null);
  return (
    <form
      class="retry"
      onSubmit={async (event) => {
        event.preventDefault();
        if (reason.trim().length < 3) {
          fail(new Error('Say why you retry (at least 3 characters): it is recorded with the retry.'));
          return;
        }
        await run(
          async () => {
            const result = (await api<RetryAnswer>(props.session, `/admin/redemptions/${props.redemption.redemption_id}/retry`, { method: 'POST', body: { reason } })).body;
            setAnswer(result);
            props.onDone(result);
          },
          (failure) => {
            if (failure instanceof ApiError && failure.status === 409) props.onDone(null);
          },
        );
      }}
    >
      <label>
        Reason
        <input name="reason" value={reason} onInput={(event) => setReason((event.target as HTMLInputElement).value)} placeholder="why this retry" maxLength={500} />
      </label>
      <button type="submit" disabled={busy}>
        {busy ? 'Retrying…' : 'Retry settlement'}
      </button>
      <ErrorBox error={error} />
      {answer === null ? null : (
        <div class="notice" role="status" data-testid="retry-outcome">
          <Status value={answer.outcome} /> {answer.detail}
        </div>
      )}
    </form>
  );
}

export function RedemptionDetailPage(props: { session: Session; config: ConsoleConfig; redemptionId: string }) {
  const valid = uuidPattern.test(props.redemptionId);
  const { data, error, reload } = useLoad(
    async () => (valid ? (await api<RedemptionDetail>(props.session, `/admin/redemptions/${props.redemptionId}`)).body : null),
    [props.redemptionId],
  );
  if (!valid) return <ErrorBox error={new Error(`"${props.redemptionId}" is not a redemption id (a UUID).`)} />;
  if (error !== null) return <ErrorBox error={error} />;
  if (data === null) return <p class="muted">Loading…</p>;
  return (
    <div data-testid="redemption-detail">
      <h2>
        Redemption <code>{data.redemption_id}</code> <Status value={data.status} /> <button class="small" onClick={reload}>Refresh</button>
      </h2>
      <div class="grid">
        <Card title="Payout">
          <dl>
            <dt>amount · fee</dt>
            <dd>
              {money(data.amount, data.currency)} · fee {money(data.fee, data.currency)}
            </dd>
            <dt>PLC</dt>
            <dd>
              <PlcLink tokenId={data.token_id} />
            </dd>
            <dt>to</dt>
            <dd>{data.destination_masked}</dd>
            <dt>gateway transfer</dt>
            <dd>
              {shortId(data.gateway_transfer_id, 12)} <Status value={data.gateway_status} />
            </dd>
            <dt>attempt</dt>
            <dd>{data.payout_attempt}</dd>
            {data.payout_error === null ? null : (
              <>
                <dt>stuck because</dt>
                <dd class="bad">{data.payout_error}</dd>
              </>
            )}
            {data.failure_reason === null ? null : (
              <>
                <dt>failure</dt>
                <dd class="bad">{data.failure_reason}</dd>
              </>
            )}
            <dt>opened · finished</dt>
            <dd>
              {when(data.created_at)} · {when(data.finished_at)}
            </dd>
            <dt>workflow</dt>
            <dd>
              <WorkflowLink config={props.config} workflowId={data.workflow_id} />
            </dd>
          </dl>
        </Card>
        <Card title="Retry settlement">
          {data.status === 'PENDING_PAYMENT' ? (
            <RetryForm session={props.session} redemption={data} onDone={() => reload()} />
          ) : (
            <p class="muted">A {data.status} redemption is final: nothing to retry.</p>
          )}
        </Card>
        <Card title="Retries" wide>
          {data.retries.length === 0 ? (
            <p class="muted">No retry yet.</p>
          ) : (
            <table class="compact" data-testid="retries">
              <thead>
                <tr>
                  <th>when</th>
                  <th>by</th>
                  <th>reason</th>
                  <th>outcome</th>
                  <th>detail</th>
                </tr>
              </thead>
              <tbody>
                {data.retries.map((retry) => (
                  <tr key={retry.retry_id}>
                    <td>{when(retry.requested_at)}</td>
                    <td>{retry.requested_by}</td>
                    <td>{retry.reason}</td>
                    <td>
                      <Status value={retry.outcome ?? 'RUNNING'} />
                    </td>
                    <td>{retry.detail ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Card>
        {data.attempts.length === 0 ? null : (
          <Card title="Closed payout attempts" wide>
            <table class="compact">
              <tbody>
                {data.attempts.map((attempt) => (
                  <tr key={attempt.attempt}>
                    <td>#{attempt.attempt}</td>
                    <td>{shortId(attempt.gateway_transfer_id, 12)}</td>
                    <td>{attempt.gateway_status ?? '—'}</td>
                    <td>{attempt.closed_reason}</td>
                    <td>{when(attempt.closed_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Card>
        )}
      </div>
    </div>
  );
}
