import { nodeVerifyEd25519 } from '../infra/ed25519-node.ts';
import { DomainError } from '../src/errors.ts';
import { checkRecordClock, verifyPlc, type Plc, type Verified, type VerifiedPrefix } from '../src/protocol/index.ts';

/**
 * The checks every route that receives a chain (create, transfer, redeem, settlements) makes on
 * the PLC as presented, before it looks at what the server knows: the protocol's verification
 * (docs/protocol.md section 7) and the records' timestamps against the server's clock (7.4).
 */

/** Verifies a PLC the way a wallet does; a refusal names the protocol's stable reason. */
export function verifyOrRefuse(plc: Plc, clockToleranceMs: number, field: string, verifiedPrefix?: VerifiedPrefix): Verified {
  // Node's Ed25519 (OpenSSL) on the server, with exactly the library's answers: see infra/ed25519-node.ts.
  const verification = verifyPlc(plc, { clockToleranceMs, verifySignature: nodeVerifyEd25519, verifiedPrefix });
  if (!verification.ok) {
    throw new DomainError('PLC_INVALID', `the PLC does not verify: ${verification.reason}${verification.index === null ? '' : ` at record ${verification.index}`}`, {
      field,
      reason: verification.reason,
      index: verification.index,
    });
  }
  return verification;
}

/**
 * Refuses a chain with a record timestamped later than the server's clock plus the tolerance
 * (422 `PLC_INVALID`, type `PLC_INVALID.timestamp_in_future`): its signer's clock runs ahead. Not
 * stored under an Idempotency-Key (a 422 is recomputed), so the same request succeeds once the
 * server's clock has caught up, if the PLC is still alive then.
 */
export function refuseRecordsFromTheFuture(plc: Plc, nowMs: number, clockToleranceMs: number, field: string): void {
  const check = checkRecordClock(plc.transferChain, nowMs, { clockToleranceMs });
  if (!check.ok) {
    throw new DomainError(
      'PLC_INVALID',
      `record ${check.index} is timestamped after the server's clock (${new Date(nowMs).toISOString()}) plus ${clockToleranceMs} ms: check the signing device's clock`,
      { field: `${field}.transfer_chain`, reason: check.reason, index: check.index, server_time_ms: nowMs },
    );
  }
}

/** 409 AUTHORIZATION_REPLAYED: a signed authorisation accepted before (docs/protocol.md 9.4). */
export function authorizationReplayed(): DomainError {
  return new DomainError('AUTHORIZATION_REPLAYED', 'this signed authorisation was accepted before: each is accepted once; sign a new one');
}
