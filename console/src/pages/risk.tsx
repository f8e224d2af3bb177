import { useState } from 'preact/hooks';
import { api, type Session } from '../api.ts';
import { shortId, when } from '../format.ts';
import { ErrorBox, ListTable, PlcLink, Status, useAction, useLoad } from '../ui.tsx';

interface RiskFlag {
  id: string;
  flag_type: string;
  severity: string;
  subject_pubkey: string | null;
  token_id: string | null;
  details: Record<string, unknown>;
  occurrences: number;
  resolved: boolean;
  resolved_by: string | null;
  resolution_note: string | null;
  created_at: string;
}

function ResolveButton(props: { session: Session; flag: RiskFlag; onResolved: () => void }) {
  const [note, setNote] = useState('');
  const { busy, error, run } = useAction();
  return (
    <form
      class="inline"
      onSubmit={async (event) => {
        event.preventDefault();
        await run(async () => {
          await api(props.session, `/admin/risk-flags/${props.flag.id}/resolve`, { method: 'POST', body: note.trim() === '' ? {} : { note: note.trim() } });
          props.onResolved();
        });
      }}
    >
      <input value={note} onInput={(event) => setNote((event.target as HTMLInputElement).value)} placeholder="note (optional)" maxLength={1000} aria-label="resolution note" />
      <button type="submit" disabled={busy}>
        Resolve
      </button>
      <ErrorBox error={error} />
    </form>
  );
}

export function RiskPage(props: { session: Session; resolved: boolean }) {
  const { data, error, reload } = useLoad(
    async () => (await api<RiskFlag[]>(props.session, `/admin/risk-flags?resolved=${String(props.resolved)}&limit=100`)).body,
    [props.resolved],
  );
  return (
    <div>
      <h2>Risk flags</h2>
      <nav class="tabs">
        <a href="#/risk" class={props.resolved ? '' : 'active'}>
          open
        </a>
        <a href="#/risk?resolved=true" class={props.resolved ? 'active' : ''}>
          resolved
        </a>
      </nav>
      <ErrorBox error={error} />
      <ListTable
        testId="risk-flags"
        heads={['raised', 'type', 'severity', 'signer', 'PLC', 'seen', props.resolved ? 'resolution' : '']}
        items={data}
        none={<>No {props.resolved ? 'resolved' : 'open'} risk flag.</>}
        row={(flag) => (
          <tr key={flag.id}>
            <td>{when(flag.created_at)}</td>
            <td>
              <Status value={flag.flag_type} />
            </td>
            <td>{flag.severity}</td>
            <td>{flag.subject_pubkey === null ? '—' : <a href={`#/plcs?q=${flag.subject_pubkey}`}>{shortId(flag.subject_pubkey)}</a>}</td>
            <td>{flag.token_id === null ? '—' : <PlcLink tokenId={flag.token_id} />}</td>
            <td class="num">{flag.occurrences}</td>
            <td>
              {flag.resolved ? `${flag.resolved_by ?? ''}${flag.resolution_note === null ? '' : `: ${flag.resolution_note}`}` : <ResolveButton session={props.session} flag={flag} onResolved={reload} />}
            </td>
          </tr>
        )}
      />
    </div>
  );
}
