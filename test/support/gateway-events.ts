import { randomUUID } from 'node:crypto';

/**
 * A Pix transfer as the gateway's webhooks carry it (gateway/wire.ts; Asaas nests the key in `bankAccount`): 10.00 to an e-mail key,
 * PENDING, with an id and an external reference nobody knows unless `overrides` name them.
 */
export function transferWire(overrides: Record<string, unknown> = {}) {
  return {
    object: 'transfer',
    id: randomUUID(),
    status: 'PENDING',
    value: 10,
    netValue: 10,
    transferFee: 0,
    dateCreated: '2026-11-22',
    type: 'BANK_ACCOUNT',
    operationType: 'PIX',
    bankAccount: { pixAddressKey: 'payee@example.com' },
    externalReference: randomUUID(),
    failReason: null,
    ...overrides,
  };
}

/**
 * A gateway webhook event (TRANSFER_DONE unless `event` says otherwise) about such a transfer, DONE
 * unless `transfer` says otherwise; its id is new unless `id` names one.
 */
export function transferEvent(options: { event?: string; id?: string; transfer?: Record<string, unknown> } = {}) {
  return {
    id: options.id ?? `evt_${randomUUID()}`,
    event: options.event ?? 'TRANSFER_DONE',
    dateCreated: '2026-11-22 10:00:00',
    transfer: transferWire({ status: 'DONE', ...options.transfer }),
  };
}
