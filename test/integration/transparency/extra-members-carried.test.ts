/**
 * Nothing the caller sends is dropped on the way to the agent while the caller is told success: what the
 * proxy forwards was shown to the guardian, and what it does not forward is refused with an error naming it.
 * JSON-RPC members beside jsonrpc/id/method/params (VoltAgent reads `context` for its memory) reach the
 * agent as approved; REST body members and GET query parameters are params the guardian sees and the
 * agent gets; a query on a JSON-RPC call, a query on a REST route with a body, a misspelled or unsafe
 * member, and a gRPC field the SDK's decoder does not know are refused by name. A real SDK agent (HTTP
 * and gRPC), its raw requests and its request handler, and a scripted guardian.
 */
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { postsTo, rawRpc, rawSse } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFrame, rawGrpc } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(60_000);

const rec = handlerRecorder();
const stack = useStack({ grpc: true, wrapRequestHandler: rec.wrap });
let proxy: TestProxy;
beforeAll(async () => {
  proxy = await stack.proxy({ GRPC_PORT: '0' });
});
beforeEach(() => rec.clear());

const V1 = { 'a2a-version': '1.0' };
const context = { userId: 'user-7', conversationId: 'conv-3' };
const message = (text: string) => ({ messageId: `m-${text}`, role: 'ROLE_USER', parts: [{ text }] });
const v03Message = (text: string) => ({ kind: 'message', messageId: `m-${text}`, role: 'user', parts: [{ kind: 'text', text }] });
const payloads = () => stack.guardian.calls().map((e) => e.params.payload);
const agentBodies = (method: string) => postsTo(stack.agent, method).map((r) => r.body as Record<string, unknown>);

describe('JSON-RPC: members beside the four are carried, shown to the guardian', () => {
  test.each([
    ['v1.0 SendMessage', V1, 'SendMessage', message('hello')],
    ['v0.3 message/send', {}, 'message/send', v03Message('hello')],
  ])('%s: the agent receives context as the guardian saw it', async (_n, headers, method, msg) => {
    const body = { jsonrpc: '2.0', id: 41, method, params: { message: msg }, context };
    const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, body, headers);
    expect(r.json.id).toBe(41);
    expect(r.json.result).toBeDefined();
    expect(payloads()).toEqual([body]);
    expect(agentBodies(method)).toEqual([body]);
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
  });

  test('a stream carries them too', async () => {
    const body = { jsonrpc: '2.0', id: 'st-1', method: 'SendStreamingMessage', params: { message: message('stream me') }, context };
    const r = await rawSse(`${proxy.url}/a2a/jsonrpc`, body, { ...V1, accept: 'text/event-stream' });
    expect(r.events.length).toBeGreaterThan(0);
    expect(payloads()).toEqual([body]);
    expect(agentBodies('SendStreamingMessage')).toEqual([body]);
  });

  test('a guardian modify may change or remove them; the agent gets the replacement', async () => {
    stack.guardian.script((env) => {
      const p = env.params.payload;
      return p.params.message.parts[0].text === 'drop'
        ? { decision: 'modify', modifiedPayload: { jsonrpc: p.jsonrpc, id: p.id, method: p.method, params: p.params } }
        : { decision: 'modify', modifiedPayload: { ...p, context: { userId: 'masked' } } };
    });
    await rawRpc(`${proxy.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: message('change') }, context }, V1);
    await rawRpc(`${proxy.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 2, method: 'SendMessage', params: { message: message('drop') }, context }, V1);
    expect(agentBodies('SendMessage').map((b) => b.context)).toEqual([{ userId: 'masked' }, undefined]);
    expect(rec.calls).toHaveLength(2);
  });

  test.each([
    ['a JSON-RPC member spelled another way', { Params: {} }],
    ['a response member', { result: {} }],
    ['two names a decoder reads as one, inside a carried member', { context: { userId: 'a', UserId: 'b' } }],
  ])('a guardian modify adding %s is no valid answer: nothing reaches the agent', async (_n, added) => {
    stack.guardian.script((env) => ({ decision: 'modify', modifiedPayload: { ...env.params.payload, ...added } }));
    const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 5, method: 'SendMessage', params: { message: message('m') } }, V1);
    expect(r.json).toMatchObject({ id: 5, error: { code: -31503 } });
    expect(rec.calls).toEqual([]);
    expect(agentBodies('SendMessage')).toEqual([]);
  });

  test.each([
    ['a JSON-RPC member in another case', '"Params":{}', /member names must be exact \(Params\)/],
    ['a JSON-RPC member with a separator', '"i_d":9', /member names must be exact \(i_d\)/],
    ['a response member', '"error":null', /carries no error member/],
    ['__proto__', '"__proto__":{"context":{"userId":"admin"}}', /__proto__ is not accepted/],
    ['two names a decoder reads as one, inside a carried member', '"context":{"userId":"a","user_id":"b"}', /Ambiguous member names in context \(user_id\)/],
  ])("%s is refused by name, with the caller's id; nothing reaches the guardian or the agent", async (_n, member, why) => {
    const text = `{"jsonrpc":"2.0","id":"r-1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}},${member}}`;
    const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, text, V1);
    expect(r.json).toMatchObject({ id: 'r-1', error: { code: -31400 } });
    expect(r.json.error.message).toMatch(why);
    expect(stack.guardian.calls()).toEqual([]);
    expect(rec.calls).toEqual([]);
  });

  test("a query on a JSON-RPC call (VoltAgent's ?context=) is refused naming the parameter: the guardian would not see it", async () => {
    const r = await rawRpc(
      `${proxy.url}/a2a/jsonrpc?context=%7B%22userId%22%3A%22u%22%7D`,
      { jsonrpc: '2.0', id: 8, method: 'SendMessage', params: { message: message('q') } },
      V1,
    );
    expect(r.json).toMatchObject({ id: 8, error: { code: -32600 } });
    expect(r.json.error.message).toMatch(/take no query parameters \(context\)/);
    expect(stack.guardian.calls()).toEqual([]);
    expect(rec.calls).toEqual([]);
  });
});

