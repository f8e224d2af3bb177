import { useState } from 'preact/hooks';
import { api, type Session } from '../api.ts';
import { shortId, when } from '../format.ts';
import { ActionResult, ErrorBox, ListTable, LiveNote, PlcLink, Status, useAction, useLoad, usePolling, type ActionOutcome } from '../ui.tsx';

/** The blocklist of keys proven to cheat, and the lift of a block (docs/operations-console.md, "Blocklist"). */

interface KeyBlock {
  id: string;
  pubkey: string;
  owner_id: string;
  reason: string;
  risk_flag_id: string;
  token_id: string | null;
  route: string;
  in_force: boolean;
  blocked_at: string;
  blocked_in_version: number;
  lifted_at: string | null;
  lifted_by: string | null;
  lift_reason: string | null;
  lifted_in_version: number | null;
}

const pollMs = 10_000;
const pageSize = 50;
const filters = ['active', 'lifted', 'all'] as const;

function LiftForm(props: { session: Session; block: KeyBlock; onDone: (outcome: ActionOutcome) => void }) {
  const [reason, setReason] = useState('');
  const { busy, error, fail, run } = useAction();
  return (
    <form
      class="inline"
      onSubmit={async (event) => {
        event.preventDefault();
        if (reason.trim().length < 3) {
          fail(new Error('Say why the block is lifted (at least 3 characters): it is kept with the entry.'));
          return;
        }
        if (!confirm(`Lift the block of ${shortId(props.block.pubkey, 16)}? Wallets accept PLCs it issues or signs again from the next list version.`)) return;
        await run(
          async () => {
            const lifted = (await api<KeyBlock>(props.session, `/admin/blocklist/${props.block.pubkey}/lift`, { method: 'POST', body: { reason: reason.trim() } })).body;
            props.onDone({
              text: (
                <>
                  Lifted <code>{shortId(lifted.pubkey, 16)}</code>: list version {lifted.lifted_in_version} leaves it out.
                </>
              ),
              type: 'KEY_BLOCK_LIFT',
              reference: lifted.pubkey,
              nonce: Date.now(),
            });
          },
          () => props.onDone({ text: <>The lift was refused (see the error).</>, type: 'KEY_BLOCK_LIFT', reference: props.block.pubkey, nonce: Date.now() }),
        );
      }}
    >
      <input value={reason} onInput={(event) => setReason((event.target as HTMLInputElement).value)} placeholder="why lift it" maxLength={1000} aria-label="lift reason" />
      <button type="submit" class="small" disabled={busy}>
        Lift
      </button>
      <ErrorBox error={error} />
    </form>
  );
}

export function BlocklistPage(props: { session: Session; status: string; offset: number }) {
  const status = (filters as readonly string[]).includes(props.status) ? props.status : 'active';
  const offset = Number.isInteger(props.offset) && props.offset >= 0 ? props.offset : 0;
  const { data, error, reload } = useLoad(
    async () => (await api<{ version: number; published_at: string; items: KeyBlock[] }>(props.session, `/admin/blocklist?status=${status}&limit=${pageSize}&offset=${offset}`)).body,
    [status, offset],
  );
  usePolling(reload, pollMs);
  const [outcome, setOutcome] = useState<ActionOutcome | null>(null);
  return (
    <div>
      <h2>
        Blocklist <LiveNote ms={pollMs} />
      </h2>
      <p class="muted">
        Keys a proven fork blocked: wallets refuse offline what they issue or sign. A block is automatic on proof; its lift is a decision, recorded with its reason.
        {data === null ? '' : ` Current list version ${data.version}, published ${when(data.published_at)}.`}
      </p>
      <nav class="tabs">
        {filters.map((value) => (
          <a key={value} href={`#/blocklist?status=${value}`} class={value === status ? 'active' : ''}>
            {value === 'active' ? 'in force' : value}
          </a>
        ))}
      </nav>
      <ActionResult session={props.session} outcome={outcome} />
      <ErrorBox error={error} />
      <ListTable
        testId="blocklist"
        heads={['key', 'why', 'PLC', 'shown at', 'blocked', 'state']}
        items={data?.items ?? null}
        none={<>{status === 'active' ? 'No block in force.' : status === 'lifted' ? 'No lifted block.' : 'No block.'}</>}
        row={(block) => (
          <tr key={block.id}>
            <td title={block.pubkey}>
              <a href={`#/plcs?q=${block.pubkey}`}>{shortId(block.pubkey, 16)}</a>
            </td>
            <td>
              <Status value={block.reason} />
            </td>
            <td>{block.token_id === null ? '—' : <PlcLink tokenId={block.token_id} />}</td>
            <td>{block.route}</td>
            <td>
              {when(block.blocked_at)} <span class="muted">(v{block.blocked_in_version})</span>
            </td>
            <td>
              {block.in_force ? (
                <LiftForm
                  session={props.session}
                  block={block}
                  onDone={(next) => {
                    setOutcome(next);
                    reload();
                  }}
                />
              ) : (
                <>
                  <Status value="LIFTED" /> {when(block.lifted_at)} by {block.lifted_by}: {block.lift_reason} <span class="muted">(v{block.lifted_in_version})</span>
                </>
              )}
            </td>
          </tr>
        )}
      />
      <nav class="pager">
        {offset > 0 ? <a href={`#/blocklist?status=${status}&offset=${Math.max(0, offset - pageSize)}`}>← previous</a> : null}
        {data !== null && data.items.length === pageSize ? <a href={`#/blocklist?status=${status}&offset=${offset + pageSize}`}>next →</a> : null}
      </nav>
    </div>
  );
}
