/**
 * Large-body memory phase: peak RSS per in-flight byte. A fresh proxy process (a2a-guard, or the
 * baseline) gets a few small warm-up calls and 1 s idle, then BIG_REQUESTS message/send calls whose
 * text part is BIG_BYTES long, CONNECTIONS at a time, to the bench agent's /a2a/big route (which
 * drains any body; the SDK's own parser stops at 100 KB). RSS is sampled every 10 ms. The figure is
 * (peak RSS - RSS before) / (connections x body bytes): how many bytes of memory one byte in flight
 * costs. Rounds alternate the two proxies, each round with fresh processes.
 */
import { loadRound, unaryBody } from './clients';
import { median, progress, sleep, startChild, type Pinning } from './lib';

export interface MemoryResult {
  readonly perByte: number[];
  readonly peakDelta: number[];
  readonly bad: number;
}

export interface MemoryOptions {
  readonly rounds: number;
  readonly bodyBytes: number;
  readonly requests: number;
  readonly connections: number;
}

export type MemorySubject = 'baseline' | 'a2a-guard';

async function once(
  subject: MemorySubject,
  env: Record<string, string>,
  pin: Pinning,
  o: MemoryOptions,
  body: string,
): Promise<{ perByte: number; peak: number; bad: number }> {
  const c =
    subject === 'baseline'
      ? await startChild('baseline (memory)', 'baseline-proxy.js', env, pin.proxy)
      : await startChild('a2a-guard (memory)', 'proxy-child.js', env, pin.proxy);
  try {
    await loadRound(c.url, 200, o.connections);
    await sleep(1000);
    const base = (await c.stats()).rss;
    let peak = base;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        try {
          peak = Math.max(peak, (await c.stats()).rss);
        } catch {
          return;
        }
        await sleep(10);
      }
    })();
    const r = await loadRound(c.url, o.requests, o.connections, body, '/a2a/big');
    sampling = false;
    await sampler;
    peak = Math.max(peak, (await c.stats()).rss);
    return { perByte: (peak - base) / (o.connections * Buffer.byteLength(body)), peak: peak - base, bad: r.bad + (o.requests - r.n) };
  } finally {
    await c.stop();
  }
}

export async function memoryPhase(
  o: MemoryOptions,
  envOf: (s: MemorySubject) => Record<string, string>,
  pin: Pinning,
): Promise<Map<MemorySubject, MemoryResult>> {
  progress(`phase: large bodies (${(o.bodyBytes / 1048576).toFixed(1)} MB x ${o.requests} requests, ${o.connections} connections, ${o.rounds} rounds)`);
  const body = unaryBody('x'.repeat(o.bodyBytes), 'bench-big');
  const out = new Map<MemorySubject, { perByte: number[]; peakDelta: number[]; bad: number }>([
    ['baseline', { perByte: [], peakDelta: [], bad: 0 }],
    ['a2a-guard', { perByte: [], peakDelta: [], bad: 0 }],
  ]);
  for (let r = 0; r < o.rounds; r++) {
    const order: MemorySubject[] = r % 2 === 0 ? ['baseline', 'a2a-guard'] : ['a2a-guard', 'baseline'];
    for (const s of order) {
      const x = await once(s, envOf(s), pin, o, body);
      const row = out.get(s) as { perByte: number[]; peakDelta: number[]; bad: number };
      row.perByte.push(x.perByte);
      row.peakDelta.push(x.peak);
      row.bad += x.bad;
    }
  }
  return out;
}

export const memoryMedian = (r: MemoryResult | undefined, k: 'perByte' | 'peakDelta'): number => (r === undefined ? NaN : median(r[k]));
