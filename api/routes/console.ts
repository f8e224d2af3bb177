import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Config } from '../../infra/config.ts';

/**
 * The web console at /console (docs/operations-console.md, "The web console"): the files Vite
 * built into console/dist (at `npm ci` through `prepare`, or `npm run build:console`), read once
 * when the app starts and served from memory, plus /console/config.json (the Temporal UI's
 * address). Not under /api/v1 and not in the OpenAPI description: it is a client of the API like
 * any other. A strict Content-Security-Policy allows the console's own files and its calls to this
 * origin only.
 */

export const consoleDistDir = fileURLToPath(new URL('../../console/dist/', import.meta.url));

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

interface ConsoleFile {
  body: Buffer;
  type: string;
  /** Vite names built assets by their content hash: they never change under one name. */
  immutable: boolean;
}

/** Every built file, by its path under /console/; an empty map when the console was never built. */
export function loadConsoleFiles(dir: string = consoleDistDir): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  const walk = (at: string, depth: number): void => {
    if (depth > 4) return;
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path, depth + 1);
      else {
        const key = relative(dir, path).split(sep).join('/');
        files.set(key, { body: readFileSync(path), type: contentTypes[extname(name)] ?? 'application/octet-stream', immutable: key.startsWith('assets/') });
      }
    }
  };
  try {
    walk(dir, 0);
  } catch {
    return new Map();
  }
  return files;
}

export function temporalUiUrl(config: Config): string {
  if (config.TEMPORAL_UI_URL !== undefined) return config.TEMPORAL_UI_URL;
  return config.APP_ENV === 'development' ? `http://127.0.0.1:${config.TEMPORAL_UI_PORT}` : '';
}

export async function consoleRoutes(app: FastifyInstance, options: { files?: Map<string, ConsoleFile> }): Promise<void> {
  const files = options.files ?? loadConsoleFiles();
  const { config } = app.deps;
  const hide = { schema: { hide: true } };

  const send = (reply: FastifyReply, file: ConsoleFile): FastifyReply =>
    reply
      .header('content-type', file.type)
      .header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('content-security-policy', contentSecurityPolicy)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(file.body);

  const notBuilt = (reply: FastifyReply): FastifyReply =>
    reply
      .code(503)
      .header('content-type', 'text/plain; charset=utf-8')
      .send('The web console is not built on this server: run `npm run build:console` (npm ci builds it when the dev dependencies are installed).\n');

  app.get('/console', hide, async (_request, reply) => reply.redirect('/console/'));
  app.get('/console/config.json', hide, async (_request, reply) =>
    reply.header('cache-control', 'no-cache').send({ temporal_ui_url: temporalUiUrl(config), temporal_namespace: config.TEMPORAL_NAMESPACE }),
  );
  app.get<{ Params: { '*': string } }>('/console/*', hide, async (request, reply) => {
    const path = request.params['*'];
    const index = files.get('index.html');
    if (index === undefined) return notBuilt(reply);
    const file = path === '' ? index : files.get(path);
    if (file !== undefined) return send(reply, file);
    // A missing asset is a 404; any other path is the console itself (its pages are # routes).
    if (path.startsWith('assets/')) return reply.code(404).header('content-type', 'text/plain; charset=utf-8').send('no such asset\n');
    return send(reply, index);
  });
}
