/**
 * Preloaded into a real proxy process by `bench/stall.ts` (`node --require dist/bench/stall-probe.js
 * dist/a2a-guard.js`): measures the process's event-loop stalls and answers on the IPC channel.
 *
 *   { t: 'reset' }  -> starts a new window
 *   { t: 'read' }   -> { t: 'stall', maxMs, gaps, worst } : perf_hooks' event-loop delay (max) in the window, the
 *                      longest gaps between ticks of a 1 ms timer (each a task that held the loop), and where the
 *                      longest lay (`worst`: its start and end, µs of the monotonic clock, as a CPU profile's times)
 *   { t: 'profile', file } -> starts a CPU profile of the main thread (100 µs samples)
 *   { t: 'profiled' }      -> stops it and writes it to that file
 */
import fs from 'node:fs';
import { Session } from 'node:inspector';
import { monitorEventLoopDelay } from 'node:perf_hooks';

let histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();
let gaps: number[] = [];
let last = performance.now();
let worst: { ms: number; startUs: number; endUs: number } | undefined;
const tick = setInterval(() => {
  const now = performance.now();
  if (now - last > 5) {
    gaps.push(now - last);
    if (worst === undefined || now - last > worst.ms) {
      const endUs = Number(process.hrtime.bigint() / 1000n);
      worst = { ms: now - last, startUs: endUs - (now - last) * 1000, endUs };
    }
  }
  last = now;
}, 1);
tick.unref();

let session: Session | undefined;
let profileFile = '';

process.on('message', (m: { t?: string; file?: string }) => {
  if (m.t === 'reset') {
    histogram.disable();
    histogram = monitorEventLoopDelay({ resolution: 1 });
    histogram.enable();
    gaps = [];
    worst = undefined;
    last = performance.now();
    process.send?.({ t: 'reset' });
  } else if (m.t === 'read') {
    process.send?.({ t: 'stall', maxMs: histogram.max / 1e6, gaps: [...gaps].sort((a, b) => b - a).slice(0, 5), worst });
  } else if (m.t === 'profile') {
    profileFile = m.file ?? 'stall.cpuprofile';
    session = new Session();
    session.connect();
    session.post('Profiler.enable', () =>
      session?.post('Profiler.setSamplingInterval', { interval: 100 }, () => session?.post('Profiler.start', () => process.send?.({ t: 'profile' }))),
    );
  } else if (m.t === 'profiled') {
    session?.post('Profiler.stop', (err, r) => {
      if (err === null) fs.writeFileSync(profileFile, JSON.stringify(r.profile));
      session?.disconnect();
      process.send?.({ t: 'profiled' });
    });
  }
});
process.channel?.unref();
