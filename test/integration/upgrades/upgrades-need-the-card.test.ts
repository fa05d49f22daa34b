/**
 * Which paths are the agent's A2A endpoints is read from its card (its JSON-RPC endpoint may be any path).
 * Without the card, `UPGRADE_PATHS=/` would take the JSON-RPC endpoint as "a path that is not A2A": an upgrade
 * below `/` alone is refused (503, Retry-After) until the card is known, and never reaches the agent; a prefix the
 * operator named (`/live`) is forwarded as before.
 */
import { startAgent, type TestAgent } from '../../helpers/agent';
import { echoWebSocket, wsExchange } from '../../helpers/websocket';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

let agent: TestAgent;
let guardian: TestGuardian;
let proxy: TestProxy;
let named: TestProxy;
let echo: ReturnType<typeof echoWebSocket>;
beforeAll(async () => {
  // The card is where the proxy does not look for it: it never learns the agent's endpoints.
  agent = await startAgent({ cardPath: '/hidden/agent-card.json' });
  guardian = await startGuardian();
  echo = echoWebSocket(agent.server, '/');
  proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/' });
  named = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/,/live' });
});
afterAll(async () => {
  await proxy?.close();
  await named?.close();
  await agent?.close();
  await guardian?.close();
});

test.each(['/a2a/jsonrpc', '/'])('an upgrade of %s without the card is refused with 503 and never reaches the agent', async (path) => {
  const out = await wsExchange(Number(new URL(proxy.url).port), path, 'hi');
  expect(out.head).toMatch(/^HTTP\/1\.1 503 /);
  expect(out.head.toLowerCase()).toContain('retry-after:');
  expect(out.echo).toBeUndefined();
  expect(echo.handshakes).toEqual([]);
});

test('a prefix the operator named is forwarded without the card', async () => {
  const out = await wsExchange(Number(new URL(named.url).port), '/live/feed', 'hi');
  expect(out.head).toMatch(/^HTTP\/1\.1 101 /);
  expect(out.echo).toBe('echo: hi');
  expect(echo.handshakes).toEqual(['/live/feed']);
});
