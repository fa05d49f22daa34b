/**
 * The card route rewrote only HTTP 200 cards. An agent answering its card with
 * another 2xx (203, 206, 226: an SDK resolver takes any response.ok) had its own URLs relayed, and an
 * SDK caller then called the agent directly, around the proxy and its guardian. Every 2xx card is
 * rewritten now, or refused when it cannot be.
 */
import net from 'node:net';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startTestProxy } from '../../helpers/proxy-harness';

const INTERNAL = 'http://internal-agent.example:9999/a2a';
const card = JSON.stringify({
  name: 'a',
  url: INTERNAL,
  preferredTransport: 'JSONRPC',
  protocolVersion: '0.3.0',
  version: '1',
  capabilities: {},
  defaultInputModes: [],
  defaultOutputModes: [],
  skills: [],
  description: 'x',
});

let guardian: TestGuardian;
beforeAll(async () => {
  guardian = await startGuardian();
});
afterAll(async () => {
  await guardian.close();
});

test.each([200, 201, 203, 206, 226])("an HTTP %i card reaches the caller rewritten, never with the agent's URL", async (status) => {
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

/**
 * The extended card operations return a card as a call result, and a result labelled text/event-stream
 * was relayed event by event, where no card is rewritten. Every spelling of the label, with the card as
 * a JSON body or as an SSE event, through a proxy with and without response inspection: the agent's
 * URL never reaches the caller.
 */
describe('an extended card result labelled as an event stream', () => {
  const result = (id: unknown) => JSON.stringify({ jsonrpc: '2.0', id, result: JSON.parse(card) as unknown });
  const labels = ['text/event-stream', 'text/event-stream; charset=utf-8', 'Text/Event-Stream'];
  const bodies = { json: (id: unknown) => result(id), event: (id: unknown) => `data: ${result(id)}\n\n` };
  const cases = labels.flatMap((label) =>
    (['json', 'event'] as const).flatMap((body) =>
      (['GetExtendedAgentCard', 'agent/getAuthenticatedExtendedCard'] as const).flatMap((method) =>
        ['false', 'true'].map((inspect) => [label, body, method, inspect] as const),
      ),
    ),
  );
  let srv: net.Server;
  let answer: (id: unknown) => string = () => '';
  let label = '';
  let status = 200;
  const sockets = new Set<net.Socket>();
  beforeAll(async () => {
    srv = net.createServer((s) => {
      sockets.add(s);
      let buf = '';
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        const len = Number(/content-length:\s*(\d+)/i.exec(buf)?.[1] ?? 0);
        if (end < 0 || buf.length < end + 4 + len) return;
        if (buf.startsWith('GET ')) {
          buf = '';
          return void s.write('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
        }
        const out = answer((JSON.parse(buf.slice(end + 4, end + 4 + len)) as { id: unknown }).id);
        buf = '';
        s.write(`HTTP/1.1 ${status} X\r\ncontent-type: ${label}\r\ncontent-length: ${Buffer.byteLength(out)}\r\n\r\n${out}`);
      });
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => srv.close(r));
  });

  test.each(cases)('%s, the card as %s, %s, INSPECT_RESPONSES=%s', async (l, body, method, inspect) => {
    label = l;
    status = 200;
    answer = bodies[body];
    const p = await startTestProxy({
      UPSTREAM_URL: `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`,
      GUARDIAN_URL: guardian.url,
      ROLE: 'server',
      INSPECT_RESPONSES: inspect,
    });
    try {
      const r = await fetch(`${p.url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(method.includes('/') ? {} : { 'a2a-version': '1.0' }) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'c-1', method, params: {} }),
      });
      const text = await r.text();
      expect(text).not.toContain('internal-agent.example');
      // Refused as an answer the proxy cannot read (the caller gets the binding's error, not a card).
      expect(text).toContain('-31502');
    } finally {
      await p.close();
    }
  });

  test('an error answer (404) so labelled goes as it is when nothing reads it (no inspection), and is refused when the hooks would', async () => {
    label = 'text/event-stream';
    answer = () => '{"error":"no such card"}';
    status = 404;
    for (const inspect of ['false', 'true']) {
      const p = await startTestProxy({
        UPSTREAM_URL: `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`,
        GUARDIAN_URL: guardian.url,
        ROLE: 'server',
        INSPECT_RESPONSES: inspect,
      });
      try {
        const r = await fetch(`${p.url}/a2a/jsonrpc`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 'c-2', method: 'GetExtendedAgentCard', params: {} }),
        });
        const text = await r.text();
        if (inspect === 'false') expect({ status: r.status, text }).toEqual({ status: 404, text: '{"error":"no such card"}' });
        else expect(text).toContain('-31502');
      } finally {
        await p.close();
      }
    }
  });
});
