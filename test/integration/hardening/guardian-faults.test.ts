/**
 * Guardian faults (README "Enforcement and errors", design section 5): a bounded time budget per
 * call, one retry on a connection failure inside that same budget, a circuit breaker (5 consecutive
 * failures, or a timeout whose ping fails too -> open 2 s -> one half-open trial), FAIL_MODE=open and
 * SHADOW_MODE. Real sockets: a real
 * SDK agent, a real HTTP guardian with injected faults, the proxy in-process.
 *
 * The breaker is asserted by counting guardian connections and calls, never by timing: once it is
 * open, requests get -31503 without the guardian seeing them; after the guardian comes back and the
 * cooldown has passed, exactly one trial call closes it again.
 */
import type { Socket } from 'node:net';
import { rawRpc, textOf, type RawResponse, type ReceivedRequest, type TestAgent } from '../../helpers/agent';
import { postsTo } from '../../helpers/agent';
import { textIn, type GuardianReply, type TestGuardian } from '../../helpers/guardian';
import { sleep, waitFor } from '../../helpers/net';
import { type TestProxy, startTestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;

const stack = useStack({ name: 'Guarded Agent' });
let agent: TestAgent;
let guardian: TestGuardian;
const proxies: Proxy[] = [];
/** Guardian connection accounting: every TCP connection the proxy opens to the guardian. */
let connections = 0;
/** While true the guardian "is dead": every connection is reset as soon as it is accepted. */
let dead = false;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  guardian.server.on('connection', (s: Socket) => {
    connections++;
    if (dead) s.destroy();
  });
});

afterAll(async () => {
  for (const p of proxies) await p.close();
});

beforeEach(() => {
  dead = false;
});

afterEach(async () => {
  dead = false;
  while (proxies.length > 0) await proxies.pop()!.close();
});

async function proxyWith(env: Record<string, string> = {}): Promise<Proxy> {
  const p = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', ...env });
  proxies.push(p);
  return p;
}

