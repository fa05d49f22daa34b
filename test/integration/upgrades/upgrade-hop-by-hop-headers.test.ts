/**
 * A forwarded WebSocket handshake follows the header rules of every forwarded request: the headers the
 * caller's Connection names are this hop's and never reach the agent, nor do Proxy-Authorization or any
 * other hop-by-hop header; the agent learns the caller's real address from X-Forwarded-For's last entry,
 * not one the caller wrote.
 */
import { startAgent, type TestAgent } from '../../helpers/agent';
import { echoWebSocket, wsExchange } from '../../helpers/websocket';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

let agent: TestAgent;
let guardian: TestGuardian;
let proxy: TestProxy;
let echo: ReturnType<typeof echoWebSocket>;
beforeAll(async () => {
  agent = await startAgent();
  guardian = await startGuardian();
  echo = echoWebSocket(agent.server, '/live/');
  proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/live' });
});
afterAll(async () => {
  await proxy?.close();
  await agent?.close();
  await guardian?.close();
});

test('drops Connection-named and hop-by-hop headers and appends the caller address to X-Forwarded-For', async () => {
  const out = await wsExchange(Number(new URL(proxy.url).port), '/live/feed', 'hello', [
    'Connection: X-Hop-Secret, Authorization',
    'X-Hop-Secret: for-the-proxy-only',
    'Authorization: Bearer proxy-hop-credential',
    'Proxy-Authorization: Basic cHJveHk6c2VjcmV0',
    'X-Forwarded-For: 203.0.113.7',
    'X-End-To-End: kept',
  ]);
  expect(out.head).toMatch(/^HTTP\/1\.1 101 /);
  expect(out.echo).toBe('echo: hello');
  const seen = echo.headers.at(-1);
  expect(seen).toBeDefined();
  expect(seen?.['x-hop-secret']).toBeUndefined();
  expect(seen?.authorization).toBeUndefined();
  expect(seen?.['proxy-authorization']).toBeUndefined();
  expect(seen?.['x-end-to-end']).toBe('kept');
  expect(seen?.['x-forwarded-for']).toBe('203.0.113.7, 127.0.0.1');
  expect(seen?.upgrade).toBe('websocket');
});
