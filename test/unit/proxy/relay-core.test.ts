/**
 * The relay core (src/proxy/relay-core.ts) without sockets: messages go in as a channel read them and
 * come out as bytes or a stop, in the agent's order, each through the core's steps (turn, decode, answer
 * stages, turn again after the guardian, encode). The stages are the real ones (answers.ts) with a
 * scripted response-hook runner; turns are a real FairQueue whose loop iterations the test runs by hand.
 */
import { jsonRpcCodec } from '../../../src/a2a/bindings';
import { FairQueue } from '../../../src/core/fair-queue';
import type { JsonObject } from '../../../src/core/json';
import { answerFlow, STREAM_ANSWER, UNARY_ANSWER, type AnswerRoad } from '../../../src/proxy/answers';
import type { Exchange } from '../../../src/proxy/call';
import { answerVerdict, answerWindow, type AnswerChannel } from '../../../src/proxy/relay-core';
import type { Turns } from '../../../src/proxy/fair';
import type { Verdict } from '../../../src/proxy/window';
import { exchange, policy, scripted } from '../../helpers/answers';

/** One message as a channel read it: a JSON body, or bytes that do not decode, or a keep-alive. */
type Msg = { readonly n: number; readonly body?: unknown; readonly unread?: string; readonly keepAlive?: true };

function road(over: Partial<AnswerRoad> = {}): AnswerRoad {
  return {
    card: undefined,
    answerHook: undefined,
    judge: undefined,
    unreadable: policy('closed').unreadable,
    notAnObject: 'not an object',
    spelling: true,
    ...over,
  };
}

/** A channel whose stop is the refusal's reason, and whose bytes are the JSON the caller gets (or `as read` when passed unjudged). */
function channel(r: AnswerRoad, ex: Exchange | undefined, steps: string[] = []): AnswerChannel<Msg, string> {
  return {
    stages: STREAM_ANSWER,
    decode: (m) => {
      steps.push(`decode ${m.n}`);
      if (m.keepAlive === true) return { pass: Buffer.from(':') };
      return { flow: answerFlow(r, ex, jsonRpcCodec, 1, true, m.body, m.unread) };
    },
    encode: ({ flow }, m) => {
      steps.push(`encode ${m.n}`);
      if (flow.end?.type === 'refuse') return { stop: flow.end.why };
      if (flow.end !== undefined) return { pass: Buffer.from(`as read ${m.n}`) };
      return { pass: Buffer.from(JSON.stringify(flow.judged?.payload ?? flow.body)) };
    },
    refused: (err) => `refused: ${err.kind}`,
  };
}

const answerWith = (text: string, n = 1): JsonObject => ({
  jsonrpc: '2.0',
  id: n,
  result: { message: { messageId: `m${n}`, role: 'ROLE_AGENT', parts: [{ text }] } },
});

