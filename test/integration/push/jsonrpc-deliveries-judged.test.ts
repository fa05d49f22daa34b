/**
 * Push deliveries through the proxy over JSON-RPC (v1.0 and v0.3): the real SDK agent's own push sender
 * delivers to the proxy's relay, the guardian judges every delivery, and the caller's real webhook on
 * 127.0.0.1 receives only what it approved, with the caller's token. The rewrite is invisible to the
 * caller (get/list show its own URL); a wrong key, a wrong task or a host resolving inside is refused.
 */
import { useStack } from '../../helpers/proxy-harness';
import { startWebhook, type Webhook } from '../../helpers/webhook';
import { sleep, waitFor } from '../../helpers/net';
import { validateAosRequest } from '../../helpers/schema';
import type { Envelope } from '../../helpers/guardian';

jest.setTimeout(60_000);

const stack = useStack({ sdkPushSender: true, slowMs: 600, stepMs: 50 });
let hook: Webhook;
beforeAll(async () => {
  hook = await startWebhook();
});
afterAll(async () => {
  await hook.close();
});
beforeEach(() => {
  hook.received.length = 0;
});

/** What the webhook received at one path (each test has its own: a notification of an earlier test's task may still arrive). */
const at = (path: string) => hook.received.filter((r) => r.path === path);

const RELAYED = { INSPECT_RESPONSES: 'true', PUSH_ALLOW_PRIVATE_WEBHOOKS: 'true' };

async function rpc(base: string, method: string, params: unknown, version: '1.0' | '0.3', id: number | string = 1): Promise<any> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (version === '1.0') headers['a2a-version'] = '1.0';
  const res = await fetch(`${base}/a2a/jsonrpc`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) });
  return res.json();
}

const v1Message = (text: string) => ({ messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] });
const v03Message = (text: string) => ({ kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts: [{ kind: 'text', text }] });

/** Delivery envelopes the guardian saw (response hooks whose caller side carries pushDelivery). */
const deliveries = (): Envelope[] => stack.guardian.calls().filter((e) => e.params?.context?.to?.agent?.metadata?.pushDelivery !== undefined);

/** What the agent was told to deliver to, as its handler received the push config. */
function urlsTheAgentGot(): string[] {
  const out: string[] = [];
  const walk = (x: unknown): void => {
    if (Array.isArray(x)) x.forEach(walk);
    else if (x !== null && typeof x === 'object') {
      for (const [k, v] of Object.entries(x)) {
        if (k === 'url' && typeof v === 'string') out.push(v);
        else walk(v);
      }
    }
  };
  for (const r of stack.agent.received) walk((r.body as { params?: unknown } | undefined)?.params);
  return out;
}

