/**
 * The console's only way to the service: the same /api/v1 routes and checks as any client, with
 * the admin's bearer token. A 401 ends the session (an expired or revoked token) and sends the
 * operator to the login page with a message; every other refusal becomes an ApiError whose
 * message the page shows.
 */

export interface Session {
  token: string;
  username: string;
  role: 'admin' | 'super_admin';
  expiresAtMs: number;
}

const sessionKey = 'settlement-console-session';

export function loadSession(): Session | null {
  try {
    const text = sessionStorage.getItem(sessionKey);
    if (text === null) return null;
    const session = JSON.parse(text) as Session;
    return session.expiresAtMs > Date.now() ? session : null;
  } catch {
    return null;
  }
}

export function saveSession(session: Session | null): void {
  if (session === null) sessionStorage.removeItem(sessionKey);
  else sessionStorage.setItem(sessionKey, JSON.stringify(session));
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(status: number, code: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

type SessionListener = (reason: string) => void;
let onSessionEnded: SessionListener = () => {};
export function whenSessionEnds(listener: SessionListener): void {
  onSessionEnded = listener;
}

/** The reason a failed answer gives, in words an operator can act on. */
async function errorOf(response: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON: the status says enough.
  }
  if (body !== null && typeof body === 'object') {
    const record = body as { code?: unknown; message?: unknown; details?: unknown; detail?: unknown };
    if (Array.isArray(record.detail)) {
      const parts = record.detail.map((item: { loc?: unknown[]; msg?: unknown }) => `${(item.loc ?? []).slice(1).join('.') || 'request'}: ${String(item.msg ?? 'invalid')}`);
      return new ApiError(response.status, 'VALIDATION', `Please check the input — ${parts.join('; ')}`);
    }
    if (typeof record.code === 'string') {
      return new ApiError(response.status, record.code, typeof record.message === 'string' ? record.message : record.code, record.details as Record<string, unknown> | undefined);
    }
  }
  return new ApiError(response.status, `HTTP_${response.status}`, `The service answered ${response.status} ${response.statusText}`);
}

export async function api<T>(session: Session, path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: T }> {
  let response: Response;
  try {
    response = await fetch(`/api/v1${path}`, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${session.token}`,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The service cannot be reached. Check your connection and try again.');
  }
  if (response.status === 401) {
    saveSession(null);
    onSessionEnded('Your session has expired or was ended. Please log in again.');
    throw new ApiError(401, 'UNAUTHENTICATED', 'Your session has expired. Please log in again.');
  }
  if (!response.ok) throw await errorOf(response);
  return { status: response.status, body: (await response.json()) as T };
}

export async function login(username: string, password: string): Promise<Session> {
  let response: Response;
  try {
    response = await fetch('/api/v1/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username, password }),
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The service cannot be reached.');
  }
  if (response.status === 401) throw new ApiError(401, 'INVALID_CREDENTIALS', 'Wrong username or password.');
  if (!response.ok) throw await errorOf(response);
  const body = (await response.json()) as { access_token: string; expires_in: number };
  const verify = await fetch('/api/v1/auth/verify', { headers: { authorization: `Bearer ${body.access_token}` } });
  if (!verify.ok) throw await errorOf(verify);
  const user = (await verify.json()) as { username: string; role: 'admin' | 'super_admin'; expires_at: string };
  return { token: body.access_token, username: user.username, role: user.role, expiresAtMs: Date.parse(user.expires_at) };
}

export interface ConsoleConfig {
  temporal_ui_url: string;
  temporal_namespace: string;
}

export async function loadConfig(): Promise<ConsoleConfig> {
  const response = await fetch('/console/config.json');
  if (!response.ok) return { temporal_ui_url: '', temporal_namespace: 'default' };
  return (await response.json()) as ConsoleConfig;
}

/** The link to a workflow in the Temporal UI (its address is the service's configuration). */
export function workflowLink(config: ConsoleConfig, workflowId: string): string | null {
  if (config.temporal_ui_url === '') return null;
  return `${config.temporal_ui_url.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(config.temporal_namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
