import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Text PostgreSQL cannot store, refused at the edge for every route in one place: a NUL (U+0000),
 * which `text` and `jsonb` refuse outright (the request used to end in a 500), and a lone UTF-16
 * surrogate (`"\ud800"` in JSON, or a malformed query or header handed in by a proxy), which the
 * driver would silently turn into U+FFFD, storing something other than what was sent. Both answer
 * the spec's 422 HTTPValidationError, each item naming the field (`loc`) and a stable `type`
 * (docs/errors.md).
 *
 * Headers, path and query are checked in an onRequest hook, before any other hook can use them
 * (the rate limits store a key made of the device header in PostgreSQL); the body once parsed,
 * before schema validation. A path segment that is not valid percent-encoded UTF-8 never gets
 * here: the router answers 400 (api/plugins/errors.ts).
 */

export const unstorableTextTypes = {
  nul: 'text_contains_nul',
  loneSurrogate: 'text_lone_surrogate',
} as const;
export type UnstorableTextType = (typeof unstorableTextTypes)[keyof typeof unstorableTextTypes];

export interface UnstorableText {
  path: (string | number)[];
  type: UnstorableTextType;
  message: string;
}

/** At most this many items in one answer: enough to fix a request, bounded for a hostile one. */
const issuesMax = 20;

/** `String.prototype.isWellFormed` (ES2024, Node 20+; the project's TypeScript lib is ES2023). */
type WellFormedCheck = string & { isWellFormed(): boolean };

function problemOf(text: string): UnstorableTextType | null {
  if (text.includes('\u0000')) return unstorableTextTypes.nul;
  if (!(text as WellFormedCheck).isWellFormed()) return unstorableTextTypes.loneSurrogate;
  return null;
}

const messages: Record<UnstorableTextType, string> = {
  text_contains_nul: 'text must not contain the NUL character (U+0000)',
  text_lone_surrogate: 'text must be valid Unicode (a lone UTF-16 surrogate cannot be stored)',
};

const keyMessages: Record<UnstorableTextType, string> = {
  text_contains_nul: 'an object key must not contain the NUL character (U+0000)',
  text_lone_surrogate: 'an object key must be valid Unicode (a lone UTF-16 surrogate cannot be stored)',
};

/** A value met on the walk; its path is rebuilt from the parents only when it is reported. */
interface Visit {
  value: unknown;
  parent: Visit | null;
  key: string | number | null;
}

/** Longest path reported: a hostile body nested 100,000 levels deep gets a bounded answer. */
const pathLengthMax = 64;

function pathOf(visit: Visit): (string | number)[] {
  const path: (string | number)[] = [];
  for (let at: Visit | null = visit; at !== null && at.key !== null; at = at.parent) path.push(at.key);
  path.reverse();
  return path.length <= pathLengthMax ? path : [...path.slice(0, pathLengthMax), '...'];
}

/**
 * Every string (and object key) in `value` that cannot be stored, with its path; at most
 * `issuesMax`. Walks with an explicit stack, each step linked to its parent rather than carrying
 * a copy of its path: a body nests as deep as its size allows (128 KiB of `[` is 131,072 levels),
 * and the walk stays linear in the body's size.
 */
export function findUnstorableText(value: unknown): UnstorableText[] {
  const found: UnstorableText[] = [];
  const stack: Visit[] = [{ value, parent: null, key: null }];
  while (stack.length > 0 && found.length < issuesMax) {
    const visit = stack.pop() as Visit;
    const current = visit.value;
    if (typeof current === 'string') {
      const type = problemOf(current);
      if (type !== null) found.push({ path: pathOf(visit), type, message: messages[type] });
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index -= 1) stack.push({ value: current[index], parent: visit, key: index });
    } else if (typeof current === 'object' && current !== null) {
      const keys = Object.keys(current);
      for (let index = keys.length - 1; index >= 0; index -= 1) {
        const key = keys[index] as string;
        const keyType = problemOf(key);
        // A bad key is reported at the object that holds it; its own text would not survive in `loc`.
        if (keyType !== null) found.push({ path: pathOf(visit), type: keyType, message: keyMessages[keyType] });
        else stack.push({ value: (current as Record<string, unknown>)[key], parent: visit, key });
      }
    }
  }
  return found;
}

type Context = 'headers' | 'params' | 'querystring' | 'body';

/** The same error Fastify raises for a failed schema, so the one error handler answers it. */
function validationFailure(context: Context, issues: readonly UnstorableText[]): Error {
  return Object.assign(new Error(issues[0]?.message ?? 'unstorable text'), {
    statusCode: 422,
    validationContext: context,
    validation: issues.map((issue) => ({ message: issue.message, keyword: issue.type, params: { issue: { path: issue.path, code: issue.type, message: issue.message } } })),
  });
}

function check(context: Context, value: unknown): void {
  const issues = findUnstorableText(value);
  if (issues.length > 0) throw validationFailure(context, issues);
}

export const storableTextPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', async (request: FastifyRequest) => {
      check('headers', request.headers);
      check('params', request.params);
      check('querystring', request.query);
    });
    app.addHook('preValidation', async (request: FastifyRequest) => {
      if (request.body !== undefined) check('body', request.body);
    });
  },
  { name: 'storable-text', dependencies: ['errors'] },
);