describe('JSON-RPC v1.0: an inline webhook of SendMessage', () => {
  it('delivers every notification judged, with the caller token, and the agent never sees the caller URL', async () => {
    const proxy = await stack.proxy(RELAYED);
    const webhook = `${hook.origin}/hooks/v1?caller=a`;
    const answer = await rpc(
      proxy.url,
      'SendMessage',
      { message: v1Message('hello push'), configuration: { taskPushNotificationConfig: { url: webhook, token: 'caller-token-1' } } },
      '1.0',
    );
    const task = answer.result.task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    await waitFor(() => hook.received.some((r) => JSON.stringify(r.body).includes('TASK_STATE_COMPLETED')), 15_000, 'the completed task at the webhook');
    // The agent was given the relay, never the caller's webhook.
    const given = urlsTheAgentGot();
    expect(given.length).toBeGreaterThan(0);
    expect(given.every((u) => u.startsWith(`${proxy.pushRelayUrl}/`))).toBe(true);
    expect(given.some((u) => u.includes(hook.origin))).toBe(false);
    // The webhook got what the agent sent, as the SDK sends it, with the caller's own token.
    for (const r of hook.received) {
      expect(r.path).toBe('/hooks/v1?caller=a');
      expect(r.headers['x-a2a-notification-token']).toBe('caller-token-1');
      expect(r.headers['content-type']).toMatch(/^application\/a2a\+json/);
    }
    expect(hook.received.some((r) => JSON.stringify(r.body).includes('echo: hello push'))).toBe(true);
    // Each delivery was judged first: a schema-valid message/stream response envelope carrying exactly what arrived.
    const judged = deliveries().filter((e) => e.params.context.to.agent.metadata.pushDelivery.taskId === task.id);
    expect(judged.length).toBe(hook.received.length);
    for (const env of judged) {
      expect(validateAosRequest(env, 'message/stream', { fullSide: 'from' })).toEqual([]);
      expect(env.params.context.to.agent.metadata.pushDelivery).toEqual({ taskId: task.id, webhook });
    }
    expect(judged.map((e) => JSON.stringify(e.params.payload.result))).toEqual(hook.received.map((r) => r.text));
    expect(await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_push_deliveries_total')).toMatch(/outcome="delivered"} [1-9]/);
  });

  it('drops every delivery the guardian denies: nothing arrives at the webhook', async () => {
    const proxy = await stack.proxy(RELAYED);
    stack.guardian.script((env) =>
      env.params?.context?.to?.agent?.metadata?.pushDelivery === undefined ? { decision: 'allow' } : { decision: 'deny', message: 'no deliveries' },
    );
    const answer = await rpc(
      proxy.url,
      'SendMessage',
      { message: v1Message('hello deny'), configuration: { taskPushNotificationConfig: { url: `${hook.origin}/hooks/deny`, token: 't' } } },
      '1.0',
    );
    expect(answer.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    await waitFor(
      async () => /outcome="denied"} [2-9]/.test(await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_push_deliveries_total')),
      15_000,
      'denied deliveries',
    );
    await sleep(200);
    expect(deliveries().length).toBeGreaterThanOrEqual(2);
    expect(at('/hooks/deny')).toEqual([]);
  });

  it('delivers a masked notification masked', async () => {
    const proxy = await stack.proxy(RELAYED);
    stack.guardian.script((env) => {
      if (env.params?.context?.to?.agent?.metadata?.pushDelivery === undefined) return { decision: 'allow' };
      const text = JSON.stringify(env.params.payload);
      return text.includes('alice@example.com')
        ? { decision: 'modify', modifiedPayload: JSON.parse(text.replaceAll('alice@example.com', '[email]')) }
        : { decision: 'allow' };
    });
    await rpc(
      proxy.url,
      'SendMessage',
      { message: v1Message('mail alice@example.com'), configuration: { taskPushNotificationConfig: { url: `${hook.origin}/hooks/mask`, token: 't' } } },
      '1.0',
    );
    await waitFor(() => at('/hooks/mask').some((r) => r.text.includes('TASK_STATE_COMPLETED')), 15_000, 'the completed task at the webhook');
    const all = at('/hooks/mask')
      .map((r) => r.text)
      .join('\n');
    expect(all).toContain('[email]');
    expect(all).not.toContain('alice@example.com');
  });

  it('answers get and list with the caller URL and token, never the relay', async () => {
    const proxy = await stack.proxy(RELAYED);
    const started = await rpc(proxy.url, 'SendMessage', { message: v1Message('slow'), configuration: { returnImmediately: true } }, '1.0');
    const taskId = started.result.task.id as string;
    const webhook = `${hook.origin}/hooks/v1-config`;
    const set = await rpc(
      proxy.url,
      'CreateTaskPushNotificationConfig',
      { taskId, url: webhook, token: 'tok-v1', authentication: { scheme: 'Bearer', credentials: 'caller-secret' } },
      '1.0',
    );
    expect(set.result).toMatchObject({ taskId, url: webhook, token: 'tok-v1', authentication: { scheme: 'Bearer', credentials: 'caller-secret' } });
    const configId = set.result.id as string;
    const got = await rpc(proxy.url, 'GetTaskPushNotificationConfig', { taskId, id: configId }, '1.0');
    expect(got.result).toMatchObject({ url: webhook, token: 'tok-v1' });
    const listed = await rpc(proxy.url, 'ListTaskPushNotificationConfigs', { taskId }, '1.0');
    expect(listed.result.configs.map((c: { url: string }) => c.url)).toEqual([webhook]);
    expect(JSON.stringify([set, got, listed])).not.toContain(proxy.pushRelayUrl as string);
    // The guardian's view of those answers is the caller's config too.
    const answers = stack.guardian.calls().filter((e) => e.method === 'tasks/pushNotificationConfig/get' || e.method === 'tasks/pushNotificationConfig/list');
    expect(JSON.stringify(answers)).not.toContain(proxy.pushRelayUrl as string);
    // The agent delivers the rest of the slow task: with the caller's authentication, as the SDK sends it.
    await waitFor(() => at('/hooks/v1-config').some((r) => r.text.includes('TASK_STATE_COMPLETED')), 15_000, 'the completed task at the webhook');
    for (const r of at('/hooks/v1-config')) expect(r.headers.authorization).toBe('Bearer caller-secret');
    expect(urlsTheAgentGot().some((u) => u.includes(hook.origin))).toBe(false);
  });
});

describe('JSON-RPC v0.3: tasks/pushNotificationConfig/set', () => {
  it('delivers v0.3 notifications judged, and get/list show the caller URL', async () => {
    const proxy = await stack.proxy(RELAYED);
    const started = await rpc(proxy.url, 'message/send', { message: v03Message('slow'), configuration: { blocking: false } }, '0.3');
    const taskId = started.result.id as string;
    const webhook = `${hook.origin}/hooks/v03`;
    const set = await rpc(proxy.url, 'tasks/pushNotificationConfig/set', { taskId, pushNotificationConfig: { url: webhook, token: 'tok-03' } }, '0.3');
    expect(set.result.pushNotificationConfig).toMatchObject({ url: webhook, token: 'tok-03' });
    const got = await rpc(proxy.url, 'tasks/pushNotificationConfig/get', { id: taskId, pushNotificationConfigId: set.result.pushNotificationConfig.id }, '0.3');
    expect(got.result.pushNotificationConfig.url).toBe(webhook);
    const listed = await rpc(proxy.url, 'tasks/pushNotificationConfig/list', { id: taskId }, '0.3');
    expect(listed.result.map((c: { pushNotificationConfig: { url: string } }) => c.pushNotificationConfig.url)).toEqual([webhook]);
    await waitFor(() => at('/hooks/v03').some((r) => r.text.includes('"completed"')), 15_000, 'the completed v0.3 task at the webhook');
    for (const r of hook.received.filter((x) => x.path === '/hooks/v03')) {
      expect(r.headers['x-a2a-notification-token']).toBe('tok-03');
      expect((r.body as { kind?: string }).kind).toBeDefined();
    }
    const judged = deliveries().filter((e) => e.params.context.to.agent.metadata.pushDelivery.taskId === taskId);
    expect(judged.length).toBe(hook.received.filter((r) => r.path === '/hooks/v03').length);
    for (const env of judged) expect(validateAosRequest(env, 'message/stream', { fullSide: 'from' })).toEqual([]);
    expect(urlsTheAgentGot().some((u) => u.includes(hook.origin))).toBe(false);
  });

  it('an inline v0.3 config of message/send is relayed too', async () => {
    const proxy = await stack.proxy(RELAYED);
    stack.guardian.script((env) => (env.params?.context?.to?.agent?.metadata?.pushDelivery === undefined ? { decision: 'allow' } : { decision: 'deny' }));
    const answer = await rpc(
      proxy.url,
      'message/send',
      { message: v03Message('hello'), configuration: { blocking: true, pushNotificationConfig: { url: `${hook.origin}/hooks/v03-inline`, token: 'x' } } },
      '0.3',
    );
    expect(answer.result.status.state).toBe('completed');
    await waitFor(
      async () => /outcome="denied"} [1-9]/.test(await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_push_deliveries_total')),
      15_000,
      'denied deliveries',
    );
    await sleep(200);
    expect(at('/hooks/v03-inline')).toEqual([]);
  });
});

describe('the relay refuses what is not a judged delivery to a checked address', () => {
  it('refuses an unknown key and a delivery naming another task', async () => {
    const proxy = await stack.proxy(RELAYED);
    const started = await rpc(proxy.url, 'SendMessage', { message: v1Message('slow'), configuration: { returnImmediately: true } }, '1.0');
    const taskId = started.result.task.id as string;
    await rpc(proxy.url, 'CreateTaskPushNotificationConfig', { taskId, url: `${hook.origin}/hooks/keys`, token: 't' }, '1.0');
    const relayUrl = urlsTheAgentGot().find((u) => u.startsWith(`${proxy.pushRelayUrl}/`)) as string;
    expect(relayUrl).toBeDefined();
    await waitFor(() => at('/hooks/keys').some((r) => r.text.includes('TASK_STATE_COMPLETED')), 15_000, 'the slow task done');
    hook.received.length = 0;
    const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const unknown = await post(`${proxy.pushRelayUrl}/a2a-guard/push/${'A'.repeat(43)}`, {
      task: { id: taskId, contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } },
    });
    expect(unknown.status).toBe(404);
    const otherTask = await post(relayUrl, {
      task: {
        id: 'someone-elses-task',
        contextId: 'c',
        status: { state: 'TASK_STATE_COMPLETED' },
        artifacts: [{ artifactId: 'a', parts: [{ text: 'stolen' }] }],
      },
    });
    expect(otherTask.status).toBe(403);
    const notA2A = await post(relayUrl, { hello: 'world' });
    expect(notA2A.status).toBe(400);
    await sleep(200);
    expect(at('/hooks/keys')).toEqual([]);
  });

  it('forgets a deleted config: the agent can no longer deliver through it', async () => {
    const proxy = await stack.proxy(RELAYED);
    const started = await rpc(proxy.url, 'SendMessage', { message: v1Message('slow'), configuration: { returnImmediately: true } }, '1.0');
    const taskId = started.result.task.id as string;
    const set = await rpc(proxy.url, 'CreateTaskPushNotificationConfig', { taskId, url: `${hook.origin}/hooks/deleted`, token: 't' }, '1.0');
    const relayUrl = urlsTheAgentGot().find((u) => u.startsWith(`${proxy.pushRelayUrl}/`)) as string;
    const deleted = await rpc(proxy.url, 'DeleteTaskPushNotificationConfig', { taskId, id: set.result.id }, '1.0');
    expect(deleted.error).toBeUndefined();
    const late = await fetch(relayUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task: { id: taskId, contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } }),
    });
    expect(late.status).toBe(404);
  });

  it('resolves the webhook host at delivery and refuses a name that now points at loopback', async () => {
    const answers = new Map<string, string>([['hooks.example.com', '93.184.216.34']]);
    const proxy = await stack.proxy({ INSPECT_RESPONSES: 'true' }, { pushResolve: async (host) => [{ address: answers.get(host) ?? '0.0.0.0', family: 4 }] });
    const started = await rpc(proxy.url, 'SendMessage', { message: v1Message('slow'), configuration: { returnImmediately: true } }, '1.0');
    const taskId = started.result.task.id as string;
    // Public when the config is set ...
    const set = await rpc(
      proxy.url,
      'CreateTaskPushNotificationConfig',
      { taskId, url: `http://hooks.example.com:${hook.port}/hooks/rebind`, token: 't' },
      '1.0',
    );
    expect(set.result.url).toBe(`http://hooks.example.com:${hook.port}/hooks/rebind`);
    // ... loopback when the agent delivers.
    answers.set('hooks.example.com', '127.0.0.1');
    await waitFor(
      async () => /outcome="refused_address"} [1-9]/.test(await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_push_deliveries_total')),
      15_000,
      'a refused delivery',
    );
    await sleep(200);
    expect(at('/hooks/rebind')).toEqual([]);
  });

  it('connects to the address it checked, not to what the name resolves to elsewhere', async () => {
    // The name exists only in the injected resolver: a delivery arriving proves the connection went to the checked address.
    const proxy = await stack.proxy(RELAYED, { pushResolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    await rpc(
      proxy.url,
      'SendMessage',
      {
        message: v1Message('hello pinned'),
        configuration: { taskPushNotificationConfig: { url: `http://pinned.invalid:${hook.port}/hooks/pinned`, token: 'pin' } },
      },
      '1.0',
    );
    await waitFor(() => at('/hooks/pinned').some((r) => r.text.includes('TASK_STATE_COMPLETED')), 15_000, 'the completed task at the webhook');
    expect(at('/hooks/pinned').every((r) => r.headers.host === `pinned.invalid:${hook.port}`)).toBe(true);
  });
});

