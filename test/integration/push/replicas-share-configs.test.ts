/**
 * Push relay records live where task ownership keeps its owners: two replicas sharing a real Redis (and one
 * PUSH_RELAY_URL) show a config set through one replica with the caller's URL through the other, and
 * either replica's relay delivers for it; another caller sees nothing of it.
 */
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';
import { startRedis, type TestRedis } from '../../helpers/redis';
import { startWebhook, type Webhook } from '../../helpers/webhook';
import { freePort, waitFor } from '../../helpers/net';

jest.setTimeout(60_000);

const stack = useStack({ sdkPushSender: true, slowMs: 600, stepMs: 50 });
let ids: TestIdentities;
let redis: TestRedis;
let hook: Webhook;
let r1: TestProxy;
let r2: TestProxy;

beforeAll(async () => {
  ids = await startIdentities();
  redis = await startRedis();
  hook = await startWebhook();
  const port = await freePort();
  const env = {
    ...ids.env,
    TASK_STORE_URL: redis.url,
    TASK_STORE_PREFIX: 'push-agent:',
    INSPECT_RESPONSES: 'true',
    PUSH_ALLOW_PRIVATE_WEBHOOKS: 'true',
    PUSH_RELAY_URL: `http://127.0.0.1:${port}`,
  };
  r1 = await stack.proxy({ ...env, PUSH_RELAY_PORT: String(port) });
  r2 = await stack.proxy(env);
});
afterAll(async () => {
  await hook?.close();
  await ids?.close();
  await redis?.close();
});

async function rpc(replica: TestProxy, who: Caller, method: string, params: unknown): Promise<any> {
  const res = await fetch(`${replica.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs(who) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return res.json();
}
const message = (text: string) => ({ messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] });

it('a config set through one replica is shown and delivered through the other, never to another caller', async () => {
  const started = await rpc(r1, 'A', 'SendMessage', { message: message('slow'), configuration: { returnImmediately: true } });
  const taskId = started.result.task.id as string;
  const webhook = `${hook.origin}/hooks/replicas`;
  const set = await rpc(r1, 'A', 'CreateTaskPushNotificationConfig', { taskId, url: webhook, token: 'tok-a' });
  expect(set.result.url).toBe(webhook);
  const got = await rpc(r2, 'A', 'GetTaskPushNotificationConfig', { taskId, id: set.result.id });
  expect(got.result).toMatchObject({ url: webhook, token: 'tok-a' });
  const other = await rpc(r2, 'B', 'GetTaskPushNotificationConfig', { taskId, id: set.result.id });
  expect(other.error?.code).toBe(-32001);
  await waitFor(() => hook.received.some((r) => r.text.includes('TASK_STATE_COMPLETED')), 15_000, 'the completed task at the webhook');
  expect(hook.received.every((r) => r.headers['x-a2a-notification-token'] === 'tok-a')).toBe(true);
  // The relay URL the agent got is r1's; r2's own relay reads the same record from Redis.
  const relayUrl = JSON.stringify(stack.agent.received.map((r) => r.body)).match(
    /"url":"(http:\/\/127\.0\.0\.1:\d+\/a2a-guard\/push\/[A-Za-z0-9_-]+)"/,
  )?.[1] as string;
  const atR2 = relayUrl.replace(/^http:\/\/127\.0\.0\.1:\d+/, r2.pushRelayUrl as string);
  const n = hook.received.length;
  const res = await fetch(atR2, {
    method: 'POST',
    headers: { 'content-type': 'application/a2a+json' },
    body: JSON.stringify({ statusUpdate: { taskId, contextId: started.result.task.contextId, status: { state: 'TASK_STATE_COMPLETED' } } }),
  });
  expect(res.status).toBe(202);
  await waitFor(() => hook.received.length === n + 1, 5000, 'the delivery through the other replica');
});
