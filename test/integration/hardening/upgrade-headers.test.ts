/**
 * ALLOW_WEBSOCKETS=true: an upgrade is forwarded uninspected, but the proxy's
 * own headers must still never reach the remote agent (README: "never reach an agent, in any
 * spelling"). The upgrade path removed only the exact names X-AOS-Agent-*, X-AOS-Agent-Assertion and
 * X-AOS-Unchecked: a ROLE=client sidecar sent the agent's reasoning (X-AOS-Reasoning) and the
 * underscore spellings to the remote. Real HTTP upstream recording the upgrade request, raw socket.
 */
import { rawRoundTrip } from '../../helpers/wire';
import http from 'node:http';
import net from 'node:net';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { closeServer, listen } from '../../helpers/net';
import { startTestProxy } from '../../helpers/proxy-harness';

let guardian: TestGuardian;
beforeAll(async () => {
  guardian = await startGuardian();
});
afterAll(async () => {
  await guardian?.close();
});

test('ROLE=client, ALLOW_WEBSOCKETS=true: no proxy-owned header in any spelling reaches the upstream on an upgrade', async () => {
  const seen: http.IncomingHttpHeaders[] = [];
  const up = http.createServer((_req, res) => res.end('plain'));
  up.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
    seen.push(req.headers);
    socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n');
  });
  const upUrl = await listen(up);
  const proxy = await startTestProxy({ UPSTREAM_URL: upUrl, GUARDIAN_URL: guardian.url, ROLE: 'client', ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/socket' });
  try {
    const { port } = new URL(proxy.url);
    const head = [
      'GET /socket HTTP/1.1',
      `Host: 127.0.0.1:${port}`,
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      'X-AOS-Reasoning: the user wants the recipe because of the secret plan',
      'X_AOS_Reasoning: underscore plan',
      'X_AOS_Agent_Name: forged',
      'x-aos-anything: 1',
    ].join('\r\n');
    const out = await rawRoundTrip(Number(port), `${head}\r\n\r\n`, 5_000);
    expect(out).toMatch(/^HTTP\/1\.1 101/);
    expect(seen).toHaveLength(1);
    expect(Object.keys(seen[0] ?? {}).filter((h) => /aos/i.test(h))).toEqual([]);
  } finally {
    await proxy.close();
    await closeServer(up);
  }
});
