/** Child processes started by tests. */
import type { ChildProcess } from 'node:child_process';

/** Kill a child that still runs and wait until its pipes are closed, so the test worker keeps no handle. */
export async function reap(c: ChildProcess): Promise<void> {
  const closed = new Promise<void>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) {
      if (c.stdout?.destroyed !== false && c.stderr?.destroyed !== false) return resolve();
    }
    c.once('close', () => resolve());
    setTimeout(resolve, 5000).unref();
  });
  if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  c.stdout?.destroy();
  c.stderr?.destroy();
  await closed;
}
