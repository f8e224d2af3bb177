/**
 * The redeem authorisation's own checks (src/plc/authorize-redemption.ts): which PLC it names,
 * the rail and Pix key, the bearer's signature over the presented head, its freshness; each
 * refusal with its code, in the order the redeem routes have always made them.
 */
import { describe, expect, it } from 'vitest';
import { authorizeRedemption } from '../../src/plc/authorize-redemption.ts';
import { DomainError } from '../../src/errors.ts';
import { bytesToHex, chainHeadHash, redeemAuthorizationHash, signRedeem, verifySignature, type Plc, type RedeemAuthorization } from '../../src/protocol/index.ts';
import { hop, issue, newWallet, type TestWallet } from '../support/wallet.ts';
import { buildBoleto } from '../../simulator/documents.ts';

const [alice, bob, carol] = [newWallet(), newWallet(), newWallet()];
const plc = hop(issue(alice), alice, bob);
const nowMs = Date.now();
const options = { nowMs, clockToleranceMs: 300_000, verifySignature };
const pixKey = 'bob@example.com';

function authorize(signer: TestWallet, overrides: Partial<{ tokenId: string; headHash: Uint8Array; settlementRail: string; destination: string; timestampMs: number }> = {}, on: Plc = plc) {
  return signRedeem(
    {
      tokenId: on.commitment.tokenId,
      headHash: chainHeadHash(on),
      settlementRail: 'pix',
      destination: pixKey,
      timestampMs: nowMs,
      ...overrides,
    } as Parameters<typeof signRedeem>[0],
    signer.keys.secretKey,
  );
}

function refusal(authorization: RedeemAuthorization, on: Plc = plc): { code: string; details: unknown } {
  try {
    authorizeRedemption(on, authorization, options);
  } catch (error) {
    if (error instanceof DomainError) return { code: error.code, details: error.details };
    throw error;
  }
  throw new Error('the authorisation was accepted');
}

describe('authorizeRedemption', () => {
  it("accepts the bearer's fresh authorisation over the presented head, and says what it stands for", () => {
    const authorization = authorize(bob);
    expect(authorizeRedemption(plc, authorization, options)).toEqual({
      tokenId: plc.commitment.tokenId,
      bearerPubkey: bob.pubkey,
      headHash: bytesToHex(chainHeadHash(plc)),
      rail: 'pix',
      destination: pixKey,
      destinationType: 'EMAIL',
      authorizationHash: bytesToHex(redeemAuthorizationHash(authorization)),
      signedAtMs: nowMs,
    });
  });

  it('refuses an authorisation naming another PLC', () => {
    const other = hop(issue(alice), alice, bob);
    expect(refusal(authorize(bob, {}, other)).code).toBe('PLC_MISMATCH');
  });

  it("accepts a boleto's digitable line (its amount is the service's to check, once the fee is known), and refuses a mistyped one", () => {
    const line = (amountMinor: bigint) => buildBoleto({ amountMinor, dueDate: '2026-12-31', freeField: '1234567890123456789012345' }).identificationField;
    const amountMinor = plc.commitment.amountMinor;
    expect(authorizeRedemption(plc, authorize(bob, { settlementRail: 'boleto', destination: line(amountMinor) }), options)).toMatchObject({
      rail: 'boleto',
      destination: line(amountMinor),
      destinationType: 'BANK_SLIP',
    });
    expect(authorizeRedemption(plc, authorize(bob, { settlementRail: 'boleto', destination: line(amountMinor + 1n) }), options).rail).toBe('boleto');
    const good = line(amountMinor);
    const mistyped = `${good.slice(0, 9)}${(Number(good[9]) + 1) % 10}${good.slice(10)}`;
    expect(refusal(authorize(bob, { settlementRail: 'boleto', destination: mistyped }))).toMatchObject({ code: 'BOLETO_INVALID', details: { reason: 'bad_check_digit' } });
  });

  it('refuses a rail other than Pix and boleto, and a destination that is no Pix key', () => {
    expect(refusal({ ...authorize(bob), settlementRail: 'ted' } as unknown as RedeemAuthorization)).toMatchObject({
      code: 'UNSUPPORTED_RAIL',
      details: { field: 'authorization.settlement_rail' },
    });
    expect(refusal(authorize(bob, { destination: 'not a pix key' }))).toMatchObject({ code: 'UNSUPPORTED_RAIL', details: { field: 'authorization.destination' } });
  });

  it('refuses a signature that does not verify', () => {
    const authorization = authorize(bob);
    expect(refusal({ ...authorization, destination: '+5511999990000' })).toMatchObject({ code: 'SIGNATURE_INVALID' });
  });

  it('refuses an authorisation signed outside the clock tolerance', () => {
    expect(refusal(authorize(bob, { timestampMs: nowMs - 300_001 }))).toMatchObject({ code: 'AUTHORIZATION_STALE' });
    expect(refusal(authorize(bob, { timestampMs: nowMs + 300_001 }))).toMatchObject({ code: 'AUTHORIZATION_STALE' });
  });

  it("refuses a key that is not the presented chain's bearer, and a head that is not the chain's", () => {
    expect(refusal(authorize(carol)).code).toBe('NOT_CURRENT_BEARER');
    expect(refusal(authorize(alice)).code).toBe('NOT_CURRENT_BEARER');
    expect(refusal(authorize(bob, { headHash: plc.commitmentHash })).code).toBe('NOT_CURRENT_BEARER');
  });
});
