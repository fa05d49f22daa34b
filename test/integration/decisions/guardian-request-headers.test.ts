/**
 * The guardian call: what a caller puts into the proxy's request to the
 * guardian. With tracing off, the caller's `tracestate` went to the guardian as it came, any length:
 * a caller sized it so that the proxy accepted its request but the guardian's HTTP server refused
 * the proxy's (431: the proxy's request adds its GUARDIAN_TOKEN and its own headers). That is "no
 * valid answer", so under FAIL_MODE=open the call reached the agent past a guardian that denies
 * everything; under FAIL_MODE=closed any caller could turn its calls into -31503 at will.
 * Real SDK agent, real HTTP guardian (Node's default 16 KiB header limit), raw sockets.
 */
import net from 'node:net';
import type { TestAgent } from '../../helpers/agent';
import type { TestGuardian } from '../../helpers/guardian';
import { useStack } from '../../helpers/proxy-harness';

const stack = useStack();
let agent: TestAgent;
let guardian: TestGuardian;
beforeAll(() => {
  ({ agent, guardian } = stack);
});

const BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'molotov' }] } },
});
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** One raw HTTP/1.1 call with a tracestate of `n` characters; the status line of the answer. */
function callWithTracestate(base: string, n: number): Promise<string> {
  const url = new URL(base);
  const head =
    `POST /a2a/jsonrpc HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(BODY)}\r\n` +
    `traceparent: ${TRACEPARENT}\r\ntracestate: a=${'x'.repeat(n)}\r\nConnection: close\r\n\r\n`;
  return new Promise((resolve) => {
    let got = '';
    const s = net.connect(Number(url.port), url.hostname, () => s.write(head + BODY));
    s.on('data', (c: Buffer) => (got += c.toString('latin1')));
    s.on('close', () => resolve(got.split('\r\n')[0] ?? ''));
    s.on('error', () => resolve(got.split('\r\n')[0] ?? ''));
  });
}

describe('caller trace context towards the guardian', () => {
  test('FAIL_MODE=open: no tracestate size gets a call past a guardian that denies everything', async () => {
    const p = await stack.proxy({ ROLE: 'server', FAIL_MODE: 'open', GUARDIAN_TOKEN: `eyJ${'x'.repeat(900)}` });
    await p.upstreamCard.ready();
    guardian.script(() => ({ decision: 'deny' }));
    const statuses = new Set<string>();
    // From well below to just past what the proxy's own 16 KiB header limit accepts.
    for (let n = 14_000; n <= 16_300; n += 100) statuses.add(await callWithTracestate(p.url, n));
    expect(agent.received.filter((r) => r.method === 'POST')).toEqual([]);
    expect([...statuses].some((s) => s.startsWith('HTTP/1.1 200'))).toBe(true);
  });

  test('a plausible tracestate still reaches the guardian as it came', async () => {
    const p = await stack.proxy({ ROLE: 'server' });
    await p.upstreamCard.ready();
    guardian.script(() => ({ decision: 'deny' }));
    await callWithTracestate(p.url, 40);
    const h = guardian.headers.filter((_h, i) => guardian.envelopes[i]?.method !== 'ping');
    expect(h[0]?.traceparent).toBe(TRACEPARENT);
    expect(h[0]?.tracestate).toBe(`a=${'x'.repeat(40)}`);
  });
});
