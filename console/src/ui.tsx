import type { ComponentChildren, VNode } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, ApiError, workflowLink, type ConsoleConfig, type Session } from './api.ts';
import { money, shortId, when } from './format.ts';

/** Shared pieces of the console's pages. */

export function ErrorBox(props: { error: unknown }) {
  if (props.error === null || props.error === undefined) return null;
  const message = props.error instanceof ApiError || props.error instanceof Error ? props.error.message : String(props.error);
  const code = props.error instanceof ApiError ? props.error.code : null;
  return (
    <div class="error" role="alert">
      {code !== null && code !== 'VALIDATION' && code !== 'NETWORK' ? <strong>{code}: </strong> : null}
      {message}
    </div>
  );
}

export function Notice(props: { children: ComponentChildren }) {
  return (
    <div class="notice" role="status">
      {props.children}
    </div>
  );
}

/** Loads data on mount and on `reload`; keeps the last good data while reloading. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let cancelled = false;
    setLoading(true);
    load().then(
      (value) => {
        if (cancelled) return;
        setData(value);
        setError(null);
        setLoading(false);
      },
      (failure: unknown) => {
        if (cancelled) return;
        setError(failure);
        setLoading(false);
      },
    );
    return () => {
      cancelled = true;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((value) => value + 1), []);
  return { data, error, loading, reload };
}

/**
 * What a button or form runs: `busy` while it runs, and its failure kept for an ErrorBox (cleared
 * when it runs again). `fail` shows an error without running (a form's own check).
 */
export function useAction() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async (action: () => Promise<void>, onFailure?: (failure: unknown) => void): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (failure) {
      setError(failure);
      onFailure?.(failure);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, fail: setError, run };
}

/** A list's table: a head per column and a row per item, or the notice when there is no item (nothing while loading). */
export function ListTable<T>(props: { testId: string; heads: readonly string[]; items: readonly T[] | null; none: ComponentChildren; row: (item: T) => VNode }) {
  if (props.items === null) return null;
  if (props.items.length === 0) return <Notice>{props.none}</Notice>;
  return (
    <table data-testid={props.testId}>
      <thead>
        <tr>
          {props.heads.map((head, column) => (
            <th key={column}>{head}</th>
          ))}
        </tr>
      </thead>
      <tbody>{props.items.map(props.row)}</tbody>
    </table>
  );
}

/** A PLC's short id, linking to its page. */
export function PlcLink(props: { tokenId: string }) {
  return <a href={`#/plc/${props.tokenId}`}>{shortId(props.tokenId)}</a>;
}

/** A redemption's short id, linking to its page. */
export function RedemptionLink(props: { redemptionId: string }) {
  return <a href={`#/redemption/${props.redemptionId}`}>{shortId(props.redemptionId)}</a>;
}

/** An amount and its currency in a table's number column. */
export function AmountCell(props: { amount: string; currency: string }) {
  return (
    <td class="num">{money(props.amount, props.currency)}</td>
  );
}

export function WorkflowLink(props: { config: ConsoleConfig; workflowId: string | null | undefined }) {
  if (props.workflowId === null || props.workflowId === undefined) return <span>—</span>;
  const href = workflowLink(props.config, props.workflowId);
  return href === null ? (
    <code>{props.workflowId}</code>
  ) : (
    <a class="workflow" href={href} target="_blank" rel="noopener noreferrer" title="Open in the Temporal UI">
      {props.workflowId} ↗
    </a>
  );
}

export function Status(props: { value: string | null | undefined }) {
  const value = props.value ?? '—';
  return <span class={`status status-${value.toLowerCase().replace(/[^a-z]+/g, '-')}`}>{value}</span>;
}

export function Card(props: { title: string; children: ComponentChildren; wide?: boolean }) {
  return (
    <section class={props.wide === true ? 'card wide' : 'card'}>
      <h3>{props.title}</h3>
      {props.children}
    </section>
  );
}

/**
 * Reloads every `ms` while the tab is visible: for a page whose state changes by itself (new
 * requests, sign-ups, blocks, webhook queues). A reload keeps the last good data on screen.
 */
export function usePolling(reload: () => void, ms: number): void {
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') reload();
    }, ms);
    return () => clearInterval(timer);
  }, [reload, ms]);
}

/** Says that a page follows its state by itself, and how often. */
export function LiveNote(props: { ms: number }) {
  return (
    <span class="muted live" data-testid="live-note">
      live · refreshes every {Math.round(props.ms / 1000)} s
    </span>
  );
}

export interface OperationLogEntry {
  id: string;
  operation_type: string;
  step: string;
  status: string;
  owner_id: string | null;
  reference_id: string | null;
  workflow_id: string | null;
  duration_ms: number | null;
  error_code: string | null;
  error: string | null;
  actor: string | null;
  started_at: string;
}

/**
 * The operation-log entry of the action just run (the newest of its type and reference): what an
 * auditor will read later, shown at once.
 */
export function OperationEntry(props: { session: Session; type: string; reference: string; nonce: number }) {
  const { data, error } = useLoad(
    async () =>
      (
        await api<OperationLogEntry[]>(
          props.session,
          `/admin/monitor/operations?operation_type=${encodeURIComponent(props.type)}&reference_id=${encodeURIComponent(props.reference)}&limit=1`,
        )
      ).body[0] ?? null,
    [props.type, props.reference, props.nonce],
  );
  if (error !== null) return <ErrorBox error={error} />;
  if (data === null) return <span class="muted">operation log: no entry found</span>;
  return (
    <div class="op-entry" data-testid="operation-entry">
      operation log #{data.id}: <strong>{data.operation_type}</strong> {data.step} <Status value={data.status} />
      {data.actor === null ? '' : ` by ${data.actor}`} · {when(data.started_at)}
      {data.duration_ms === null ? '' : ` · ${data.duration_ms} ms`}
      {data.error_code === null ? '' : ` · ${data.error_code}`}
    </div>
  );
}

/** An action's outcome: its result in words, and where its operation-log entry is (type and reference). */
export interface ActionOutcome {
  text: ComponentChildren;
  type: string;
  reference: string;
  /** Changes with every action, so that the entry is read again. */
  nonce: number;
}

/** The outcome of an action: its result in words, and its operation-log entry. */
export function ActionResult(props: { session: Session; outcome: ActionOutcome | null }) {
  if (props.outcome === null) return null;
  return (
    <div class="notice" role="status" data-testid="action-result">
      <div>{props.outcome.text}</div>
      <OperationEntry session={props.session} type={props.outcome.type} reference={props.outcome.reference} nonce={props.outcome.nonce} />
    </div>
  );
}
