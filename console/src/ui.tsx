import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, workflowLink, type ConsoleConfig } from './api.ts';

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
