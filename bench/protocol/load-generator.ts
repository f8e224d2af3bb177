/**
 * The HTTP load generator of the protocol benchmark, run as a child process (`fork`) so that its
 * CPU is neither counted as nor taken from the API process it measures. It drives one route with
 * autocannon: a warm-up, then (after the parent says "go", having sampled its CPU counters) the
 * measured run. Every request takes the next body of a shared list, so each body is sent once;
 * when the list is used up it cycles through `repeat` (re-registrations of known chains).
 *
 * Protocol over IPC: parent -> { type: 'job', job } ; child -> { type: 'progress', line } ...
 * { type: 'warm' } ; parent -> { type: 'go' } ; child -> { type: 'result', result } ; parent ->
 * { type: 'bye' }.
 */
import { readFileSync } from 'node:fs';
import autocannon, { type RawRequest, type Result } from 'autocannon';

export interface LoadJob {
  title: string;
  /** Several URLs (API replicas): autocannon spreads the connections over them in turn. */
  url: string | string[];
  connections: number;
  warmupS: number;
  durationS: number;
  /** JSON file: an array of [deviceId, body, records] entries, sent in order, each once. */
  bodiesFile: string;
  /** JSON file of the same shape, cycled through once `bodiesFile` is used up. */
  repeatFile: string;
}

export interface LoadResult {
  title: string;
  durationS: number;
  requests: number;
  perSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCounts: Record<string, number>;
  /** Transfer answers: records registered, and requests that registered none (known chain). */
  appendedRecords: number;
  unchangedAnswers: number;
  /** Requests answered from `repeat` (after `bodiesFile` was used up). */
  repeats: number;
  /** Mean transfer-chain length of the measured requests' bodies. */
  meanRecords: number;
  sampleErrors: string[];
}

type Entry = [device: string, body: string, records: number];
type Message = { type: 'job'; job: LoadJob } | { type: 'go' } | { type: 'bye' };

const send = (message: unknown): Promise<void> =>
  new Promise((resolve) => {
    if (process.send === undefined) resolve();
    else process.send(message, undefined, {}, () => resolve());
  });

// The parent owns this process: when it goes away, so does the load.
process.on('disconnect', () => process.exit(1));

function waitFor<T extends Message['type']>(type: T): Promise<Extract<Message, { type: T }>> {
  return new Promise((resolve) => {
    const onMessage = (message: Message): void => {
      if (message.type !== type) return;
      process.off('message', onMessage);
      resolve(message as Extract<Message, { type: T }>);
    };
    process.on('message', onMessage);
  });
}

async function main(): Promise<void> {
  const { job } = await waitFor('job');
  const bodies = JSON.parse(readFileSync(job.bodiesFile, 'utf8')) as Entry[];
  const repeat = JSON.parse(readFileSync(job.repeatFile, 'utf8')) as Entry[];
  if (repeat.length === 0) throw new Error('the repeat list is empty');
  let next = 0;
  let repeats = 0;
  let measuring = false;
  const tally = { appended: 0, unchanged: 0, records: 0, answered: 0, statuses: {} as Record<string, number>, sampleErrors: [] as string[] };

  const run = (durationS: number, phase: string): Promise<Result> => {
    const instance = autocannon({
      url: job.url,
      connections: job.connections,
      duration: durationS,
      timeout: 30,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      requests: [
        {
          setupRequest: (request: RawRequest, context: Record<string, unknown>) => {
            const index = next;
            next += 1;
            let entry: Entry;
            if (index < bodies.length) {
              entry = bodies[index] as Entry;
            } else {
              entry = repeat[(index - bodies.length) % repeat.length] as Entry;
              if (measuring) repeats += 1;
            }
            context.records = entry[2];
            request.headers = { ...request.headers, 'x-device-id': entry[0] };
            request.body = entry[1];
            return request;
          },
          onResponse: (status: number, body: string, context: Record<string, unknown>) => {
            if (!measuring) return;
            tally.answered += 1;
            tally.records += typeof context.records === 'number' ? context.records : 0;
            tally.statuses[String(status)] = (tally.statuses[String(status)] ?? 0) + 1;
            if (status >= 200 && status < 300) {
              const appended = /"appended":(\d+)/.exec(body);
              if (appended !== null) {
                const count = Number(appended[1]);
                if (count > 0) tally.appended += count;
                else tally.unchanged += 1;
              }
            } else if (tally.sampleErrors.length < 3) {
              tally.sampleErrors.push(`${status} ${body.slice(0, 300)}`);
            }
          },
        },
      ],
    });
    let last = 0;
    let elapsedS = 0;
    instance.on('tick', ({ counter }) => {
      elapsedS += 1;
      last = counter;
      void send({ type: 'progress', line: `  [${job.title}] ${phase} ${elapsedS}s: ${last} req/s` });
    });
    return new Promise<Result>((resolve, reject) => {
      instance.on('done', resolve);
      instance.on('error', reject);
    });
  };

  if (job.warmupS > 0) await run(job.warmupS, 'warm-up');
  await send({ type: 'warm' });
  await waitFor('go');
  measuring = true;
  const result = await run(job.durationS, 'measure');
  measuring = false;
  const completed = result['2xx'] + result.non2xx;
  const loadResult: LoadResult = {
    title: job.title,
    durationS: result.duration,
    requests: completed,
    perSecond: completed / result.duration,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    latencyMaxMs: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCounts: tally.statuses,
    appendedRecords: tally.appended,
    unchangedAnswers: tally.unchanged,
    repeats,
    meanRecords: tally.answered === 0 ? 0 : tally.records / tally.answered,
    sampleErrors: tally.sampleErrors,
  };
  await send({ type: 'result', result: loadResult });
  // Stay until the parent has read this process's CPU counters.
  await Promise.race([waitFor('bye'), new Promise((resolve) => setTimeout(resolve, 30_000).unref())]);
}

main().then(
  () => process.exit(0),
  async (error: unknown) => {
    await send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  },
);
