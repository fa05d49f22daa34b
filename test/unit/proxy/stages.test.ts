/**
 * The binding-neutral stages of a call (src/proxy/stages.ts) without sockets: task ownership over a
 * real in-memory owner store, the request hooks given as a scripted hook runner (the guardian's
 * decisions are the input here; the runner itself is tested over a real guardian in integration).
 */
import pino from 'pino';
import { Metrics } from '../../../src/admin/metrics';
import { operationForMethod, type Operation } from '../../../src/a2a/operations';
import { jsonRpcCodec } from '../../../src/a2a/bindings';
import { Cancellation } from '../../../src/core/cancel';
import { proxyError, type ProxyError } from '../../../src/core/errors';
import type { JsonObject } from '../../../src/core/json';
import { MemoryOwnerStore, taskKey } from '../../../src/ownership/store';
import { openExchange, type Exchange } from '../../../src/proxy/call';
import type { HookRun, HookRunInput } from '../../../src/proxy/hooks';
import { TaskOwnership } from '../../../src/proxy/ownership';
import { callStages, END, runStages, type CallFlow, type Stage } from '../../../src/proxy/stages';

const silent = pino({ level: 'silent' });
const op = (m: string): Operation => operationForMethod(m) as Operation;
const NO_SPAN = {
  traceId: undefined,
  spanId: undefined,
  hook: () => ({ headers: undefined, end: () => undefined }),
  upstream: () => ({ headers: undefined, end: () => undefined }),
  end: () => undefined,
};

function exchange(method: string, owner = 'oidc:iss:A'): Exchange {
  return openExchange({
    started: 0,
    codec: jsonRpcCodec,
    op: op(method),
    wireMethod: method,
    id: 1,
    shape: { v03: false, errorAsEvent: false },
    caller: new Cancellation(),
    identity: undefined,
    callerPeer: { name: 'A', url: 'http://a.test', version: '1' },
    owner,
    key: owner,
    span: NO_SPAN,
    remoteAddress: '127.0.0.1',
  });
}

interface Port {
  open: boolean;
  failed: ProxyError[];
  fail(err: ProxyError): void;
}
function port(): Port {
  return {
    open: true,
    failed: [],
    fail(err) {
      this.failed.push(err);
    },
  };
}

function flow(ex: Exchange, request: JsonObject, p: Port): CallFlow {
  return { ex, port: p, request, requestJson: undefined, reasoning: 'why', validateModified: () => undefined, answerHook: undefined, approved: undefined };
}

/** A hook runner whose guardian answers `decide(payload)`; records what it was shown. */
function scripted(decide: (payload: JsonObject) => 'allow' | 'deny' | JsonObject) {
  const seen: HookRunInput[] = [];
  const run = async (input: HookRunInput): Promise<HookRun> => {
    seen.push(input);
    const d = decide(input.payload);
    input.ex.log.hooks.push({
      side: 'server',
      phase: 'request',
      decision: d === 'allow' ? 'allow' : d === 'deny' ? 'deny' : 'modify',
      envelopeId: 'e',
      guardianMs: 0,
    });
    if (d === 'deny') return { type: 'block', error: proxyError('denied', 'no'), decision: 'deny' };
    const payload = d === 'allow' ? input.payload : d;
    return { type: 'pass', payload, payloadJson: JSON.stringify(payload), payloadBytes: undefined, modified: d !== 'allow', unchecked: false };
  };
  return { run, seen };
}

function ownership() {
  const store = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 1000 });
  return { own: new TaskOwnership({ store, failMode: 'closed', logger: silent, metrics: new Metrics() }), store };
}

const send = { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } } };
const get = (id: string) => ({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } });

describe('runStages', () => {
  test('runs stages in order, stops at END, and mixes sync and async stages', async () => {
    const order: string[] = [];
    const stage = (name: string, end = false, async = false): Stage<null> => ({
      name,
      run: () => {
        order.push(name);
        const step = end ? END : undefined;
        return async ? Promise.resolve(step) : step;
      },
    });
    await runStages([stage('a'), stage('b', false, true), stage('c', true), stage('d')], null);
    expect(order).toEqual(['a', 'b', 'c']);
  });
});

describe('the call facts', () => {
  test('are frozen once the call is opened: no stage or relay can change what was judged', () => {
    const ex = exchange('SendMessage');
    expect(Object.isFrozen(ex.call)).toBe(true);
    expect(() => {
      (ex.call as { id: unknown }).id = 2;
    }).toThrow(TypeError);
  });
});

