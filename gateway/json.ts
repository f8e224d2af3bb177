/**
 * JSON as the gateway writes it, parsed strictly: a number is kept only when the double holds
 * exactly the decimal that was written (src/money/exact-json.ts, shared with the API's parser).
 */
import { canonicalDecimalText, parseExactJson } from '../src/money/exact-json.ts';

export { canonicalDecimalText };

/** Parses JSON text from (or for) the gateway; throws SyntaxError on malformed text. */
export function parseWireJson(text: string): unknown {
  return parseExactJson(text);
}
