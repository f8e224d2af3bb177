import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { ResponseNote } from './documented-responses.ts';

type TransformInput = Parameters<typeof jsonSchemaTransform>[0] & { route?: { config?: { documentedResponses?: Record<string, ResponseNote> } } };

/**
 * A request a reader can copy, shown in /openapi.json and on /docs: the body, and values for
 * parameters whose shared schema carries none (or a better one for this operation). Shared
 * parameter schemas (page, device id, Idempotency-Key) carry their examples in zod meta.
 */
export interface RequestExample {
  body?: unknown;
  params?: Record<string, unknown>;
  querystring?: Record<string, unknown>;
  headers?: Record<string, unknown>;
}

declare module 'fastify' {
  interface FastifySchema {
    requestExample?: RequestExample;
  }
}

/** Carry a route's response notes and request example from `transform` to `transformObject`; removed there. */
const notesKey = 'x-documented-responses';
const exampleKey = 'x-request-example';
const parameterPlaces: Record<string, keyof RequestExample> = { path: 'params', query: 'querystring', header: 'headers' };

/**
 * The zod transform, then each response's headers and description from
 * api/plugins/documented-responses.ts (which statuses a route answers, and why). Headers go on
 * the response schema, where @fastify/swagger reads them; descriptions ride on the operation to
 * `transformObject`, because a description beside the `$ref` of a named schema is dropped.
 */
function transform(input: TransformInput): ReturnType<typeof jsonSchemaTransform> {
  const output = jsonSchemaTransform(input);
  const notes = input.route?.config?.documentedResponses;
  const schema = output.schema as
    | { response?: Record<string, Record<string, unknown>>; requestExample?: RequestExample; [notesKey]?: unknown; [exampleKey]?: RequestExample }
    | undefined;
  if (schema?.requestExample !== undefined) {
    schema[exampleKey] = schema.requestExample;
    delete schema.requestExample;
  }
  if (notes === undefined || schema?.response === undefined) return output;
  for (const [status, note] of Object.entries(notes)) {
    const responseSchema = schema.response[status];
    if (responseSchema !== undefined && note.headers !== undefined) schema.response[status] = { ...responseSchema, headers: note.headers };
  }
  schema[notesKey] = notes;
  return output;
}

interface OpenapiOperation {
  responses?: Record<string, { description?: string }>;
  requestBody?: { content?: Record<string, { example?: unknown }> };
  parameters?: { in: string; name: string; example?: unknown }[];
  [notesKey]?: Record<string, ResponseNote>;
  [exampleKey]?: RequestExample;
}

function transformObject(input: Parameters<typeof jsonSchemaTransformObject>[0]): ReturnType<typeof jsonSchemaTransformObject> {
  const document = jsonSchemaTransformObject(input);
  const paths = (document as unknown as { paths?: Record<string, Record<string, OpenapiOperation>> }).paths;
  for (const operations of Object.values(paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const example = operation[exampleKey];
      delete operation[exampleKey];
      if (example?.body !== undefined) {
        for (const media of Object.values(operation.requestBody?.content ?? {})) media.example = example.body;
      }
      for (const parameter of operation.parameters ?? []) {
        const place = parameterPlaces[parameter.in];
        const values = place === undefined ? undefined : (example?.[place] as Record<string, unknown> | undefined);
        if (values !== undefined && parameter.name in values) parameter.example = values[parameter.name];
      }
      const notes = operation[notesKey];
      delete operation[notesKey];
      for (const [status, note] of Object.entries(notes ?? {})) {
        const response = operation.responses?.[status];
        if (response !== undefined) response.description = note.description;
      }
    }
  }
  return document;
}

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
            // The business customers' signed requests (docs/b2b.md): four headers, this one names the key.
            apiSignature: { type: 'apiKey', in: 'header', name: 'X-PLC-Key-Id', description: 'A signed request: X-PLC-Key-Id, X-PLC-Timestamp, X-PLC-Nonce and X-PLC-Signature (HMAC-SHA256; docs/b2b.md).' },
          },
        },
      },
      transform,
      transformObject,
      hideUntagged: false,
    });
    if (options.docsEnabled) {
      await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
    }
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  },
  { name: 'openapi' },
);
