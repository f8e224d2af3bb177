import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { withTemporalDeadline } from '../../services/temporal.ts';

/**
 * Every Temporal call made while answering a request ends TEMPORAL_CALL_TIMEOUT_MS after the
 * request arrived at the latest. The deadline is set once, in the first `onRequest` hook, for
 * the rest of the request (the Temporal client keeps it in an AsyncLocalStorage that the
 * following hooks and the handler run inside), so no route can forget it. Past it the call
 * fails with DEADLINE_EXCEEDED, which the error handler answers 503 DEPENDENCY_TIMEOUT naming
 * Temporal. PostgreSQL's bounds are the pool's (db/pool.ts): they hold for every query anyway.
 */
export const deadlinesPlugin = fp(
  async (app: FastifyInstance) => {
    const { temporal, config } = app.deps;
    app.addHook('onRequest', (_request, _reply, done) => {
      void withTemporalDeadline(temporal, Date.now() + config.TEMPORAL_CALL_TIMEOUT_MS, async () => done());
    });
  },
  { name: 'deadlines', dependencies: ['deps'] },
);
