import { useState } from 'preact/hooks';
import { api, type Session } from '../api.ts';
import { shortId, uuidPattern, when } from '../format.ts';
import { ActionResult, Card, ErrorBox, ListTable, LiveNote, Status, useAction, useLoad, usePolling, type ActionOutcome } from '../ui.tsx';

/** Business customers: the sign-up queue, a customer's detail, approve, suspend and block (docs/operations-console.md, "Business customers"). */

const statuses = ['PENDING_REVIEW', 'ACTIVE', 'SUSPENDED', 'BLOCKED'] as const;
type CustomerStatus = (typeof statuses)[number];

interface Customer {
  customer_id: string;
  legal_name: string;
  tax_id: string;
  tax_id_masked: string;
  plan: string;
  status: CustomerStatus;
  contact_email: string;
  pix_key: string;
  created_at: string;
  updated_at: string;
}
interface Credential {
  key_id: string;
  scopes: string[];
  created_by: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  revoke_reason: string | null;
}
interface CustomerDetail extends Customer {
  events: { from_status: string | null; to_status: string; reason: string; actor: string; at: string }[];
  credentials: Credential[];
}
interface DecisionAnswer {
  customer: Customer;
  from_status: CustomerStatus;
  credential: { key_id: string; secret: string; scopes: string[] } | null;
}

const pollMs = 10_000;
const pageSize = 50;

/** Which actions a state allows (docs/b2b.md, "States"). */
const allowed: Record<CustomerStatus, readonly ('approve' | 'suspend' | 'block')[]> = {
  PENDING_REVIEW: ['approve', 'block'],
  ACTIVE: ['suspend', 'block'],
  SUSPENDED: ['approve', 'block'],
  BLOCKED: [],
};

export function B2bPage(props: { session: Session; status: string; offset: number }) {
  const status = props.status === 'all' || (statuses as readonly string[]).includes(props.status) ? props.status : 'PENDING_REVIEW';
  const offset = Number.isInteger(props.offset) && props.offset >= 0 ? props.offset : 0;
  const { data, error, reload } = useLoad(
    async () => (await api<Customer[]>(props.session, `/admin/b2b/customers?limit=${pageSize}&offset=${offset}${status === 'all' ? '' : `&status=${status}`}`)).body,
    [status, offset],
  );
  usePolling(reload, pollMs);
  return (
    <div>
      <h2>
        Business customers <LiveNote ms={pollMs} />
      </h2>
      <nav class="tabs">
        {[...statuses, 'all'].map((value) => (
          <a key={value} href={`#/b2b?status=${value}`} class={value === status ? 'active' : ''}>
            {value === 'PENDING_REVIEW' ? 'to review' : value}
          </a>
        ))}
      </nav>
      <ErrorBox error={error} />
      <ListTable
        testId="b2b-customers"
        heads={['business', 'CNPJ', 'plan', 'status', 'contact', 'signed up']}
        items={data}
        none={<>No {status === 'all' ? '' : `${status} `}business customer{offset > 0 ? ' on this page' : ''}.</>}
        row={(customer) => (
          <tr key={customer.customer_id}>
            <td>
              <a href={`#/b2b-customer/${customer.customer_id}`}>{customer.legal_name}</a>
            </td>
            <td>{customer.tax_id}</td>
            <td>{customer.plan}</td>
            <td>
              <Status value={customer.status} />
            </td>
            <td>{customer.contact_email}</td>
            <td>{when(customer.created_at)}</td>
          </tr>
        )}
      />
      <nav class="pager">
        {offset > 0 ? <a href={`#/b2b?status=${status}&offset=${Math.max(0, offset - pageSize)}`}>← previous</a> : null}
        {data !== null && data.length === pageSize ? <a href={`#/b2b?status=${status}&offset=${offset + pageSize}`}>next →</a> : null}
      </nav>
    </div>
  );
}

