import { useState } from 'preact/hooks';
import { api, type ConsoleConfig, type Session } from '../api.ts';
import { money, shortId, when } from '../format.ts';
import { ActionResult, ErrorBox, type ActionOutcome, ListTable, LiveNote, Status, useAction, useLoad, usePolling, WorkflowLink } from '../ui.tsx';

/** PLC limit increase requests: the review queue and the decision (docs/operations-console.md, "Limit requests"). */

interface LimitPair {
  max_amount: string;
  daily_limit: string;
}
interface LimitRequest {
  request_id: string;
  device_id: string;
  owner_id: string;
  status: string;
  requested: LimitPair;
  current: LimitPair;
  tier: string;
  reason: string;
  workflow_id: string;
  created_at: string;
  review_deadline_at: string;
  decided_by: string | null;
  decision_note: string | null;
  granted: LimitPair | null;
  override_ends_at: string | null;
}

const pollMs = 10_000;

function DecisionForm(props: { session: Session; request: LimitRequest; onDecided: (outcome: ActionOutcome) => void }) {
  const [note, setNote] = useState('');
  const [validDays, setValidDays] = useState('30');
  const { busy, error, fail, run } = useAction();
  const decide = async (decision: 'APPROVE' | 'REJECT') => {
    const days = Number(validDays);
    if (decision === 'APPROVE' && !(Number.isInteger(days) && days >= 1 && days <= 365)) {
      fail(new Error('Valid for 1 to 365 days.'));
      return;
    }
    const asked = props.request.requested;
    const question =
      decision === 'APPROVE'
        ? `Approve ${money(asked.max_amount, 'BRL')} per PLC and ${money(asked.daily_limit, 'BRL')} a day for ${shortId(props.request.owner_id, 12)} on ${props.request.device_id}, for ${days} days?`
        : `Reject the request of ${shortId(props.request.owner_id, 12)}?`;
    if (!confirm(question)) return;
    await run(
      async () => {
        const body = decision === 'APPROVE' ? { decision, valid_days: days, ...(note.trim() === '' ? {} : { note: note.trim() }) } : { decision, ...(note.trim() === '' ? {} : { note: note.trim() }) };
        const answer = (await api<LimitRequest>(props.session, `/admin/plc-limits/requests/${props.request.request_id}/decide`, { method: 'POST', body })).body;
        props.onDecided({
          text: (
            <>
              Request <code>{shortId(answer.request_id)}</code> <Status value={answer.status} />
              {answer.granted === null ? '' : `: ${money(answer.granted.max_amount, 'BRL')} per PLC, ${money(answer.granted.daily_limit, 'BRL')} a day until ${when(answer.override_ends_at)}`}
            </>
          ),
          type: 'LIMIT_DECISION',
          reference: answer.request_id,
          nonce: Date.now(),
        });
      },
      () =>
        props.onDecided({ text: <>Decision on <code>{shortId(props.request.request_id)}</code> refused (see the error).</>, type: 'LIMIT_DECISION', reference: props.request.request_id, nonce: Date.now() }),
    );
  };
  return (
    <div class="actions">
      <input value={note} onInput={(event) => setNote((event.target as HTMLInputElement).value)} placeholder="note (optional)" maxLength={1000} aria-label="decision note" />
      <input value={validDays} onInput={(event) => setValidDays((event.target as HTMLInputElement).value)} size={3} aria-label="valid days" title="days the approval lasts" />
      <button class="small" disabled={busy} onClick={() => void decide('APPROVE')}>
        Approve
      </button>
      <button class="small" disabled={busy} onClick={() => void decide('REJECT')}>
        Reject
      </button>
      <ErrorBox error={error} />
    </div>
  );
}

export function LimitsPage(props: { session: Session; config: ConsoleConfig }) {
  const { data, error, reload } = useLoad(async () => (await api<LimitRequest[]>(props.session, '/admin/plc-limits/pending?limit=200')).body, []);
  usePolling(reload, pollMs);
  const [outcome, setOutcome] = useState<ActionOutcome | null>(null);
  return (
    <div>
      <h2>
        Limit increase requests <LiveNote ms={pollMs} />
      </h2>
      <p class="muted">
        Pending requests, oldest first (at most 200). An approval grants what was asked, never above the configured ceilings, as an override of the device and owner for
        the days given; a request not decided by its deadline expires by itself.
      </p>
      <ActionResult session={props.session} outcome={outcome} />
      <ErrorBox error={error} />
      <ListTable
        testId="limit-requests"
        heads={['asked', 'owner · device', 'tier', 'per PLC', 'per day', 'reason', 'deadline', 'workflow', 'decision']}
        items={data}
        none={<>No pending request.</>}
        row={(request) => (
          <tr key={request.request_id}>
            <td>{when(request.created_at)}</td>
            <td>
              <a href={`#/reputation/${request.owner_id}`} title={request.owner_id}>
                {shortId(request.owner_id, 12)}
              </a>
              <br />
              <span class="muted">{request.device_id}</span>
            </td>
            <td>
              <Status value={request.tier} />
            </td>
            <td class="num">
              {money(request.requested.max_amount, 'BRL')}
              <br />
              <span class="muted">now {money(request.current.max_amount, 'BRL')}</span>
            </td>
            <td class="num">
              {money(request.requested.daily_limit, 'BRL')}
              <br />
              <span class="muted">now {money(request.current.daily_limit, 'BRL')}</span>
            </td>
            <td>{request.reason}</td>
            <td>{when(request.review_deadline_at)}</td>
            <td>
              <WorkflowLink config={props.config} workflowId={request.workflow_id} />
            </td>
            <td>
              <DecisionForm
                session={props.session}
                request={request}
                onDecided={(next) => {
                  setOutcome(next);
                  reload();
                }}
              />
            </td>
          </tr>
        )}
      />
    </div>
  );
}
