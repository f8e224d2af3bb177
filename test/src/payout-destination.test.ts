/**
 * Where a redemption pays out (src/settlement/payout-destination.ts): a Pix key, or a boleto's
 * digitable line checked with its check digits and paid for the PLC's amount exactly.
 */
import { describe, expect, it } from 'vitest';
import { isDomainError, type DomainError } from '../../src/errors.ts';
import { checkPayoutDestination } from '../../src/settlement/payout-destination.ts';
import { buildBoleto } from '../../simulator/documents.ts';
import { lineAmountMinor } from '../../simulator/gateway-state.ts';

// Published lines (see boleto.test.ts): a bank slip of 546.59 and a collection slip of 133.12.
const bankSlip = '42297115040000195441160020034520268610000054659';
const collection = '836400000011331201380002812884627116080136181551';
const brl = (amountMinor: bigint) => ({ amountMinor, currency: 'BRL' });

function refusal(run: () => unknown): DomainError {
  try {
    run();
  } catch (error) {
    if (isDomainError(error)) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('checkPayoutDestination', () => {
  it('accepts a Pix key, naming its type', () => {
    expect(checkPayoutDestination({ settlementRail: 'pix', destination: 'a@example.com' }, brl(100n))).toEqual({
      rail: 'pix',
      destination: 'a@example.com',
      destinationType: 'EMAIL',
    });
    expect(refusal(() => checkPayoutDestination({ settlementRail: 'pix', destination: bankSlip }, brl(54659n))).code).toBe('UNSUPPORTED_RAIL');
  });

  it('accepts a bank slip and a collection slip written for the payout amount', () => {
    expect(checkPayoutDestination({ settlementRail: 'boleto', destination: bankSlip }, brl(54659n))).toEqual({
      rail: 'boleto',
      destination: bankSlip,
      destinationType: 'BANK_SLIP',
    });
    expect(checkPayoutDestination({ settlementRail: 'boleto', destination: collection }, brl(13312n)).destinationType).toBe('COLLECTION');
  });

  it('accepts a line that leaves the amount open, for any amount', () => {
    const open = buildBoleto({ amountMinor: 0n, dueDate: '2026-12-31', freeField: '1234567890123456789012345' }).identificationField;
    expect(checkPayoutDestination({ settlementRail: 'boleto', destination: open }, brl(777n))).toEqual({ rail: 'boleto', destination: open, destinationType: 'BANK_SLIP' });
    expect(checkPayoutDestination({ settlementRail: 'boleto', destination: open }, brl(1n)).destinationType).toBe('BANK_SLIP');
  });

  it('refuses a line written for another amount (a bill is paid in full)', () => {
    const error = refusal(() => checkPayoutDestination({ settlementRail: 'boleto', destination: bankSlip }, brl(54658n)));
    expect(error.code).toBe('BOLETO_AMOUNT_MISMATCH');
    expect(error.details).toMatchObject({ line_amount_minor: '54659', payout_amount_minor: '54658' });
    expect(refusal(() => checkPayoutDestination({ settlementRail: 'boleto', destination: collection }, brl(13313n))).code).toBe('BOLETO_AMOUNT_MISMATCH');
  });

  it.each([
    ['not_digits', '42297.11504 00001.954411 60020.034520 2 68610000054659'],
    ['wrong_length', bankSlip.slice(1)],
    ['bad_check_digit', `${bankSlip.slice(0, 9)}${(Number(bankSlip[9]) + 1) % 10}${bankSlip.slice(10)}`],
    ['not_a_collection_slip', `1${collection.slice(1)}`],
  ])('refuses a line that is not payable: %s', (reason, line) => {
    const error = refusal(() => checkPayoutDestination({ settlementRail: 'boleto', destination: line }, brl(54659n)));
    expect(error.code).toBe('BOLETO_INVALID');
    expect(error.details).toMatchObject({ reason, field: 'authorization.destination' });
  });

  it('refuses a boleto for a PLC not in reais, and an unknown rail', () => {
    const error = refusal(() => checkPayoutDestination({ settlementRail: 'boleto', destination: bankSlip }, { amountMinor: 54659n, currency: 'USD' }));
    expect(error).toMatchObject({ code: 'BOLETO_INVALID', details: { reason: 'not_brl' } });
    expect(refusal(() => checkPayoutDestination({ settlementRail: 'ted', destination: bankSlip }, brl(1n))).code).toBe('UNSUPPORTED_RAIL');
  });
});

describe("the simulator's reading of a line's amount", () => {
  it('reads the amount of a bank slip and of a collection slip, and null for an open amount', () => {
    expect(lineAmountMinor(bankSlip)).toBe(54659n);
    expect(lineAmountMinor(collection)).toBe(13312n);
    expect(lineAmountMinor(`${bankSlip.slice(0, 37)}0000000000`)).toBeNull();
  });
});