function DecisionForm(props: { session: Session; customer: CustomerDetail; onDone: (outcome: ActionOutcome, secret: DecisionAnswer['credential']) => void }) {
  const [reason, setReason] = useState('');
  const { busy, error, fail, run } = useAction();
  const actions = allowed[props.customer.status];
  if (actions.length === 0) return <p class="muted">A BLOCKED customer is final: no action leaves it.</p>;
  const decide = async (action: 'approve' | 'suspend' | 'block') => {
    if (reason.trim().length < 3) {
      fail(new Error('Say why (at least 3 characters): the reason is recorded with the change.'));
      return;
    }
    const consequence = {
      approve: 'Its API credential is issued on a first approval; its signed requests are accepted.',
      suspend: 'Its signed requests are refused until it is approved again.',
      block: 'For good: every credential is revoked and no action leaves BLOCKED.',
    }[action];
    if (!confirm(`${action[0]!.toUpperCase()}${action.slice(1)} ${props.customer.legal_name}? ${consequence}`)) return;
    await run(
      async () => {
        const answer = (await api<DecisionAnswer>(props.session, `/admin/b2b/customers/${props.customer.customer_id}/${action}`, { method: 'POST', body: { reason: reason.trim() } })).body;
        setReason('');
        props.onDone(
          {
            text: (
              <>
                {answer.customer.legal_name}: <Status value={answer.from_status} /> → <Status value={answer.customer.status} />
              </>
            ),
            type: 'BUSINESS_DECISION',
            reference: answer.customer.customer_id,
            nonce: Date.now(),
          },
          answer.credential,
        );
      },
      () => props.onDone({ text: <>The {action} was refused (see the error).</>, type: 'BUSINESS_DECISION', reference: props.customer.customer_id, nonce: Date.now() }, null),
    );
  };
  return (
    <div>
      <label>
        Reason
        <input value={reason} onInput={(event) => setReason((event.target as HTMLInputElement).value)} placeholder="why: recorded with the change" maxLength={500} />
      </label>
      <div class="actions">
        {actions.map((action) => (
          <button key={action} class={action === 'approve' ? '' : 'danger'} disabled={busy} onClick={() => void decide(action)}>
            {action[0]!.toUpperCase()}
            {action.slice(1)}
          </button>
        ))}
      </div>
      <ErrorBox error={error} />
    </div>
  );
}

export function B2bCustomerPage(props: { session: Session; customerId: string }) {
  const valid = uuidPattern.test(props.customerId);
  const { data, error, reload } = useLoad(
    async () => (valid ? (await api<CustomerDetail>(props.session, `/admin/b2b/customers/${props.customerId}`)).body : null),
    [props.customerId],
  );
  const [outcome, setOutcome] = useState<ActionOutcome | null>(null);
  const [secret, setSecret] = useState<DecisionAnswer['credential']>(null);
  if (!valid) return <ErrorBox error={new Error(`"${props.customerId}" is not a customer id (a UUID).`)} />;
  if (error !== null && data === null) return <ErrorBox error={error} />;
  if (data === null) return <p class="muted">Loading…</p>;
  return (
    <div data-testid="b2b-detail">
      <h2>
        {data.legal_name} <Status value={data.status} /> <button class="small" onClick={reload}>Refresh</button>
      </h2>
      <ActionResult session={props.session} outcome={outcome} />
      {secret === null ? null : (
        <div class="secret" data-testid="b2b-secret">
          API credential <code>{secret.key_id}</code> ({secret.scopes.join(', ')}): secret <code>{secret.secret}</code>. It is shown this once: hand it to the customer now;
          the service keeps only its hash.
        </div>
      )}
      <div class="grid">
        <Card title="Customer">
          <dl>
            <dt>CNPJ</dt>
            <dd>{data.tax_id}</dd>
            <dt>plan</dt>
            <dd>{data.plan}</dd>
            <dt>contact</dt>
            <dd>{data.contact_email}</dd>
            <dt>paid to (Pix)</dt>
            <dd>{data.pix_key}</dd>
            <dt>signed up · changed</dt>
            <dd>
              {when(data.created_at)} · {when(data.updated_at)}
            </dd>
            <dt>id</dt>
            <dd>
              <code>{data.customer_id}</code>
            </dd>
          </dl>
        </Card>
        <Card title="Decision">
          <DecisionForm
            session={props.session}
            customer={data}
            onDone={(next, issued) => {
              setOutcome(next);
              setSecret(issued);
              reload();
            }}
          />
        </Card>
        <Card title="State changes" wide>
          <table class="compact" data-testid="b2b-events">
            <tbody>
              {data.events.map((event, index) => (
                <tr key={index}>
                  <td>{when(event.at)}</td>
                  <td>
                    {event.from_status === null ? 'signed up' : <Status value={event.from_status} />} → <Status value={event.to_status} />
                  </td>
                  <td>{event.actor}</td>
                  <td>{event.reason}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Card>
        <Card title="API credentials" wide>
          {data.credentials.length === 0 ? (
            <p class="muted">None yet: the first approval issues one.</p>
          ) : (
            <table class="compact">
              <tbody>
                {data.credentials.map((credential) => (
                  <tr key={credential.key_id}>
                    <td>
                      <code>{credential.key_id}</code>
                    </td>
                    <td>{credential.scopes.join(', ')}</td>
                    <td>issued {when(credential.created_at)} by {credential.created_by}</td>
                    <td>{credential.revoked_at === null ? <Status value="ACTIVE" /> : `revoked ${when(credential.revoked_at)}: ${credential.revoke_reason ?? ''}`}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Card>
      </div>
      <p>
        <a href="#/b2b">← business customers</a> <span class="muted">{shortId(data.customer_id)}</span>
      </p>
    </div>
  );
}
