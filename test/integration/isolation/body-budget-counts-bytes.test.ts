/**
 * MAX_INFLIGHT_BODY_BYTES counts what a call holds in bytes: a compressed body with its decoded size (a
 * handful of small gzip bodies once held many times the budget), and the copies of its text in UTF-8 bytes,
 * not characters (a CJK text held three times what was counted), and a body's copies as its bytes arrive. Real SDK agent, real guardian, the proxy in between.
 */
import zlib from 'node:zlib';
import type { TestAgent } from '../../helpers/agent';
import type { TestGuardian } from '../../helpers/guardian';
import { useStack } from '../../helpers/proxy-harness';
import { announce, waitFor } from '../../helpers/net';

const stack = useStack();
let agent: TestAgent;
let guardian: TestGuardian;
beforeAll(() => {
  ({ agent, guardian } = stack);
});

/** POST raw bytes; the answer's status and parsed JSON. */
async function post(url: string, body: Buffer, headers: Record<string, string>): Promise<{ status: number; json: any }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}

const v03Send = (id: number, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
});

describe('MAX_INFLIGHT_BODY_BYTES', () => {
  test('a gzip body counts with its decoded size: a second call over the budget is "overloaded" (503, -31429), as a plain one is', async () => {
    const p = await stack.proxy({ ROLE: 'server', MAX_INFLIGHT_BODY_BYTES: String(200 * 1024) });
    await p.upstreamCard.ready();
    guardian.script(() => ({ decision: 'allow', delayMs: 800 }));
    // ~60 KiB of JSON, a few hundred bytes once gzipped.
    const bomb = (id: number) => zlib.gzipSync(Buffer.from(JSON.stringify(v03Send(id, 'x'.repeat(60 * 1024)))));
    expect(bomb(1).length).toBeLessThan(1024);
    const headers = { 'content-encoding': 'gzip' };
    const first = post(`${p.url}/a2a/jsonrpc`, bomb(1), headers);
    await new Promise((r) => setTimeout(r, 250)); // the first call waits on the guardian, its decoded body held
    const second = await post(`${p.url}/a2a/jsonrpc`, bomb(2), headers);
    expect({ status: second.status, code: second.json?.error?.code }).toEqual({ status: 503, code: -31429 });
    expect((await first).json?.result).toBeDefined();
    // The budget is returned when calls end.
    guardian.script(() => ({ decision: 'allow' }));
    expect((await post(`${p.url}/a2a/jsonrpc`, bomb(3), headers)).json?.result).toBeDefined();
    expect(agent.received.filter((r) => r.method === 'POST')).toHaveLength(2);
  });

  test('a call counts its copies in UTF-8 bytes, not characters: a CJK text three times its length in bytes is held as its bytes', async () => {
    const p = await stack.proxy({ ROLE: 'server', MAX_INFLIGHT_BODY_BYTES: String(120 * 1024) });
    await p.upstreamCard.ready();
    guardian.script(() => ({ decision: 'allow' }));
    // 20,000 characters each: ASCII is 20 KB, CJK 60 KB in UTF-8. Three copies: 60 KB (fits) and 180 KB (does not).
    const plain = await post(`${p.url}/a2a/jsonrpc`, Buffer.from(JSON.stringify(v03Send(1, 'x'.repeat(20_000)))), {});
    expect(plain.json?.result).toBeDefined();
    const cjk = await post(`${p.url}/a2a/jsonrpc`, Buffer.from(JSON.stringify(v03Send(2, '漢'.repeat(20_000)))), {});
    expect({ status: cjk.status, code: cjk.json?.error?.code, id: cjk.json?.id }).toEqual({ status: 503, code: -31429, id: 2 });
    expect(agent.received.filter((r) => r.method === 'POST').map((r) => (r.body as { id?: unknown } | undefined)?.id)).not.toContain(2);
  });
});

describe('a request body is held for its copies as it arrives', () => {
  test('a part-sent body holds three times its bytes, so a call the budget cannot carry through judging is cut while read: the guardian and the agent see none of it; a caller gone mid-body holds nothing', async () => {
    const p = await stack.proxy({ ROLE: 'server', MAX_INFLIGHT_BODY_BYTES: String(600 * 1024) });
    await p.upstreamCard.ready();
    guardian.script(() => ({ decision: 'allow' }));
    const held = await announce(p.url, 300 * 1024);
    try {
      held.write(Buffer.alloc(100 * 1024, 0x20));
      await waitFor(() => p.metrics.bodyBytesInFlight() >= 3 * 100 * 1024, 10_000, 'the part-sent body held');
      expect(p.metrics.bodyBytesInFlight()).toBe(3 * 100 * 1024);
      // 150 KB held three times does not fit beside it (read once, it did, and was then refused after its parse).
      const seen = guardian.calls().length;
      const over = await post(`${p.url}/a2a/jsonrpc`, Buffer.from(JSON.stringify(v03Send(9, 'y'.repeat(150 * 1024)))), {});
      expect({ status: over.status, code: over.json?.error?.code, id: over.json?.id }).toEqual({ status: 503, code: -31429, id: 9 });
      expect(guardian.calls().length).toBe(seen);
      expect(agent.received.filter((r) => r.method === 'POST').map((r) => (r.body as { id?: unknown } | undefined)?.id)).not.toContain(9);
    } finally {
      held.destroy();
    }
    // The caller left mid-body: its bytes leave the budget now, not at BODY_TIMEOUT_MS.
    await waitFor(() => p.metrics.bodyBytesInFlight() === 0, 5_000, 'the budget returned');
  });
});
