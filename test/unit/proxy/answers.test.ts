/**
 * The answer stages (src/proxy/answers.ts) without sockets: an agent's answer message in its JSON
 * form goes through the card rewrite, task ownership (a real in-memory owner store), the
 * unreadable-answer policy, the spelling rule and the response hooks (given as a scripted hook runner;
 * the runner itself is tested over a real guardian in integration).
 */
import pino from 'pino';
import { Metrics } from '../../../src/admin/metrics';
import { grpcCodec, jsonRpcCodec, restCodec } from '../../../src/a2a/bindings';
import { proxyError } from '../../../src/core/errors';
import { MemoryOwnerStore, taskKey } from '../../../src/ownership/store';
import { TaskOwnership, type AnswerHook } from '../../../src/proxy/ownership';
import { unreadableAnswer } from '../../../src/proxy/enforce';
import { answerFlow, runAnswerStages, STREAM_ANSWER, UNARY_ANSWER, type AnswerFlow, type AnswerRoad } from '../../../src/proxy/answers';
import { exchange, op, policy, scripted } from '../../helpers/answers';

const silent = pino({ level: 'silent' });

function road(over: Partial<AnswerRoad> = {}): AnswerRoad {
  return {
    card: undefined,
    answerHook: undefined,
    judge: undefined,
    unreadable: policy('closed').unreadable,
    notAnObject: 'agent answer is not a JSON object',
    spelling: true,
    ...over,
  };
}

async function run(stages: typeof UNARY_ANSWER, flow: AnswerFlow): Promise<AnswerFlow> {
  await runAnswerStages(stages, flow);
  return flow;
}

const CARD_OPTS = { publicBase: new URL('https://proxy.example'), upstreamBase: new URL('http://agent:4000'), signatures: 'strip' as const };
const card = { name: 'agent', url: 'http://agent:4000/a2a', version: '1', supportedInterfaces: [{ url: 'http://agent:4000/a2a', protocolBinding: 'JSONRPC' }] };
const task = (id: string) => ({ jsonrpc: '2.0', id: 1, result: { id, contextId: `c-${id}`, status: { state: 'TASK_STATE_COMPLETED' } } });

function ownership() {
  const store = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 1000 });
  return { own: new TaskOwnership({ store, failMode: 'closed', logger: silent, metrics: new Metrics() }), store };
}

describe('the stages, by name and order', () => {
  test('a unary answer: card, ownership, unreadable, spelling, response hooks; a stream message meets the policy before ownership', () => {
    expect(UNARY_ANSWER.map((s) => s.name)).toEqual(['rewrite card', 'ownership (unary)', 'unreadable answer', 'spelling', 'response hooks']);
    expect(STREAM_ANSWER.map((s) => s.name)).toEqual(['unreadable answer', 'ownership (event)', 'spelling', 'response hooks']);
  });

  test('a message nothing needs the guardian for is decided in the same turn (no promise)', () => {
    const flow = answerFlow(road(), undefined, jsonRpcCodec, 1, true, task('t'));
    expect(runAnswerStages(STREAM_ANSWER, flow)).toBeUndefined();
    expect(flow.end).toBeUndefined();
    expect(flow.changed).toBe(false);
  });
});

