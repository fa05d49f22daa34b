/**
 * Large payloads travel to the guardian as their own bytes between a small envelope head and tail
 * (src/aos/envelope.ts envelopeBytes; from 16 KiB on), with a real SDK agent and a real HTTP
 * guardian: the guardian receives one valid AOS envelope whose payload text is byte for byte what
 * the agent receives (request hook) and what the caller receives (response hook), for an 80 KB
 * message (the SDK agent's own JSON limit is 100 KB) and its 80 KB echo, with and without reasoning, and for a
 * 3 MiB message (sent to the guardian in slices).
 */
import { rawRpc } from '../../helpers/agent';
import { isResponseEnvelope } from '../../helpers/guardian';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

const stack = useStack({ name: 'Large Agent', version: '1.0.0' });
let server: TestProxy;
let client: TestProxy;

beforeAll(async () => {
  server = await stack.proxy({ ROLE: 'server', INSPECT_RESPONSES: 'true' });
  client = await stack.proxy({ ROLE: 'client', INSPECT_RESPONSES: 'true' });
});

const big = (n: number): string =>
  Array.from({ length: n }, (_, i) => `w${i % 977} ü€🍰`)
    .join(' ')
    .slice(0, n);

/** The text between `"payload":` and `,"reasoning":` / `,"context":` of an envelope's raw JSON. */
function payloadText(raw: string): string {
  const start = raw.indexOf('"payload":') + '"payload":'.length;
  const end = raw.includes(',"reasoning":') ? raw.indexOf(',"reasoning":') : raw.lastIndexOf(',"context":');
  return raw.slice(start, end);
}

test.each([
  ['ROLE=server', () => server, undefined],
  ['ROLE=client, with reasoning', () => client, 'because the cake matters'],
] as const)('%s: an 80 KB message and its echo reach the guardian byte for byte, as one valid envelope each', async (_name, proxy, reasoning) => {
  const text = big(60_000); // about 80 KB of UTF-8: under the SDK agent's 100 KB JSON limit
  const body = { jsonrpc: '2.0', id: 'big-1', method: 'SendMessage', params: { message: { messageId: 'm-big', role: 'ROLE_USER', parts: [{ text }] } } };
  const res = await rawRpc(`${proxy().url}/a2a/jsonrpc`, body, { 'a2a-version': '1.0', ...(reasoning === undefined ? {} : { 'x-aos-reasoning': reasoning }) });
  expect(res.status).toBe(200);
  expect(res.json.result.task.artifacts[0].parts[0].text).toBe(`echo: ${text}`);

  const calls = stack.guardian.calls();
  expect(calls).toHaveLength(2);
  const [reqRaw, resRaw] = stack.guardian.rawBodies.filter((b) => !b.includes('"method":"ping"'));
  // Request hook: one valid envelope; its payload text is exactly the body the agent received.
  const forwarded = stack.agent.received.find((r) => r.method === 'POST')!.bodyText;
  expect(payloadText(reqRaw!)).toBe(forwarded);
  expect(JSON.parse(forwarded)).toEqual(body);
  expect(calls[0].params.reasoning).toBe(reasoning);
  expect(isResponseEnvelope(calls[1])).toBe(true);
  // Response hook: the payload text is exactly the answer the caller got.
  expect(payloadText(resRaw!)).toBe(res.text);
});

test('a 3 MiB message goes to the guardian in slices and arrives as one valid envelope, its payload byte for byte what the agent receives', async () => {
  const text = big(3 * 1024 * 1024);
  const body = { jsonrpc: '2.0', id: 'big-2', method: 'SendMessage', params: { message: { messageId: 'm-big-2', role: 'ROLE_USER', parts: [{ text }] } } };
  await rawRpc(`${server.url}/a2a/jsonrpc`, body, { 'a2a-version': '1.0' });
  const [reqRaw] = stack.guardian.rawBodies.filter((b) => !b.includes('"method":"ping"'));
  expect(JSON.parse(reqRaw!).params.payload).toEqual(body);
  const forwarded = stack.agent.received.find((r) => r.method === 'POST')!.bodyText;
  expect(payloadText(reqRaw!)).toBe(forwarded);
  expect(forwarded).toBe(JSON.stringify(body));
});
