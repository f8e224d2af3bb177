import { DomainError } from '../errors.ts';
import { checkBoletoLine, type BoletoCheck } from './boleto.ts';
import { pixKeyRefusal, pixKeyType, type PixKeyType } from './pix-key.ts';

/**
 * Where a redemption pays out, decided from the redeem authorisation before any money moves
 * (docs/protocol.md 9.2, docs/settlement.md "Boleto payouts"):
 *
 * - rail `pix`: the destination is a Pix key (CPF, CNPJ, e-mail, +55 phone or random key); the
 *   payout is a Pix transfer to it. Anything else is 422 UNSUPPORTED_RAIL.
 * - rail `boleto`: the destination is a boleto's digitable line, digits only; the payout is the
 *   payment of that bill. The line must pass its check digits (422 BOLETO_INVALID, `reason` in the
 *   details), the PLC must be in reais (a boleto is), and a line that writes an amount must write
 *   exactly the payout (the PLC's amount less the fee): a bill is paid in full, never in part and
 *   never more (422 BOLETO_AMOUNT_MISMATCH). A line that leaves the amount open is paid the payout.
 *   The redemption service checks the amount once the fee is known (`amountMinor` null before).
 */

export const payoutRails = ['pix', 'boleto'] as const;
export type PayoutRail = (typeof payoutRails)[number];

/**
 * A rail as a route receives it (docs/protocol.md 9.2, docs/limits-and-fees.md): every route names
 * the rails `pix` and `boleto` and answers them so. Where the value is not a signed one (the fee
 * estimate, `POST /api/v1/settlements`'s `settlement_rail`, from which the server builds the signed
 * message) `PIX` and `BOLETO` are accepted too and read as `pix` and `boleto`; in a signed
 * authorisation the rail is part of the signed text and must be written `pix` or `boleto`. Any other
 * rail (`ted`, `Pix`) is 422 `UNSUPPORTED_RAIL` at `field`.
 */
export function payoutRailOf(text: string, field: string, options: { signed: boolean }): PayoutRail {
  const lower = text === text.toUpperCase() && !options.signed ? text.toLowerCase() : text;
  if ((payoutRails as readonly string[]).includes(lower)) return lower as PayoutRail;
  const cased = !options.signed && (payoutRails as readonly string[]).includes(text.toLowerCase());
  throw new DomainError(
    'UNSUPPORTED_RAIL',
    cased
      ? `rail ${text.slice(0, 20)}: write pix or boleto (PIX and BOLETO are read too)`
      : `unknown settlement rail ${text.slice(0, 20)}: pix or boleto${options.signed ? ', in lower case as signed' : ''}`,
    { field },
  );
}

export const payoutDestinationTypes = ['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'EVP', 'BANK_SLIP', 'COLLECTION'] as const;
export type PayoutDestinationType = PixKeyType | 'BANK_SLIP' | 'COLLECTION';

export type BoletoRefusalReason = Extract<BoletoCheck, { ok: false }>['reason'] | 'not_brl';

export interface PayoutDestination {
  rail: PayoutRail;
  destination: string;
  destinationType: PayoutDestinationType;
}

/**
 * Checks the authorisation's rail and destination against the PLC's payout (amount in minor units
 * and currency); answers where to pay, or throws the DomainError the redeem routes answer.
 */
export function checkPayoutDestination(
  authorization: { settlementRail: string; destination: string },
  /** `amountMinor` is what is paid out (the PLC's amount less the fee); null: not known yet, the amount is checked later. */
  payout: { amountMinor: bigint | null; currency: string },
): PayoutDestination {
  const { settlementRail: rail, destination } = authorization;
  if (rail === 'pix') {
    const destinationType = pixKeyType(destination);
    if (destinationType === null) {
      throw new DomainError('UNSUPPORTED_RAIL', `the destination is not a valid Pix key: ${pixKeyRefusal(destination)}`, {
        field: 'authorization.destination',
      });
    }
    return { rail, destination, destinationType };
  }
  if (rail === 'boleto') {
    const refuse = (reason: BoletoRefusalReason, message: string): never => {
      throw new DomainError('BOLETO_INVALID', message, { field: 'authorization.destination', reason });
    };
    const checked = checkBoletoLine(destination);
    if (!checked.ok) return refuse(checked.reason, boletoRefusalMessages[checked.reason]);
    if (payout.currency !== 'BRL') return refuse('not_brl', `a boleto is paid in reais; this PLC is in ${payout.currency}: redeem it over another rail`);
    const written = checked.boleto.amountMinor;
    if (written !== null && payout.amountMinor !== null && written !== payout.amountMinor) {
      throw new DomainError(
        'BOLETO_AMOUNT_MISMATCH',
        `the boleto is for ${written} centavos and the PLC pays out ${payout.amountMinor} (its amount less the fee): a bill is paid in full, for the payout exactly`,
        {
          field: 'authorization.destination',
          line_amount_minor: written.toString(),
          payout_amount_minor: payout.amountMinor.toString(),
        },
      );
    }
    return { rail, destination, destinationType: checked.boleto.kind };
  }
  throw new DomainError('UNSUPPORTED_RAIL', `unknown settlement rail ${rail.slice(0, 20)}: pix or boleto, in lower case as signed`, { field: 'authorization.settlement_rail' });
}

const boletoRefusalMessages: Readonly<Record<Extract<BoletoCheck, { ok: false }>['reason'], string>> = {
  not_digits: 'the digitable line must be digits only (strip the dots and spaces of the printed form before signing)',
  wrong_length: 'a digitable line has 47 digits (bank slip) or 48 (collection slip)',
  bad_check_digit: 'a check digit of the digitable line is wrong: the line was mistyped',
  unsupported_currency: 'the bank slip is not in reais (currency code 9)',
  not_a_collection_slip: 'a 48-digit line must be a collection slip (starting with 8, value identifier 6 to 9)',
};