describe('rewrite card', () => {
  test("a card result leads through the proxy, in the binding's own form (JSON-RPC result, REST body, gRPC message)", async () => {
    for (const [codec, body] of [
      [jsonRpcCodec, { jsonrpc: '2.0', id: 1, result: card }],
      [restCodec, card],
      [grpcCodec, card],
    ] as const) {
      const flow = await run(UNARY_ANSWER, answerFlow(road({ card: CARD_OPTS }), undefined, codec, 1, true, body));
      expect(flow.end).toBeUndefined();
      expect(flow.changed).toBe(true);
      expect(JSON.stringify(codec.resultOf(flow.body))).toContain('https://proxy.example/a2a');
      expect(JSON.stringify(flow.body)).not.toContain('agent:4000');
    }
  });

  test('a 2xx answer that is no card is refused whatever FAIL_MODE says; an error answer carries none and passes', async () => {
    const open = policy('open');
    const refused = await run(
      UNARY_ANSWER,
      answerFlow(road({ card: CARD_OPTS, unreadable: open.unreadable }), undefined, jsonRpcCodec, 1, true, { jsonrpc: '2.0', id: 1, result: 'card' }),
    );
    expect(refused.end).toMatchObject({ type: 'refuse', agentFailed: true, why: 'agent card result cannot be read' });
    const unread = await run(
      UNARY_ANSWER,
      answerFlow(road({ card: CARD_OPTS, unreadable: open.unreadable }), undefined, restCodec, 1, true, undefined, 'agent answer is not JSON'),
    );
    expect(unread.end).toMatchObject({ type: 'refuse', agentFailed: true });
    expect(open.asked).toEqual([]);
    const error = await run(
      UNARY_ANSWER,
      answerFlow(road({ card: CARD_OPTS }), undefined, jsonRpcCodec, 1, true, { jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'no' } }),
    );
    expect(error.end).toBeUndefined();
    expect(error.changed).toBe(false);
  });

  test('a non-2xx answer is not a card result: relayed as the agent gave it', async () => {
    const flow = await run(UNARY_ANSWER, answerFlow(road({ card: CARD_OPTS }), undefined, restCodec, 1, false, { message: 'down' }));
    expect(flow.end).toBeUndefined();
    expect(flow.changed).toBe(false);
  });
});

describe('bind ownership', () => {
  test("a unary answer naming another caller's task is refused (decision refused); the caller's own is bound to it", async () => {
    const { own, store } = ownership();
    await store.claim([taskKey('theirs')], 'oidc:iss:B');
    const hookA = own.answerHook('oidc:iss:A', op('GetTask'), jsonRpcCodec) as AnswerHook;
    const theirs = await run(UNARY_ANSWER, answerFlow(road({ answerHook: hookA }), exchange('GetTask'), jsonRpcCodec, 1, true, task('theirs')));
    expect(theirs.end).toMatchObject({ type: 'refuse', refused: true });
    if (theirs.end?.type === 'refuse') expect(theirs.end.error.kind).toBe('upstreamUnavailable');
    const mine = await run(
      UNARY_ANSWER,
      answerFlow(road({ answerHook: own.answerHook('oidc:iss:A', op('SendMessage'), jsonRpcCodec) }), exchange('SendMessage'), jsonRpcCodec, 1, true, {
        jsonrpc: '2.0',
        id: 1,
        result: { task: task('new').result },
      }),
    );
    expect(mine.end).toBeUndefined();
    expect(await store.owners([taskKey('new')])).toEqual(['oidc:iss:A']);
  });

  test("a task list is filtered to the caller's tasks: the body is replaced and re-encoded", async () => {
    const { own, store } = ownership();
    await store.claim([taskKey('a1')], 'oidc:iss:A');
    await store.claim([taskKey('b1')], 'oidc:iss:B');
    const hook = own.answerHook('oidc:iss:A', op('ListTasks'), jsonRpcCodec);
    const list = { jsonrpc: '2.0', id: 1, result: { tasks: [task('a1').result, task('b1').result], nextPageToken: '', pageSize: 2, totalSize: 2 } };
    const flow = await run(UNARY_ANSWER, answerFlow(road({ answerHook: hook }), exchange('ListTasks'), jsonRpcCodec, 1, true, list));
    expect(flow.end).toBeUndefined();
    expect(flow.changed).toBe(true);
    expect(JSON.stringify(flow.body)).toContain('a1');
    expect(JSON.stringify(flow.body)).not.toContain('b1');
  });

  test('a stream event is checked in its event form, and an event that is not JSON never reaches ownership', async () => {
    const seen: unknown[] = [];
    const hook: AnswerHook = { unary: () => ({ type: 'pass' }), event: (data, isError) => (seen.push([data, isError]), { type: 'pass' }) };
    await run(STREAM_ANSWER, answerFlow(road({ answerHook: hook }), undefined, jsonRpcCodec, 1, false, { x: 1 }, undefined, true));
    expect(seen).toEqual([[{ x: 1 }, true]]);
    const unread = await run(STREAM_ANSWER, answerFlow(road({ answerHook: hook }), undefined, jsonRpcCodec, 1, true, undefined, 'SSE event data is not JSON'));
    expect(seen).toHaveLength(1);
    expect(unread.end?.type).toBe('refuse');
  });

  test('a unary answer that is not JSON is still shown to ownership (as no body), which may refuse it', async () => {
    const seen: unknown[] = [];
    const hook: AnswerHook = { unary: (body, ok) => (seen.push([body, ok]), { type: 'refuse', error: proxyError('upstreamUnavailable', 'x') }) };
    const flow = await run(UNARY_ANSWER, answerFlow(road({ answerHook: hook }), undefined, jsonRpcCodec, 1, false, undefined, 'agent answer is not JSON'));
    expect(seen).toEqual([[undefined, false]]);
    expect(flow.end).toMatchObject({ type: 'refuse', refused: true });
  });
});