describe('retries', () => {
  it('retries a webhook that failed with back-off, and delivers once it takes it', async () => {
    const proxy = await stack.proxy({ ...RELAYED, PUSH_RETRIES: '3' }, { pushRetryBaseMs: 20 });
    hook.failNext(503, 503);
    await rpc(
      proxy.url,
      'SendMessage',
      { message: v1Message('hello retry'), configuration: { taskPushNotificationConfig: { url: `${hook.origin}/hooks/retry`, token: 'r' } } },
      '1.0',
    );
    await waitFor(() => at('/hooks/retry').some((r) => r.text.includes('TASK_STATE_COMPLETED')), 15_000, 'the completed task at the webhook');
    const metric = await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_push_deliveries_total');
    expect(metric).toMatch(/outcome="retried"} 2\n/);
    // Nothing lost, nothing twice: every judged delivery arrived once, in order.
    const judged = deliveries().filter((e) => e.params.context.to.agent.metadata.pushDelivery.webhook === `${hook.origin}/hooks/retry`);
    expect(hook.received.filter((r) => r.path === '/hooks/retry').map((r) => r.text)).toEqual(judged.map((e) => JSON.stringify(e.params.payload.result)));
  });
});

describe('the queue per caller', () => {
  it('holds at most PUSH_QUEUE_PER_CALLER deliveries of a caller; past it the agent gets 429, counted, and nothing else is sent', async () => {
    const proxy = await stack.proxy({ ...RELAYED, PUSH_QUEUE_PER_CALLER: '1', PUSH_RETRIES: '3' }, { pushRetryBaseMs: 3000 });
    // The first delivery fails and waits for its retry, holding the caller's one place.
    hook.failNext(503);
    await rpc(
      proxy.url,
      'SendMessage',
      { message: v1Message('hello queue'), configuration: { taskPushNotificationConfig: { url: `${hook.origin}/hooks/queue`, token: 'q' } } },
      '1.0',
    );
    await waitFor(
      async () => /outcome="refused_queue"} [1-9]/.test(await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_push_deliveries_total')),
      15_000,
      'a delivery refused by the full queue',
    );
    // While the one queued delivery waits, nothing reached the webhook.
    expect(at('/hooks/queue')).toEqual([]);
  });
});