describe('REST: body members and GET query parameters are params, shown and carried', () => {
  test('an unknown body member reaches the agent as the guardian saw it', async () => {
    const body = { message: message('rest'), context };
    const r = await rawRpc(`${proxy.url}/a2a/rest/message:send`, body, V1);
    expect(r.status).toBe(200);
    expect(payloads().map((p) => p.params)).toEqual([body]);
    expect(
      postsTo(stack.agent)
        .filter((q) => q.path.endsWith('message:send'))
        .map((q) => q.body),
    ).toEqual([body]);
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
  });

  test('an unknown query parameter on a GET route reaches the agent as the guardian saw it', async () => {
    const r = await rawRpc(`${proxy.url}/a2a/rest/tasks/no-such-task?context=conv-3&historyLength=2`, undefined, V1, { method: 'GET' });
    expect(r.status).toBe(404);
    expect(payloads().map((p) => p.params)).toEqual([{ context: 'conv-3', historyLength: 2, id: 'no-such-task' }]);
    const got = stack.agent.received.filter((q) => q.path.includes('/tasks/no-such-task'));
    expect(got.map((q) => new URL(q.path, 'http://x').searchParams.get('context'))).toEqual(['conv-3']);
  });

  test.each([
    [
      'a query on a route that carries a body',
      '/a2a/rest/message:send?context=x',
      JSON.stringify({ message: message('q') }),
      /query parameter context is not accepted/,
    ],
    [
      '__proto__ in the body',
      '/a2a/rest/message:send',
      `{"message":${JSON.stringify(message('p'))},"__proto__":{"context":{}}}`,
      /member __proto__ is not accepted/,
    ],
  ])('%s is refused by name (HTTP 400); nothing reaches the guardian or the agent', async (_n, path, body, why) => {
    const r = await rawRpc(`${proxy.url}${path}`, body, V1);
    expect(r.status).toBe(400);
    expect(r.json.error.message).toMatch(why);
    expect(stack.guardian.calls()).toEqual([]);
    expect(rec.calls).toEqual([]);
  });

  test('a GET query parameter named __proto__ (which query parsers drop) is refused by name', async () => {
    const r = await rawRpc(`${proxy.url}/a2a/rest/tasks/t-1?__proto__=x`, undefined, V1, { method: 'GET' });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toMatch(/member __proto__ is not accepted/);
    expect(rec.calls).toEqual([]);
  });

  test('a guardian modify adding a member beside params, which a REST call cannot carry, is no valid answer', async () => {
    stack.guardian.script((env) => ({ decision: 'modify', modifiedPayload: { ...env.params.payload, context } }));
    const r = await rawRpc(`${proxy.url}/a2a/rest/message:send`, { message: message('rest modify') }, V1);
    expect(r.status).toBe(503);
    expect(rec.calls).toEqual([]);
  });
});

describe("gRPC: a field the SDK's decoder does not know is refused by number", () => {
  const SEND = '/lf.a2a.v1.A2AService/SendMessage';
  const send = codecFor(grpcMethodForPath(SEND) as NonNullable<ReturnType<typeof grpcMethodForPath>>).request;
  const sendBytes = (text: string): Buffer => send.encode(send.fromJson({ message: message(text) }));

  test('an unknown field at the top, or inside the message: INVALID_ARGUMENT naming it; nothing reaches the guardian or the agent', async () => {
    const top = Buffer.concat([
      sendBytes('with extras'),
      new BinaryWriter()
        .uint32((77 << 3) | 2)
        .string('context')
        .finish(),
    ]);
    const msg = new BinaryWriter()
      .uint32(10)
      .string('m1')
      .uint32(32)
      .int32(1)
      .uint32((55 << 3) | 0)
      .int32(1)
      .finish();
    const nested = Buffer.from(new BinaryWriter().uint32(18).bytes(msg).finish());
    for (const [bytes, field] of [
      [top, 77],
      [nested, 55],
    ] as const) {
      const a = await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(bytes), V1);
      expect(a.grpcStatus).toBe(3);
      expect(a.grpcMessage).toContain(`field ${field} (wire type`);
    }
    expect(stack.guardian.calls()).toEqual([]);
    expect(rec.calls).toEqual([]);
  });

  test('a guardian modify adding a member beside params, which gRPC cannot carry, is no valid answer', async () => {
    stack.guardian.script((env) => ({ decision: 'modify', modifiedPayload: { ...env.params.payload, context } }));
    const a = await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(sendBytes('grpc modify')), V1);
    expect(a.grpcStatus).toBe(14);
    expect(rec.calls).toEqual([]);
  });

  test('control: the same message without extras goes through', async () => {
    const a = await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(sendBytes('plain')), V1);
    expect(a.grpcStatus).toBe(0);
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
  });
});