describe('unreadable answers', () => {
  test('an answer nothing reads passes as it came, without asking the policy', async () => {
    const p = policy('closed');
    const flow = await run(
      UNARY_ANSWER,
      answerFlow(road({ unreadable: p.unreadable }), undefined, jsonRpcCodec, 1, true, undefined, 'agent answer is not JSON'),
    );
    expect(flow.end).toEqual({ type: 'unjudged' });
    expect(p.asked).toEqual([]);
  });

  test('one the hooks or ownership should read meets the policy: refused under FAIL_MODE=closed, unjudged under open', async () => {
    const g = scripted(() => 'allow');
    for (const [mode, type] of [
      ['closed', 'refuse'],
      ['open', 'unjudged'],
    ] as const) {
      const p = policy(mode);
      const judged = await run(
        UNARY_ANSWER,
        answerFlow(road({ judge: g.judge, unreadable: p.unreadable }), undefined, jsonRpcCodec, 1, true, undefined, 'agent answer is not JSON'),
      );
      expect(judged.end?.type).toBe(type);
      const owned = await run(
        UNARY_ANSWER,
        answerFlow(
          road({ answerHook: { unary: () => ({ type: 'pass' }) }, unreadable: p.unreadable }),
          undefined,
          jsonRpcCodec,
          1,
          true,
          undefined,
          'agent answer is not JSON',
        ),
      );
      expect(owned.end?.type).toBe(type);
      expect(p.asked).toEqual(['agent answer is not JSON', 'agent answer is not JSON']);
    }
    expect(g.seen).toEqual([]);
  });

  test("JSON that is no object is unreadable to the hooks, in the binding's words", async () => {
    const p = policy('closed');
    const flow = await run(
      STREAM_ANSWER,
      answerFlow(
        road({ judge: scripted(() => 'allow').judge, unreadable: p.unreadable, notAnObject: 'SSE event data is not a JSON object' }),
        undefined,
        jsonRpcCodec,
        1,
        true,
        [1, 2],
      ),
    );
    expect(flow.end?.type).toBe('refuse');
    expect(p.asked).toEqual(['SSE event data is not a JSON object']);
  });

  test('the policy is pure: closed refuses with the reason, open and shadow pass', () => {
    const closed = unreadableAnswer('agent answer is not JSON', 'closed', false);
    expect(closed.type).toBe('refuse');
    if (closed.type === 'refuse') expect(closed.error.message).toBe('Agent answer cannot be inspected: agent answer is not JSON');
    expect(unreadableAnswer('x', 'open', false)).toEqual({ type: 'pass' });
    expect(unreadableAnswer('x', 'closed', true)).toEqual({ type: 'pass' });
  });
});

