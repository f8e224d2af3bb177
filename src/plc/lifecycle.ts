/**
 * The PLC status machine of the spec's "PLC status" table. REDEEMED, EXPIRED and CANCELLED are
 * final. The database enforces each transition with a guarded UPDATE; these helpers say which
 * transitions exist so that the API can explain a refusal.
 */
export const plcStatuses = ['ISSUED', 'TRANSFERRED', 'REDEEMED', 'EXPIRED', 'CANCELLED'] as const;
export type PlcStatus = (typeof plcStatuses)[number];

export const finalPlcStatuses: readonly PlcStatus[] = ['REDEEMED', 'EXPIRED', 'CANCELLED'];
/** States in which the PLC is alive: transferable and expirable. */
export const livePlcStatuses: readonly PlcStatus[] = ['ISSUED', 'TRANSFERRED'];

export function isFinal(status: PlcStatus): boolean {
  return finalPlcStatuses.includes(status);
}

/** Rule 1 and 2 of the spec: cancel only from ISSUED, by the original issuer, before any hop. */
export function canCancel(status: PlcStatus, chainLength: number): boolean {
  return status === 'ISSUED' && chainLength === 0;
}

export function canTransfer(status: PlcStatus, redemptionInFlight: boolean): boolean {
  return livePlcStatuses.includes(status) && !redemptionInFlight;
}

/**
 * When the server expires a PLC: at `expires_at` plus a grace equal to the devices' clock
 * tolerance, so that nothing a wallet could still accept as valid is expired under it.
 */
export function expiryDueAtMs(expiresAtMs: number, graceMs: number): number {
  return expiresAtMs + graceMs;
}
