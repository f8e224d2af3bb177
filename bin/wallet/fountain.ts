/**
 * Animated QR codes for chains too long for one code, shared by the CLI wallet and the browser
 * wallet (wallet/src/fountain.ts re-exports it): the PLC's binary transport form (CBOR,
 * docs/protocol.md section 10) as a Uniform Resource (`ur:bytes`, BCR-2020-005) cut into
 * fountain-coded parts by @ngraveio/bc-ur, the library hardware and software wallets use for the
 * same job. After the first pass of plain fragments, each part mixes several fragments, so the
 * receiver completes from any large enough set of parts, missed frames and any order included.
 * Parts are upper-cased so that the QR code uses alphanumeric mode (BCR-2020-005 section 6).
 *
 * Pure and isomorphic: `buffer` is Node's own module in the CLI and the `buffer` package in the
 * browser (where wallet/src/buffer-shim.ts also sets the global the library expects before it loads).
 */
import { Buffer } from 'buffer';
import { UR, URDecoder, UREncoder } from '@ngraveio/bc-ur';

/** Bytes of the message in each part: about 800 characters, a version 17 code at error correction L. */
export const fragmentBytes = 400;

/**
 * Parts `send --ur-parts` writes, per plain fragment: four times as many as the message needs.
 * Measured on sets of a full chain's size (12 fragments) with every fourth part lost: of three
 * times as many, 6 sets in 1,000 did not reassemble (a mixed part repeats what others carry);
 * of four times as many, none in 3,000.
 */
export const partsPerFragmentWritten = 4;

/** Most parts a set may hold (repeats included): a full chain is a dozen fragments. */
export const partsMax = 1_000;

export class FountainEncoder {
  readonly #encoder: UREncoder;
  readonly fragments: number;

  constructor(message: Uint8Array) {
    this.#encoder = new UREncoder(UR.fromBuffer(Buffer.from(message)), fragmentBytes, 0);
    this.fragments = this.#encoder.fragmentsLength;
  }

  /** The next part: the plain fragments first, then mixed ones, without end. */
  next(): string {
    return this.#encoder.nextPart().toUpperCase();
  }
}

/** The first `count` parts of `message` (the plain fragments, then mixed ones). */
export function fountainParts(message: Uint8Array, count?: number): string[] {
  const encoder = new FountainEncoder(message);
  const total = Math.min(partsMax, count ?? encoder.fragments * partsPerFragmentWritten);
  return Array.from({ length: total }, () => encoder.next());
}

export function isFountainPart(text: string): boolean {
  return /^ur:bytes\//i.test(text);
}

export class FountainDecoder {
  #decoder = new URDecoder();
  /** Parts read, repeats included. */
  parts = 0;
  /** Whether the last part was taken: false for a part of another code (other checksum or length). */
  lastTaken = false;

  /**
   * Takes one part; answers the message once complete, else null. Throws on a part that is not
   * readable (its checksum fails) and when the parts, though complete, do not reassemble.
   */
  receive(text: string): Uint8Array | null {
    this.parts += 1;
    this.lastTaken = this.#decoder.receivePart(text.trim().toLowerCase());
    if (this.#decoder.isError()) {
      this.#decoder = new URDecoder();
      throw new Error('the animated code did not reassemble; keep scanning');
    }
    if (!this.#decoder.isComplete()) return null;
    if (!this.#decoder.isSuccess()) {
      this.#decoder = new URDecoder();
      throw new Error('the animated code did not reassemble; keep scanning');
    }
    const ur = this.#decoder.resultUR();
    if (ur.type !== 'bytes') throw new Error(`the animated code carries ${ur.type}, not a PLC's bytes`);
    return new Uint8Array(ur.decodeCBOR() as Buffer);
  }

  /** Share of the message decoded so far, 0 to 1. */
  progress(): number {
    return this.#decoder.estimatedPercentComplete();
  }

  /** Fragments the message was cut into (0 before the first part). */
  fragments(): number {
    return this.#decoder.expectedPartCount();
  }

  /** Distinct plain fragments recovered so far. */
  recovered(): number {
    return this.#decoder.receivedPartIndexes().length;
  }
}

export type PartsVerdict =
  | { readonly ok: true; readonly message: Uint8Array; readonly parts: number; readonly fragments: number }
  | { readonly ok: false; readonly reason: 'not_parts' | 'damaged' | 'foreign' | 'incomplete' | 'too_many'; readonly detail: string };

/**
 * Reassembles a set of parts read in any order, repeats and missing parts included (one part a
 * line; blank lines ignored). Refuses a set with a damaged part or a part of another code, and a
 * set that does not hold enough parts, each with a sentence saying so.
 */
export function decodeFountainParts(lines: readonly string[]): PartsVerdict {
  const parts = lines.map((line) => line.trim()).filter((line) => line.length > 0);
  if (parts.length === 0) return { ok: false, reason: 'not_parts', detail: 'no part of an animated code' };
  if (parts.length > partsMax) return { ok: false, reason: 'too_many', detail: `${parts.length} parts; at most ${partsMax} are read` };
  const decoder = new FountainDecoder();
  let firstSequence: string | null = null;
  for (const [index, part] of parts.entries()) {
    const where = `part ${index + 1} of ${parts.length}`;
    if (!isFountainPart(part)) return { ok: false, reason: 'not_parts', detail: `${where} is not a ur:bytes/ part of an animated code` };
    const sequence = /^ur:bytes\/\d+-(\d+)\//i.exec(part)?.[1];
    if (sequence === undefined) return { ok: false, reason: 'damaged', detail: `${where} carries no sequence number (a single-part UR is not an animated code)` };
    firstSequence ??= sequence;
    if (sequence !== firstSequence) return { ok: false, reason: 'foreign', detail: `${where} belongs to another animated code (${sequence} fragments, not ${firstSequence})` };
    let message: Uint8Array | null;
    try {
      message = decoder.receive(part);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return { ok: false, reason: 'damaged', detail: `${where} is damaged (${why})` };
    }
    if (message !== null) return { ok: true, message, parts: index + 1, fragments: decoder.fragments() };
    if (!decoder.lastTaken) return { ok: false, reason: 'foreign', detail: `${where} belongs to another animated code` };
  }
  return {
    ok: false,
    reason: 'incomplete',
    detail: `the animated code is incomplete: ${parts.length} part(s) read, ${decoder.recovered()} of its ${decoder.fragments()} fragments recovered; read more of its frames`,
  };
}
