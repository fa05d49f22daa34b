/**
 * Red team (stop 26): the card route rewrote only HTTP 200 cards. An agent answering its card with
 * another 2xx (203, 206, 226: an SDK resolver takes any response.ok) had its own URLs relayed, and an
 * SDK caller then called the agent directly, around the proxy and its guardian. Every 2xx card is
 * rewritten now, or refused when it cannot be.
 */
import net from 'node:net';
import { startGuardian, type TestGuardian } from '../helpers/guardian';
import { startTestProxy } from './proxy-harness';

const INTERNAL = 'http://internal-agent.example:9999/a2a';
const card = JSON.stringify({ name: 'a', url: INTERNAL, preferredTransport: 'JSONRPC', protocolVersion: '0.3.0', version: '1', capabilities: {}, defaultInputModes: [], defaultOutputModes: [], skills: [], description: 'x' });

let guardian: TestGuardian;
beforeAll(async () => {
  guardian = await startGuardian();
});
afterAll(async () => {
  await guardian.close();
});

test.each([200, 201, 203, 206, 226])('an HTTP %i card reaches the caller rewritten, never with the agent\'s URL', async (status) => {
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on('data', () => s.write(`HTTP/1.1 ${status} X\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(card)}\r\n\r\n${card}`));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const p = await startTestProxy({ UPSTREAM_URL: `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`, GUARDIAN_URL: guardian.url, ROLE: 'server' });
  try {
    const r = await fetch(`${p.url}/.well-known/agent-card.json`);
    const text = await r.text();
    expect(r.status).toBe(status);
    expect(text).not.toContain('internal-agent.example');
    // Rewritten to the proxy (positive control: the card was read, not refused).
    expect((JSON.parse(text) as { url: string }).url.startsWith(p.url)).toBe(true);
  } finally {
    await p.close();
    for (const s of sockets) s.destroy();
    await new Promise((r) => srv.close(r));
  }
});
