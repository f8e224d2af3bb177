import { z } from 'zod';
import { buckets, txTypes } from '../../src/ledger/money-model.ts';
import type { BucketBalances, TransactionItemRow } from '../../db/ledger.ts';
import type { Currency } from '../../src/money/currency.ts';
import { amountSchema, currencySchema, money } from './money.ts';

export const accountStatusSchema = z.enum(['ACTIVE', 'FROZEN']).meta({ id: 'AccountStatus' });

export const balanceResponse = z
  .object({
    owner_id: z.string(),
    currency: currencySchema,
    available: amountSchema,
    held: amountSchema,
    pending: amountSchema,
    promised: amountSchema,
    status: accountStatusSchema,
  })
  .meta({ id: 'BalanceResponse' });
export type BalanceResponse = z.infer<typeof balanceResponse>;

export function toBalanceResponse(
  ownerId: string,
  currency: Currency,
  balances: BucketBalances,
  status: 'ACTIVE' | 'FROZEN',
): BalanceResponse {
  return {
    owner_id: ownerId,
    currency,
    available: money(balances.available, currency),
    held: money(balances.held, currency),
    pending: money(balances.pending, currency),
    promised: money(balances.promised, currency),
    status,
  };
}

export const entryItem = z
  .object({ owner_id: z.string(), bucket: z.enum(buckets), currency: currencySchema, amount: amountSchema })
  .meta({ id: 'EntryItem' });

export const transactionItem = z
  .object({
    id: z.string().uuid(),
    tx_type: z.enum(txTypes),
    reference_type: z.string().nullable(),
    reference_id: z.string().nullable(),
    description: z.string().nullable(),
    created_at: z.string().describe('ISO 8601'),
    entries: z.array(entryItem),
  })
  .meta({ id: 'TransactionItem' });

export function toTransactionItem(row: TransactionItemRow): z.infer<typeof transactionItem> {
  return {
    id: row.id,
    tx_type: row.tx_type,
    reference_type: row.reference_type,
    reference_id: row.reference_id,
    description: row.description,
    created_at: row.created_at.toISOString(),
    entries: row.entries.map((entry) => ({
      owner_id: entry.owner_id,
      bucket: entry.bucket,
      currency: entry.currency,
      amount: money(entry.amount_minor, entry.currency),
    })),
  };
}

export const idempotencyKeyHeader = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{8,128}$/, 'Idempotency-Key: 8 to 128 characters of A-Z a-z 0-9 . _ : -')
  .describe('client-generated key; a retry with the same key and body books nothing twice')
  .meta({ examples: ['9b2f6c1e-4a7d-4e3b-8c5a-1f2e3d4c5b6a'] });
