import { useState } from 'preact/hooks';
import { login, type Session } from '../api.ts';
import { ErrorBox, Notice, useAction } from '../ui.tsx';

export function LoginPage(props: { message: string | null; onLogin: (session: Session) => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, fail, run } = useAction();
  return (
    <div class="login">
      <h1>Settlement console</h1>
      {props.message === null ? null : <Notice>{props.message}</Notice>}
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          if (username.trim() === '' || password === '') {
            fail(new Error('Enter your username and password.'));
            return;
          }
          await run(async () => props.onLogin(await login(username.trim(), password)));
        }}
      >
        <label>
          Username
          <input name="username" autoComplete="username" value={username} onInput={(event) => setUsername((event.target as HTMLInputElement).value)} />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" value={password} onInput={(event) => setPassword((event.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
        <ErrorBox error={error} />
      </form>
    </div>
  );
}
