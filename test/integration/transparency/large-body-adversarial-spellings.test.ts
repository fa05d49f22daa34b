/**
 * Large JSON-RPC bodies (256 KiB and up) spelled to make the piecewise parse and the canonical check disagree with
 * a whole parse: long strings across slice edges (escaped surrogate pairs, escapes cut at 32 KiB and 256 KiB),
 * duplicate keys with long equal or different values, long keys, `__proto__`, integer-like keys out of order.
 * The oracle: the one body the agent receives is a payload the guardian approved, and it is the serialization
 * of its own parse (no spelling another reader could read otherwise).
 */
import { rawRpc } from '../../helpers/agent';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(120_000);

const s = useStack();
let proxy: TestProxy;
beforeAll(async () => {
  proxy = await s.proxy({});
});

const V1 = { 'a2a-version': '1.0' };
const KB = 1024;
const url = () => `${proxy.url}/a2a/jsonrpc`;
const posted = () => s.agent.received.filter((r) => r.method === 'POST');

/** A SendMessage text whose params.message spelled by `msg` (a JSON text of the message object's members). */
const body = (id: string, members: string, extra = '') =>
  `{"jsonrpc":"2.0","id":"${id}","method":"SendMessage","params":{"message":{"messageId":"m-${id}","role":"ROLE_USER",${members}}${extra}}}`;

const rep = (unit: string, bytes: number) => unit.repeat(Math.ceil(bytes / unit.length));
const PAIR = '\\ud83d\\ude00';
/** A long string whose escaped surrogate pairs straddle the 32 KiB slices of the walk (and fall near the parser's 256 KiB ones). */
const straddle = (n: number, k: number) => rep(`${'a'.repeat(k)}${PAIR}`, n);

const CASES: [string, string][] = [
  ['escaped pairs across slice edges', body('c1', `"parts":[{"text":"${straddle(600 * KB, 32 * KB - 1)}"}]`)],
  [
    'escaped pairs across slice edges, other offsets',
    body('c1b', `"parts":[{"text":"${straddle(700 * KB, 32 * KB - 2)}","metadata":{"m":"${straddle(600 * KB, 1000)}"}}]`),
  ],
  [
    'an escaped high surrogate ends one 256K slice, its low begins the next',
    body('c2', `"parts":[{"text":"${'a'.repeat(256 * KB - 20)}\\ud83d\\ude00${'b'.repeat(300 * KB)}"}]`),
  ],
  ['duplicate key, long equal values', body('c3', `"parts":[{"text":"${'y'.repeat(300 * KB)}","text":"${'y'.repeat(300 * KB)}"}]`)],
  ['duplicate key, long different values', body('c4', `"parts":[{"text":"${'y'.repeat(300 * KB)}","text":"${'z'.repeat(300 * KB)}"}]`)],
  ['duplicate key, short then long', body('c5', `"parts":[{"text":"evil","text":"${'z'.repeat(300 * KB)}"}]`)],
  ['duplicate key, long then short', body('c6', `"parts":[{"text":"${'z'.repeat(300 * KB)}","text":"evil"}]`)],
  ['a long key', body('c7', `"parts":[{"text":"t","metadata":{"${'k'.repeat(300 * KB)}":"v","${'k'.repeat(300 * KB)}":"w"}}]`)],
  ['a long __proto__ value', body('c8', `"parts":[{"text":"t","metadata":{"__proto__":"${'p'.repeat(300 * KB)}","__proto__":{"x":1}}}]`)],
  ['integer-like keys out of order', body('c9', `"parts":[{"text":"t","metadata":{"b":"${'q'.repeat(300 * KB)}","1":1,"0":0,"4294967295":2}}]`)],
  [
    'duplicate method in a large body',
    `{"jsonrpc":"2.0","id":"c10","method":"GetTask","params":{"message":{"messageId":"m-c10","role":"ROLE_USER","parts":[{"text":"${'r'.repeat(300 * KB)}"}]}},"method":"SendMessage"}`,
  ],
  ['escapes cut at slice edges', body('c11', `"parts":[{"text":"${rep('\\\\\\"\\n\\u0041', 600 * KB)}"}]`)],
  ['whitespace between long members', body('c12', ` "parts" : [ { "text" : "${'w'.repeat(300 * KB)}" } ] `)],
  ['a lone escaped low surrogate after a raw pair at an edge', body('c13', `"parts":[{"text":"${'a'.repeat(256 * KB - 5)}😀\\ude00${'b'.repeat(300 * KB)}"}]`)],
];

test.each(CASES)('%s: the agent gets only a canonical payload the guardian approved', async (_name, text) => {
  expect(Buffer.byteLength(text)).toBeGreaterThanOrEqual(256 * KB);
  s.agent.clear();
  s.guardian.clear();
  await rawRpc(url(), text, V1);
  expect(posted()).toHaveLength(1);
  for (const got of posted()) {
    expect(s.guardian.approved()).toContain(got.bodyText);
    expect(got.bodyText).toBe(JSON.stringify(JSON.parse(got.bodyText)));
  }
});
