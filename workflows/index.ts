/** Every workflow the worker runs; one file per business process. */
export { depositWorkflow, bookDepositUpdate } from './deposit.ts';
