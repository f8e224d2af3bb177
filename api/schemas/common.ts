import { z } from 'zod';
import { errorCodes } from '../../src/errors.ts';
import { frameworkStatusByCode, type FrameworkErrorCode } from './framework-errors.ts';

/**
 * The spec's validation error body: `{"detail":[{"loc":[...],"msg":"...","type":"..."}]}`. A 422
 * of a domain code carries the refusal's other details in `ctx` (as FastAPI's validation errors
 * carry their context): `PLC_AMOUNT_ABOVE_MAXIMUM`'s limit, `POS_BATCH_TOO_LARGE`'s `max`, ...
 * (docs/errors.md).
 */
export const validationErrorItem = z
  .object({
    loc: z.array(z.union([z.string(), z.number()])),
    msg: z.string(),
    type: z.string(),
    ctx: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("a domain refusal's details beyond its field (docs/errors.md): amounts in minor units as decimal strings (`amount_max_minor: \"50000\"`), counts as integers"),
  })
  .meta({ id: 'ValidationError' });

export const httpValidationError = z
  .object({ detail: z.array(validationErrorItem) })
  .meta({ id: 'HTTPValidationError', description: 'The request failed validation.' });
export type HttpValidationError = z.infer<typeof httpValidationError>;

/** Every domain refusal and every other error: a stable code, a message, optional details. */
export const errorResponse = z
  .object({
    code: z.enum([...errorCodes, ...(Object.keys(frameworkStatusByCode) as FrameworkErrorCode[])]),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
    request_id: z.string().optional(),
  })
  .meta({ id: 'ErrorResponse' });
export type ErrorResponse = z.infer<typeof errorResponse>;

/** Response map entries shared by every route with a body or parameters. */
export const standardErrors = {
  422: httpValidationError,
  500: errorResponse,
} as const;

export const adminErrors = {
  401: errorResponse,
  403: errorResponse,
  ...standardErrors,
} as const;

/** Page parameters of every bounded list: limit 1..200 (default 50), offset >= 0 (default 0). */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50).meta({ examples: [50] }),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0).meta({ examples: [0] }),
});
/** The monitor lists' page: limit 1..500 (default 100). */
export const monitorPageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100).meta({ examples: [100] }),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0).meta({ examples: [0] }),
});

/** Strict boolean query flag: only `true` or `false` (and 1/0), never "yes" or "". */
export const booleanQuery = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');
