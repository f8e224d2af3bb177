import { useState } from 'preact/hooks';
import { api, type ConsoleConfig, type Session } from '../api.ts';
import { duration, when } from '../format.ts';
import { ActionResult, Card, ErrorBox, ListTable, LiveNote, Status, useAction, useLoad, usePolling, WorkflowLink, type ActionOutcome } from '../ui.tsx';

/** The gateway's webhook queues, their penalties and the removal of a backoff (docs/operations-console.md, "Webhooks"). */

interface WebhookView {
  id: string;
  name: string;
  url: string;
  endpoint: string | null;
  enabled: boolean;
  interrupted: boolean;
  penalized_requests_count: number;
  missing_events: string[];
  queued_for_removal: boolean;
  cooldown_remaining_ms: number;
  cooldown_until: string | null;
  last_event_at: string | null;
}
interface Health {
  status: 'ok' | 'degraded' | 'down';
  checked_at: string;
  webhooks: WebhookView[];
  monitor: { interval_ms: number; auto_heal: boolean; cooldown_ms: number; last_check_at: string | null; last_check_error: string | null };
}
interface PenaltyEntry {
  id: string;
  webhook_id: string;
  action: string;
  penalized_requests_count: number | null;
  source: string;
  actor: string | null;
  workflow_id: string | null;
  cooldown_until: string | null;
  created_at: string;
}
interface InboxStats {
  waiting: number;
  dead: number;
  oldest_waiting_ms: number | null;
}
interface Removed {
  webhook_id: string;
  cooldown_until: string;
  webhook: { interrupted: boolean; penalized_requests_count: number | null };
}

const pollMs = 5_000;

function RemoveButton(props: { session: Session; config: ConsoleConfig; webhook: WebhookView; onDone: (outcome: ActionOutcome) => void }) {
  const { busy, error, run } = useAction();
  const waiting = props.webhook.cooldown_remaining_ms > 0;
  return (
    <span>
      <button
        class="small"
        disabled={busy || waiting}
        title={waiting ? `cooldown: ${duration(props.webhook.cooldown_remaining_ms)} left` : 'ask the gateway to deliver again now'}
        onClick={async () => {
          if (!confirm(`Remove the backoff of ${props.webhook.id}? The gateway retries its queue now; no other removal of it for the cooldown.`)) return;
          await run(
            async () => {
              const removed = (await api<Removed>(props.session, `/admin/monitor/remove-penalty/${encodeURIComponent(props.webhook.id)}`, { method: 'POST' })).body;
              props.onDone({
                text: (
                  <>
                    Backoff of <code>{removed.webhook_id}</code> removed: {removed.webhook.penalized_requests_count ?? 0} penalties,{' '}
                    {removed.webhook.interrupted ? 'still interrupted' : 'delivering'}; next removal after {when(removed.cooldown_until)} · workflow{' '}
                    <WorkflowLink config={props.config} workflowId={`webhook-cooldown-${removed.webhook_id}`} />
                  </>
                ),
                type: 'PENALTY_REMOVAL',
                reference: removed.webhook_id,
                nonce: Date.now(),
              });
            },
            () => props.onDone({ text: <>The removal of {props.webhook.id} was refused (see the error).</>, type: 'PENALTY_REMOVAL', reference: props.webhook.id, nonce: Date.now() }),
          );
        }}
      >
        {busy ? 'Removing…' : 'Remove backoff'}
      </button>
      <ErrorBox error={error} />
    </span>
  );
}

