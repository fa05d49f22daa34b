/**
 * A caller that pipelines a second request and closes its sending side before that request is complete still
 * gets the answer to the first, whole request, which the guardian approved and the agent acted on: closing its side
 * ends only the request it cut. Real SDK agent, real guardian, the proxy in between; the caller is a raw socket.
 */
import net from 'node:net';
import type { TestAgent } from '../../helpers/agent';
import type { TestGuardian } from '../../helpers/guardian';
import { useStack } from '../../helpers/proxy-harness';
import { waitFor } from '../../helpers/net';

const stack = useStack();
let agent: TestAgent;
let guardian: TestGuardian;
beforeAll(() => {
  ({ agent, guardian } = stack);
});

const send = (id: number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'message/send',
    params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text: `call ${id}` }] } },
  });

const request = (host: string, body: string, declared = Buffer.byteLength(body)) =>
  `POST /a2a/jsonrpc HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n${body}`;

/** Write `bytes`, half-close, and collect what comes back until the proxy closes (or `ms` pass). */
function halfClosed(url: string, bytes: string, ms: number): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve) => {
    let got = '';
    const s = net.connect(Number(u.port), u.hostname, () => s.end(bytes));
    const timer = setTimeout(() => s.destroy(), ms);
    s.on('data', (c: Buffer) => (got += c.toString('utf8')));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
  });
}

describe('a pipelined request cut by the caller closing its side', () => {
  test.each([
    ['in its body', (host: string) => request(host, send(2).slice(0, 10), 1000)],
    ['in its headers', (host: string) => `POST /a2a/jsonrpc HTTP/1.1\r\nHost: ${host}\r\nContent-Le`],
  ])('%s: the first, whole request is answered to the caller', async (_name, cut) => {
    const p = await stack.proxy({ ROLE: 'server' });
    await p.upstreamCard.ready();
    // The first request is still being judged when the caller's FIN arrives.
    guardian.script(() => ({ decision: 'allow', delayMs: 400 }));
    const host = new URL(p.url).host;
    const got = await halfClosed(p.url, request(host, send(1)) + cut(host), 10_000);
    expect(got.startsWith('HTTP/1.1 200')).toBe(true);
    expect(got).toContain('"id":1');
    expect(agent.received.filter((r) => r.method === 'POST').map((r) => (r.body as { id?: unknown } | undefined)?.id)).toContain(1);
    expect(agent.received.filter((r) => r.method === 'POST').map((r) => (r.body as { id?: unknown } | undefined)?.id)).not.toContain(2);
    // The cut request's bytes leave the budget once the answer before it is sent, not at BODY_TIMEOUT_MS.
    await waitFor(() => p.metrics.bodyBytesInFlight() === 0, 2_000, 'the budget returned');
  });
});
