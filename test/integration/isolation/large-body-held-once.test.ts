/**
 * A large request whose bytes are its canonical serialization is held once while it is judged: its long strings as
 * the parsed text only, their bytes made again as they are written (core/json-spliced.ts); the guardian and the
 * agent still get the caller's own bytes, byte for byte. Real SDK agent, real HTTP guardian, the proxy between.
 */
import { useStack } from '../../helpers/proxy-harness';
import { waitFor } from '../../helpers/net';

const stack = useStack();

/** The text between `"payload":` and `,"context":` of an envelope's bytes. */
function payloadBytes(envelope: Buffer): Buffer {
  const start = envelope.indexOf('"payload":') + '"payload":'.length;
  return envelope.subarray(start, envelope.lastIndexOf(',"context":'));
}

test('a 3 MiB canonical message of escapes and multi-byte characters reaches the guardian and the agent as the caller sent it, held as two copies of its size while judged, not three', async () => {
  const p = await stack.proxy({ ROLE: 'server' });
  await p.upstreamCard.ready();
  const text = 'é€🍰 "quoted" \\ back\n\u0001 \ud800 lone '.repeat(75_000);
  const call = {
    jsonrpc: '2.0',
    id: 7,
    method: 'message/send',
    params: { message: { kind: 'message', messageId: 'm-7', role: 'user', parts: [{ kind: 'text', text }] } },
  };
  const bytes = Buffer.from(JSON.stringify(call), 'utf8');
  expect(bytes.length).toBeGreaterThan(3 * 1024 * 1024);
  let answer = (): void => undefined;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  stack.guardian.script(async () => {
    await answered;
    return { decision: 'allow' };
  });
  const res = fetch(`${p.url}/a2a/jsonrpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bytes });
  try {
    await waitFor(() => stack.guardian.calls().length === 1, 30_000, 'the guardian asked');
    // The parsed request and what is made of it for the guardian and the agent; the caller's buffer is let go.
    expect(p.metrics.bodyBytesInFlight()).toBe(2 * bytes.length);
  } finally {
    answer();
  }
  await (await res).arrayBuffer();
  const [envelope] = stack.guardian.rawBytes.filter((b) => !b.includes('"method":"ping"'));
  expect(payloadBytes(envelope as Buffer).equals(bytes)).toBe(true);
  const forwarded = stack.agent.received.filter((r) => r.method === 'POST');
  expect(forwarded).toHaveLength(1);
  expect(forwarded[0]?.bodyBytes.equals(bytes)).toBe(true);
});
