/**
 * QR codes for the offline hop: the PLC2: text form (docs/protocol.md section 10.2) drawn in the
 * terminal or written as a PNG or SVG image with `qrcode` (the maintained QR generator for Node),
 * and read back from a PNG with `zxing-wasm` (ZXing-C++, the reference decoder, compiled to
 * WebAssembly). The text uses only QR alphanumeric characters, so it is encoded in alphanumeric
 * mode at error correction L: a chain of `transportHopsMax` (20) records fits one version 40 code.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import QRCode from 'qrcode';
import { prepareZXingModule, readBarcodes } from 'zxing-wasm/reader';
import { qrAlphanumericCharsMax } from '../../src/protocol/index.ts';
import { WalletError } from './errors.ts';

/** Bound on the image file `receive --image` reads: a version 40 code at 8 pixels a module is far below it. */
export const qrImageBytesMax = 8 * 1024 * 1024;

export type QrImageFormat = 'png' | 'svg';

export function qrImageFormatOf(path: string): QrImageFormat {
  const extension = extname(path).toLowerCase();
  if (extension === '.png') return 'png';
  if (extension === '.svg') return 'svg';
  throw new WalletError('usage', `--image must name a .png or .svg file, got ${JSON.stringify(path)}`);
}

function segments(text: string): QRCode.QRCodeSegment[] {
  if (text.length > qrAlphanumericCharsMax) {
    throw new WalletError('invalid_input', `${text.length} characters do not fit one QR code (at most ${qrAlphanumericCharsMax})`);
  }
  // One alphanumeric segment: the text is built from that character set only (base45).
  return [{ data: text, mode: 'alphanumeric' }];
}

const options = { errorCorrectionLevel: 'L', margin: 4 } as const;

/** The QR code as lines of Unicode half blocks, two modules a character, for a terminal. */
export async function qrForTerminal(text: string): Promise<string> {
  return QRCode.toString(segments(text), { ...options, type: 'utf8' });
}

/** Writes the QR code to `path` as a PNG (8 pixels a module) or an SVG, by its extension. */
export async function writeQrImage(path: string, text: string): Promise<{ format: QrImageFormat; version: number }> {
  const format = qrImageFormatOf(path);
  const version = QRCode.create(segments(text), options).version;
  if (format === 'png') await QRCode.toFile(path, segments(text), { ...options, type: 'png', scale: 8 });
  else await QRCode.toFile(path, segments(text), { ...options, type: 'svg' });
  return { format, version };
}

let readerReady: Promise<void> | undefined;

/** Loads the decoder's WebAssembly from the installed package (never from a network). */
function prepareReader(): Promise<void> {
  readerReady ??= (async () => {
    const wasmPath = createRequire(import.meta.url).resolve('zxing-wasm/reader/zxing_reader.wasm');
    const wasmBinary = readFileSync(wasmPath);
    await prepareZXingModule({ overrides: { wasmBinary: wasmBinary.buffer.slice(wasmBinary.byteOffset, wasmBinary.byteOffset + wasmBinary.byteLength) }, fireImmediately: true });
  })();
  return readerReady;
}

/** The text of the one QR code in a PNG image. */
export async function readQrImage(path: string): Promise<string> {
  if (qrImageFormatOf(path) !== 'png') {
    throw new WalletError('usage', 'receive --image reads a PNG; for an SVG, render it to PNG first (or pass its text with --text)');
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw new WalletError('invalid_input', `cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (bytes.length > qrImageBytesMax) throw new WalletError('invalid_input', `${path} is larger than ${qrImageBytesMax} bytes`);
  await prepareReader();
  const results = await readBarcodes(new Uint8Array(bytes), { formats: ['QRCode'], tryHarder: true, maxNumberOfSymbols: 2 });
  const valid = results.filter((result) => result.isValid);
  if (valid.length === 0) throw new WalletError('invalid_input', `no QR code could be read in ${path}`);
  if (valid.length > 1) throw new WalletError('invalid_input', `${path} holds more than one QR code`);
  return valid[0]!.text;
}
