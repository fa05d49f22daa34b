/**
 * The admin server of the real process (design section 9, README "Admin endpoints and logs"):
 * `node dist/src/main.js` with ADMIN_PORT, a real SDK agent and a real HTTP guardian.
 *   /healthz  the process is up;
 *   /readyz   200 while the replica can serve; the guardian's and the agent's state in the body (and
 *             503 for them only with READINESS_REQUIRES, see observe/process-lifecycle.test.ts);
 *   /metrics  prom-client text: decisions by operation / side / decision, guardian latency histogram,
 *             guardian failures by kind, fail-open and shadow passes, upstream errors, open streams,
 *             process metrics; names are checked and counts must move.
 * Also: the proxy pings the guardian at start and periodically.
 */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { openSse, rawRpc, startAgent, type TestAgent } from '../../helpers/agent';
import { startGuardian, textIn, type TestGuardian } from '../../helpers/guardian';
import { sleep, waitFor } from '../../helpers/net';
import { freePort } from '../../helpers/net';
import { ensureBuilt, reapAll, ROOT, sample, spawnNode } from '../../helpers/proxy-process';

const MAIN = path.join(ROOT, 'dist/src/main.js');

let guardian: TestGuardian;

beforeAll(async () => {
  ensureBuilt();
  guardian = await startGuardian();
}, 180_000);

afterAll(async () => {
  await reapAll();
  await guardian?.close();
});

interface Run {
  child: ChildProcess;
  base: string;
  admin: string;
  output: () => string;
}

/** Spawn the proxy. `preload` (JavaScript) runs in the process before main() when given. */
async function startProcess(upstream: string, env: Record<string, string>, preload?: string): Promise<Run> {
  const port = await freePort();
  const adminPort = await freePort();
  const [script, args] =
    preload === undefined ? [MAIN, []] : ['-e', [`${preload}\nrequire(${JSON.stringify(MAIN)}).main().catch((e) => { console.error(e); process.exit(1); });`]];
  const child = spawnNode(
    script,
    {
      UPSTREAM_URL: upstream,
      GUARDIAN_URL: guardian.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_PORT: String(adminPort),
      ADMIN_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...env,
    },
    args,
  );
  const run: Run = {
    child: child.child,
    base: `http://127.0.0.1:${port}`,
    admin: `http://127.0.0.1:${adminPort}`,
    output: () => child.stdout() + child.stderr(),
  };
  // Up = /healthz answers (never /readyz here: it pings the guardian, which some tests count).
  await waitFor(
    async () => {
      if (run.child.exitCode !== null) throw new Error(`proxy exited early (${run.child.exitCode}): ${run.output()}`);
      try {
        const h = await fetch(`${run.admin}/healthz`);
        await h.body?.cancel();
        if (!h.ok) return false;
        const c = await fetch(`${run.base}/.well-known/agent-card.json`);
        await c.body?.cancel();
        return true;
      } catch {
        return false;
      }
    },
    20_000,
    'proxy up',
  );
  return run;
}

function stop(run: Run): void {
  if (run.child.exitCode === null) run.child.kill('SIGKILL');
}

async function get(url: string): Promise<{ status: number; text: string; json: any; type: string }> {
  const r = await fetch(url);
  const text = await r.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, text, json, type: r.headers.get('content-type') ?? '' };
}

const metrics = async (run: Run): Promise<string> => {
  const r = await get(`${run.admin}/metrics`);
  expect(r.status).toBe(200);
  expect(r.type).toMatch(/^text\/plain/);
  return r.text;
};

const msg = (id: string | number, text: string, method = 'message/send') => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { message: { kind: 'message', messageId: `m-${String(id)}`, role: 'user', parts: [{ kind: 'text', text }] } },
});

const pings = () => guardian.envelopes.filter((e) => e?.method === 'ping');

/* ------------------------------------------------------------------------------------------ */

