/**
 * A remote guardian's large answer (read by the proxy a piece per turn) decides as a small one does, with a real
 * SDK agent and a real HTTP guardian: a multi-MiB modify reaches the agent as exactly the guardian's payload; a
 * large answer whose modified payload is small reaches the agent's handler as that payload; a large answer that
 * names `decision` twice is no valid answer (design section 5: refused, FAIL_MODE=closed), and nothing reaches the agent.
 */
import { rawRpc } from '../../helpers/agent';
import type { Envelope } from '../../helpers/guardian';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

const rec = handlerRecorder();
const stack = useStack({ name: 'Large Answer Agent', version: '1.0.0', wrapRequestHandler: rec.wrap });
let proxy: TestProxy;

beforeAll(async () => {
  proxy = await stack.proxy({ ROLE: 'server' });
});
beforeEach(() => rec.calls.splice(0));

const send = (id: string, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'SendMessage',
  params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } },
});
const call = (body: unknown) => rawRpc(`${proxy.url}/a2a/jsonrpc`, body, { 'a2a-version': '1.0' });
/** The envelope's payload with its message's text replaced. */
const withText = (env: Envelope, text: string) => {
  const p = env.params.payload;
  return { ...p, params: { ...p.params, message: { ...p.params.message, parts: [{ text }] } } };
};
/** Text of about `bytes` UTF-8 bytes, with escapes and characters of every UTF-8 length. */
const filler = (bytes: number) => 'masked [EMAIL] "q" \\ é € 🍰 '.repeat(Math.ceil(bytes / 36));

test('a 3 MiB modify reaches the agent as exactly the payload the guardian wrote', async () => {
  const big = filler(3 * 1024 * 1024);
  let modified: unknown;
  stack.guardian.script((env) => {
    modified = withText(env, big);
    return { decision: 'modify', modifiedPayload: modified as object };
  });
  const res = await call(send('big-1', 'write to alice@example.com'));
  const forwarded = stack.agent.received.filter((r) => r.method === 'POST');
  expect(forwarded).toHaveLength(1);
  expect(forwarded[0]?.bodyText).toBe(JSON.stringify(modified));
  // The SDK agent then refuses a body over its own 100 KB JSON limit: its answer, passed on.
  expect(res.status).toBe(413);
  expect(stack.agent.received.some((r) => r.bodyText.includes('alice@example.com'))).toBe(false);
});

test("a 1 MiB answer whose modified payload is small: the agent's handler acts on that payload", async () => {
  stack.guardian.script((env) => ({ decision: 'modify', modifiedPayload: withText(env, 'write to [EMAIL]'), data: { note: filler(1024 * 1024) } }));
  const res = await call(send('big-2', 'write to alice@example.com'));
  expect(res.status).toBe(200);
  expect(res.json.result).toBeDefined();
  expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
  expect(JSON.stringify(rec.calls[0]?.params)).toContain('write to [EMAIL]');
  expect(JSON.stringify(rec.calls[0]?.params)).not.toContain('alice@example.com');
});

test('a 1 MiB answer that names decision twice (deny, then allow) is refused, and nothing reaches the agent', async () => {
  stack.guardian.script((env) => ({
    raw: {
      status: 200,
      body: `{"jsonrpc":"2.0","id":${JSON.stringify(env.id)},"result":{"decision":"deny","message":"no","data":{"note":${JSON.stringify(filler(1024 * 1024))}},"dec\\u0069sion":"allow"}}`,
    },
  }));
  const res = await call(send('big-3', 'hello'));
  expect(res.status).toBe(200);
  expect(res.json.error.code).toBe(-31503);
  expect(res.json.id).toBe('big-3');
  expect(rec.calls).toEqual([]);
  expect(stack.agent.received.filter((r) => r.method === 'POST')).toEqual([]);
});
