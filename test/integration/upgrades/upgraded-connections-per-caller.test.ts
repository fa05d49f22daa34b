/**
 * An upgraded connection is a call in flight of its caller for as long as it stays open: it counts
 * against MAX_CALLS_PER_CALLER like a stream, so one caller cannot hold every socket of the proxy and
 * the agent with WebSockets. Past its share the caller gets 429 with Retry-After, before the agent.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { startAgent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { echoWebSocket, wsExchange } from '../../helpers/websocket';

let agent: TestAgent;
let guardian: TestGuardian;
let proxy: TestProxy;
let echo: { readonly handshakes: string[] };

beforeAll(async () => {
  agent = await startAgent();
  echo = echoWebSocket(agent.server, '/live/');
  guardian = await startGuardian();
  proxy = await startTestProxy({
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    ALLOW_WEBSOCKETS: 'true',
    UPGRADE_PATHS: '/live',
    MAX_CALLS_PER_CALLER: '1',
    CALL_WAIT_MS: '0',
  });
});
afterAll(async () => {
  await proxy?.close();
  await agent?.close();
  await guardian?.close();
});

const port = (): number => Number(new URL(proxy.url).port);

/** A WebSocket handshake left open: resolves with the socket once the 101 arrived. */
function openSocket(path: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port(), '127.0.0.1', () => {
      s.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`,
      );
    });
    let text = '';
    s.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      if (!text.includes('\r\n\r\n')) return;
      if (/^HTTP\/1\.1 101 /.test(text)) resolve(s);
      else reject(new Error(text));
    });
    s.on('error', reject);
  });
}

test('a second upgrade while the first is open is refused (429, Retry-After); once it closed, the next one switches', async () => {
  const first = await openSocket('/live/one');
  try {
    const second = await wsExchange(port(), '/live/two', 'x');
    expect(second.head).toMatch(/^HTTP\/1\.1 429 /);
    expect(second.head).toMatch(/retry-after: \d+/i);
    expect(echo.handshakes).toEqual(['/live/one']);
  } finally {
    first.destroy();
  }
  let third = await wsExchange(port(), '/live/three', 'again');
  // The proxy learns of the close asynchronously: give it a few tries.
  for (let i = 0; i < 20 && !/^HTTP\/1\.1 101 /.test(third.head); i++) {
    await new Promise((r) => setTimeout(r, 50));
    third = await wsExchange(port(), '/live/three', 'again');
  }
  expect(third.head).toMatch(/^HTTP\/1\.1 101 /);
  expect(third.echo).toBe('echo: again');
});
