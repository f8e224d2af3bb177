import { useState } from 'preact/hooks';
import { api, type Session } from '../api.ts';
import { when } from '../format.ts';
import { ActionResult, ErrorBox, ListTable, Notice, Status, useAction, useLoad, type ActionOutcome } from '../ui.tsx';

/** Administrators and their roles, for a super_admin (docs/operations-console.md, "Administrators"). */

interface AdminUser {
  id: string;
  username: string;
  role: 'admin' | 'super_admin';
  disabled: boolean;
  created_at: string;
  last_login_at: string | null;
}
interface Change {
  user: AdminUser;
  changed: boolean;
}

const pageSize = 50;
const usernamePattern = /^[A-Za-z0-9._-]{3,64}$/;
const outcomeOf = (username: string, text: ActionOutcome['text']): ActionOutcome => ({ text, type: 'ADMIN_USER', reference: `admin:${username}`, nonce: Date.now() });

function CreateForm(props: { session: Session; onDone: (outcome: ActionOutcome) => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<'admin' | 'super_admin'>('admin');
  const { busy, error, fail, run } = useAction();
  return (
    <form
      class="create"
      data-testid="admin-create"
      onSubmit={async (event) => {
        event.preventDefault();
        if (!usernamePattern.test(username)) {
          fail(new Error('A username is 3 to 64 letters, digits, dots, dashes or underscores.'));
          return;
        }
        if (password.length < 12 || password.length > 256) {
          fail(new Error('A password is 12 to 256 characters.'));
          return;
        }
        await run(
          async () => {
            const created = (await api<AdminUser>(props.session, '/admin/users', { method: 'POST', body: { username, password, role } })).body;
            setPassword('');
            setUsername('');
            props.onDone(outcomeOf(created.username, <>Created {created.role} <strong>{created.username}</strong>: they log in with the password you chose.</>));
          },
          () => props.onDone(outcomeOf(username, <>The creation of {username} was refused (see the error).</>)),
        );
      }}
    >
      <label>
        New administrator
        <input value={username} onInput={(event) => setUsername((event.target as HTMLInputElement).value)} placeholder="username" maxLength={64} autoComplete="off" />
      </label>
      <label>
        First password
        <input type="password" value={password} onInput={(event) => setPassword((event.target as HTMLInputElement).value)} placeholder="12 to 256 characters" autoComplete="new-password" />
      </label>
      <label>
        Role
        <select value={role} onChange={(event) => setRole((event.target as HTMLSelectElement).value as 'admin' | 'super_admin')}>
          <option value="admin">admin</option>
          <option value="super_admin">super_admin</option>
        </select>
      </label>
      <button type="submit" disabled={busy}>
        Create
      </button>
      <ErrorBox error={error} />
    </form>
  );
}

function UserActions(props: { session: Session; user: AdminUser; self: boolean; onDone: (outcome: ActionOutcome) => void }) {
  const { busy, error, run } = useAction();
  const user = props.user;
  const change = async (path: string, body: object | undefined, question: string, describe: (answer: Change) => ActionOutcome['text']) => {
    if (!confirm(question)) return;
    await run(
      async () => {
        const answer = (await api<Change>(props.session, `/admin/users/${encodeURIComponent(user.username)}/${path}`, { method: 'POST', ...(body === undefined ? {} : { body }) })).body;
        props.onDone(outcomeOf(user.username, answer.changed ? describe(answer) : <>{user.username} already was so: nothing changed.</>));
      },
      () => props.onDone(outcomeOf(user.username, <>The change of {user.username} was refused (see the error).</>)),
    );
  };
  const otherRole = user.role === 'admin' ? 'super_admin' : 'admin';
  return (
    <div class="actions">
      <button
        class="small"
        disabled={busy}
        onClick={() =>
          void change(
            'role',
            { role: otherRole },
            `Make ${user.username} ${otherRole}?${otherRole === 'super_admin' ? ' A super_admin manages administrators.' : ''}${props.self ? ' This is you.' : ''}`,
            (answer) => (
              <>
                {answer.user.username} is now {answer.user.role}.
              </>
            ),
          )
        }
      >
        Make {otherRole}
      </button>
      {user.disabled ? (
        <button class="small" disabled={busy} onClick={() => void change('enable', undefined, `Let ${user.username} log in again?`, (answer) => <>{answer.user.username} may log in again.</>)}>
          Enable
        </button>
      ) : (
        <button
          class="danger small"
          disabled={busy}
          onClick={() =>
            void change(
              'disable',
              undefined,
              `Disable ${user.username}? Their logins are refused and their sessions end now.${props.self ? ' This is you: your session ends too.' : ''}`,
              (answer) => <>{answer.user.username} is disabled: their sessions have ended.</>,
            )
          }
        >
          Disable
        </button>
      )}
      <PasswordForm session={props.session} user={user} onDone={props.onDone} />
      <ErrorBox error={error} />
    </div>
  );
}

function PasswordForm(props: { session: Session; user: AdminUser; onDone: (outcome: ActionOutcome) => void }) {
  const [password, setPassword] = useState('');
  const { busy, error, fail, run } = useAction();
  return (
    <form
      class="inline"
      onSubmit={async (event) => {
        event.preventDefault();
        if (password.length < 12 || password.length > 256) {
          fail(new Error('A password is 12 to 256 characters.'));
          return;
        }
        if (!confirm(`Set a new password for ${props.user.username}? Their sessions end now.`)) return;
        await run(
          async () => {
            await api<AdminUser>(props.session, `/admin/users/${encodeURIComponent(props.user.username)}/password`, { method: 'POST', body: { password } });
            setPassword('');
            props.onDone(outcomeOf(props.user.username, <>New password set for {props.user.username}: their earlier sessions have ended.</>));
          },
          () => props.onDone(outcomeOf(props.user.username, <>The password change was refused (see the error).</>)),
        );
      }}
    >
      <input type="password" value={password} onInput={(event) => setPassword((event.target as HTMLInputElement).value)} placeholder="new password" aria-label={`new password for ${props.user.username}`} autoComplete="new-password" size={14} />
      <button type="submit" class="small" disabled={busy}>
        Set password
      </button>
      <ErrorBox error={error} />
    </form>
  );
}

export function AdminsPage(props: { session: Session; offset: number }) {
  const offset = Number.isInteger(props.offset) && props.offset >= 0 ? props.offset : 0;
  const allowed = props.session.role === 'super_admin';
  const { data, error, reload } = useLoad(
    async () => (allowed ? (await api<{ users: AdminUser[]; total: number }>(props.session, `/admin/users?limit=${pageSize}&offset=${offset}`)).body : null),
    [offset, allowed],
  );
  const [outcome, setOutcome] = useState<ActionOutcome | null>(null);
  if (!allowed) return <Notice>Administrators are managed by a super_admin. Ask one, or use <code>npm run admin</code> on a host with the database.</Notice>;
  const done = (next: ActionOutcome) => {
    setOutcome(next);
    reload();
  };
  return (
    <div>
      <h2>Administrators {data === null ? null : <span class="muted live">{data.total} in all</span>}</h2>
      <CreateForm session={props.session} onDone={done} />
      <ActionResult session={props.session} outcome={outcome} />
      <ErrorBox error={error} />
      <ListTable
        testId="admin-users"
        heads={['username', 'role', 'state', 'last login', 'created', '']}
        items={data?.users ?? null}
        none={<>No administrator on this page.</>}
        row={(user) => (
          <tr key={user.id}>
            <td>
              <strong>{user.username}</strong>
              {user.username === props.session.username ? <span class="muted"> (you)</span> : null}
            </td>
            <td>
              <Status value={user.role} />
            </td>
            <td>
              <Status value={user.disabled ? 'DISABLED' : 'ENABLED'} />
            </td>
            <td>{when(user.last_login_at)}</td>
            <td>{when(user.created_at)}</td>
            <td>
              <UserActions session={props.session} user={user} self={user.username === props.session.username} onDone={done} />
            </td>
          </tr>
        )}
      />
      <nav class="pager">
        {offset > 0 ? <a href={`#/admins?offset=${Math.max(0, offset - pageSize)}`}>← previous</a> : null}
        {data !== null && offset + pageSize < data.total ? <a href={`#/admins?offset=${offset + pageSize}`}>next →</a> : null}
      </nav>
    </div>
  );
}
