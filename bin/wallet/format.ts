/** Human-readable rendering of PLCs for the terminal. */
import { bytesToHex, checkExpiry, verifyPlc, type Plc, type PlcJson } from '../../src/protocol/index.ts';

function short(hex: string): string {
  return `${hex.slice(0, 12)}…`;
}

function who(hex: string, ownKeyHex: string): string {
  return hex === ownKeyHex ? `${short(hex)} (this wallet)` : short(hex);
}

export function describeDuration(ms: number): string {
  const totalMinutes = Math.floor(Math.abs(ms) / 60_000);
  const hours = Math.floor(totalMinutes / 60);
  const minutes = totalMinutes % 60;
  return hours > 0 ? `${hours}h ${minutes}m` : `${minutes}m`;
}

export function describeLife(plc: Plc, nowMs: number): string {
  const expiry = checkExpiry(plc.commitment, nowMs);
  if (!expiry.ok) return expiry.reason === 'expired' ? 'EXPIRED' : 'NOT YET VALID (check the clock)';
  return `valid for ${describeDuration(plc.commitment.expiresAtMs - nowMs)}`;
}

export function holderState(plc: Plc, ownKeyHex: string): string {
  const last = plc.transferChain.at(-1);
  const bearer = last === undefined ? bytesToHex(plc.commitment.issuerPublicKey) : bytesToHex(last.recipientPublicKey);
  if (bearer === ownKeyHex) return 'held';
  return last !== undefined && bytesToHex(last.senderPublicKey) === ownKeyHex ? `sent to ${short(bearer)}` : `passed on (bearer ${short(bearer)})`;
}

export function renderPlc(plc: Plc, json: PlcJson, ownKeyHex: string, nowMs: number): string {
  const verification = verifyPlc(plc);
  const lines = [
    `token_id:     ${json.token_id}`,
    `amount:       ${json.amount} ${json.currency}`,
    `issuer:       ${who(json.issuer_pubkey, ownKeyHex)}`,
    `created_at:   ${json.created_at}`,
    `expires_at:   ${json.expires_at} (${describeLife(plc, nowMs)})`,
    `commitment:   ${json.commitment_hash}`,
    `state:        ${holderState(plc, ownKeyHex)}`,
    `verification: ${verification.ok ? 'ok' : `REFUSED: ${verification.reason} at ${verification.index ?? 'the commitment'}`}`,
    `chain:        ${json.transfer_chain.length} record(s)`,
  ];
  for (const [index, record] of json.transfer_chain.entries()) {
    lines.push(`  #${index} ${record.timestamp}  ${who(record.sender_pubkey, ownKeyHex)} -> ${who(record.recipient_pubkey, ownKeyHex)}  hash ${short(record.hash)}`);
  }
  return lines.join('\n');
}
