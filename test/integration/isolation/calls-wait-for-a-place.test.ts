/**
 * A caller past MAX_CALLS_PER_CALLER: its next calls wait, unread, in its own line for one of its own
 * places (CALL_WAIT_MS), instead of being refused at once and retried; at most MAX_CALLS_PER_CALLER wait,
 * and past that line a call is refused 429 before its credential is verified. Another caller's calls go
 * at once meanwhile. Proved on what the agent's request handler acted on, never on timing: a waiting
 * call reaches the handler only once one of its caller's calls ended.
 *
 * Real parts: a real SDK agent whose request handler is recorded, the test guardian, ROLE=server
 * a2a-guard in-process with OIDC-verified callers (test/helpers/identities.ts).
 */
import { rawRpc, textOf, type RawResponse } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { waitFor } from '../../helpers/net';
import { counted, useStack, type TestProxy } from '../../helpers/proxy-harness';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';

jest.setTimeout(60_000);

const rec = handlerRecorder();
const stack = useStack({ name: 'Shared Agent', version: '1.0.0', slowMs: 20_000, wrapRequestHandler: rec.wrap });
let ids: TestIdentities;
/** The calls a test holds in flight, ended after it. */
let holding: AbortController;

beforeAll(async () => {
  ids = await startIdentities();
});
afterAll(async () => {
  await ids?.close();
});
beforeEach(() => {
  rec.clear();
  holding = new AbortController();
});
afterEach(() => holding.abort());

let n = 0;
/** A v1.0 JSON-RPC SendMessage as `who`, raw; ended early by `signal` (default: when the test ends). */
function sendAs(
  proxy: TestProxy,
  who: Caller,
  text: string,
  signal: AbortSignal = holding.signal,
  headers: Record<string, string> = ids.headersAs(who),
): Promise<RawResponse> {
  const id = ++n;
  return rawRpc(
    `${proxy.url}/a2a/jsonrpc`,
    { jsonrpc: '2.0', id, method: 'SendMessage', params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } } },
    { 'a2a-version': '1.0', ...headers },
    { signal },
  );
}

const texts = (): string[] => rec.calls.map((c) => textOf(c.params));

test("calls past a caller's bound wait unforwarded while another caller's go; a call of its own that ends hands its place on", async () => {
  const proxy = await stack.proxy({ ROLE: 'server', ...ids.env, MAX_CALLS_PER_CALLER: '2', CALL_WAIT_MS: '30000' });
  const first = new AbortController();
  void sendAs(proxy, 'A', 'slow one', first.signal).catch(() => undefined);
  void sendAs(proxy, 'A', 'slow two').catch(() => undefined);
  await waitFor(() => rec.calls.length >= 2, 20_000, "A's two calls at the agent");
  const answered: string[] = [];
  const waiting = ['waited one', 'waited two'].map((text) => sendAs(proxy, 'A', text).then((r) => (answered.push(text), r)));
  for (const w of waiting) void w.catch(() => undefined);
  // Another caller's calls go at once, one after the other, while A's wait.
  for (let i = 0; i < 3; i++) expect((await sendAs(proxy, 'B', `victim ${i}`)).status).toBe(200);
  expect(answered).toEqual([]);
  expect(texts()).toEqual(['slow one', 'slow two', 'victim 0', 'victim 1', 'victim 2']);
  expect(await counted(proxy, 'a2a_guard_caller_limited_total', 'calls')).toBe(0);
  // A's first call ends: its place passes to one of A's waiting calls, which is forwarded and answered; the other still waits.
  first.abort();
  const served = await Promise.race(waiting);
  expect(served.status).toBe(200);
  expect(answered).toHaveLength(1);
  expect(texts()).toEqual(['slow one', 'slow two', 'victim 0', 'victim 1', 'victim 2', answered[0]]);
});

test('past a line as long as MAX_CALLS_PER_CALLER, the next call is refused before its credential is verified; a forged claim takes no place in the line', async () => {
  const proxy = await stack.proxy({ ROLE: 'server', ...ids.env, MAX_CALLS_PER_CALLER: '1', CALL_WAIT_MS: '30000' });
  // A forged claim of A while its line has room is verified and refused: it never waits in A's line.
  const token = ids.headersAs('A').authorization as string;
  const forged = { authorization: `${token.slice(0, token.lastIndexOf('.') + 1)}${Buffer.alloc(64, 7).toString('base64url')}` };
  void sendAs(proxy, 'A', 'slow').catch(() => undefined);
  await waitFor(() => rec.calls.length >= 1, 20_000, "A's call at the agent");
  const forgedEarly = await sendAs(proxy, 'A', 'forged early', holding.signal, forged);
  expect((forgedEarly.json as { error?: { code?: number } } | undefined)?.error?.code).toBe(-31401);
  void sendAs(proxy, 'A', 'waiting').catch(() => undefined);
  await waitFor(async () => (await counted(proxy, 'a2a_guard_caller_identities_total', 'oidc')) >= 2, 10_000, 'the waiting call verified');
  const verified = await counted(proxy, 'a2a_guard_caller_identities_total', 'oidc');
  const refusedIdentities = await counted(proxy, 'a2a_guard_caller_identities_total', 'refused');
  // The line is full: a forged retry is answered 429 as a valid one is, and neither signature is checked.
  for (const headers of [forged, ids.headersAs('A')]) {
    const r = await sendAs(proxy, 'A', 'over the line', holding.signal, headers);
    expect(r.status).toBe(429);
  }
  expect(await counted(proxy, 'a2a_guard_caller_identities_total', 'oidc')).toBe(verified);
  expect(await counted(proxy, 'a2a_guard_caller_identities_total', 'refused')).toBe(refusedIdentities);
  expect((await sendAs(proxy, 'B', 'victim')).status).toBe(200);
  expect(texts()).toContain('victim');
  expect(texts().filter((t) => t === 'over the line' || t === 'forged early')).toEqual([]);
});
