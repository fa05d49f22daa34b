/**
 * HTTP upgrades go only where the operator listed them (UPGRADE_PATHS), never to an A2A route or a card,
 * and only a 101 reaches the caller. A real SDK agent has no upgrade handler: it serves an upgrade GET as an
 * ordinary GET, so a relayed non-101 answer would hand out another caller's task, every task, push configs
 * (with their tokens) and the extended card, unjudged.
 */
import net from 'node:net';
import { makeClient, sendReq, startAgent, type TestAgent } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { echoWebSocket, wsExchange } from '../../helpers/websocket';
import { startTestProxy, useStack, type TestProxy } from '../../helpers/proxy-harness';

const SECRET = 'webhook-secret-token';
const rec = handlerRecorder();
const s = useStack({ extendedAgentCard: true, wrapRequestHandler: rec.wrap });
let proxy: TestProxy;
let taskId: string;

beforeAll(async () => {
  // Another caller's task and webhook, made at the agent directly.
  const direct = await makeClient(s.agent.origin, 'HTTP+JSON');
  const task = (await direct.sendMessage(sendReq('private recipe', false))) as { id: string };
  taskId = task.id;
  await direct.createTaskPushNotificationConfig({ tenant: '', id: 'cfg-a', taskId, url: 'https://hooks.example/a', token: SECRET, authentication: undefined });
  // The broadest listing: every path the classifier does not read as A2A or a card.
  proxy = await s.proxy({ ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/' });
});
beforeEach(() => rec.clear());

/** What reached the agent besides the proxy's own card reads. */
const reachedAgent = (a: TestAgent) => a.received.filter((r) => r.headers['user-agent'] !== 'a2a-guard (agent card)');
const port = (p: TestProxy): number => Number(new URL(p.url).port);
const upgrades = async (p: TestProxy): Promise<string> => p.metrics.registry.getSingleMetricAsString('a2a_guard_upgrades_total');

test.each([
  ['a task by id (REST)', () => `/a2a/rest/tasks/${taskId}`],
  ['the task list (REST)', () => '/a2a/rest/tasks'],
  ['push configs (REST)', () => `/a2a/rest/tasks/${taskId}/pushNotificationConfigs`],
  ['one push config (REST)', () => `/a2a/rest/tasks/${taskId}/pushNotificationConfigs/cfg-a`],
  ['the extended card (REST)', () => '/a2a/rest/extendedAgentCard'],
  ['the v0.3 extended card', () => '/a2a/rest/v1/card'],
  ['a v0.3 task', () => `/a2a/rest/v1/tasks/${taskId}`],
  ['the JSON-RPC endpoint', () => '/a2a/jsonrpc'],
  ['the agent card', () => '/.well-known/agent-card.json'],
])('an upgrade GET of %s is refused: nothing leaks, the handler acts on nothing', async (_n, path) => {
  const out = await wsExchange(port(proxy), path(), 'hi');
  expect(out.head).toMatch(/^HTTP\/1\.1 403 /);
  expect(out.head).not.toContain(taskId);
  expect(out.head).not.toContain(SECRET);
  expect(out.head).not.toContain('(extended)');
  expect(rec.calls).toEqual([]);
  expect(reachedAgent(s.agent)).toEqual([]);
  expect(s.guardian.calls()).toEqual([]);
});

test('a listed path the agent answers without switching protocols: its answer is dropped, the caller gets 502, the drop is counted', async () => {
  const before = await upgrades(proxy);
  expect(before).not.toMatch(/outcome="not_switched"\} 1/);
  const out = await wsExchange(port(proxy), '/status-page', 'hi');
  expect(out.head).toMatch(/^HTTP\/1\.1 502 /);
  expect(out.head).not.toMatch(/Cannot GET/);
  // It did reach the agent (a listed path), as a request its router answered.
  expect(reachedAgent(s.agent).map((r) => r.path)).toEqual(['/status-page']);
  expect(await upgrades(proxy)).toMatch(/outcome="not_switched"\} 1/);
});

test('a POST upgrade (a body a tunnel would carry) is refused before the agent', async () => {
  const out = await new Promise<string>((resolve) => {
    const s = net.connect(port(proxy), '127.0.0.1', () =>
      s.write('POST /socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 2\r\n\r\n{}'),
    );
    let text = '';
    s.on('data', (c: Buffer) => (text += c.toString('latin1')));
    s.on('close', () => resolve(text));
    s.on('error', () => resolve(text));
  });
  expect(out).toMatch(/^HTTP\/1\.1 403 /);
  expect(reachedAgent(s.agent)).toEqual([]);
});

describe('a real WebSocket on a listed prefix', () => {
  let wsAgent: TestAgent;
  let wsProxy: TestProxy;
  let echo: { readonly handshakes: string[] };
  beforeAll(async () => {
    wsAgent = await startAgent();
    echo = echoWebSocket(wsAgent.server, '/live/');
    wsProxy = await startTestProxy({ UPSTREAM_URL: wsAgent.origin, GUARDIAN_URL: s.guardian.url, ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/live' });
  });
  afterAll(async () => {
    await wsProxy?.close();
    await wsAgent?.close();
  });

  test('switches protocols and echoes frames both ways', async () => {
    const out = await wsExchange(port(wsProxy), '/live/feed', 'hello over a socket', ['X-AOS-Reasoning: secret plan']);
    expect(out.head).toMatch(/^HTTP\/1\.1 101 /);
    expect(out.echo).toBe('echo: hello over a socket');
    expect(echo.handshakes).toEqual(['/live/feed']);
    expect(await upgrades(wsProxy)).toMatch(/outcome="forwarded"\} 1/);
  });

  test('a path outside the listed prefix is refused before the agent', async () => {
    const out = await wsExchange(port(wsProxy), '/other/feed', 'x');
    expect(out.head).toMatch(/^HTTP\/1\.1 403 /);
    expect(echo.handshakes).not.toContain('/other/feed');
  });
});
