import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Pool } from '../../db/pool.ts';
import type { GatewayClient } from '../../gateway/index.ts';
import type { Config } from '../../infra/config.ts';

/**
 * The app's dependencies, handed in by whoever builds it (the server process or a test): the
 * PostgreSQL pool and the one shared Temporal client. The app never opens its own.
 */
export interface AppDeps {
  config: Config;
  pool: Pool;
  temporal: Client;
  gateway: GatewayClient;
}

declare module 'fastify' {
  interface FastifyInstance {
    deps: AppDeps;
  }
}

export const depsPlugin = fp<{ deps: AppDeps }>(
  async (app: FastifyInstance, options) => {
    app.decorate('deps', options.deps);
  },
  { name: 'deps' },
);
