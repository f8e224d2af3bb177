import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import path from 'node:path';

/**
 * Optional (`--cpu-profile <dir>`): a V8 CPU profile of this process's main thread over one
 * measured window, written as <dir>/<name>.cpuprofile (open it in Chrome DevTools), with the
 * functions and packages that took the most self time printed as a summary; with
 * `--heap-profile <dir>`, a sampling allocation profile of the same window as well
 * (<dir>/<name>.heapprofile), summarised by the places and functions that allocated most.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileHandle {
  stop(): Promise<string[]>;
}

const noProfile: ProfileHandle = { stop: async () => [] };

function where(url: string): string {
  if (url === '') return '(native)';
  const modules = url.lastIndexOf('node_modules/');
  if (modules !== -1) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') === true ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? url);
  }
  if (url.startsWith('node:')) return url;
  const project = url.indexOf('/work/');
  return project === -1 ? url : url.slice(url.indexOf('/', project + '/work/'.length) + 1);
}

type CallFrame = ProfileNode['callFrame'];

/** Amounts (time, bytes) summed per function and per place, with the top lines of each. */
function frameTally() {
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  const tally = {
    total: 0,
    add(frame: CallFrame, amount: number) {
      tally.total += amount;
      const place = where(frame.url);
      const fn = `${frame.functionName || '(anonymous)'} ${place}:${frame.lineNumber + 1}`;
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + amount);
      byPlace.set(place, (byPlace.get(place) ?? 0) + amount);
    },
    /** The `count` largest, each as a share of the total, with `extra` (e.g. a per-request figure) before the name. */
    top(of: 'place' | 'function', count: number, extra: (amount: number) => string = () => '') {
      return [...(of === 'place' ? byPlace : byFunction).entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, count)
        .map(([key, amount]) => `    ${((amount / tally.total) * 100).toFixed(1).padStart(5)}%  ${extra(amount)}${key}`);
    },
  };
  return tally;
}

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** Bytes allocated (sampled) per function and per place, over one window. */
export async function startHeapProfile(dir: string | undefined, name: string, requests: () => number): Promise<ProfileHandle> {
  if (dir === undefined) return noProfile;
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  // Every 16 KiB allocated on average; objects collected meanwhile are kept in the profile.
  await session.post('HeapProfiler.startSampling', { samplingInterval: 16_384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  const startedWith = requests();
  return {
    async stop() {
      const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: HeapNode } };
      session.disconnect();
      await writeFile(path.join(dir, `${name}.heapprofile`), JSON.stringify(profile));
      const tally = frameTally();
      const walk = (node: HeapNode) => {
        tally.add(node.callFrame, node.selfSize);
        for (const child of node.children) walk(child);
      };
      walk(profile.head);
      const count = Math.max(1, requests() - startedWith);
      const perRequest = (bytes: number) => `${(bytes / count / 1024).toFixed(1).padStart(6)} KiB/request  `;
      return [
        `  [heap profile ${name}] ${(tally.total / 1024 / 1024).toFixed(0)} MiB allocated (sampled) over ${count} requests, ${(tally.total / count / 1024).toFixed(1)} KiB per request; by place:`,
        ...tally.top('place', 12, perRequest),
        `  [heap profile ${name}] by function (self):`,
        ...tally.top('function', 20, perRequest),
      ];
    },
  };
}

export async function startProfile(dir: string | undefined, name: string): Promise<ProfileHandle> {
  if (dir === undefined) return noProfile;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
      session.disconnect();
      await writeFile(path.join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
      const selfUs = new Map<number, number>();
      profile.samples.forEach((id, index) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
      const tally = frameTally();
      for (const node of profile.nodes) {
        if (node.callFrame.functionName !== '(idle)') tally.add(node.callFrame, selfUs.get(node.id) ?? 0);
      }
      return [
        `  [profile ${name}] main thread busy ${(tally.total / 1000).toFixed(0)} ms sampled; by place:`,
        ...tally.top('place', 12),
        `  [profile ${name}] by function (self time):`,
        ...tally.top('function', 15),
      ];
    },
  };
}