export function WebhooksPage(props: { session: Session; config: ConsoleConfig }) {
  const health = useLoad(async () => (await api<Health>(props.session, '/redemption/webhook/health')).body, []);
  const log = useLoad(async () => (await api<PenaltyEntry[]>(props.session, '/admin/monitor/penalty-logs?limit=20')).body, []);
  const inbox = useLoad(async () => (await api<InboxStats>(props.session, '/admin/monitor/inbox/stats')).body, []);
  usePolling(health.reload, pollMs);
  usePolling(log.reload, pollMs);
  usePolling(inbox.reload, pollMs);
  const [outcome, setOutcome] = useState<ActionOutcome | null>(null);
  const data = health.data;
  return (
    <div>
      <h2>
        Webhooks {data === null ? null : <Status value={data.status} />} <LiveNote ms={pollMs} />
      </h2>
      <p class="muted">
        The gateway's webhook queues, asked live. A queue the gateway penalises delivers late; an interrupted one delivers nothing, and redemptions wait for their
        transfer events. Removing a backoff asks the gateway to retry now, at most once per cooldown{data === null ? '' : ` (${duration(data.monitor.cooldown_ms)})`}.
      </p>
      <ActionResult session={props.session} outcome={outcome} />
      <ErrorBox error={health.error} />
      <ListTable
        testId="webhooks"
        heads={['webhook', 'delivers to', 'state', 'penalties', 'last event', 'cooldown', '']}
        items={data?.webhooks ?? null}
        none={<>The gateway lists no webhook.</>}
        row={(webhook) => (
          <tr key={webhook.id}>
            <td>
              <code>{webhook.id}</code>
              <br />
              <span class="muted">{webhook.name}</span>
            </td>
            <td>{webhook.endpoint ?? <span class="muted">{webhook.url}</span>}</td>
            <td>
              <Status value={webhook.interrupted ? 'INTERRUPTED' : !webhook.enabled ? 'DISABLED' : webhook.penalized_requests_count > 0 ? 'PENALIZED' : 'OK'} />
              {webhook.missing_events.length === 0 ? null : <div class="warn">missing {webhook.missing_events.join(', ')}</div>}
              {webhook.queued_for_removal ? <div class="muted">queued for removal</div> : null}
            </td>
            <td class="num">{webhook.penalized_requests_count}</td>
            <td>{when(webhook.last_event_at)}</td>
            <td>{webhook.cooldown_remaining_ms > 0 ? `${duration(webhook.cooldown_remaining_ms)} left` : 'none'}</td>
            <td>
              <RemoveButton
                session={props.session}
                config={props.config}
                webhook={webhook}
                onDone={(next) => {
                  setOutcome(next);
                  health.reload();
                  log.reload();
                }}
              />
            </td>
          </tr>
        )}
      />
      <div class="grid">
        <Card title="Monitor">
          {data === null ? null : (
            <dl>
              <dt>checks every</dt>
              <dd>{duration(data.monitor.interval_ms)}</dd>
              <dt>removes penalties itself</dt>
              <dd>{data.monitor.auto_heal ? 'yes' : 'no'}</dd>
              <dt>last check</dt>
              <dd>
                {when(data.monitor.last_check_at)}
                {data.monitor.last_check_error === null ? '' : ` · ${data.monitor.last_check_error}`}
              </dd>
            </dl>
          )}
        </Card>
        <Card title="Our inbox">
          <ErrorBox error={inbox.error} />
          {inbox.data === null ? null : (
            <p class={inbox.data.dead > 0 ? 'bad' : 'ok'}>
              {inbox.data.waiting} waiting, {inbox.data.dead} dead{inbox.data.oldest_waiting_ms === null ? '' : `, oldest ${duration(inbox.data.oldest_waiting_ms)}`}
            </p>
          )}
        </Card>
        <Card title="Penalty log (newest 20)" wide>
          <ErrorBox error={log.error} />
          <ListTable
            testId="penalty-log"
            heads={['when', 'webhook', 'action', 'penalties', 'by', 'cooldown until', 'workflow']}
            items={log.data}
            none={<>Nothing logged yet.</>}
            row={(entry) => (
              <tr key={entry.id}>
                <td>{when(entry.created_at)}</td>
                <td>
                  <code>{entry.webhook_id}</code>
                </td>
                <td>
                  <Status value={entry.action} />
                </td>
                <td class="num">{entry.penalized_requests_count ?? '—'}</td>
                <td>
                  {entry.source}
                  {entry.actor === null ? '' : `: ${entry.actor}`}
                </td>
                <td>{when(entry.cooldown_until)}</td>
                <td>
                  <WorkflowLink config={props.config} workflowId={entry.workflow_id} />
                </td>
              </tr>
            )}
          />
        </Card>
      </div>
    </div>
  );
}
