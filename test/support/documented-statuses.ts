import type { FastifyInstance } from 'fastify';

/**
 * Every answer a test app gives is checked against the app's own /openapi.json: a status that
 * the route's entry does not list is an undocumented answer, which a client generated from the
 * document would not handle. Test apps record each answer (method, route, status) in an
 * onResponse hook and `createTestApp().close()` fails the file when one was undocumented, so
 * every test of every route holds the document to what the route does.
 */

export interface ObservedAnswer {
  method: string;
  route: string;
  status: number;
}

/** The OpenAPI path of a Fastify route url: `/plc/:token_id/status` -> `/plc/{token_id}/status`. */
export function openapiPathOf(route: string): string {
  return route.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

type OpenapiPaths = Record<string, Record<string, { responses?: Record<string, unknown> }>>;

/** The answers whose status the document does not list for their operation. */
export function undocumentedAnswers(paths: OpenapiPaths, answers: readonly ObservedAnswer[]): ObservedAnswer[] {
  const missing = new Map<string, ObservedAnswer>();
  for (const answer of answers) {
    const operations = paths[openapiPathOf(answer.route)];
    // Hidden routes (the document itself, the docs page) are not in it.
    if (operations === undefined) continue;
    const method = answer.method === 'HEAD' ? 'get' : answer.method.toLowerCase();
    const responses = operations[method]?.responses ?? {};
    const status = String(answer.status);
    const documented = status in responses || `${status[0]}XX` in responses || 'default' in responses;
    if (!documented) missing.set(`${answer.method} ${answer.route} ${status}`, answer);
  }
  return [...missing.values()];
}

export interface StatusObserver {
  /** Throws, naming each one, when an answer so far was not documented. */
  assertDocumented(): void;
}

/** Records every routed answer of `app` (call before its first request). */
export function observeStatuses(app: FastifyInstance): StatusObserver {
  const answers: ObservedAnswer[] = [];
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url;
    if (route !== undefined) answers.push({ method: request.method, route, status: reply.statusCode });
  });
  return {
    assertDocumented() {
      if (answers.length === 0) return;
      const document = app.swagger() as unknown as { paths: OpenapiPaths };
      const missing = undocumentedAnswers(document.paths, answers);
      if (missing.length > 0) {
        throw new Error(
          `answers not documented in /openapi.json (add the status to the route's response schema, or to api/plugins/documented-responses.ts if it comes from a plugin):\n${missing
            .map((answer) => `  ${answer.method} ${openapiPathOf(answer.route)} -> ${answer.status}`)
            .join('\n')}`,
        );
      }
    },
  };
}
