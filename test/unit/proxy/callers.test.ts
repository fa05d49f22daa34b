/** Fair shares without sockets: caller keys, token buckets (bounded), calls in flight and guardian places per caller. */
import { Cancellation } from '../../../src/core/cancel';
import { CallerLimits, MemoryRateStore, RedisRateStore, callerKey, type Admission } from '../../../src/proxy/callers';

const ok = (a: Admission | Promise<Admission>): Extract<Admission, { ok: true }> => {
  if (a instanceof Promise || !a.ok) throw new Error('expected an admission');
  return a;
};

describe('callerKey', () => {
  test('a verified caller is its owner key; an unverified one its address (IPv6: its prefix), IPv4 the same on a dual-stack socket', () => {
    expect(callerKey('oidc:https%3A//idp:agent-a', '10.0.0.1', 64)).toBe('oidc:https%3A//idp:agent-a');
    expect(callerKey('oidc:https%3A//idp:agent-a', '2001:db8::1', 64)).toBe('oidc:https%3A//idp:agent-a');
    expect(callerKey('anonymous', '::ffff:10.0.0.1', 64)).toBe(callerKey('anonymous', '10.0.0.1', 64));
    expect(callerKey('anonymous', '2001:db8:1:2:3:4:5:6', 64)).toBe('addr:2001:db8:1:2::/64');
    expect(callerKey('anonymous', '2001:db8:1:2:3:4:5:6', 128)).toBe('addr:2001:db8:1:2:3:4:5:6/128');
    // An address key can never be a verified caller's (owner keys are source:issuer:subject).
    expect(callerKey('anonymous', undefined, 64)).toBe('addr:unknown');
  });
});

describe('MemoryRateStore', () => {
  test('burst at once, then the rate; each caller has its own bucket', () => {
    let now = 0;
    const r = new MemoryRateStore(2, 3, 100, () => now);
    expect([r.take('a'), r.take('a'), r.take('a')]).toEqual([0, 0, 0]);
    expect(r.take('a')).toBe(500);
    expect(r.take('b')).toBe(0);
    now += 500;
    expect(r.take('a')).toBe(0);
    expect(r.take('a')).toBe(500);
  });

  test('bounded: past maxKeys, idle buckets go first, and a dropped bucket only ever starts full again', () => {
    let now = 0;
    const r = new MemoryRateStore(1, 2, 10, () => now);
    for (let i = 0; i < 10; i++) r.take(`k${i}`);
    now += 5000;
    r.take('late');
    expect(r.size).toBe(1);
    for (let i = 0; i < 1000; i++) r.take(`flood${i}`);
    expect(r.size).toBeLessThanOrEqual(10);
  });
});

describe('RedisRateStore', () => {
  test("a Redis that does not answer falls back to the replica's own buckets, and says so", async () => {
    const failures: unknown[] = [];
    const local = new MemoryRateStore(1, 1);
    const r = new RedisRateStore({ eval: () => Promise.reject(new Error('down')) } as never, 'p:', 1, 1, local, (e) => failures.push(e));
    expect(await r.take('a')).toBe(0);
    expect(await r.take('a')).toBeGreaterThan(0);
    expect(failures).toHaveLength(2);
  });
});

