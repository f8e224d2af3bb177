import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { loadConsoleFiles } from './console.ts';

/**
 * The browser wallet at /wallet/ (docs/wallet.md): the files Vite built into wallet/dist (at
 * `npm ci` through `prepare`, or `npm run build:wallet`), read once when the app starts and served
 * from memory, like the console. Not under /api/v1 and not in the OpenAPI description: the wallet
 * is a client of the API like the CLI wallet. The Content-Security-Policy allows the wallet's own
 * files, its calls to this origin, the QR decoder's WebAssembly, the camera's stream and the
 * service worker that keeps the wallet working offline.
 */

export const walletDistDir = fileURLToPath(new URL('../../wallet/dist/', import.meta.url));

const extraTypes: Record<string, string> = {
  '.wasm': 'application/wasm',
  '.webmanifest': 'application/manifest+json',
};

const contentSecurityPolicy = [
  "default-src 'self'",
  // The QR decoder is WebAssembly (zxing-wasm): compiling it needs 'wasm-unsafe-eval', nothing else does.
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob: mediastream:",
  "connect-src 'self'",
  "worker-src 'self'",
  "manifest-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export async function walletRoutes(app: FastifyInstance, options: { dir?: string }): Promise<void> {
  const files = loadConsoleFiles(options.dir ?? walletDistDir);
  for (const [path, file] of files) {
    const type = extraTypes[extname(path)];
    if (type !== undefined) files.set(path, { ...file, type });
  }
  const hide = { schema: { hide: true } };

  const send = (reply: FastifyReply, path: string, file: { body: Buffer; type: string; immutable: boolean }): FastifyReply => {
    reply
      .header('content-type', file.type)
      .header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('content-security-policy', contentSecurityPolicy)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      // The camera, for scanning QR codes; nothing else of the device.
      .header('permissions-policy', 'camera=(self), microphone=(), geolocation=()');
    if (path === 'sw.js') reply.header('service-worker-allowed', '/wallet/');
    return reply.send(file.body);
  };

  const notBuilt = (reply: FastifyReply): FastifyReply =>
    reply
      .code(503)
      .header('content-type', 'text/plain; charset=utf-8')
      .send('The wallet is not built on this server: run `npm run build:wallet` (npm ci builds it when the dev dependencies are installed).\n');

  app.get('/wallet', hide, async (_request, reply) => reply.redirect('/wallet/'));
  app.get<{ Params: { '*': string } }>('/wallet/*', hide, async (request, reply) => {
    const path = request.params['*'];
    const index = files.get('index.html');
    if (index === undefined) return notBuilt(reply);
    const file = path === '' ? index : files.get(path);
    if (file !== undefined) return send(reply, path === '' ? 'index.html' : path, file);
    if (path.startsWith('assets/') || path.includes('.')) return reply.code(404).header('content-type', 'text/plain; charset=utf-8').send('no such file\n');
    return send(reply, 'index.html', index);
  });
}
