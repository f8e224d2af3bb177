/**
 * For a process started by `npm start`'s supervisor (infra/supervisor.ts), which runs it in a
 * process group of its own with an IPC channel: when the supervisor goes away without stopping
 * it (killed with SIGKILL, say), the channel closes and the process stops as on SIGTERM instead
 * of running on unsupervised. Does nothing for a process started any other way.
 */
export function stopWhenSupervisorExits(): void {
  if (process.channel === undefined) return;
  // The channel must not keep the process alive once it has stopped.
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}
