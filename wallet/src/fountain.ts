/**
 * Animated QR codes for chains too long for one code: the PLC's binary transport form (CBOR,
 * docs/protocol.md section 10) as a Uniform Resource (`ur:bytes`, BCR-2020-005) cut into
 * fountain-coded parts by @ngraveio/bc-ur, the library hardware and software wallets use for the
 * same job. After the first pass of plain fragments, each part mixes several fragments, so the
 * receiver completes from any large enough set of parts, missed frames and any order included.
 * Parts are upper-cased so that the QR code uses alphanumeric mode (BCR-2020-005 section 6).
 */
import './buffer-shim.ts';
import { Buffer } from 'buffer';
import { UR, URDecoder, UREncoder } from '@ngraveio/bc-ur';

/** Bytes of the message in each part: about 800 characters, a version 17 code at error correction L. */
export const fragmentBytes = 400;

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

export function isFountainPart(text: string): boolean {
  return /^ur:bytes\//i.test(text);
}

export class FountainDecoder {
  #decoder = new URDecoder();
  /** Parts read, repeats included. */
  parts = 0;

  /** Takes one scanned part; answers the message once complete, else null. */
  receive(text: string): Uint8Array | null {
    this.parts += 1;
    this.#decoder.receivePart(text.toLowerCase());
    if (!this.#decoder.isComplete()) return null;
    if (!this.#decoder.isSuccess()) {
      this.#decoder = new URDecoder();
      throw new Error('the animated code did not reassemble; keep scanning');
    }
    const ur = this.#decoder.resultUR();
    return new Uint8Array(ur.decodeCBOR() as Buffer);
  }

  progress(): number {
    return this.#decoder.estimatedPercentComplete();
  }
}
