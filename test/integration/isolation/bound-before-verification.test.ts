/**
 * A caller at its bound is refused before its credential is verified (docs/security.md "Shares before
 * verification"): the key a credential claims is read unverified, and a call whose claimed key is at its
 * calls in flight or has an empty rate bucket is answered 429 / -31429 (gRPC RESOURCE_EXHAUSTED) with no
 * signature check. Proved without timing: retries whose signatures do NOT verify but that claim the busy
 * caller's key are answered 429 (a proxy that verifies first answers -31401), and the identity counter does
 * not move. Only verified calls take a share: forged claims of a caller that is not at its bound are
 * verified and refused (-31401), and that caller keeps every call and token of its own.
 *
 * Real parts: a real SDK agent (JSON-RPC and gRPC) whose request handler is recorded, the test guardian,
 * ROLE=server a2a-guard in-process trusting ES256 assertion keys (files) and an OIDC issuer.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeGrpcClient, grpcFrame, rawGrpc } from '../../helpers/grpc';
import { rawRpc, sendReq, textOf, type RawResponse } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { bindTo, makeKey, signAssertion, writeJwks, type TestKey } from '../../helpers/keys';
import { waitFor } from '../../helpers/net';
import { counted, useStack, type TestProxy } from '../../helpers/proxy-harness';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';

jest.setTimeout(60_000);

const AUDIENCE = 'https://shared-agent.example';
const AGENTS = {
  busy: { id: 'busy-agent', name: 'Busy', url: 'https://busy.example', version: '1' },
  other: { id: 'other-agent', name: 'Other', url: 'https://other.example', version: '1' },
};
type Signer = keyof typeof AGENTS;

const rec = handlerRecorder();
const stack = useStack({ name: 'Shared Agent', version: '1.0.0', grpc: true, slowMs: 15_000, wrapRequestHandler: rec.wrap });
let dir: string;
let keys: Record<Signer, TestKey>;
let trust: string;
let ids: TestIdentities;
/** The calls a test holds in flight, ended after it. */
let holding: AbortController;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'a2a-guard-precheck-'));
  // One key bound to its agent (owner `assertion::busy-agent`), one not (owner by key and agent).
  keys = { busy: bindTo(await makeKey('busy-key'), AGENTS.busy.id), other: await makeKey('other-key') };
  trust = await writeJwks(dir, [keys.busy, keys.other]);
  ids = await startIdentities();
});
afterAll(async () => {
  await ids?.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  rec.clear();
  holding = new AbortController();
});
afterEach(() => holding.abort());

const assertionOf = (who: Signer): Promise<string> => signAssertion(keys[who], AGENTS[who], AUDIENCE);
/** The same token with a signature that does not verify: its header and claims name the caller all the same. */
const forged = (token: string): string => `${token.slice(0, token.lastIndexOf('.') + 1)}${Buffer.alloc(64, 7).toString('base64url')}`;

let n = 0;
/** A v1.0 JSON-RPC SendMessage with `headers`, raw; `hold`: kept in flight until the test ends. */
function send(proxy: TestProxy, headers: Record<string, string>, text: string, hold = false): Promise<RawResponse> {
  const id = ++n;
  return rawRpc(
    `${proxy.url}/a2a/jsonrpc`,
    { jsonrpc: '2.0', id, method: 'SendMessage', params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } } },
    { 'a2a-version': '1.0', ...headers },
    hold ? { signal: holding.signal } : {},
  );
}
const asSigner = async (who: Signer) => ({ 'x-aos-agent-assertion': await assertionOf(who) });
const forgedSigner = async (who: Signer) => ({ 'x-aos-agent-assertion': forged(await assertionOf(who)) });
const forgedBearer = (who: Caller) => ({ authorization: forged(ids.headersAs(who).authorization as string) });

/** Hold `count` slow calls in flight (each its own fresh credential) until the agent has them all. */
async function holdCalls(proxy: TestProxy, count: number, headers: () => Promise<Record<string, string>> | Record<string, string>): Promise<void> {
  const before = rec.calls.length;
  for (let i = 0; i < count; i++) void send(proxy, await headers(), 'slow', true).catch(() => undefined);
  await waitFor(() => rec.calls.length >= before + count, 20_000, `${count} calls at the agent`);
}

const verifications = async (proxy: TestProxy): Promise<number> =>
  (await counted(proxy, 'a2a_guard_caller_identities_total', 'assertion')) +
  (await counted(proxy, 'a2a_guard_caller_identities_total', 'oidc')) +
  (await counted(proxy, 'a2a_guard_caller_identities_total', 'refused'));

function expectLimited(r: RawResponse, retryAfter?: string): void {
  expect(r.status).toBe(429);
  if (retryAfter !== undefined) expect(r.headers['retry-after']).toBe(retryAfter);
  else expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect((r.json as { error?: { code?: number } } | undefined)?.error?.code).toBe(-31429);
}
/** Refused as not verified: JSON-RPC's -31401 (in a 200, as the binding answers it). */
function expectUnverified(r: RawResponse): void {
  expect((r.json as { error?: { code?: number } } | undefined)?.error?.code).toBe(-31401);
}

