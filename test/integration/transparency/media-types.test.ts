/**
 * Media types the A2A bindings allow: JSON-RPC takes application/json and application/a2a+json (the A2A
 * media type, which the Python SDK's server reads) with or without a UTF-8 charset; v1.0 REST takes both,
 * v0.3 REST application/json only (its spec says so). Whatever came, the agent gets application/json:
 * the JS SDK agent's own JSON-RPC endpoint refuses application/a2a+json. Other media types and charsets
 * are refused with the caller's id. A real SDK agent, its raw requests and its request handler.
 */
import { postsTo, rawRpc, rawSse } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

const rec = handlerRecorder();
const stack = useStack({ wrapRequestHandler: rec.wrap });
let proxy: TestProxy;
beforeAll(async () => {
  proxy = await stack.proxy();
});
beforeEach(() => rec.clear());

const V1 = { 'a2a-version': '1.0' };
const send = (id: number, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'SendMessage',
  params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } },
});
const v03Send = (id: number, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
});

describe('JSON-RPC', () => {
  test.each(['application/a2a+json', 'application/a2a+json; charset=utf-8', 'Application/A2A+JSON', 'application/json; charset=UTF-8'])(
    '%s: judged and forwarded, the agent gets application/json',
    async (ct) => {
      for (const [body, headers] of [
        [send(1, 'hi'), V1],
        [v03Send(2, 'hi'), {}],
      ] as const) {
        const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, body, { ...headers, 'content-type': ct });
        expect(r.json).toMatchObject({ id: body.id, result: expect.anything() });
      }
      expect(stack.guardian.calls().map((e) => e.params.payload.id)).toEqual([1, 2]);
      expect(postsTo(stack.agent, 'SendMessage', 'message/send').map((q) => q.headers['content-type'])).toEqual(['application/json', 'application/json']);
      expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage', 'sendMessage']);
    },
  );

  test('a stream sent as application/a2a+json', async () => {
    const body = { ...send(3, 'stream'), method: 'SendStreamingMessage' };
    const r = await rawSse(`${proxy.url}/a2a/jsonrpc`, body, { ...V1, 'content-type': 'application/a2a+json', accept: 'text/event-stream' });
    expect(r.events.length).toBeGreaterThan(0);
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessageStream']);
  });

  test('why the proxy sends application/json: the JS SDK agent itself refuses application/a2a+json', async () => {
    const r = await rawRpc(`${stack.agent.origin}/a2a/jsonrpc`, send(4, 'direct'), { ...V1, 'content-type': 'application/a2a+json' });
    expect(r.json.error.code).toBe(-32005);
  });

  test.each([
    ['text/plain', -32005],
    ['application/a2a+jsonx', -32005],
    ['application/a2a+json; charset=utf-16', -31400],
    ['application/json; charset=iso-8859-1', -31400],
  ])("%s: refused (%d) with the caller's id, nothing forwarded", async (ct, code) => {
    const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, send(5, 'refused'), { ...V1, 'content-type': ct });
    expect(r.json).toMatchObject({ id: 5, error: { code } });
    expect(stack.guardian.calls()).toEqual([]);
    expect(rec.calls).toEqual([]);
  });
});

describe('REST', () => {
  const body = { message: { messageId: 'm-r', role: 'ROLE_USER', parts: [{ text: 'rest' }] } };

  test.each(['application/json', 'application/a2a+json', 'application/a2a+json; charset=utf-8'])(
    'v1.0 %s: judged and forwarded as application/json',
    async (ct) => {
      const r = await rawRpc(`${proxy.url}/a2a/rest/message:send`, body, { ...V1, 'content-type': ct });
      expect(r.status).toBe(200);
      expect(
        postsTo(stack.agent)
          .filter((q) => q.path.endsWith('message:send'))
          .map((q) => q.headers['content-type']),
      ).toEqual(['application/json']);
      expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
    },
  );

  test('v0.3 application/a2a+json: refused (the v0.3 HTTP+JSON binding takes application/json only)', async () => {
    const v03 = { message: { messageId: 'm-3', role: 'ROLE_USER', content: [{ text: 'rest' }] } };
    const r = await rawRpc(`${proxy.url}/a2a/rest/v1/message:send`, v03, { 'content-type': 'application/a2a+json' });
    expect(r.status).toBe(400);
    expect(r.json.error.details[0].reason).toBe('CONTENT_TYPE_NOT_SUPPORTED');
    expect(rec.calls).toEqual([]);
  });
});
