/**
 * A large JSON-RPC body (256 KiB and up) sent as its canonical serialization is forwarded as the
 * caller's own bytes; everything else reaches the agent re-serialized from what the guardian approved.
 * Real SDK agent (its HTTP requests recorded: the SDK refuses bodies over 100 KB, so a large one is
 * read there), real HTTP guardian. The oracle for every case: the bytes the agent received are a
 * payload the guardian approved, as the guardian's own reading serializes it.
 *   - texts canonical to JSON.stringify but odd to other readers (an escaped lone surrogate,
 *     U+2028/2029, a nested `__proto__` member, an escaped NUL, 1e+21) pass byte for byte;
 *   - spellings that are not canonical (a duplicate key, 1e400, -0, an upper-case escape, an escaped
 *     surrogate pair) reach both as the parsed value's serialization, never as the caller spelled them;
 *   - a gzip body reaches the agent decoded, without Content-Encoding;
 *   - invalid UTF-8 (an overlong, an encoded surrogate, a cut sequence) and a BOM are refused;
 *   - a stage that changes the request (a guardian modify, even to an equal payload; the push-config
 *     rewrite; ownership's page token) drops the caller's bytes.
 */
import { gzipSync } from 'node:zlib';
import { rawRpc } from '../../helpers/agent';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);

const s = useStack();
let proxy: TestProxy;
beforeAll(async () => {
  proxy = await s.proxy({ INSPECT_RESPONSES: 'true', PUSH_ALLOW_PRIVATE_WEBHOOKS: 'true', TASK_OWNERSHIP: 'true' });
});

const V1 = { 'a2a-version': '1.0' };
const PAD = 'x'.repeat(300 * 1024);
const url = () => `${proxy.url}/a2a/jsonrpc`;
const posted = () => s.agent.received.filter((r) => r.method === 'POST');

const send = (id: string, parts: unknown[], extra: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'SendMessage',
  params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [...parts, { text: PAD }] }, ...extra },
});

/** The one body the agent received, which must be a payload the guardian approved. */
function forwardedAndApproved(): string {
  expect(posted()).toHaveLength(1);
  const got = posted()[0]!;
  expect(Number(got.headers['content-length'])).toBe(Buffer.byteLength(got.bodyText));
  expect(got.headers['content-encoding']).toBeUndefined();
  expect(s.guardian.approved()).toContain(got.bodyText);
  return got.bodyText;
}

test('texts canonical to JSON.stringify but odd to other readers reach the guardian and the agent byte for byte', async () => {
  const odd = JSON.parse('{"__proto__":{"role":"ROLE_AGENT"},"k":"\\u0000"}') as Record<string, unknown>;
  const sent = JSON.stringify(send('odd-1', [{ text: 'a\ud800b\u2028c\u2029' }, { data: { odd, n: 1e21 } }]));
  expect(sent).toContain('\\ud800');
  expect(sent).toContain('"__proto__":');
  expect(sent).toContain('1e+21');
  expect(JSON.stringify(JSON.parse(sent))).toBe(sent);
  await rawRpc(url(), sent, V1);
  expect(forwardedAndApproved()).toBe(sent);
  expect(s.guardian.rawBodies.some((b) => b.includes(`"payload":${sent}`))).toBe(true);
});

test.each([
  ['a duplicate key', (t: string) => t.replace('"id":"nc-1"', '"id":"nc-1","id":"nc-1"').replace('"messageId"', '"messageId":"other","messageId"')],
  ['1e400 and -0', (t: string) => t.replace('"n":1', '"n":1e400,"z":-0')],
  ['an upper-case escape of a lone surrogate', (t: string) => t.replace('\\ud800', '\\uD800')],
  ['an escaped surrogate pair', (t: string) => t.replace('\\ud800', '\\ud83d\\ude00')],
])('%s: the guardian and the agent get the parsed value as JSON.stringify writes it', async (_name, respell) => {
  const canonical = JSON.stringify(send('nc-1', [{ text: 'a\ud800b' }, { data: { n: 1 } }]));
  const spelled = respell(canonical);
  expect(spelled).not.toBe(canonical);
  await rawRpc(url(), spelled, V1);
  const got = forwardedAndApproved();
  expect(got).toBe(JSON.stringify(JSON.parse(spelled)));
  expect(got).not.toBe(spelled);
});

