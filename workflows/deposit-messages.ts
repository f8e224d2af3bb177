import { defineUpdate } from '@temporalio/workflow';
import type { BookDepositInput, BookDepositResult } from '../activities/ledger.ts';

/** The update of a deposit workflow (`deposit-<Idempotency-Key>`, workflows/deposit.ts), importable without the workflow's code. */
export const bookDepositUpdate = defineUpdate<BookDepositResult, [BookDepositInput]>('bookDeposit');