/** The window's sockets, recording what the caller got. */
function sockets() {
  const out = { written: [] as string[], ended: undefined as string | null | undefined, aborted: 0 };
  const io = {
    bytes: () => 1,
    write: (b: Buffer) => {
      out.written.push(b.toString());
      return true;
    },
    end: (s?: string) => {
      out.ended = s ?? null;
    },
    flow: () => undefined,
    abort: () => {
      out.aborted++;
    },
    failure: (err: unknown) => `failed: ${(err as Error).message}`,
  };
  return { out, io };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('order', () => {
  test("messages judged at once leave in the agent's order, each once its own decision is known", async () => {
    const resolvers: Array<() => void> = [];
    const judge = (payload: JsonObject) =>
      new Promise<{ type: 'pass'; payload: JsonObject; payloadJson: string; payloadBytes: undefined; modified: false; unchecked: false }>((resolve) => {
        resolvers.push(() =>
          resolve({ type: 'pass', payload, payloadJson: JSON.stringify(payload), payloadBytes: undefined, modified: false, unchecked: false }),
        );
      });
    const { out, io } = sockets();
    const w = answerWindow(channel(road({ judge }), undefined), undefined, undefined, io, { size: 3 });
    w.push([1, 2, 3].map((n) => ({ n, body: answerWith(`t${n}`, n) })));
    w.upstreamEnded();
    expect(resolvers).toHaveLength(3);
    // The last decided first: nothing leaves until the first is decided.
    (resolvers[2] as () => void)();
    (resolvers[1] as () => void)();
    await settle();
    expect(out.written).toEqual([]);
    (resolvers[0] as () => void)();
    await settle();
    expect(out.written.map((s) => /t\d/.exec(s)?.[0])).toEqual(['t1', 't2', 't3']);
    expect(out.ended).toBeNull();
  });

  test('each message goes turn -> decode -> stages -> encode; a message no stage reads leaves in the same turn (no promise)', () => {
    const steps: string[] = [];
    const c = channel(road(), undefined, steps);
    const v = answerVerdict(c, undefined, undefined, { n: 1, body: answerWith('hello') });
    expect(v).not.toBeInstanceOf(Promise);
    expect(steps).toEqual(['decode 1', 'encode 1']);
    const keep = answerVerdict(c, undefined, undefined, { n: 2, keepAlive: true });
    expect(keep).toEqual({ pass: Buffer.from(':') });
    expect(steps).toEqual(['decode 1', 'encode 1', 'decode 2']);
  });
});

describe('stop on deny and on refusal', () => {
  test('a deny at message k: messages before it leave, its stop ends the answer, nothing after it is written, the agent is aborted', async () => {
    const { judge, seen } = scripted((p) => (JSON.stringify(p).includes('bad') ? 'deny' : 'allow'));
    const { out, io } = sockets();
    const w = answerWindow(channel(road({ judge }), undefined), undefined, undefined, io, { size: 4 });
    w.push([
      { n: 1, body: answerWith('ok') },
      { n: 2, body: answerWith('bad') },
      { n: 3, body: answerWith('after') },
    ]);
    await settle();
    expect(out.written).toHaveLength(1);
    expect(out.written[0]).toContain('ok');
    expect(out.ended).toBe('response hook: deny');
    expect(out.aborted).toBe(1);
    expect(out.written.join()).not.toContain('after');
    expect(seen.length).toBeGreaterThanOrEqual(2);
  });

  test("a modify replaces that message's bytes only", async () => {
    const { judge } = scripted((p) => (JSON.stringify(p).includes('secret') ? answerWith('[redacted]', 2) : 'allow'));
    const { out, io } = sockets();
    const w = answerWindow(channel(road({ judge }), undefined), undefined, undefined, io, { size: 4 });
    w.push([
      { n: 1, body: answerWith('plain') },
      { n: 2, body: answerWith('secret', 2) },
    ]);
    w.upstreamEnded();
    await settle();
    expect(out.written[0]).toContain('plain');
    expect(out.written[1]).toContain('[redacted]');
    expect(out.written.join()).not.toContain('secret');
  });

  test('a decision that throws is a stop with the failure, never a pass', async () => {
    const judge = () => Promise.reject(new Error('guardian broke'));
    const { out, io } = sockets();
    const w = answerWindow(channel(road({ judge }), undefined), undefined, undefined, io, { size: 2 });
    w.push([{ n: 1, body: answerWith('x') }]);
    await settle();
    expect(out.written).toEqual([]);
    expect(out.ended).toBe('failed: guardian broke');
  });
});

describe('fail modes for a message the proxy cannot read', () => {
  test('FAIL_MODE=closed: the error ends the answer; FAIL_MODE=open: it passes as read, unjudged', async () => {
    const { judge, seen } = scripted(() => 'allow');
    for (const [mode, expected] of [
      ['closed', { stop: 'not JSON' }],
      ['open', { pass: Buffer.from('as read 1') }],
    ] as const) {
      const v = await answerVerdict(channel(road({ judge, unreadable: policy(mode).unreadable }), undefined), undefined, undefined, {
        n: 1,
        unread: 'not JSON',
      });
      expect(v).toEqual(expected);
    }
    expect(seen).toEqual([]);
  });

  test('an error event is judged as one (the hooks see the error), not dropped', async () => {
    const { judge, seen } = scripted(() => 'allow');
    const c: AnswerChannel<Msg, string> = { ...channel(road({ judge }), undefined), stages: UNARY_ANSWER };
    const v = await answerVerdict(c, undefined, undefined, { n: 1, body: { jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'task not found' } } });
    expect('pass' in v && v.pass.toString()).toContain('task not found');
    expect(seen).toHaveLength(1);
  });
});