describe('CallerLimits', () => {
  test('calls in flight per caller: the next one is refused (429, Retry-After), another caller is admitted; leaving gives the place back once', () => {
    const limited: string[] = [];
    const l = new CallerLimits({ maxCalls: 2, guardianCalls: 0, onLimited: (r) => limited.push(r) });
    const [a1, a2] = [ok(l.admit('a')), ok(l.admit('a'))];
    const third = l.admit('a') as Admission;
    expect(third.ok).toBe(false);
    if (!third.ok) {
      expect(third.error.kind).toBe('limited');
      expect(third.error.httpStatus).toBe(429);
      expect(third.error.metadata['retryAfterSeconds']).toBe('1');
    }
    expect(ok(l.admit('b'))).toBeDefined();
    a1.leave();
    a1.leave();
    expect(l.callsOf('a')).toBe(1);
    a2.leave();
    expect(l.callsOf('a')).toBe(0);
    expect(limited).toEqual(['calls']);
  });

  test('two IPv6 addresses of one /64 are one caller: they share its calls in flight; another /64 is another caller', () => {
    const l = new CallerLimits({ maxCalls: 1, guardianCalls: 0 });
    const held = ok(l.admit(callerKey('anonymous', '2001:db8:1:2::a', 64)));
    expect((l.admit(callerKey('anonymous', '2001:db8:1:2:ffff:ffff:ffff:b', 64)) as Admission).ok).toBe(false);
    expect(ok(l.admit(callerKey('anonymous', '2001:db8:1:3::a', 64)))).toBeDefined();
    // At 128 bits each address is a caller of its own.
    expect(ok(l.admit(callerKey('anonymous', '2001:db8:1:2::b', 128)))).toBeDefined();
    held.leave();
    expect(ok(l.admit(callerKey('anonymous', '2001:db8:1:2::c', 64)))).toBeDefined();
  });

  test("past its calls in flight a call waits in its caller's own line and gets the place a call of that caller gives back; another caller is admitted at once", async () => {
    const limited: string[] = [];
    const l = new CallerLimits({ maxCalls: 1, callWaitMs: 60_000, guardianCalls: 0, onLimited: (r) => limited.push(r) });
    const first = ok(l.admit('a'));
    // At its bound with room in its line, a caller's next call is verified (then waits): no refusal before.
    expect(l.atBound('a')).toBeUndefined();
    const waiting = l.admit('a');
    expect(waiting).toBeInstanceOf(Promise);
    expect(l.waitingOf('a')).toBe(1);
    const other = ok(l.admit('b'));
    other.leave();
    first.leave();
    const second = await waiting;
    expect(second.ok).toBe(true);
    // The place passed on: still one call of `a` in flight, none waiting.
    expect(l.callsOf('a')).toBe(1);
    expect(l.waitingOf('a')).toBe(0);
    if (second.ok) second.leave();
    expect(l.tracked).toBe(0);
    expect(limited).toEqual([]);
  });

  test('a waiting call is refused (429) after callWaitMs, or at once past a line as long as maxCalls; one whose caller leaves gives up its turn', async () => {
    jest.useFakeTimers();
    try {
      const limited: string[] = [];
      const l = new CallerLimits({ maxCalls: 1, callWaitMs: 1000, guardianCalls: 0, onLimited: (r) => limited.push(r) });
      const first = ok(l.admit('a'));
      const gone = new Cancellation();
      const leaving = l.admit('a', gone);
      const overLine = l.admit('a') as Admission;
      expect(overLine.ok).toBe(false);
      expect(l.atBound('a')?.httpStatus).toBe(429);
      gone.cancel();
      expect((await leaving).ok).toBe(false);
      expect(l.waitingOf('a')).toBe(0);
      const timedOut = l.admit('a');
      jest.advanceTimersByTime(1000);
      const r = await timedOut;
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error.httpStatus).toBe(429);
      first.leave();
      expect(l.tracked).toBe(0);
      expect(limited).toEqual(['calls', 'calls', 'calls']);
    } finally {
      jest.useRealTimers();
    }
  });

  test('calls that wait together are refused apart: each at its own deadline in [callWaitMs/2, callWaitMs], with Retry-After spread over 1..callWaitMs seconds', async () => {
    jest.useFakeTimers();
    try {
      const draws = Array.from({ length: 10 }, (_v, i) => i / 10);
      let d = 0;
      const l = new CallerLimits({ maxCalls: 10, callWaitMs: 4000, guardianCalls: 0, random: () => draws[d++ % draws.length] as number });
      const held = Array.from({ length: 10 }, () => ok(l.admit('a')));
      const refused: number[] = [];
      const retryAfter = new Set<string>();
      const waiting = Array.from({ length: 10 }, (_v, i) =>
        (l.admit('a') as Promise<Admission>).then((r) => {
          refused.push(i);
          if (!r.ok) retryAfter.add(r.error.metadata['retryAfterSeconds'] as string);
        }),
      );
      jest.advanceTimersByTime(1999);
      await Promise.resolve();
      expect(refused).toEqual([]);
      jest.advanceTimersByTime(1000);
      for (let i = 0; i < 10; i++) await Promise.resolve();
      // Half of them by three quarters of the wait, the rest after.
      expect(refused.length).toBeGreaterThanOrEqual(4);
      expect(refused.length).toBeLessThanOrEqual(6);
      jest.advanceTimersByTime(1001);
      await Promise.all(waiting);
      expect(refused).toHaveLength(10);
      expect([...retryAfter].sort()).toEqual(['1', '2', '3', '4']);
      for (const h of held) h.leave();
      expect(l.tracked).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  test('callWaitMs 0: the next call past the bound is refused at once', () => {
    const l = new CallerLimits({ maxCalls: 1, callWaitMs: 0, guardianCalls: 0 });
    ok(l.admit('a'));
    expect((l.admit('a') as Admission).ok).toBe(false);
  });

  test('the rate: refused with the seconds until the next token', () => {
    const l = new CallerLimits({ maxCalls: 0, guardianCalls: 0, rate: new MemoryRateStore(0.5, 1), ratePerSecond: 0.5 });
    ok(l.admit('a'));
    const r = l.admit('a') as Admission;
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.metadata['retryAfterSeconds']).toBe('2');
  });

  test('atBound: the refusal admit would answer now, counted, taking nothing; a peek remembers no caller', () => {
    let now = 0;
    const rate = new MemoryRateStore(1, 1, 100, () => now);
    const limited: string[] = [];
    const l = new CallerLimits({ maxCalls: 1, guardianCalls: 0, rate, ratePerSecond: 1, onLimited: (r) => limited.push(r) });
    expect(l.atBound('a')).toBeUndefined();
    expect(rate.size).toBe(0);
    const a = ok(l.admit('a'));
    expect(l.atBound('a')?.metadata['retryAfterSeconds']).toBe('1');
    a.leave();
    now += 400;
    expect(l.atBound('a')?.message).toMatch(/rate of 1 calls per second/);
    expect(rate.peek('a')).toBe(600);
    // Peeks took no token: the bucket refills on time, and the caller is admitted.
    now += 600;
    expect(l.atBound('a')).toBeUndefined();
    ok(l.admit('a'));
    expect(limited).toEqual(['calls', 'rate']);
  });

  test("guardian places: a caller's calls past its share wait in its own line; another caller enters at once; idle callers leave no entry", async () => {
    const l = new CallerLimits({ maxCalls: 0, guardianCalls: 1 });
    const first = l.guardianPlace('a');
    expect(first.entered).toBe(true);
    const second = l.guardianPlace('a');
    expect(second.entered).not.toBe(true);
    const other = l.guardianPlace('b');
    expect(other.entered).toBe(true);
    other.leave();
    first.leave();
    expect(await second.entered).toBe(true);
    second.leave();
    expect(l.tracked).toBe(0);
  });

  test('a waiting guardian call whose caller leaves gives up its turn', async () => {
    const l = new CallerLimits({ maxCalls: 0, guardianCalls: 1 });
    const first = l.guardianPlace('a');
    const gone = new Cancellation();
    const waiting = l.guardianPlace('a', gone);
    gone.cancel();
    expect(await waiting.entered).toBe(false);
    first.leave();
    expect(l.tracked).toBe(0);
  });
});
