/** @ngraveio/bc-ur is written for Node's Buffer: the `buffer` package provides it in the browser, set before the library loads. */
import { Buffer } from 'buffer';

(globalThis as { Buffer?: unknown }).Buffer ??= Buffer;
