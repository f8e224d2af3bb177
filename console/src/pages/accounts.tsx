import { api, type Session } from '../api.ts';
import { shortId, when } from '../format.ts';
import { ErrorBox, ListTable, Status, useAction, useLoad } from '../ui.tsx';

interface Account {
  account_id: string;
  owner_id: string;
  kind: string;
  status: 'ACTIVE' | 'FROZEN';
  created_at: string;
  balances: { bucket: string; currency: string; amount: string }[];
}

const pageSize = 50;

function FreezeButton(props: { session: Session; account: Account; onChanged: () => void }) {
  const { busy, error, run } = useAction();
  const action = props.account.status === 'ACTIVE' ? 'freeze' : 'unfreeze';
  return (
    <span>
      <button
        class={action === 'freeze' ? 'danger small' : 'small'}
        disabled={busy}
        onClick={async () => {
          if (action === 'freeze' && !confirm(`Freeze ${props.account.owner_id}? It can still receive but no longer spend.`)) return;
          await run(async () => {
            await api(props.session, `/admin/accounts/${props.account.account_id}/${action}`, { method: 'POST' });
            props.onChanged();
          });
        }}
      >
        {action === 'freeze' ? 'Freeze' : 'Unfreeze'}
      </button>
      <ErrorBox error={error} />
    </span>
  );
}

export function AccountsPage(props: { session: Session; offset: number }) {
  const offset = Number.isInteger(props.offset) && props.offset >= 0 ? props.offset : 0;
  const { data, error, reload } = useLoad(
    async () => (await api<Account[]>(props.session, `/admin/accounts/public?limit=${pageSize}&offset=${offset}`)).body,
    [offset],
  );
  return (
    <div>
      <h2>Accounts</h2>
      <ErrorBox error={error} />
      <ListTable
        testId="accounts"
        heads={['owner', 'status', 'balances', 'opened', '']}
        items={data}
        none={<>No account{offset > 0 ? ' on this page' : ' yet'}.</>}
        row={(account) => (
          <tr key={account.account_id}>
            <td>
              <a href={`#/plcs?q=${account.owner_id}`} title={account.owner_id}>
                {shortId(account.owner_id, 16)}
              </a>
            </td>
            <td>
              <Status value={account.status} />
            </td>
            <td>
              {account.balances
                .filter((balance) => !/^0(\.0+)?$/.test(balance.amount))
                .map((balance) => `${balance.bucket} ${balance.amount} ${balance.currency}`)
                .join(' · ') || '—'}
            </td>
            <td>{when(account.created_at)}</td>
            <td>
              <FreezeButton session={props.session} account={account} onChanged={reload} />
            </td>
          </tr>
        )}
      />
      <nav class="pager">
        {offset > 0 ? <a href={`#/accounts?offset=${Math.max(0, offset - pageSize)}`}>← previous</a> : null}
        {data !== null && data.length === pageSize ? <a href={`#/accounts?offset=${offset + pageSize}`}>next →</a> : null}
      </nav>
    </div>
  );
}
