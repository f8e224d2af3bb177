import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { FastifyInstance, InjectOptions } from 'fastify';

/**
 * The served /openapi.json as data for tests: its operations, the request each one documents as
 * its example, and validators for the schemas it documents.
 */

export interface OpenapiParameter {
  in: 'path' | 'query' | 'header' | 'cookie';
  name: string;
  required?: boolean;
  example?: unknown;
  schema?: unknown;
}

export interface OpenapiOperation {
  summary?: string;
  description?: string;
  security?: Record<string, unknown>[];
  parameters?: OpenapiParameter[];
  requestBody?: { content: Record<string, { schema?: unknown; example?: unknown; examples?: unknown }> };
  responses: Record<string, { description?: string; headers?: Record<string, unknown>; content?: Record<string, { schema?: unknown }> }>;
}

export interface OpenapiDocument {
  paths: Record<string, Record<string, OpenapiOperation>>;
  components: { schemas: Record<string, unknown> };
}

export interface Operation {
  method: string;
  path: string;
  operation: OpenapiOperation;
  /** `METHOD /path`, for test names. */
  name: string;
}

export async function loadDocument(app: FastifyInstance): Promise<OpenapiDocument> {
  const response = await app.inject({ method: 'GET', url: '/openapi.json' });
  if (response.statusCode !== 200) throw new Error(`/openapi.json answered ${response.statusCode}`);
  return response.json() as OpenapiDocument;
}

export function operationsOf(document: OpenapiDocument): Operation[] {
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation, name: `${method.toUpperCase()} ${path}` })),
  );
}

export function requiresBearer(operation: OpenapiOperation): boolean {
  return operation.security?.some((requirement) => 'bearer' in requirement) ?? false;
}

/** The parameters of one place, with their example values as strings. */
export function exampleParameters(operation: OpenapiOperation, place: OpenapiParameter['in']): Record<string, string> {
  const values: Record<string, string> = {};
  for (const parameter of operation.parameters ?? []) {
    if (parameter.in === place && parameter.example !== undefined) values[parameter.name] = String(parameter.example);
  }
  return values;
}

/** The operation's URL with `params` in its path (percent-encoded unless `raw`) and `query` after it. */
export function urlOf(path: string, params: Record<string, string>, query: Record<string, string> = {}, raw: ReadonlySet<string> = new Set()): string {
  const filled = path.replace(/\{(\w+)\}/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`no value for path parameter ${name} of ${path}`);
    return raw.has(name) ? value : encodeURIComponent(value);
  });
  const search = Object.entries(query)
    .map(([name, value]) => `${encodeURIComponent(name)}=${raw.has(`query:${name}`) ? value : encodeURIComponent(value)}`)
    .join('&');
  return search === '' ? filled : `${filled}?${search}`;
}

export function exampleBody(operation: OpenapiOperation): unknown {
  return operation.requestBody?.content['application/json']?.example;
}

/** The documented example request, as inject options (plus any `headers` given). */
export function exampleRequest(op: Operation, headers: Record<string, string> = {}): InjectOptions {
  const body = exampleBody(op.operation);
  return {
    method: op.method as InjectOptions['method'],
    url: urlOf(op.path, exampleParameters(op.operation, 'path'), exampleParameters(op.operation, 'query')),
    headers: { ...exampleParameters(op.operation, 'header'), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  };
}

/** Validators for schemas of the document (JSON Schema 2020-12), `$ref`s into its components resolved. */
export function schemaValidator(document: OpenapiDocument): (schema: unknown) => ValidateFunction {
  // OpenAPI's own keywords (example) are not JSON Schema: not strict. Formats are documentation
  // here; the patterns carry the checks.
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema({ $id: 'openapi', components: document.components });
  const cache = new Map<string, ValidateFunction>();
  return (schema) => {
    const text = JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/');
    let validate = cache.get(text);
    if (validate === undefined) {
      validate = ajv.compile(JSON.parse(text) as object);
      cache.set(text, validate);
    }
    return validate;
  };
}