describe('spelling', () => {
  const misspelled = { jsonrpc: '2.0', id: 1, result: { id: 't', Status: { state: 'TASK_STATE_COMPLETED' } } };

  test('a member A2A does not spell so is not shown to the guardian: the policy decides', async () => {
    const g = scripted(() => 'allow');
    const p = policy('closed');
    const flow = await run(UNARY_ANSWER, answerFlow(road({ judge: g.judge, unreadable: p.unreadable }), undefined, jsonRpcCodec, 1, true, misspelled));
    expect(flow.end?.type).toBe('refuse');
    expect(p.asked[0]).toMatch(/does not spell so \(Status\)/);
    expect(g.seen).toEqual([]);
  });

  test("not checked on a non-2xx answer, nor where ownership walked it, nor on JSON the proxy's own codec wrote", async () => {
    const g = scripted(() => 'allow');
    const notOk = await run(UNARY_ANSWER, answerFlow(road({ judge: g.judge }), undefined, jsonRpcCodec, 1, false, misspelled));
    expect(notOk.end).toBeUndefined();
    const owned = await run(
      UNARY_ANSWER,
      answerFlow(road({ judge: g.judge, answerHook: { unary: () => ({ type: 'pass' }) } }), undefined, jsonRpcCodec, 1, true, misspelled),
    );
    expect(owned.end).toBeUndefined();
    const proto = await run(UNARY_ANSWER, answerFlow(road({ judge: g.judge, spelling: false }), undefined, grpcCodec, '1', true, misspelled.result));
    expect(proto.end).toBeUndefined();
    expect(g.seen).toHaveLength(3);
  });

  test("an error event's bare error object is not looked into; anything beside it is", async () => {
    const p = policy('closed');
    const r = road({ judge: scripted(() => 'allow').judge, unreadable: p.unreadable });
    const bare = await run(STREAM_ANSWER, answerFlow(r, undefined, restCodec, 1, false, { Code: 5, Message: 'gone' }, undefined, true));
    expect(bare.end).toBeUndefined();
    const more = await run(STREAM_ANSWER, answerFlow(r, undefined, restCodec, 1, false, { Code: 5, Task: { id: 't' } }, undefined, true));
    expect(more.end?.type).toBe('refuse');
  });
});

describe('response hooks', () => {
  test("an allow: the guardian read the proxy's serialization of the payload, and that is what the caller gets", async () => {
    const g = scripted(() => 'allow');
    const flow = await run(UNARY_ANSWER, answerFlow(road({ judge: g.judge }), exchange('GetTask'), jsonRpcCodec, 1, true, task('t')));
    expect(flow.end).toBeUndefined();
    expect(flow.judged).toEqual({ payload: task('t'), payloadJson: JSON.stringify(task('t')), modified: false });
    expect(g.seen).toEqual([JSON.stringify(task('t'))]);
  });

  test('REST and gRPC answers are judged as the JSON-RPC response they stand for', async () => {
    const g = scripted(() => 'allow');
    await run(UNARY_ANSWER, answerFlow(road({ judge: g.judge }), undefined, restCodec, 7, true, task('t').result));
    await run(UNARY_ANSWER, answerFlow(road({ judge: g.judge, spelling: false }), undefined, grpcCodec, '7', true, task('t').result));
    expect(g.seen.map((s) => JSON.parse(s) as unknown)).toEqual([
      { jsonrpc: '2.0', id: 7, result: task('t').result },
      { jsonrpc: '2.0', id: '7', result: task('t').result },
    ]);
  });

  test("a deny refuses the answer with the guardian's error; a modify replaces it", async () => {
    const denied = await run(UNARY_ANSWER, answerFlow(road({ judge: scripted(() => 'deny').judge }), undefined, jsonRpcCodec, 1, true, task('t')));
    expect(denied.end).toMatchObject({ type: 'refuse', why: 'response hook: deny' });
    if (denied.end?.type === 'refuse') expect(denied.end.error.kind).toBe('denied');
    const modified = await run(STREAM_ANSWER, answerFlow(road({ judge: scripted(() => task('other')).judge }), undefined, jsonRpcCodec, 1, true, task('t')));
    expect(modified.judged).toMatchObject({ payload: task('other'), modified: true });
  });

  test('a call whose caller is gone asks the guardian nothing', async () => {
    const g = scripted(() => 'allow');
    const ex = exchange('GetTask');
    ex.call.caller.cancel();
    const flow = await run(UNARY_ANSWER, answerFlow(road({ judge: g.judge }), ex, jsonRpcCodec, 1, true, task('t')));
    expect(flow.end).toMatchObject({ type: 'refuse', why: 'call ended' });
    expect(g.seen).toEqual([]);
  });
});
