import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';

/**
 * Where the simulator keeps its state across restarts: customers, charges, transfers, bill payments, idempotency
 * keys, the account balance, each webhook's settings and penalty, and the events queued for
 * delivery. In development (`npm start`) it is a SQLite file in the data folder
 * (SIMULATOR_STATE_FILE), so a settled payout is still there after a restart, as at a real
 * gateway; tests and benchmarks keep everything in memory (`memoryStore`).
 *
 * Why SQLite (node:sqlite, built into Node): every change is a small transaction written before
 * the simulator answers (a transfer, the balance it debits and the events it queues commit
 * together), in write-ahead-log mode, so a SIGKILL at any moment loses nothing that was answered;
 * a JSON snapshot would have to rewrite up to 100,000 resources on each change to be as safe.
 * Not the service's PostgreSQL: the simulator stands for another company's system, whose books a
 * restore or a migration of ours must never touch, and it runs without PostgreSQL.
 *
 * Not kept: fault settings (a restart clears them, as POST /sim/reset does), the delivery and
 * validation logs (diagnostics), and timers: a transfer still PENDING at start has its validation
 * scheduled again.
 */

export type ResourceKind = 'customer' | 'payment' | 'transfer' | 'billPayment';

export interface StoredDelivery {
  /** The row's id, to remove it once delivered. */
  storeId: number;
  webhookId: string;
  body: string;
}

export interface StoredState {
  resources: Record<ResourceKind, string[]>;
  idempotency: { key: string; fingerprint: string; resourceId: string }[];
  balanceMinor: bigint | null;
  webhooks: { id: string; body: string }[];
  deliveries: StoredDelivery[];
}

export interface SimulatorStore {
  /** Where the state lives, for the start log line; null in memory. */
  readonly location: string | null;
  load(): StoredState;
  /** Runs `change` in one transaction (nested calls join the outer one). */
  atomically<T>(change: () => T): T;
  putResource(kind: ResourceKind, id: string, body: string): void;
  putIdempotency(key: string, fingerprint: string, resourceId: string): void;
  putBalance(balanceMinor: bigint): void;
  putWebhook(id: string, body: string): void;
  /** Returns the new delivery's id. */
  addDelivery(webhookId: string, body: string): number;
  updateDelivery(storeId: number, body: string): void;
  removeDelivery(storeId: number): void;
  /** Forgets everything (POST /sim/reset). */
  clear(): void;
  close(): void;
}

let memoryIds = 0;

/** No persistence: the state lives and dies with the process. */
export function memoryStore(): SimulatorStore {
  return {
    location: null,
    load: () => ({ resources: { customer: [], payment: [], transfer: [], billPayment: [] }, idempotency: [], balanceMinor: null, webhooks: [], deliveries: [] }),
    atomically: (change) => change(),
    putResource: () => {},
    putIdempotency: () => {},
    putBalance: () => {},
    putWebhook: () => {},
    addDelivery: () => {
      memoryIds += 1;
      return memoryIds;
    },
    updateDelivery: () => {},
    removeDelivery: () => {},
    clear: () => {},
    close: () => {},
  };
}

const schema = `
CREATE TABLE IF NOT EXISTS resources (
  kind TEXT NOT NULL,
  id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (kind, id)
);
CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, resource_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS account (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS webhooks (id TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS deliveries (id INTEGER PRIMARY KEY AUTOINCREMENT, webhook_id TEXT NOT NULL, body TEXT NOT NULL);
`;

/** The state in a SQLite file (created with its folder when missing). */
export function sqliteStore(file: string): SimulatorStore {
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new DatabaseSync(file);
  // WAL with synchronous=NORMAL: a committed change survives the process being killed at any
  // moment (a power cut may lose the last ones: a development tool's trade-off).
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;');
  db.exec(schema);
  const nextSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM resources');
  const upsertResource = db.prepare(
    'INSERT INTO resources (kind, id, seq, body) VALUES (?, ?, ?, ?) ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body',
  );
  const upsertIdempotency = db.prepare(
    'INSERT INTO idempotency (key, fingerprint, resource_id) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, resource_id = excluded.resource_id',
  );
  const upsertAccount = db.prepare('INSERT INTO account (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value');
  const upsertWebhook = db.prepare('INSERT INTO webhooks (id, body) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET body = excluded.body');
  const insertDelivery = db.prepare('INSERT INTO deliveries (webhook_id, body) VALUES (?, ?)');
  const updateDeliveryBody = db.prepare('UPDATE deliveries SET body = ? WHERE id = ?');
  const deleteDelivery = db.prepare('DELETE FROM deliveries WHERE id = ?');
  let depth = 0;
  let seq = Number((nextSeq.get() as { seq: number }).seq);

  return {
    location: path.resolve(file),
    load() {
      const resources: StoredState['resources'] = { customer: [], payment: [], transfer: [], billPayment: [] };
      for (const row of db.prepare('SELECT kind, body FROM resources ORDER BY seq').all() as { kind: ResourceKind; body: string }[]) {
        resources[row.kind].push(row.body);
      }
      const balance = db.prepare("SELECT value FROM account WHERE name = 'balance'").get() as { value: string } | undefined;
      return {
        resources,
        idempotency: (db.prepare('SELECT key, fingerprint, resource_id FROM idempotency').all() as { key: string; fingerprint: string; resource_id: string }[]).map(
          (row) => ({ key: row.key, fingerprint: row.fingerprint, resourceId: row.resource_id }),
        ),
        balanceMinor: balance === undefined ? null : BigInt(balance.value),
        webhooks: db.prepare('SELECT id, body FROM webhooks').all() as { id: string; body: string }[],
        deliveries: (db.prepare('SELECT id, webhook_id, body FROM deliveries ORDER BY id').all() as { id: number; webhook_id: string; body: string }[]).map(
          (row) => ({ storeId: Number(row.id), webhookId: row.webhook_id, body: row.body }),
        ),
      };
    },
    atomically(change) {
      if (depth > 0) return change();
      db.exec('BEGIN IMMEDIATE');
      depth += 1;
      try {
        const result = change();
        db.exec('COMMIT');
        return result;
      } catch (error) {
        db.exec('ROLLBACK');
        throw error;
      } finally {
        depth -= 1;
      }
    },
    putResource(kind, id, body) {
      upsertResource.run(kind, id, seq, body);
      seq += 1;
    },
    putIdempotency(key, fingerprint, resourceId) {
      upsertIdempotency.run(key, fingerprint, resourceId);
    },
    putBalance(balanceMinor) {
      upsertAccount.run('balance', balanceMinor.toString());
    },
    putWebhook(id, body) {
      upsertWebhook.run(id, body);
    },
    addDelivery(webhookId, body) {
      return Number(insertDelivery.run(webhookId, body).lastInsertRowid);
    },
    updateDelivery(storeId, body) {
      updateDeliveryBody.run(body, storeId);
    },
    removeDelivery(storeId) {
      deleteDelivery.run(storeId);
    },
    clear() {
      db.exec('BEGIN IMMEDIATE; DELETE FROM resources; DELETE FROM idempotency; DELETE FROM account; DELETE FROM webhooks; DELETE FROM deliveries; COMMIT;');
    },
    close() {
      if (db.isOpen) db.close();
    },
  };
}