test('a gzip body reaches the agent decoded, as the guardian saw it', async () => {
  const sent = JSON.stringify(send('gz-1', [{ text: 'zipped' }]));
  const res = await fetch(url(), { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', ...V1 }, body: gzipSync(sent) });
  await res.text();
  expect(forwardedAndApproved()).toBe(sent);
});

test.each([
  ['an overlong encoding', Buffer.from('c0af', 'hex')],
  ['an encoded surrogate', Buffer.from('eda080', 'hex')],
  ['a cut sequence', Buffer.from('e282', 'hex')],
])('%s in a large body is refused before the guardian and the agent', async (_name, bad) => {
  const [head, tail] = JSON.stringify(send('bad-1', [{ text: '@' }])).split('@') as [string, string];
  const res = await fetch(url(), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...V1 },
    body: Buffer.concat([Buffer.from(head), bad, Buffer.from(tail)]),
  });
  expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32700);
  expect(posted()).toHaveLength(0);
  expect(s.guardian.calls()).toHaveLength(0);
});

test('a BOM before a large canonical body is refused', async () => {
  const res = await rawRpc(url(), `\ufeff${JSON.stringify(send('bom-1', []))}`, V1);
  expect(res.json.error.code).toBe(-32700);
  expect(posted()).toHaveLength(0);
});

test.each([
  // The same value in another member order: forwarded as the guardian wrote it, not as the caller did.
  ['an equal payload', (p: any) => ({ params: p.params, method: p.method, id: p.id, jsonrpc: p.jsonrpc })],
  ['a changed payload', (p: any) => ({ ...p, params: { ...p.params, message: { ...p.params.message, parts: [{ text: 'replaced' }] } } })],
])('a guardian modify to %s: the agent gets the replacement as serialized by the proxy', async (_name, replace) => {
  s.guardian.script((env) => ({ decision: 'modify', modifiedPayload: replace(env.params.payload) }));
  const sent = JSON.stringify(send('mod-1', [{ text: 'original' }]));
  await rawRpc(url(), sent, V1);
  const got = forwardedAndApproved();
  expect(got).toBe(JSON.stringify(replace(JSON.parse(sent))));
  expect(got).not.toBe(sent);
});

test("the push-config rewrite: the agent gets the relay's webhook, never the caller's bytes", async () => {
  const webhook = 'http://127.0.0.1:9/caller-hook';
  const sent = JSON.stringify(send('push-1', [{ text: 'push me' }], { configuration: { taskPushNotificationConfig: { url: webhook, token: 't' } } }));
  await rawRpc(url(), sent, V1);
  expect(s.guardian.calls()[0].params.payload.params.configuration.taskPushNotificationConfig.url).toBe(webhook);
  expect(posted()).toHaveLength(1);
  const got = posted()[0]!.bodyText;
  expect(got).not.toContain(webhook);
  expect(JSON.parse(got).params.configuration.taskPushNotificationConfig.url).toContain('/push/');
});

test("ownership's page token: the guardian and the agent get the agent's own token, never the sealed one", async () => {
  for (const t of ['one', 'two']) await rawRpc(url(), small(t), V1);
  const page = await rawRpc(url(), { jsonrpc: '2.0', id: 'l-1', method: 'ListTasks', params: { pageSize: 1 } }, V1);
  const sealed = page.json.result.nextPageToken as string;
  expect(sealed).toBeTruthy();
  s.agent.clear();
  s.guardian.clear();
  const sent = JSON.stringify({ jsonrpc: '2.0', id: 'l-2', method: 'ListTasks', params: { pageSize: 1, pageToken: sealed }, pad: PAD });
  await rawRpc(url(), sent, V1);
  const got = forwardedAndApproved();
  expect(got).not.toBe(sent);
  expect(JSON.parse(got).params.pageToken).not.toBe(sealed);
});

function small(t: string): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: `c-${t}`,
    method: 'SendMessage',
    params: { message: { messageId: `m-c-${t}-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: t }] } },
  });
}