describe('turns per caller', () => {
  /** A FairQueue whose loop iterations the test runs: `poll()` is one iteration (I/O polled, one round granted). */
  function turns(maxQueued = 100): { turns: Turns; poll: () => void; limited: string[] } {
    const deferred: Array<() => void> = [];
    let now = 0;
    const fair = new FairQueue({ maxQueuedPerCaller: maxQueued, sliceMs: 1, now: () => (now += 1), defer: (fn) => void deferred.push(fn) });
    const limited: string[] = [];
    const poll = () => {
      for (const fn of deferred.splice(0)) fn();
    };
    return {
      turns: {
        fair,
        metrics: { callerLimited: { inc: (l: { resource: string }) => void limited.push(l.resource) } } as unknown as Turns['metrics'],
        max: maxQueued,
      },
      poll,
      limited,
    };
  }

  test("one caller's many answers wait behind each other: another caller's answer is decided between them, not after all of them", async () => {
    const t = turns();
    const decided: string[] = [];
    const exA = exchange('SendMessage', 'oidc:iss:A');
    const exB = exchange('SendMessage', 'oidc:iss:B');
    const verdictOf = (ex: Exchange, who: string, n: number): Promise<Verdict<string>> =>
      Promise.resolve(answerVerdict(channel(road(), ex), t.turns, ex, { n, body: answerWith(`${who}${n}`) })).then((v) => {
        decided.push(`${who}${n}`);
        return v;
      });
    const all = [...Array.from({ length: 10 }, (_v, i) => verdictOf(exA, 'A', i)), verdictOf(exB, 'B', 0)];
    for (let i = 0; i < 20; i++) {
      t.poll();
      await settle();
    }
    await Promise.all(all);
    expect(decided).toHaveLength(11);
    // The victim's answer came after all ten of the attacker's, and was decided before most of them.
    expect(decided.indexOf('B0')).toBeLessThan(5);
  });

  test("past FAIR_QUEUE_PER_CALLER turns waiting, the answer is stopped with the caller-limited error (counted), nobody else's", async () => {
    const t = turns(2);
    const exA = exchange('SendMessage', 'oidc:iss:A');
    const exB = exchange('SendMessage', 'oidc:iss:B');
    const c = (ex: Exchange) => channel(road(), ex);
    const a = Array.from({ length: 6 }, (_v, i) => Promise.resolve(answerVerdict(c(exA), t.turns, exA, { n: i, body: answerWith(`a${i}`) })));
    const b = Promise.resolve(answerVerdict(c(exB), t.turns, exB, { n: 9, body: answerWith('b') }));
    for (let i = 0; i < 10; i++) {
      t.poll();
      await settle();
    }
    const verdicts = await Promise.all(a);
    expect(verdicts.filter((v) => 'stop' in v).map((v) => (v as { stop: string }).stop)).toContain('refused: limited');
    expect(t.limited).toContain('turns');
    expect(await b).toHaveProperty('pass');
    expect(exA.log.error).toMatch(/turns full/);
  });

  test('a caller gone while its turn waits: the message is stopped, never decoded', async () => {
    const t = turns();
    const steps: string[] = [];
    const exA = exchange('SendMessage', 'oidc:iss:A');
    const c = channel(road(), exA, steps);
    const first = Array.from({ length: 5 }, (_v, i) => Promise.resolve(answerVerdict(c, t.turns, exA, { n: i, body: answerWith(`a${i}`) })));
    exA.call.caller.cancel();
    for (let i = 0; i < 10; i++) {
      t.poll();
      await settle();
    }
    const verdicts = await Promise.all(first);
    const stopped = verdicts.filter((v) => 'stop' in v);
    expect(stopped.length).toBeGreaterThan(0);
    expect(steps.filter((s) => s.startsWith('decode')).length).toBe(verdicts.length - stopped.length);
  });
});
