import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

/** Interface version of the REST API (the spec's Versioning 2). */
export const interfaceVersion = '0.1.0';

/**
 * The machine-readable description, generated from the same zod schemas that validate requests
 * and responses: OpenAPI 3.1 at /openapi.json, an interactive page at /docs.
 */
export const openapiPlugin = fp<{ docsEnabled: boolean }>(
  async (app: FastifyInstance, options) => {
    await app.register(fastifySwagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Offline settlement service',
          description:
            'Cryptographic Settlement Promises (PLCs): issue, offline transfer, redemption through a payment gateway, double-entry ledger. Protocol version 2.0.',
          version: interfaceVersion,
        },
        servers: [{ url: '/' }],
        components: {
          securitySchemes: {
            bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          },
        },
      },
      transform: jsonSchemaTransform,
      transformObject: jsonSchemaTransformObject,
      hideUntagged: false,
    });
    if (options.docsEnabled) {
      await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
    }
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  },
  { name: 'openapi' },
);