describe('configs the relay cannot read are refused, never passed to the agent unrewritten', () => {
  it.each([
    [
      'v1.0 inline url as an array',
      '1.0',
      'SendMessage',
      (url: string) => ({ message: v1Message('hi'), configuration: { taskPushNotificationConfig: { url: [url], token: 't' } } }),
    ],
    [
      'v0.3 inline url as an array',
      '0.3',
      'message/send',
      (url: string) => ({ message: v03Message('hi'), configuration: { pushNotificationConfig: { url: [url], token: 't' } } }),
    ],
    [
      'v1.0 inline url as an object',
      '1.0',
      'SendMessage',
      (url: string) => ({ message: v1Message('hi'), configuration: { taskPushNotificationConfig: { url: { toString: url }, token: 't' } } }),
    ],
  ] as const)('%s: invalid params, the agent acts on nothing, nothing arrives', async (_name, version, method, params) => {
    const proxy = await stack.proxy(RELAYED);
    const path = `/hooks/unreadable-${version}-${Math.random().toString(36).slice(2)}`;
    stack.agent.received.length = 0;
    const answer = await rpc(proxy.url, method, params(`${hook.origin}${path}`), version);
    expect(answer.error?.code).toBe(-32602);
    expect(stack.agent.received.filter((r) => r.method === 'POST')).toEqual([]);
    await sleep(300);
    expect(at(path)).toEqual([]);
  });
});
