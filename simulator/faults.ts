import { z } from 'zod';
import { createRng, type Rng } from './rng.ts';

/**
 * Fault injection. Faults are set with `POST /sim/faults` (a partial update), read with
 * `GET /sim/faults`, cleared with `DELETE /sim/faults` or `POST /sim/reset`. Every random
 * decision draws from one seeded generator, in request order, so the same seed and the same
 * sequence of calls give the same faults.
 */

export const faultsSchema = z.strictObject({
  /** Waited before every webhook delivery attempt. */
  webhookDelayMs: z.number().int().min(0).max(600_000),
  /** How many times each event is delivered (1 = once; 3 = the same event id three times). */
  duplicateWebhooks: z.number().int().min(1).max(10),
  /** Deliver each batch of queued events (gathered for reorderWindowMs) in reverse order. */
  reorderWebhooks: z.boolean(),
  reorderWindowMs: z.number().int().min(0).max(60_000),
  /** Probability that an event is never delivered (decided once per event and webhook). */
  dropWebhookRate: z.number().min(0).max(1),
  /** Probability that an API call answers 500 without doing anything. */
  apiErrorRate: z.number().min(0).max(1),
  /** Probability that an API call does its work but answers 500 (the response is "lost"). */
  apiLostResponseRate: z.number().min(0).max(1),
  /** Probability that an API call hangs for apiHangMs (past any sane client timeout), does nothing, then answers 504. */
  apiTimeoutRate: z.number().min(0).max(1),
  apiHangMs: z.number().int().min(0).max(600_000),
  /** Probability that the bank refuses a bill payment when it processes it (FAILED, the money back to the account). */
  billPaymentFailRate: z.number().min(0).max(1),
  /** Reseeds the generator; omit to keep the current sequence. */
  seed: z.number().int().min(0).max(2 ** 32 - 1),
});

export type Faults = Omit<z.infer<typeof faultsSchema>, 'seed'>;
export const faultsPatchSchema = faultsSchema.partial();
export type FaultsPatch = z.infer<typeof faultsPatchSchema>;

export function noFaults(): Faults {
  return {
    webhookDelayMs: 0,
    duplicateWebhooks: 1,
    reorderWebhooks: false,
    reorderWindowMs: 100,
    dropWebhookRate: 0,
    apiErrorRate: 0,
    apiLostResponseRate: 0,
    apiTimeoutRate: 0,
    apiHangMs: 60_000,
    billPaymentFailRate: 0,
  };
}

export type ApiFault = 'none' | 'error' | 'lost_response' | 'timeout';

export class FaultInjector {
  #faults: Faults = noFaults();
  #rng: Rng;
  readonly #initialSeed: number;

  constructor(seed: number) {
    this.#initialSeed = seed;
    this.#rng = createRng(seed);
  }

  get faults(): Faults {
    return { ...this.#faults };
  }

  get seed(): number {
    return this.#rng.seed;
  }

  update(patch: FaultsPatch): Faults {
    const { seed, ...rest } = patch;
    this.#faults = { ...this.#faults, ...Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) };
    if (seed !== undefined) this.#rng = createRng(seed);
    return this.faults;
  }

  /** Clears every fault and restarts the generator from the configured seed. */
  reset(): void {
    this.#faults = noFaults();
    this.#rng = createRng(this.#initialSeed);
  }

  /** Decides the fault for one API call. Draws only for rates that are set, in a fixed order. */
  apiFault(): ApiFault {
    if (this.#rng.chance(this.#faults.apiTimeoutRate)) return 'timeout';
    if (this.#rng.chance(this.#faults.apiErrorRate)) return 'error';
    if (this.#rng.chance(this.#faults.apiLostResponseRate)) return 'lost_response';
    return 'none';
  }

  billPaymentFails(): boolean {
    return this.#rng.chance(this.#faults.billPaymentFailRate);
  }

  dropWebhook(): boolean {
    return this.#rng.chance(this.#faults.dropWebhookRate);
  }
}
