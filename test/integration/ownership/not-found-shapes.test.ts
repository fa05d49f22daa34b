/**
 * Task ownership's "task not found" must be the agent's own
 * answer to an unknown task, byte for byte, on every binding and version (the refusal moved from
 * proxy/ownership.ts taskNotFoundAnswer to the codecs' errorAnswer). Real SDK agent, ROLE=server with
 * OIDC callers; each case is sent to the agent directly and through the proxy naming the same unknown task.
 */
import type { TestAgent } from '../../helpers/agent';
import type { TestGuardian } from '../../helpers/guardian';
import { startOwnershipStack, type OwnershipStack, type TestIdentities } from '../../helpers/identities';
import type { TestProxy } from '../../helpers/proxy-harness';

let stack: OwnershipStack;
let agent: TestAgent;
let guardian: TestGuardian;
let ids: TestIdentities;
let proxy: TestProxy;

beforeAll(async () => {
  stack = await startOwnershipStack();
  ({ agent, guardian, ids, proxy } = stack);
});
afterAll(() => stack?.close());

const T = 'no-such-task';
const V1 = { 'a2a-version': '1.0' };
const msg = (extra: Record<string, unknown>) => ({ messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'x' }], ...extra });
const msg03 = (extra: Record<string, unknown>) => ({ kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'x' }], ...extra });

interface Case {
  readonly name: string;
  readonly verb: string;
  readonly path: string;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}
const rpc = (name: string, method: string, params: unknown, headers: Record<string, string> = {}, accept = 'application/json'): Case => ({
  name,
  verb: 'POST',
  path: '/a2a/jsonrpc',
  body: { jsonrpc: '2.0', id: 7, method, params },
  headers: { accept, ...headers },
});
const rest = (name: string, verb: string, path: string, body?: unknown, headers: Record<string, string> = {}): Case => ({
  name,
  verb,
  path: `/a2a/rest${path}`,
  ...(body === undefined ? {} : { body }),
  headers,
});

const CASES: Case[] = [
  rpc('JSON-RPC v1.0 GetTask', 'GetTask', { id: T }, V1),
  rpc('JSON-RPC v1.0 CancelTask', 'CancelTask', { id: T }, V1),
  rpc('JSON-RPC v1.0 SubscribeToTask', 'SubscribeToTask', { id: T }, V1, 'text/event-stream'),
  rpc('JSON-RPC v1.0 GetTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', { taskId: T, id: 'c' }, V1),
  rpc('JSON-RPC v1.0 SendMessage continuing a task', 'SendMessage', { message: msg({ taskId: T }) }, V1),
  rpc('JSON-RPC v1.0 SendStreamingMessage continuing a task', 'SendStreamingMessage', { message: msg({ taskId: T }) }, V1, 'text/event-stream'),
  rpc('JSON-RPC v0.3 tasks/get', 'tasks/get', { id: T }),
  rpc('JSON-RPC v0.3 tasks/cancel', 'tasks/cancel', { id: T }),
  rpc('JSON-RPC v0.3 tasks/resubscribe', 'tasks/resubscribe', { id: T }, {}, 'text/event-stream'),
  rpc('JSON-RPC v0.3 tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/get', { id: T }),
  rpc('JSON-RPC v0.3 message/send continuing a task', 'message/send', { message: msg03({ taskId: T }) }),
  rpc('JSON-RPC v0.3 message/stream continuing a task', 'message/stream', { message: msg03({ taskId: T }) }, {}, 'text/event-stream'),
  rest('REST v1.0 GetTask', 'GET', `/tasks/${T}`, undefined, V1),
  rest('REST v1.0 CancelTask', 'POST', `/tasks/${T}:cancel`, {}, V1),
  rest('REST v1.0 SubscribeToTask', 'POST', `/tasks/${T}:subscribe`, {}, { ...V1, accept: 'text/event-stream' }),
  rest('REST v1.0 SendMessage continuing a task', 'POST', '/message:send', { message: msg({ taskId: T }) }, V1),
  rest('REST v0.3 GetTask', 'GET', `/v1/tasks/${T}`),
  rest('REST v0.3 CancelTask', 'POST', `/v1/tasks/${T}:cancel`, {}),
  rest('REST v0.3 SubscribeToTask', 'POST', `/v1/tasks/${T}:subscribe`, {}, { accept: 'text/event-stream' }),
  rest('REST v0.3 SendMessage continuing a task', 'POST', '/v1/message:send', {
    message: { messageId: 'm-1', role: 'ROLE_USER', content: [{ text: 'x' }], taskId: T },
  }),
];

async function send(base: string, c: Case, headers: Record<string, string>): Promise<{ status: number; type: string; body: string }> {
  const h: Record<string, string> = { ...(c.body === undefined ? {} : { 'content-type': 'application/json' }), ...c.headers, ...headers };
  const r = await fetch(`${base}${c.path}`, { method: c.verb, headers: h, ...(c.body === undefined ? {} : { body: JSON.stringify(c.body) }) });
  return { status: r.status, type: (r.headers.get('content-type') ?? '').split(';')[0] as string, body: await r.text() };
}

test.each(CASES.map((c) => [c.name, c] as const))('%s: the proxy\'s refusal is the agent\'s own "task not found" (status, body, media type)', async (_n, c) => {
  const own = await send(agent.origin, c, {});
  expect(own.body).toContain(`Task not found: ${T}`);
  guardian.clear();
  const refused = await send(proxy.url, c, ids.headersAs('B'));
  expect(guardian.calls()).toEqual([]);
  expect({ status: refused.status, body: refused.body }).toEqual({ status: own.status, body: own.body });
  // REST v1.0: see the test below.
  if (!(c.path.startsWith('/a2a/rest/') && !c.path.startsWith('/a2a/rest/v1/'))) expect(refused.type).toBe(own.type);
});

// Not a regression of the restructure (79ecf72 answers the same): a v1.0 REST agent (the SDK) answers
// "task not found" as application/a2a+json, the proxy's refusal (restCodec.errorAnswer) as application/json,
// so the refusal is not "exactly as the agent answers a task that does not exist" (README, task ownership).
test("REST v1.0: the refusal has the agent's media type (application/a2a+json)", async () => {
  for (const c of CASES.filter((x) => x.path.startsWith('/a2a/rest/') && !x.path.startsWith('/a2a/rest/v1/'))) {
    const own = await send(agent.origin, c, {});
    const refused = await send(proxy.url, c, ids.headersAs('B'));
    expect({ name: c.name, type: refused.type }).toEqual({ name: c.name, type: own.type });
  }
});
