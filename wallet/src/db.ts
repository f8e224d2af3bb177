/**
 * The wallet's storage: one IndexedDB database of this origin, two object stores. `meta` holds the
 * encrypted key vault, the kept blocklist and settings; `tokens` holds the PLCs this wallet issued
 * or received, in the protocol's JSON form, with what the wallet knows of them. A thin promise
 * layer over IndexedDB itself (each call one transaction), so nothing else is needed for it.
 */
import type { TokenRecord } from './records.ts';

export type { RedeemRecord, TokenRecord } from './records.ts';

const dbName = 'plc-wallet';
const dbVersion = 1;

let opened: Promise<IDBDatabase> | undefined;

function open(): Promise<IDBDatabase> {
  opened ??= new Promise((resolve, reject) => {
    const request = indexedDB.open(dbName, dbVersion);
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains('meta')) db.createObjectStore('meta');
      if (!db.objectStoreNames.contains('tokens')) db.createObjectStore('tokens', { keyPath: 'token_id' });
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error('IndexedDB did not open'));
  });
  return opened;
}

function run<T>(store: 'meta' | 'tokens', mode: IDBTransactionMode, act: (s: IDBObjectStore) => IDBRequest): Promise<T> {
  return open().then(
    (db) =>
      new Promise<T>((resolve, reject) => {
        const tx = db.transaction(store, mode);
        const request = act(tx.objectStore(store));
        tx.oncomplete = () => resolve(request.result as T);
        tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'));
        tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
      }),
  );
}

export const getMeta = <T>(key: string): Promise<T | undefined> => run<T | undefined>('meta', 'readonly', (s) => s.get(key));
export const putMeta = (key: string, value: unknown): Promise<void> => run<unknown>('meta', 'readwrite', (s) => s.put(value, key)).then(() => undefined);
export const deleteMeta = (key: string): Promise<void> => run<unknown>('meta', 'readwrite', (s) => s.delete(key)).then(() => undefined);
export const getToken = (tokenId: string): Promise<TokenRecord | undefined> => run<TokenRecord | undefined>('tokens', 'readonly', (s) => s.get(tokenId));
export const putToken = (token: TokenRecord): Promise<void> => run<unknown>('tokens', 'readwrite', (s) => s.put(token)).then(() => undefined);
export const deleteToken = (tokenId: string): Promise<void> => run<unknown>('tokens', 'readwrite', (s) => s.delete(tokenId)).then(() => undefined);
/** Every PLC this wallet keeps (bounded by the protocol's use: a wallet holds hundreds, not millions). */
export const allTokens = (): Promise<TokenRecord[]> => run<TokenRecord[]>('tokens', 'readonly', (s) => s.getAll(null, 5000));
