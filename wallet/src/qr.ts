/**
 * QR codes in the browser: drawn with `qrcode` (the generator the CLI wallet uses) onto a canvas,
 * read from the camera with `zxing-wasm` (ZXing-C++ compiled to WebAssembly; the CLI's decoder).
 * The decoder's .wasm is one of the wallet's own built files, never fetched from elsewhere, so
 * scanning works offline. Long chains travel as animated codes (./fountain.ts).
 */
import QRCode from 'qrcode';
import { prepareZXingModule, readBarcodes } from 'zxing-wasm/reader';
import wasmUrl from 'zxing-wasm/reader/zxing_reader.wasm?url';

const alphanumeric = /^[0-9A-Z $%*+\-./:]*$/;

/** Draws `text` as one QR code (alphanumeric mode when the text allows it, else byte mode), error correction L. */
export async function drawQr(canvas: HTMLCanvasElement, text: string, scale = 4): Promise<number> {
  const segments: QRCode.QRCodeSegment[] = [alphanumeric.test(text) ? { data: text, mode: 'alphanumeric' } : { data: new TextEncoder().encode(text), mode: 'byte' }];
  const options = { errorCorrectionLevel: 'L', margin: 4, scale } as const;
  await QRCode.toCanvas(canvas, segments, options);
  return QRCode.create(segments, options).version;
}

let ready: Promise<unknown> | undefined;

function prepare(): Promise<unknown> {
  ready ??= prepareZXingModule({
    overrides: { locateFile: (path: string, prefix: string) => (path.endsWith('.wasm') ? new URL(wasmUrl, location.href).href : prefix + path) },
    fireImmediately: true,
  });
  return ready;
}

/**
 * Reads QR codes from the camera until stopped: every frame the video shows is copied to a canvas
 * and decoded; each text read is handed to `onText` (the same code shown for a while is handed on
 * each time it is read; callers ignore repeats).
 */
export class Scanner {
  #stream: MediaStream | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #stopped = false;

  async start(video: HTMLVideoElement, onText: (text: string) => void, onError: (message: string) => void): Promise<void> {
    await prepare();
    try {
      this.#stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false });
    } catch (error) {
      onError(`The camera could not be opened (${error instanceof Error ? error.name : 'error'}). Allow the camera, or paste the text instead.`);
      return;
    }
    if (this.#stopped) {
      this.#release();
      return;
    }
    video.srcObject = this.#stream;
    video.muted = true;
    video.playsInline = true;
    await video.play().catch(() => undefined);
    const canvas = document.createElement('canvas');
    const context = canvas.getContext('2d', { willReadFrequently: true });
    if (context === null) {
      onError('This browser cannot read camera frames.');
      return;
    }
    const tick = async (): Promise<void> => {
      if (this.#stopped) return;
      if (video.videoWidth > 0 && video.videoHeight > 0) {
        canvas.width = video.videoWidth;
        canvas.height = video.videoHeight;
        context.drawImage(video, 0, 0);
        const image = context.getImageData(0, 0, canvas.width, canvas.height);
        const results = await readBarcodes(image, { formats: ['QRCode'], tryHarder: true, maxNumberOfSymbols: 1 });
        for (const result of results) if (result.isValid && !this.#stopped) onText(result.text);
      }
      if (!this.#stopped) this.#timer = setTimeout(() => void tick(), 60);
    };
    void tick();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#release();
  }

  #release(): void {
    for (const track of this.#stream?.getTracks() ?? []) track.stop();
    this.#stream = null;
  }
}
