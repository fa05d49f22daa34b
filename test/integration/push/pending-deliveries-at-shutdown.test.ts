/**
 * A push delivery waiting for its retry when the proxy shuts down is not sent after close, and not lost
 * in silence either: close() ends it at once, counted as failed, with an audit line that says why.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { useStack } from '../../helpers/proxy-harness';
import { startWebhook, type Webhook } from '../../helpers/webhook';
import { waitFor } from '../../helpers/net';
import { startTestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);

const stack = useStack({ sdkPushSender: true });
let hook: Webhook;
beforeAll(async () => {
  hook = await startWebhook();
});
afterAll(async () => {
  await hook.close();
});

it('ends a retry pending at shutdown with a counted failure and an audit line', async () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const env = {
    UPSTREAM_URL: stack.agent.origin,
    GUARDIAN_URL: stack.guardian.url,
    INSPECT_RESPONSES: 'true',
    PUSH_ALLOW_PRIVATE_WEBHOOKS: 'true',
    PUSH_RETRIES: '3',
  };
  // A back-off far longer than the test: only close() can end the wait.
  const proxy = await startTestProxy(env, undefined, pino({ level: 'info' }, sink), { pushRetryBaseMs: 600_000 });
  hook.failNext(...Array.from({ length: 50 }, () => 503));
  const res = await fetch(`${proxy.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: {
        message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello shutdown' }] },
        configuration: { taskPushNotificationConfig: { url: `${hook.origin}/hooks/shutdown`, token: 's' } },
      },
    }),
  });
  expect(res.status).toBe(200);
  const metric = () => proxy.metrics.registry.getSingleMetricAsString('a2a_guard_push_deliveries_total');
  await waitFor(async () => /outcome="retried"} [1-9]/.test(await metric()), 15_000, 'a delivery waiting for its retry');
  const pending = lines.filter((l) => l.wireMethod === 'push/delivery').length;
  await proxy.close();
  const audited = lines.filter((l) => l.wireMethod === 'push/delivery');
  expect(audited.length).toBeGreaterThan(pending);
  const failed = audited.filter((l) => String(l.error).includes('shut down'));
  expect(failed.length).toBeGreaterThan(0);
  expect(await metric()).toMatch(new RegExp(`outcome="failed"} ${failed.length}(\\n|$)`));
  expect(hook.received.filter((r) => r.path === '/hooks/shutdown')).toEqual([]);
});
