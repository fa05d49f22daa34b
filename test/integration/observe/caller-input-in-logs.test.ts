/**
 * What callers and configuration put into the log:
 * - UPSTREAM_URL may carry userinfo (`http://user:pass@agent`). The card fetch (Node's fetch refuses
 *   URLs with credentials) then failed on every refresh and its warning named the URL with the
 *   password, twice (the href and fetch's own message).
 * - the caller's JSON-RPC id went into the audit line (and the decision log) whole: an id of
 *   megabytes made a log line of megabytes per call.
 * Real SDK agent, real guardian, the proxy's log captured as written.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { startAgent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { configFrom } from '../../../src/config/config';
import { startProxy, type ProxyInstance } from '../../../src/server';

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
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _e, cb) {
        lines.push(chunk.toString('utf8'));
        cb();
      },
    }),
  );
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

test('the audit line keeps a bounded part of a huge JSON-RPC id', async () => {
  const lines: string[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _e, cb) {
        lines.push(chunk.toString('utf8'));
        cb();
      },
    }),
  );
  const config = configFrom({ PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server' });
  const p = await startProxy({ config, logger });
  try {
    await p.upstreamCard.ready();
    guardian.script(() => ({ decision: 'deny' }));
    const id = 'i'.repeat(1024 * 1024);
    const res = await fetch(`${p.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
      }),
    });
    expect(((await res.json()) as { id?: string }).id).toBe(id); // the caller still gets its own id back
    await new Promise((r) => setTimeout(r, 50));
    const audit = lines.filter((l) => l.includes('"a2a call"'));
    expect(audit).toHaveLength(1);
    expect((audit[0] as string).length).toBeLessThan(4096);
  } finally {
    await p.close();
  }
});