const msg = (id: string | number, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${String(id)}-${Math.random()}`, role: 'user', parts: [{ kind: 'text', text }] } },
});

const call = (p: Proxy, id: string | number, text: string, opts: { signal?: AbortSignal } = {}): Promise<RawResponse> =>
  rawRpc(`${p.url}/a2a/jsonrpc`, msg(id, text), {}, opts.signal === undefined ? {} : { signal: opts.signal });

const agentPosts = (): ReceivedRequest[] => postsTo(agent);

function expectUnavailable(r: RawResponse, id: unknown): string {
  expect({ status: r.status, body: r.json }).toMatchObject({
    status: 200,
    body: { jsonrpc: '2.0', id, error: { code: -31503, data: [{ reason: 'GUARDIAN_UNAVAILABLE' }] } },
  });
  return String(r.json.error.data[0].metadata.failure);
}

function expectAgentAnswer(r: RawResponse, id: unknown, text: string): void {
  expect({ status: r.status, id: r.json?.id, error: r.json?.error, text: textOf(r.json) }).toEqual({
    status: 200,
    id,
    error: undefined,
    text: `echo: ${text}`,
  });
}

/** Sum of a metric's samples whose labels include `labels` (Prometheus text format). */
async function metric(p: Proxy, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await p.metrics.registry.metrics();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have[l[1]!] = l[2]!;
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/* ------------------------------------------------------------------------------------------ */

describe('guardian faults with real sockets: -31503, nothing forwarded, counted by kind', () => {
  const cases: [string, GuardianReply, string, number, Record<string, string>][] = [
    // name, reply, failure kind, guardian calls per request (1 = no retry), env
    ['hangs', { fault: 'hang' }, 'timeout', 1, { GUARDIAN_TIMEOUT_MS: '300' }],
    ['resets the connection', { fault: 'refuse' }, 'connect', 2, {}],
    ['answers HTTP 500', { fault: 'http500' }, 'http', 1, {}],
    ['answers garbage', { fault: 'garbage' }, 'json', 1, {}],
    ['answers a JSON-RPC error', { fault: 'rpcError' }, 'rpcError', 1, {}],
    ['answers a schema-invalid result', { fault: 'badSchema' }, 'schema', 1, {}],
    ['answers a wrong id', { fault: 'wrongId' }, 'id', 1, {}],
  ];

  test.each(cases)('a guardian that %s', async (_name, reply, kind, calls, env) => {
    const p = await proxyWith(env);
    guardian.script(() => reply);
    const failure = expectUnavailable(await call(p, 'f-1', 'hello'), 'f-1');
    expect(failure).toBe(kind);
    expect(guardian.calls()).toHaveLength(calls);
    // A retry repeats the same envelope, it does not invent a new decision request.
    expect(new Set(guardian.calls().map((e) => e.id)).size).toBe(1);
    expect(agentPosts()).toEqual([]);
    expect(await metric(p, 'a2a_guard_guardian_failures_total', { kind })).toBe(1);
    expect(await metric(p, 'a2a_guard_hook_decisions_total', { operation: 'message/send', side: 'server', decision: 'failClosed' })).toBe(1);
  });
});

describe('one retry on connection failure, inside the same time budget', () => {
  test('a reset on the first attempt is retried once; the second answer decides', async () => {
    const p = await proxyWith();
    let n = 0;
    guardian.script(() => (n++ === 0 ? { fault: 'refuse' } : { decision: 'allow' }));
    expectAgentAnswer(await call(p, 'r-1', 'retry me'), 'r-1', 'retry me');
    expect(guardian.calls()).toHaveLength(2);
    expect(guardian.calls()[0].id).toBe(guardian.calls()[1].id);
    expect(agentPosts()).toHaveLength(1);
  });

  test('a retry that would be a deny is a deny (the retried answer is enforced)', async () => {
    const p = await proxyWith();
    let n = 0;
    guardian.script(() => (n++ === 0 ? { fault: 'refuse' } : { decision: 'deny', reasonCode: ['NO'] }));
    const r = await call(p, 'r-2', 'retry me');
    expect(r.json).toMatchObject({ id: 'r-2', error: { code: -31403 } });
    expect(guardian.calls()).toHaveLength(2);
    expect(agentPosts()).toEqual([]);
  });

  test('only one retry: two resets in a row give -31503 after exactly two attempts', async () => {
    const p = await proxyWith();
    guardian.script(() => ({ fault: 'refuse' }));
    expect(expectUnavailable(await call(p, 'r-3', 'x'), 'r-3')).toBe('connect');
    expect(guardian.calls()).toHaveLength(2);
  });

  test('the retry does not get a fresh budget: reset at ~60% of the budget + an answer at ~60% = no valid answer', async () => {
    // GUARDIAN_TIMEOUT_MS=800: the first attempt is reset after 480 ms, the retry would answer allow
    // after another 480 ms. With one shared budget the retry times out; with a fresh one it would pass.
    const p = await proxyWith({ GUARDIAN_TIMEOUT_MS: '800' });
    let n = 0;
    guardian.script(() => (n++ === 0 ? { fault: 'refuse', delayMs: 480 } : { decision: 'allow', delayMs: 480 }));
    // 'timeout' normally; 'connect' if a very slow machine spent the whole budget on the first attempt.
    expect(['timeout', 'connect']).toContain(expectUnavailable(await call(p, 'r-4', 'x'), 'r-4'));
    expect(guardian.calls().length).toBeLessThanOrEqual(2);
    expect(agentPosts()).toEqual([]);
  });

  test('no retry after the guardian started answering (HTTP 500, timeout)', async () => {
    const p = await proxyWith({ GUARDIAN_TIMEOUT_MS: '300' });
    guardian.script(() => ({ fault: 'http500' }));
    expectUnavailable(await call(p, 'r-5', 'x'), 'r-5');
    expect(guardian.calls()).toHaveLength(1);
    guardian.clear();
    guardian.script(() => ({ fault: 'hang' }));
    expectUnavailable(await call(p, 'r-6', 'x'), 'r-6');
    expect(guardian.calls()).toHaveLength(1);
    // The timeout sends one ping (the breaker's probe): awaited, so no connection of it outlives the test.
    await waitFor(() => guardian.envelopes.filter((e) => e.method === 'ping').length === 1, 10_000, "the breaker's ping");
  });
});

describe('circuit breaker', () => {
  /** Five consecutive failing calls against a dead guardian; returns the connection count after them. */
  async function openBreaker(p: Proxy): Promise<void> {
    dead = true;
    for (let i = 0; i < 5; i++) {
      const before = connections;
      expect(expectUnavailable(await call(p, `open-${i}`, 'x'), `open-${i}`)).toBe('connect');
      // One attempt and one retry, each a new connection that the dead guardian resets.
      expect(connections - before).toBe(2);
    }
  }

  test('a dead guardian: after 5 failures requests get -31503 without the guardian seeing them', async () => {
    const p = await proxyWith();
    await openBreaker(p);
    const before = connections;
    for (let i = 0; i < 10; i++) expect(expectUnavailable(await call(p, `fast-${i}`, 'x'), `fast-${i}`)).toBe('breakerOpen');
    expect(connections).toBe(before);
    expect(agentPosts()).toEqual([]);
    expect(await metric(p, 'a2a_guard_guardian_failures_total', { kind: 'breakerOpen' })).toBe(10);
  });

  test('a hanging guardian (calls and pings): a timeout and the ping after it open the breaker, then no further guardian calls', async () => {
    const p = await proxyWith({ GUARDIAN_TIMEOUT_MS: '200' });
    guardian.script(() => ({ fault: 'hang' }));
    guardian.scriptPing(() => ({ fault: 'hang' }));
    expect(expectUnavailable(await call(p, 'h-0', 'x'), 'h-0')).toBe('timeout');
    const seen: string[] = [];
    await waitFor(
      async () => {
        seen.push(expectUnavailable(await call(p, `h-${seen.length + 1}`, 'x'), `h-${seen.length + 1}`));
        return seen[seen.length - 1] === 'breakerOpen';
      },
      10_000,
      'the breaker opened',
    );
    expect(seen.slice(0, -1).every((f) => f === 'timeout')).toBe(true);
    const asked = guardian.calls().length;
    for (let i = 0; i < 5; i++) expect(expectUnavailable(await call(p, `h2-${i}`, 'x'), `h2-${i}`)).toBe('breakerOpen');
    expect(guardian.calls()).toHaveLength(asked);
  });

  test('recovers by itself: after the cooldown exactly one trial call reaches the guardian, then calls flow', async () => {
    const p = await proxyWith();
    await openBreaker(p);
    expect(expectUnavailable(await call(p, 'still-open', 'x'), 'still-open')).toBe('breakerOpen');
    dead = false; // the guardian is back
    const answers: string[] = [];
    await waitFor(
      async () => {
        const r = await call(p, `poll-${answers.length}`, 'are you back');
        if (r.json?.error !== undefined) {
          answers.push(String(r.json.error.data?.[0]?.metadata?.failure));
          await sleep(50);
          return false;
        }
        answers.push('ok');
        return true;
      },
      15_000,
      'a call through the recovered guardian',
    );
    // Every refusal while the breaker was open cost no guardian call; the first call after the
    // cooldown was the trial, and it went through.
    expect(answers.slice(0, -1).every((a) => a === 'breakerOpen')).toBe(true);
    expect(guardian.calls()).toHaveLength(1);
    expect(agentPosts()).toHaveLength(1);
    for (let i = 0; i < 3; i++) expectAgentAnswer(await call(p, `after-${i}`, `after ${i}`), `after-${i}`, `after ${i}`);
    expect(guardian.calls()).toHaveLength(4);
  });

  test('the wall clock stepping back an hour (NTP, a resumed VM) does not hold the breaker open for that hour', async () => {
    const p = await proxyWith();
    await openBreaker(p);
    const wall = Date.now.bind(Date);
    const stepped = jest.spyOn(Date, 'now').mockImplementation(() => wall() - 3_600_000);
    try {
      dead = false;
      // The cooldown is 2 s of elapsed time, whatever the wall clock says.
      await waitFor(
        async () => {
          const r = await call(p, `step-${Math.random()}`, 'are you back');
          if (r.json?.error === undefined) return true;
          await sleep(50);
          return false;
        },
        15_000,
        'a call through the recovered guardian after the clock stepped back',
      );
      expect(guardian.calls()).toHaveLength(1);
    } finally {
      stepped.mockRestore();
    }
  });

  test('half-open: a failing trial re-opens the breaker at once', async () => {
    const p = await proxyWith();
    await openBreaker(p);
    let trial: string | undefined;
    await waitFor(
      async () => {
        const before = connections;
        const failure = expectUnavailable(await call(p, 'trial', 'x'), 'trial');
        if (connections === before) {
          expect(failure).toBe('breakerOpen');
          await sleep(50);
          return false;
        }
        trial = failure;
        return true;
      },
      15_000,
      'the half-open trial call',
    );
    expect(trial).toBe('connect');
    const before = connections;
    expect(expectUnavailable(await call(p, 'next', 'x'), 'next')).toBe('breakerOpen');
    expect(connections).toBe(before);
  });

  test('half-open admits one trial call: callers arriving with it fail fast instead of waiting on the guardian', async () => {
    // A hanging guardian opens the breaker. Then bursts of 10 concurrent calls until a burst reaches
    // the guardian at all: that burst must have put exactly one call (the trial) through.
    const p = await proxyWith({ GUARDIAN_TIMEOUT_MS: '400' });
    guardian.script(() => ({ fault: 'hang' }));
    guardian.scriptPing(() => ({ fault: 'hang' }));
    let n = 0;
    await waitFor(async () => expectUnavailable(await call(p, `ho-${++n}`, 'x'), `ho-${n}`) === 'breakerOpen', 10_000, 'the breaker opened');
    let through = 0;
    let failures: string[] = [];
    await waitFor(
      async () => {
        const before = guardian.calls().length;
        const burst = await Promise.all(Array.from({ length: 10 }, (_, k) => call(p, `burst-${k}`, 'x')));
        through = guardian.calls().length - before;
        failures = burst.map((r, k) => expectUnavailable(r, `burst-${k}`));
        if (through === 0) await sleep(100);
        return through > 0;
      },
      15_000,
      'a burst that reaches the guardian',
    );
    expect({ through, breakerOpen: failures.filter((f) => f === 'breakerOpen').length }).toEqual({ through: 1, breakerOpen: 9 });
  });

  test('callers that hang up are not guardian failures: 5 abandoned calls do not open the breaker', async () => {
    const p = await proxyWith();
    guardian.script(() => ({ decision: 'allow', delayMs: 1500 }));
    const aborts = Array.from({ length: 5 }, () => new AbortController());
    const pending = aborts.map((a, i) => call(p, `gone-${i}`, 'x', { signal: a.signal }).catch(() => 'aborted'));
    await waitFor(() => guardian.calls().length === 5, 10_000, 'five guardian calls in flight');
    for (const a of aborts) a.abort();
    expect(await Promise.all(pending)).toEqual(['aborted', 'aborted', 'aborted', 'aborted', 'aborted']);
    // The proxy has noticed every hang-up once it has dropped the guardian requests it made for them.
    const guardianSockets = () => new Promise<number>((resolve) => guardian.server.getConnections((_e, n) => resolve(n)));
    await waitFor(async () => (await guardianSockets()) === 0, 10_000, 'abandoned guardian calls dropped');
    await sleep(50);
    guardian.script(() => ({ decision: 'allow' }));
    const r = await call(p, 'after-hangups', 'still welcome');
    expect({ failure: r.json?.error?.data?.[0]?.metadata?.failure, text: textOf(r.json) }).toEqual({ failure: undefined, text: 'echo: still welcome' });
    expect(await metric(p, 'a2a_guard_guardian_failures_total', { kind: 'breakerOpen' })).toBe(0);
  });
});

describe('FAIL_MODE=open', () => {
  test('no valid answer: forwarded with X-AOS-Unchecked: true, logged and counted; a valid deny still blocks', async () => {
    const p = await proxyWith({ FAIL_MODE: 'open' });
    guardian.script(() => ({ fault: 'garbage' }));
    expectAgentAnswer(await call(p, 'o-1', 'unchecked'), 'o-1', 'unchecked');
    expect(agentPosts().map((r) => r.headers['x-aos-unchecked'])).toEqual(['true']);
    expect(await metric(p, 'a2a_guard_fail_open_passes_total')).toBe(1);
    expect(await metric(p, 'a2a_guard_hook_decisions_total', { decision: 'failOpen' })).toBe(1);

    guardian.script(() => ({ decision: 'deny' }));
    expect((await call(p, 'o-2', 'denied')).json).toMatchObject({ id: 'o-2', error: { code: -31403 } });
    guardian.script(() => ({ decision: 'allow' }));
    expectAgentAnswer(await call(p, 'o-3', 'checked'), 'o-3', 'checked');
    expect(agentPosts().map((r) => r.headers['x-aos-unchecked'])).toEqual(['true', undefined]);
    expect(await metric(p, 'a2a_guard_fail_open_passes_total')).toBe(1);
  });
});

describe('SHADOW_MODE=true: ask, log and count, always forward', () => {
  test('a deny still reaches the agent and is counted as a shadow pass with decision deny', async () => {
    const p = await proxyWith({ SHADOW_MODE: 'true' });
    guardian.script((env) => (textIn(env).includes('forbidden') ? { decision: 'deny', reasonCode: ['X'] } : { decision: 'allow' }));
    expectAgentAnswer(await call(p, 's-1', 'forbidden but shadowed'), 's-1', 'forbidden but shadowed');
    expectAgentAnswer(await call(p, 's-2', 'fine'), 's-2', 'fine');
    expect(guardian.calls().map((e) => textIn(e))).toEqual(['forbidden but shadowed', 'fine']);
    expect(agentPosts()).toHaveLength(2);
    expect(await metric(p, 'a2a_guard_shadow_passes_total', { decision: 'deny' })).toBe(1);
    expect(await metric(p, 'a2a_guard_shadow_passes_total', { decision: 'allow' })).toBe(1);
    expect(await metric(p, 'a2a_guard_hook_decisions_total', { operation: 'message/send', decision: 'shadow' })).toBe(2);
  });

  test('a modify is not applied: the agent gets the original', async () => {
    const p = await proxyWith({ SHADOW_MODE: 'true' });
    guardian.script((env) => ({
      decision: 'modify',
      modifiedPayload: { ...env.params.payload, params: { message: { ...env.params.payload.params.message, parts: [{ kind: 'text', text: 'rewritten' }] } } },
    }));
    expectAgentAnswer(await call(p, 's-3', 'original words'), 's-3', 'original words');
    expect(await metric(p, 'a2a_guard_shadow_passes_total', { decision: 'modify' })).toBe(1);
  });

  test('no valid answer in shadow mode: forwarded, marked X-AOS-Unchecked: true, counted', async () => {
    const p = await proxyWith({ SHADOW_MODE: 'true' });
    guardian.script(() => ({ fault: 'http500' }));
    expectAgentAnswer(await call(p, 's-4', 'nobody checked'), 's-4', 'nobody checked');
    expect(agentPosts().map((r) => r.headers['x-aos-unchecked'])).toEqual(['true']);
    expect(await metric(p, 'a2a_guard_shadow_passes_total', { decision: 'noAnswer' })).toBe(1);
    expect(await metric(p, 'a2a_guard_guardian_failures_total', { kind: 'http' })).toBe(1);
  });
});