describe('call stages without task ownership', () => {
  test('only the request hooks run; an allow is approved as is', async () => {
    const g = scripted(() => 'allow');
    const stages = callStages({ config: { role: 'server' }, runHooks: g.run, requestSides: ['server'] });
    expect(stages.map((s) => s.name)).toEqual(['request hooks']);
    const p = port();
    const f = flow(exchange('SendMessage'), send, p);
    await runStages(stages, f);
    expect(p.failed).toEqual([]);
    expect(f.approved?.payload).toBe(send);
    expect(f.ex.log.decision).toBe('allow');
    expect(g.seen[0]?.sides).toEqual(['server']);
    expect(g.seen[0]?.reasoning).toBe('why');
  });

  test('a deny answers the caller and no later stage runs', async () => {
    const g = scripted(() => 'deny');
    const after = jest.fn();
    const p = port();
    const f = flow(exchange('SendMessage'), send, p);
    await runStages([...callStages({ config: { role: 'server' }, runHooks: g.run, requestSides: ['server'] }), { name: 'forward', run: after }], f);
    expect(p.failed.map((e) => e.kind)).toEqual(['denied']);
    expect(f.ex.log.decision).toBe('deny');
    expect(f.approved).toBeUndefined();
    expect(after).not.toHaveBeenCalled();
  });

  test('a caller gone while the guardian decided gets nothing, and nothing is forwarded', async () => {
    const p = port();
    const g = scripted(() => {
      p.open = false;
      return 'allow';
    });
    const after = jest.fn();
    await runStages(
      [...callStages({ config: { role: 'server' }, runHooks: g.run, requestSides: ['server'] }), { name: 'forward', run: after }],
      flow(exchange('SendMessage'), send, p),
    );
    expect(p.failed).toEqual([]);
    expect(after).not.toHaveBeenCalled();
  });
});

describe("a run cut short by the caller's cancellation", () => {
  test('is never an approval, even while the port still reports the caller as there (ROLE=both: the server side was skipped)', async () => {
    const p = port();
    const ex = exchange('SendMessage');
    const g = scripted(() => {
      ex.call.caller.cancel();
      return 'allow';
    });
    const after = jest.fn();
    const f = flow(ex, send, p);
    await runStages([...callStages({ config: { role: 'both' }, runHooks: g.run, requestSides: ['client', 'server'] }), { name: 'forward', run: after }], f);
    expect(p.open).toBe(true);
    expect(f.approved).toBeUndefined();
    expect(after).not.toHaveBeenCalled();
  });
});

describe('call stages with task ownership', () => {
  test('another caller\'s task is "task not found" before the guardian is asked', async () => {
    const { own, store } = ownership();
    await store.claim([taskKey('t-A')], 'oidc:iss:A');
    const g = scripted(() => 'allow');
    const stages = callStages({ config: { role: 'server' }, ownership: own, runHooks: g.run, requestSides: ['server'] });
    expect(stages.map((s) => s.name)).toEqual(['ownership', 'request hooks', 'ownership of the modified call']);
    const p = port();
    const f = flow(exchange('GetTask', 'oidc:iss:B'), get('t-A'), p);
    await runStages(stages, f);
    expect(p.failed.map((e) => e.kind)).toEqual(['taskNotFound']);
    expect(f.ex.log.decision).toBe('refused');
    expect(g.seen).toEqual([]);
  });

  test('the owner passes, and the guardian sees whose task it is', async () => {
    const { own, store } = ownership();
    await store.claim([taskKey('t-A')], 'oidc:iss:A');
    const g = scripted(() => 'allow');
    const p = port();
    const f = flow(exchange('GetTask'), get('t-A'), p);
    await runStages(callStages({ config: { role: 'server' }, ownership: own, runHooks: g.run, requestSides: ['server'] }), f);
    expect(p.failed).toEqual([]);
    expect(f.ex.log.peers.server?.metadata).toEqual({ taskOwnership: { owner: 'oidc:iss:A', state: 'owned' } });
  });

  test("a modify that re-targets the call at another caller's task is refused after the hooks", async () => {
    const { own, store } = ownership();
    await store.claim([taskKey('t-A')], 'oidc:iss:A');
    await store.claim([taskKey('t-B')], 'oidc:iss:B');
    const g = scripted(() => get('t-B'));
    const after = jest.fn();
    const p = port();
    const f = flow(exchange('GetTask'), get('t-A'), p);
    await runStages(
      [...callStages({ config: { role: 'server' }, ownership: own, runHooks: g.run, requestSides: ['server'] }), { name: 'forward', run: after }],
      f,
    );
    expect(g.seen).toHaveLength(1);
    expect(p.failed.map((e) => e.kind)).toEqual(['taskNotFound']);
    expect(f.ex.log.decision).toBe('refused');
    expect(after).not.toHaveBeenCalled();
  });
});