describe('one proxy process, FAIL_MODE=closed', () => {
  let agent: TestAgent;
  let run: Run;

  beforeAll(async () => {
    guardian.reset();
    guardian.clear();
    agent = await startAgent({ name: 'Admin Agent' });
    run = await startProcess(agent.origin, {});
  }, 60_000);

  afterAll(async () => {
    if (run) stop(run);
    await agent?.close();
  });

  beforeEach(() => {
    guardian.reset();
    guardian.script((env) => (textIn(env).includes('forbidden') ? { decision: 'deny' } : { decision: 'allow' }));
  });

  test('pings the guardian at start (AOS ping, before anyone asks /readyz)', async () => {
    await waitFor(() => pings().length >= 1, 10_000, 'a ping at start');
    expect(pings()[0]).toMatchObject({ jsonrpc: '2.0', id: expect.any(String), method: 'ping', params: { timestamp: expect.any(String) } });
  });

  test('/healthz: 200', async () => {
    const r = await get(`${run.admin}/healthz`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok' });
  });

  test('/readyz: 200 when the guardian answers ping and the agent card is reachable', async () => {
    const before = pings().length;
    const r = await get(`${run.admin}/readyz`);
    expect({ status: r.status, body: r.json }).toMatchObject({ status: 200, body: { ready: true, guardian: { up: true }, upstream: { up: true } } });
    expect(pings().length).toBeGreaterThan(before);
  });

  test.each([
    ['a JSON-RPC error', { fault: 'rpcError' as const }],
    ['HTTP 500', { fault: 'http500' as const }],
    ['a ping answer that is not "connected"', { raw: { status: 200, body: '{"jsonrpc":"2.0","id":"x","result":{"status":"connected"}}' } }],
    ['no answer at all (hang)', { fault: 'hang' as const }],
  ])(
    '/readyz: the guardian reported down when it answers ping with %s (still ready: no READINESS_REQUIRES); up again once it answers',
    async (_name, reply) => {
      guardian.scriptPing(() => reply);
      const bad = await get(`${run.admin}/readyz`);
      expect({ status: bad.status, body: bad.json }).toMatchObject({ status: 200, body: { ready: true, guardian: { up: false }, upstream: { up: true } } });
      guardian.reset();
      const good = await get(`${run.admin}/readyz`);
      expect({ status: good.status, body: good.json }).toMatchObject({ status: 200, body: { guardian: { up: true } } });
    },
    20_000,
  );

  test('/metrics: names present and counts move with traffic', async () => {
    const m0 = await metrics(run);
    for (const name of [
      'a2a_guard_hook_decisions_total',
      'a2a_guard_requests_total',
      'a2a_guard_guardian_latency_seconds',
      'a2a_guard_guardian_failures_total',
      'a2a_guard_fail_open_passes_total',
      'a2a_guard_shadow_passes_total',
      'a2a_guard_upstream_errors_total',
      'a2a_guard_open_streams',
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
    ])
      expect(m0).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
    const dec = (text: string, operation: string, decision: string) =>
      sample(text, 'a2a_guard_hook_decisions_total', { operation, side: 'server', phase: 'request', decision }) ?? 0;

    // allow, deny, a guardian failure (fail-closed), and a stream.
    expect((await rawRpc(`${run.base}/a2a/jsonrpc`, msg('a', 'hello'))).json?.result).toBeDefined();
    expect((await rawRpc(`${run.base}/a2a/jsonrpc`, msg('d', 'forbidden'))).json?.error?.code).toBe(-31403);
    guardian.script(() => ({ fault: 'http500' }));
    expect((await rawRpc(`${run.base}/a2a/jsonrpc`, msg('f', 'hello'))).json?.error?.code).toBe(-31503);
    guardian.script(() => ({ decision: 'allow' }));
    expect((await rawRpc(`${run.base}/a2a/jsonrpc`, { ...msg('b', 'x'), method: 'Message/Send' })).json?.error?.code).toBe(-32601);

    const stream = await openSse(`${run.base}/a2a/jsonrpc`, msg('s', 'wait-for-cancel', 'message/stream'));
    const first = await stream.events.next();
    expect(first.done).toBe(false);
    const m1 = await metrics(run);
    expect(sample(m1, 'a2a_guard_open_streams')).toBe(1);
    stream.abort();
    await waitFor(async () => sample(await metrics(run), 'a2a_guard_open_streams') === 0, 10_000, 'open streams back to 0');
    const m2 = await metrics(run);

    expect(dec(m2, 'message/send', 'allow') - dec(m0, 'message/send', 'allow')).toBe(1);
    expect(dec(m2, 'message/send', 'deny') - dec(m0, 'message/send', 'deny')).toBe(1);
    expect(dec(m2, 'message/send', 'failClosed') - dec(m0, 'message/send', 'failClosed')).toBe(1);
    expect(dec(m2, 'message/stream', 'allow') - dec(m0, 'message/stream', 'allow')).toBe(1);
    const count = (t: string) => sample(t, 'a2a_guard_guardian_latency_seconds_count') ?? 0;
    expect(count(m2) - count(m0)).toBe(4);
    expect(sample(m2, 'a2a_guard_guardian_latency_seconds_bucket', { le: '+Inf' })).toBe(count(m2));
    expect(
      (sample(m2, 'a2a_guard_guardian_failures_total', { kind: 'http' }) ?? 0) - (sample(m0, 'a2a_guard_guardian_failures_total', { kind: 'http' }) ?? 0),
    ).toBe(1);
    expect(
      (sample(m2, 'a2a_guard_requests_total', { operation: 'refused' }) ?? 0) - (sample(m0, 'a2a_guard_requests_total', { operation: 'refused' }) ?? 0),
    ).toBe(1);
    expect(sample(m2, 'a2a_guard_fail_open_passes_total')).toBe(0);
    expect(sample(m2, 'process_cpu_user_seconds_total')!).toBeGreaterThan(sample(m0, 'process_cpu_user_seconds_total')!);
    expect(sample(m2, 'process_resident_memory_bytes')!).toBeGreaterThan(0);
  });

  // Last in this block: it stops the agent.
  test('agent down: calls get -31502 and count as upstream errors; /readyz reports the agent down', async () => {
    const e0 = sample(await metrics(run), 'a2a_guard_upstream_errors_total') ?? 0;
    await agent.close();
    expect((await rawRpc(`${run.base}/a2a/jsonrpc`, msg('down', 'anyone?'))).json?.error?.code).toBe(-31502);
    expect((sample(await metrics(run), 'a2a_guard_upstream_errors_total') ?? 0) - e0).toBe(1);
    const r = await get(`${run.admin}/readyz`);
    expect({ status: r.status, body: r.json }).toMatchObject({ status: 200, body: { guardian: { up: true }, upstream: { up: false } } });
    expect(sample(await metrics(run), 'a2a_guard_upstream_up')).toBe(0);
  }, 30_000);
});

describe('fail-open and shadow passes are counted on /metrics', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await startAgent({ name: 'Admin Agent 2' });
  });
  afterAll(async () => {
    await agent?.close();
  });

  test('FAIL_MODE=open: a guardian failure passes and a2a_guard_fail_open_passes_total moves', async () => {
    const run = await startProcess(agent.origin, { FAIL_MODE: 'open' });
    try {
      guardian.script(() => ({ fault: 'garbage' }));
      const r = await rawRpc(`${run.base}/a2a/jsonrpc`, msg('o', 'hello'));
      expect(r.json?.result).toBeDefined();
      const m = await metrics(run);
      expect(sample(m, 'a2a_guard_fail_open_passes_total')).toBe(1);
      expect(sample(m, 'a2a_guard_guardian_failures_total', { kind: 'json' })).toBe(1);
      expect(sample(m, 'a2a_guard_hook_decisions_total', { operation: 'message/send', decision: 'failOpen' })).toBe(1);
    } finally {
      guardian.reset();
      stop(run);
    }
  }, 30_000);

  test('SHADOW_MODE=true: a deny passes and a2a_guard_shadow_passes_total{decision="deny"} moves', async () => {
    const run = await startProcess(agent.origin, { SHADOW_MODE: 'true' });
    try {
      guardian.script(() => ({ decision: 'deny' }));
      agent.clear();
      const r = await rawRpc(`${run.base}/a2a/jsonrpc`, msg('sh', 'would be denied'));
      expect(r.json?.result).toBeDefined();
      expect(agent.received.filter((x) => x.method === 'POST')).toHaveLength(1);
      const m = await metrics(run);
      expect(sample(m, 'a2a_guard_shadow_passes_total', { decision: 'deny' })).toBe(1);
      expect(sample(m, 'a2a_guard_hook_decisions_total', { operation: 'message/send', decision: 'shadow' })).toBe(1);
    } finally {
      guardian.reset();
      stop(run);
    }
  }, 30_000);
});

describe('periodic guardian ping', () => {
  test('the guardian keeps being pinged without anyone asking /readyz (interval accelerated 100x)', async () => {
    const agent = await startAgent({ name: 'Ping Agent' });
    // Only long intervals (the 30 s pinger) are shortened; everything else runs as usual.
    const preload =
      'const si = global.setInterval; global.setInterval = (fn, ms, ...a) => si(fn, typeof ms === "number" && ms >= 10000 ? ms / 100 : ms, ...a);';
    guardian.clear();
    const run = await startProcess(agent.origin, {}, preload);
    try {
      await waitFor(() => pings().length >= 4, 15_000, 'four pings (start + periodic)');
      const n = pings().length;
      await waitFor(() => pings().length > n, 15_000, 'pings keep coming');
    } finally {
      stop(run);
      await agent.close();
    }
    await sleep(0);
  }, 40_000);
});
