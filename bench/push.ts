/**
 * `npm run bench:push`: the latency a push notification gains by going through the push relay
 * (judged by an instant allow guardian, sent on to the webhook at a checked address) against the
 * agent posting it to the webhook itself. Both paths post the same v1.0 StreamResponse, one at a
 * time, alternating; the figure is the time from the POST's start to the webhook reading the body
 * (medians and 90th percentiles over BENCH_PUSH_N deliveries each, default 200).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { configFrom } from '../src/config/config';
import { createLogger } from '../src/runtime/log';
import { startProxy } from '../src/server';
import { startAgent } from '../test/helpers/agent';
import { startGuardian } from '../test/helpers/guardian';

const N = Number(process.env.BENCH_PUSH_N ?? 200);

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
}

async function main(): Promise<void> {
  let arrived: ((t: number) => void) | undefined;
  const webhook = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrived?.(performance.now());
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => webhook.listen(0, '127.0.0.1', () => r()));
  const hookUrl = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/hook`;
  const agent = await startAgent({ slowMs: 600_000, stepMs: 1000 });
  const guardian = await startGuardian();
  const config = configFrom({
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    PUSH_RELAY_PORT: '0',
    LOG_LEVEL: 'silent',
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    INSPECT_RESPONSES: 'true',
    PUSH_ALLOW_PRIVATE_WEBHOOKS: 'true',
  });
  const proxy = await startProxy({ config, logger: createLogger('silent') });
  const rpc = async (method: string, params: unknown): Promise<any> => {
    const res = await fetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    return res.json();
  };
  const started = await rpc('SendMessage', {
    message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'slow' }] },
    configuration: { returnImmediately: true },
  });
  const taskId = started.result.task.id as string;
  await rpc('CreateTaskPushNotificationConfig', { taskId, url: hookUrl, token: 'caller-token' });
  const relayUrl = JSON.stringify(agent.received.map((r) => r.body)).match(/"url":"(http:\/\/127\.0\.0\.1:\d+\/a2a-guard\/push\/[A-Za-z0-9_-]+)"/)?.[1];
  if (relayUrl === undefined) throw new Error('the agent got no relay URL');
  const body = JSON.stringify({
    statusUpdate: {
      taskId,
      contextId: started.result.task.contextId,
      status: { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString() },
      metadata: {},
    },
  });

  const once = async (url: string): Promise<number> => {
    const got = new Promise<number>((r) => (arrived = r));
    const t0 = performance.now();
    const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/a2a+json', 'x-a2a-notification-token': 'caller-token' }, body });
    await res.body.dump();
    return (await got) - t0;
  };
  // Warm both paths.
  for (let i = 0; i < 20; i++) {
    await once(hookUrl);
    await once(relayUrl);
  }
  const direct: number[] = [];
  const relayed: number[] = [];
  for (let i = 0; i < N; i++) {
    direct.push(await once(hookUrl));
    relayed.push(await once(relayUrl));
  }
  const row = (name: string, xs: number[]) => `${name.padEnd(8)} median ${quantile(xs, 0.5).toFixed(2)} ms   p90 ${quantile(xs, 0.9).toFixed(2)} ms`;
  console.log(`push notification, POST start -> webhook has the body (${N} each)`);
  console.log(row('direct', direct));
  console.log(row('relay', relayed));
  console.log(`added    median ${(quantile(relayed, 0.5) - quantile(direct, 0.5)).toFixed(2)} ms`);
  await proxy.close();
  await agent.close();
  await guardian.close();
  await new Promise<void>((r) => webhook.close(() => r()));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
