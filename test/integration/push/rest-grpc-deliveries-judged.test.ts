/**
 * Push deliveries through the proxy over REST (v1.0, v0.3) and gRPC: the SDK client sets a webhook, the
 * agent's handler acts on the relay's URL, the SDK agent's push sender delivers through the relay, and
 * the webhook on 127.0.0.1 receives every judged notification with the caller's token; get and list
 * answer with the caller's own URL.
 */
import { collect, makeClient, sendReq, type Client } from '../../helpers/agent';
import { makeGrpcClient } from '../../helpers/grpc';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { startWebhook, type Webhook } from '../../helpers/webhook';
import { sleep, waitFor } from '../../helpers/net';
import type { Envelope } from '../../helpers/guardian';

jest.setTimeout(60_000);

const rec = handlerRecorder();
const stack = useStack({ sdkPushSender: true, grpc: true, slowMs: 600, stepMs: 50, wrapRequestHandler: rec.wrap });
let hook: Webhook;
let proxy: TestProxy;
beforeAll(async () => {
  hook = await startWebhook();
  proxy = await stack.proxy({ INSPECT_RESPONSES: 'true', PUSH_ALLOW_PRIVATE_WEBHOOKS: 'true', GRPC_PORT: '0' });
});
afterAll(async () => {
  await hook.close();
});
beforeEach(() => {
  hook.received.length = 0;
  rec.clear();
});

const deliveries = (): Envelope[] => stack.guardian.calls().filter((e) => e.params?.context?.to?.agent?.metadata?.pushDelivery !== undefined);

const CLIENTS: ReadonlyArray<readonly [string, () => Promise<Client>]> = [
  ['REST v1.0', () => makeClient(proxy.url, 'HTTP+JSON', '1.0')],
  ['REST v0.3', () => makeClient(proxy.url, 'HTTP+JSON', '0.3')],
  ['gRPC v1.0', async () => (await makeGrpcClient(proxy.url)).client],
];

describe.each(CLIENTS)('%s', (_name, client) => {
  it('relays a config set on a running task: judged deliveries with the caller token, get/list show the caller URL', async () => {
    const c = await client();
    const task = (await c.sendMessage(sendReq('slow', true))) as { id: string };
    const webhook = `${hook.origin}/hooks/${_name.replace(/\W+/g, '-')}`;
    const created = await c.createTaskPushNotificationConfig({
      tenant: '',
      id: '',
      taskId: task.id,
      url: webhook,
      token: 'tok-binding',
      authentication: undefined,
    });
    expect(created.url).toBe(webhook);
    expect(created.token).toBe('tok-binding');
    const got = await c.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id });
    expect(got.url).toBe(webhook);
    const listed = await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    expect(listed.configs.map((x) => x.url)).toEqual([webhook]);
    // The agent's handler acted on the relay's URL, never the caller's.
    const acted = rec.calls.filter((x) => x.method === 'createTaskPushNotificationConfig').map((x) => (x.params as { url: string }).url);
    expect(acted).toHaveLength(1);
    expect(acted[0]?.startsWith(`${proxy.pushRelayUrl}/`)).toBe(true);
    // Only this task's: a notification of an earlier test's task may still be on its way.
    const mine = () => hook.received.filter((r) => r.path === new URL(webhook).pathname);
    await waitFor(() => mine().some((r) => /TASK_STATE_COMPLETED|"completed"/.test(r.text)), 15_000, 'the completed task at the webhook');
    for (const r of mine()) expect(r.headers['x-a2a-notification-token']).toBe('tok-binding');
    const judged = deliveries().filter((e) => e.params.context.to.agent.metadata.pushDelivery.taskId === task.id);
    expect(judged.map((e) => JSON.stringify(e.params.payload.result))).toEqual(mine().map((r) => r.text));
  });

  it('drops denied deliveries of an inline config of a streamed message', async () => {
    const c = await client();
    stack.guardian.script((env) => (env.params?.context?.to?.agent?.metadata?.pushDelivery === undefined ? { decision: 'allow' } : { decision: 'deny' }));
    const req = sendReq('hello inline');
    const events = await collect(
      c.sendMessageStream({
        ...req,
        configuration: {
          acceptedOutputModes: [],
          historyLength: undefined,
          returnImmediately: false,
          taskPushNotificationConfig: { tenant: '', id: '', taskId: '', url: `${hook.origin}/hooks/inline`, token: 'x', authentication: undefined },
        },
      }),
    );
    expect(events.length).toBeGreaterThan(0);
    await waitFor(() => deliveries().length >= 2, 15_000, 'judged deliveries');
    await sleep(200);
    expect(hook.received.filter((r) => r.path === '/hooks/inline')).toEqual([]);
  });
});
