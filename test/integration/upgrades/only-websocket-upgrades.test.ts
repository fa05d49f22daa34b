/**
 * ALLOW_WEBSOCKETS forwards WebSocket handshakes only. An `Upgrade: h2c` at a listed prefix, to an agent
 * whose server accepts h2c on every path (Go's h2c.NewHandler, used to serve gRPC and HTTP on one port),
 * would turn the connection into HTTP/2 on which the caller reaches every route, A2A ones included,
 * unjudged: the prefix would no longer bound anything.
 */
import { startAgent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { h2cFront, h2cUpgrade } from '../../helpers/h2c';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { wsExchange, echoWebSocket } from '../../helpers/websocket';

jest.setTimeout(30_000);

const rec = handlerRecorder();
let agent: TestAgent;
let guardian: TestGuardian;
let proxy: TestProxy;
let front: ReturnType<typeof h2cFront>;
let echo: { readonly handshakes: string[] };
/** Every upgrade request that reached the agent's server, by its Upgrade header. */
const reached: string[] = [];

beforeAll(async () => {
  agent = await startAgent({ wrapRequestHandler: rec.wrap });
  front = h2cFront(agent.server, agent.origin);
  echo = echoWebSocket(agent.server, '/live/');
  agent.server.on('upgrade', (req: { headers: { upgrade?: string } }) => void reached.push(String(req.headers.upgrade)));
  guardian = await startGuardian();
  proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/live' });
});
beforeEach(() => {
  reached.length = 0;
  rec.clear();
});
afterAll(async () => {
  front?.close();
  await proxy?.close();
  await agent?.close();
  await guardian?.close();
});

const port = (): number => Number(new URL(proxy.url).port);
const send = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'SendMessage',
  params: { message: { messageId: 'm-h2c', role: 'ROLE_USER', parts: [{ text: 'smuggled over h2c' }] } },
});

test('an h2c upgrade at a listed prefix is refused: no HTTP/2 call reaches the agent around the guardian', async () => {
  guardian.script(() => ({ decision: 'deny', reason: 'nothing passes' }));
  const out = await h2cUpgrade(port(), '/live/feed', { path: '/a2a/jsonrpc', body: send, headers: { 'a2a-version': '1.0' } });
  expect(out.head).toMatch(/^HTTP\/1\.1 403 /);
  expect(out.answer).toBeUndefined();
  expect(front.upgrades).toEqual([]);
  expect(rec.calls).toEqual([]);
});

test.each([['h2c'], ['websocket, h2c'], ['h2c, websocket'], ['TLS/1.2']])('Upgrade: %s is refused before the agent', async (value) => {
  const out = await wsExchange(port(), '/live/feed', 'x', [`Upgrade: ${value}`]);
  expect(out.head).toMatch(/^HTTP\/1\.1 403 /);
  expect(reached).toEqual([]);
  expect(echo.handshakes).toEqual([]);
});

test('a WebSocket handshake at the listed prefix still switches', async () => {
  const out = await wsExchange(port(), '/live/feed', 'still works', []);
  expect(out.head).toMatch(/^HTTP\/1\.1 101 /);
  expect(out.echo).toBe('echo: still works');
  expect(reached).toEqual(['websocket']);
});
