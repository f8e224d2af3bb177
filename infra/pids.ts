/** A process known by its pid alone (one a killed supervisor left behind, a server found by its lock file). */

/** Whether `pid` runs (a process of another user counts: signalling it is refused, not missing). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Waits up to `timeoutMs` for `pid` to end; false when it still runs then. */
export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}
