/**
 * Red team 2026-11-23, secrets in logs: UPSTREAM_URL may carry userinfo (`http://user:pass@agent`).
 * The card fetch (Node's fetch refuses URLs with credentials) then failed on every refresh and its
 * warning named the URL with the password, twice (the href and fetch's own message). Real SDK agent,
 * the proxy's log captured as written.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { startAgent, type TestAgent } from '../helpers/agent';
import { startGuardian, type TestGuardian } from '../helpers/guardian';
import { configFrom } from '../../src/config';
import { startProxy, type ProxyInstance } from '../../src/server';

let agent: TestAgent;
let guardian: TestGuardian;
let proxy: ProxyInstance | undefined;
beforeAll(async () => {
  agent = await startAgent();
  guardian = await startGuardian();
});
afterAll(async () => {
  await proxy?.close();
  await agent?.close();
  await guardian?.close();
});

test('a password in UPSTREAM_URL never appears in the log', async () => {
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, new Writable({ write(chunk: Buffer, _e, cb) { lines.push(chunk.toString('utf8')); cb(); } }));
  const upstream = new URL(agent.origin);
  upstream.username = 'svc';
  upstream.password = 'hunter2-upstream-secret';
  const config = configFrom({ PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', UPSTREAM_URL: upstream.href, GUARDIAN_URL: guardian.url, ROLE: 'server' });
  proxy = await startProxy({ config, logger });
  await proxy.upstreamCard.probe();
  await fetch(`${proxy.url}/.well-known/agent-card.json`).then((r) => r.text());
  await new Promise((r) => setImmediate(r));
  expect(lines.join('\n')).not.toContain('hunter2-upstream-secret');
});