describe('signed assertions (ES256), calls in flight', () => {
  const proxyOf = () =>
    stack.proxy({
      ROLE: 'server',
      IDENTITY_POLICY: 'required',
      ASSERTION_TRUST_JWKS_FILE: trust,
      ASSERTION_AUDIENCE: AUDIENCE,
      MAX_CALLS_PER_CALLER: '2',
      CALL_WAIT_MS: '0',
    });

  test("a caller at its calls in flight is refused 429 without its retries' signatures being checked; another caller is served", async () => {
    const proxy = await proxyOf();
    await holdCalls(proxy, 2, () => asSigner('busy'));
    const checked = await verifications(proxy);
    const limited = await counted(proxy, 'a2a_guard_caller_limited_total', 'calls');
    // A retry whose signature does not verify is answered as the caller's valid retry is: by its bound.
    expectLimited(await send(proxy, await forgedSigner('busy'), 'forged retry'), '1');
    expectLimited(await send(proxy, await asSigner('busy'), 'valid retry'), '1');
    expect(await verifications(proxy)).toBe(checked);
    expect(await counted(proxy, 'a2a_guard_caller_limited_total', 'calls')).toBe(limited + 2);
    const other = await send(proxy, await asSigner('other'), 'victim');
    expect(other.status).toBe(200);
    expect(rec.calls.map((c) => textOf(c.params))).toEqual(['slow', 'slow', 'victim']);
  });

  test('forged claims of a caller below its bound are verified (-31401) and take none of its calls in flight', async () => {
    const proxy = await proxyOf();
    // As many forged claims at once as the caller may have calls in flight: none of them holds a place.
    const forgedCalls = await Promise.all([0, 1].map(async () => send(proxy, await forgedSigner('busy'), 'forged')));
    for (const r of forgedCalls) expectUnverified(r);
    await holdCalls(proxy, 2, () => asSigner('busy'));
    // Now at its bound by its own calls: a forged claim is refused as the caller's own retry is.
    expectLimited(await send(proxy, await forgedSigner('busy'), 'forged again'), '1');
    expect(rec.calls.map((c) => textOf(c.params))).toEqual(['slow', 'slow']);
  });
});

describe('bearer tokens (OIDC)', () => {
  test('the rate bound: with an empty bucket a forged claim is refused 429 unverified; forged claims take no token', async () => {
    const proxy = await stack.proxy({ ROLE: 'server', ...ids.env, RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '1' });
    for (let i = 0; i < 3; i++) expectUnverified(await send(proxy, forgedBearer('A'), `forged ${i}`));
    // The caller's one token is still there: the forged claims took none.
    expect((await send(proxy, ids.headersAs('A'), 'spends the burst')).status).toBe(200);
    const checked = await verifications(proxy);
    expectLimited(await send(proxy, forgedBearer('A'), 'forged, bucket empty'));
    expect(await verifications(proxy)).toBe(checked);
    expect(await counted(proxy, 'a2a_guard_caller_limited_total', 'rate')).toBe(1);
    expect((await send(proxy, ids.headersAs('B'), 'victim')).status).toBe(200);
    expect(rec.calls.map((c) => textOf(c.params))).toEqual(['spends the burst', 'victim']);
  });

  test('gRPC: a forged claim of a caller at its calls in flight is RESOURCE_EXHAUSTED unverified; of a caller below it, UNAUTHENTICATED', async () => {
    const proxy = await stack.proxy({ ROLE: 'server', ...ids.env, GRPC_PORT: '0', MAX_CALLS_PER_CALLER: '1', CALL_WAIT_MS: '0' });
    const address = proxy.grpcAddress as string;
    const call = (headers: Record<string, string>) =>
      rawGrpc(address, '/lf.a2a.v1.A2AService/SendMessage', grpcFrame(new Uint8Array()), { 'a2a-version': '1.0', ...headers });
    expect((await call(forgedBearer('A'))).grpcStatus).toBe(16);
    await holdCalls(proxy, 1, () => ids.headersAs('A'));
    const checked = await verifications(proxy);
    const refused = await call(forgedBearer('A'));
    expect(refused.grpcStatus).toBe(8);
    expect(refused.details[0]?.metadata['retryAfterSeconds']).toBe('1');
    expect(await verifications(proxy)).toBe(checked);
    // The other caller is verified as ever: refused with a forged token, served with its own.
    expect((await call(forgedBearer('B'))).grpcStatus).toBe(16);
    const { client } = await makeGrpcClient(proxy.url);
    expect(textOf(await client.sendMessage(sendReq('victim over gRPC'), { serviceParameters: ids.headersAs('B') }))).toContain('victim over gRPC');
  });
});
