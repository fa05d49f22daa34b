/**
 * Sidecar-to-sidecar identity assertions, end to end with real parts: SDK client -> ROLE=client proxy
 * (signs) -> ROLE=server proxy (verifies) -> SDK agent, a recording guardian, real keys in files.
 *
 *   - the verified caller reaches the guardian as `from` (id, name, url, version + metadata.identity),
 *     schema-valid; X-AOS-Agent-* headers the client agent sends cannot change it;
 *   - the assertion never reaches the agent (any spelling of the header);
 *   - forged, tampered, expired, re-targeted, replayed (a real captured assertion) and header-only
 *     callers are refused (-31401 / HTTP 401) or reduced to "unknown", per IDENTITY_POLICY;
 *   - key rotation through the key files (signing key + kid, trust set with both keys);
 *   - the reference guardian's peer allow-list matches verified callers only.
 */
import http from 'node:http';
import net from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collect, makeClient, postsTo, rawRpc, sendReq, textOf, type TestAgent } from '../../helpers/agent';
import type { Envelope, TestGuardian } from '../../helpers/guardian';
import { makeKey, signAssertion, writeJwks, writeSigningKey, type TestKey } from '../../helpers/keys';
import { closeServer, freePort, listen, waitFor } from '../../helpers/net';
import { validateAosRequest } from '../../helpers/schema';
import { startTestProxy, useStack, type TestProxy } from '../../helpers/proxy-harness';
import { embeddedGuardian } from '../../../src/guardian/embedded';

const ASSISTANT = { id: 'cooking-assistant', name: 'Cooking assistant', url: 'https://kitchen.example/agents/cooking-assistant', version: '1.0.0' };
const CLIENT_ENV = {
  ROLE: 'client',
  OBSERVED_AGENT_ID: ASSISTANT.id,
  OBSERVED_AGENT_NAME: ASSISTANT.name,
  OBSERVED_AGENT_URL: ASSISTANT.url,
  OBSERVED_AGENT_VERSION: ASSISTANT.version,
  OBSERVED_AGENT_INSTRUCTIONS: 'Help the user cook.',
};

const stack = useStack({ name: 'Cake Baker', version: '2.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let dir: string;
let k1: TestKey;
let k2: TestKey;
let rogue: TestKey;
const started: TestProxy[] = [];

beforeAll(async () => {
  ({ agent, guardian } = stack);
  dir = await mkdtemp(join(tmpdir(), 'a2a-guard-assert-'));
  [k1, k2, rogue] = await Promise.all([makeKey('sidecar-2026-01', 'ES256'), makeKey('sidecar-2026-02', 'EdDSA'), makeKey('sidecar-2026-01', 'ES256')]);
});
afterAll(async () => {
  for (const p of started.splice(0)) await p.close();
  await rm(dir, { recursive: true, force: true });
});

async function proxy(env: Record<string, string>): Promise<TestProxy> {
  const p = await startTestProxy({ GUARDIAN_URL: guardian.url, ...env });
  started.push(p);
  return p;
}

/** A ROLE=server proxy on a known port (its URL is the audience its callers sign for). */
async function serverProxy(env: Record<string, string>): Promise<TestProxy> {
  const port = await freePort();
  return proxy({
    ROLE: 'server',
    UPSTREAM_URL: agent.origin,
    PORT: String(port),
    ASSERTION_AUDIENCE: `http://127.0.0.1:${port}`,
    OBSERVED_AGENT_INSTRUCTIONS: 'Bake.',
    ...env,
  });
}

const isServerHook = (e: Envelope): boolean => 'instructions' in (e.params?.context?.to?.agent ?? {});
const serverHooks = (): Envelope[] => guardian.calls().filter(isServerHook);
const v03Send = (id: number | string, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
});
const errorOf = (json: any) => ({
  code: json?.error?.code,
  reason: json?.error?.data?.[0]?.reason,
  metadata: json?.error?.data?.[0]?.metadata,
  message: json?.error?.message,
});

const VERIFIED_FROM = (kid: string) => ({
  url: ASSISTANT.url,
  name: ASSISTANT.name,
  version: ASSISTANT.version,
  id: ASSISTANT.id,
  metadata: { identity: { verified: true, source: 'assertion', subject: ASSISTANT.id, issuer: kid } },
});

describe('a signing ROLE=client sidecar in front of a verifying ROLE=server sidecar', () => {
  let server: TestProxy;
  let client: TestProxy;
  beforeAll(async () => {
    const trust = await writeJwks(dir, [k1], 'pair.jwks.json');
    server = await serverProxy({ ASSERTION_TRUST_JWKS_FILE: trust, IDENTITY_POLICY: 'required' });
    client = await proxy({ ...CLIENT_ENV, UPSTREAM_URL: server.url, ASSERTION_SIGNING_KEY_FILE: await writeSigningKey(dir, k1) });
  });

  test.each(['1.0', '0.3'] as const)(
    'SDK %s: the verified caller is `from`; spoofed X-AOS-Agent-* change nothing; the assertion never reaches the agent',
    async (version) => {
      const sdk = await makeClient(client.url, 'JSONRPC', version);
      const spoof = { serviceParameters: { 'X-AOS-Agent-Name': 'Trusted bank', 'X-AOS-Agent-Assertion': 'eyJhbGciOiJub25lIn0.e30.' } };
      expect(textOf(await sdk.sendMessage(sendReq('one cheesecake'), spoof))).toBe('echo: one cheesecake');
      const events = await collect(sdk.sendMessageStream(sendReq('stream 2'), spoof));
      expect(events.at(-1)?.payload?.$case).toBe('statusUpdate');

      const hooks = serverHooks();
      expect(hooks.map((e) => e.method)).toEqual(['message/send', 'message/stream']);
      for (const e of hooks) {
        expect(e.params.context.from).toEqual({ agent: VERIFIED_FROM(k1.kid), role: 'client' });
        expect(validateAosRequest(e, e.method, { fullSide: 'to' })).toEqual([]);
        expect(validateAosRequest(e, e.method)).toEqual([]); // 'auto' tells the verified caller from the full observed agent
      }
      const posts = postsTo(agent);
      expect(posts).toHaveLength(2);
      for (const p of posts) expect(Object.keys(p.headers).filter((h) => h.startsWith('x-aos-'))).toEqual([]);
    },
  );

  test('REST through both sidecars: verified too', async () => {
    const sdk = await makeClient(client.url, 'HTTP+JSON', '1.0');
    expect(textOf(await sdk.sendMessage(sendReq('rest please')))).toBe('echo: rest please');
    expect(serverHooks()[0]?.params.context.from.agent).toEqual(VERIFIED_FROM(k1.kid));
  });

  test('IDENTITY_POLICY=required: a caller without an assertion gets -31401 naming what is missing; nothing reaches the guardian or the agent', async () => {
    const r = await rawRpc(`${server.url}/a2a/jsonrpc`, v03Send(7, 'I am the Cooking assistant'), {
      'X-AOS-Agent-Name': ASSISTANT.name,
      'X-AOS-Agent-Url': ASSISTANT.url,
    });
    expect(r.status).toBe(200);
    // Refused before its body is read (admission before cost): the id is not known.
    expect(r.json.id).toBeNull();
    expect(r.headers['connection']).toBe('close');
    expect(errorOf(r.json)).toEqual({
      code: -31401,
      reason: 'UNAUTHENTICATED',
      message: 'Caller identity required: no verified identity was presented (accepted: assertion (X-AOS-Agent-Assertion))',
      metadata: { missing: 'verified identity', accepted: 'assertion (X-AOS-Agent-Assertion)' },
    });
    // REST form: HTTP 401 with a challenge
    const rest = await rawRpc(
      `${server.url}/a2a/rest/message:send`,
      { message: { messageId: 'r1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
      { 'a2a-version': '1.0' },
    );
    expect(rest.status).toBe(401);
    expect(rest.headers['www-authenticate']).toBe('Bearer realm="a2a-guard"');
    expect(rest.json.error).toMatchObject({ code: 401, status: 'UNAUTHENTICATED', details: [{ reason: 'UNAUTHENTICATED', domain: 'a2a-guard' }] });
    // Non-A2A traffic never reaches the agent either (refused by the positive model before anyone is asked)
    const other = await rawRpc(`${server.url}/some/other/route`, { x: 1 });
    expect(other.json?.error?.data?.[0]).toMatchObject({ domain: 'a2a-guard' });
    // The agent card stays public
    expect((await fetch(`${server.url}/.well-known/agent-card.json`)).status).toBe(200);
    expect(guardian.calls()).toEqual([]);
    expect(postsTo(agent)).toEqual([]);
  });

  const serverUrl = () => server.url;
  const now = () => Math.floor(Date.now() / 1000);

  test.each([
    ['forged: signed by a key the server does not trust', async () => signAssertion(rogue, ASSISTANT, serverUrl()), 'signature does not verify'],
    ['signed by a key that is not in the trust set at all', async () => signAssertion(k2, ASSISTANT, serverUrl()), 'signed by a key that is not trusted'],
    ['expired', async () => signAssertion(k1, ASSISTANT, serverUrl(), { iat: now() - 60, exp: now() - 30 }), 'expired'],
    ['re-targeted: issued for another server', async () => signAssertion(k1, ASSISTANT, 'http://127.0.0.1:1'), 'issued for another audience'],
    ['an OIDC-typed token signed by the trusted key', async () => signAssertion(k1, ASSISTANT, serverUrl(), { typ: 'JWT' }), 'not of the expected type'],
  ])('refused: %s', async (_what, make, problem) => {
    const r = await rawRpc(`${server.url}/a2a/jsonrpc`, v03Send(1, 'hello'), { 'X-AOS-Agent-Assertion': await make() });
    expect(errorOf(r.json)).toMatchObject({ code: -31401, reason: 'UNAUTHENTICATED', metadata: { credential: 'assertion', problem } });
    expect(guardian.calls()).toEqual([]);
    expect(postsTo(agent)).toEqual([]);
  });

  test('replayed: an assertion captured on the wire works once, then never again', async () => {
    // A recorder stands where the server sidecar would be, and keeps what the client sidecar sends.
    const captured: string[] = [];
    const recorder = http.createServer((req, res) => {
      const a = req.headers['x-aos-agent-assertion'];
      if (typeof a === 'string') captured.push(a);
      req.resume();
      req.on('end', () =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"jsonrpc":"2.0","id":1,"result":{"kind":"message","role":"agent","messageId":"x","parts":[]}}'),
      );
    });
    const recorderUrl = await listen(recorder);
    try {
      const spy = await proxy({
        ...CLIENT_ENV,
        UPSTREAM_URL: recorderUrl,
        ASSERTION_AUDIENCE: server.url,
        ASSERTION_SIGNING_KEY_FILE: await writeSigningKey(dir, k1, 'spy.jwk.json'),
      });
      await rawRpc(`${spy.url}/a2a/jsonrpc`, v03Send(1, 'hello'));
      expect(captured).toHaveLength(1);
      guardian.clear();
      const first = await rawRpc(`${server.url}/a2a/jsonrpc`, v03Send(2, 'first use'), { 'X-AOS-Agent-Assertion': captured[0] });
      expect(textOf(first.json)).toBe('echo: first use');
      const again = await rawRpc(`${server.url}/a2a/jsonrpc`, v03Send(3, 'replay'), { 'X-AOS-Agent-Assertion': captured[0] });
      expect(errorOf(again.json)).toMatchObject({ code: -31401, metadata: { credential: 'assertion', problem: 'was already used (replayed)' } });
      expect(postsTo(agent).map((p) => textOf((p.body as any).params))).toEqual(['first use']);
    } finally {
      await closeServer(recorder);
    }
  });
});

describe('WebSocket upgrades (ALLOW_WEBSOCKETS=true) are uninspected, not unidentified', () => {
  test("IDENTITY_POLICY=required: an upgrade without an assertion gets 401; with one it is forwarded, without the proxy's headers", async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const up = http.createServer((_req, res) => res.end('plain'));
    up.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
      seen.push(req.headers);
      socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    });
    const upUrl = await listen(up);
    try {
      const port = await freePort();
      const aud = `http://127.0.0.1:${port}`;
      await proxy({
        ROLE: 'server',
        UPSTREAM_URL: upUrl,
        PORT: String(port),
        ASSERTION_AUDIENCE: aud,
        ALLOW_WEBSOCKETS: 'true',
        UPGRADE_PATHS: '/socket',
        IDENTITY_POLICY: 'required',
        ASSERTION_TRUST_JWKS_FILE: await writeJwks(dir, [k1], 'ws.jwks.json'),
      });
      const upgrade = async (extra: string) =>
        new Promise<string>((resolve) => {
          const s = net.connect(port, '127.0.0.1', () =>
            s.write(
              `GET /socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`,
            ),
          );
          let text = '';
          s.on('data', (c: Buffer) => (text += c.toString('latin1')));
          s.on('close', () => resolve(text));
          s.on('error', () => resolve(text));
          setTimeout(() => s.destroy(), 5_000).unref();
        });
      expect(await upgrade('X-AOS-Agent-Name: Cooking assistant\r\n')).toMatch(/^HTTP\/1\.1 401/);
      expect(seen).toEqual([]);
      expect(await upgrade(`X-AOS-Agent-Assertion: ${await signAssertion(k1, ASSISTANT, aud)}\r\nX-AOS-Agent-Name: x\r\n`)).toMatch(/^HTTP\/1\.1 101/);
      expect(seen).toHaveLength(1);
      expect(Object.keys(seen[0] ?? {}).filter((h) => h.startsWith('x-aos-'))).toEqual([]);
    } finally {
      await closeServer(up);
    }
  });
});

describe('IDENTITY_POLICY=optional and claims', () => {
  let optional: TestProxy;
  let claims: TestProxy;
  beforeAll(async () => {
    const trust = await writeJwks(dir, [k1], 'optional.jwks.json');
    optional = await serverProxy({ ASSERTION_TRUST_JWKS_FILE: trust });
    claims = await serverProxy({ ASSERTION_TRUST_JWKS_FILE: trust, IDENTITY_POLICY: 'claims' });
  });

  test('optional: header-only claims are reduced to "unknown"; a valid assertion is verified; a bad one is still refused', async () => {
    await rawRpc(`${optional.url}/a2a/jsonrpc`, v03Send(1, 'a'), { 'X-AOS-Agent-Name': ASSISTANT.name, 'X-AOS-Agent-Url': ASSISTANT.url });
    await rawRpc(`${optional.url}/a2a/jsonrpc`, v03Send(2, 'b'), { 'X-AOS-Agent-Assertion': await signAssertion(k1, ASSISTANT, optional.url) });
    const bad = await rawRpc(`${optional.url}/a2a/jsonrpc`, v03Send(3, 'c'), { 'X-AOS-Agent-Assertion': await signAssertion(rogue, ASSISTANT, optional.url) });
    expect(errorOf(bad.json)).toMatchObject({ code: -31401, metadata: { problem: 'signature does not verify' } });
    expect(serverHooks().map((e) => e.params.context.from.agent)).toEqual([
      { url: 'unknown', name: 'unknown', version: 'unknown', metadata: { identity: { verified: false } } },
      VERIFIED_FROM(k1.kid),
    ]);
    expect(postsTo(agent)).toHaveLength(2);
  });

  test('claims: the headers are shown, marked unverified; a verified assertion still wins over them', async () => {
    await rawRpc(`${claims.url}/a2a/jsonrpc`, v03Send(1, 'a'), { 'X-AOS-Agent-Name': 'Trusted bank' });
    await rawRpc(`${claims.url}/a2a/jsonrpc`, v03Send(2, 'b'), {
      'X-AOS-Agent-Name': 'Trusted bank',
      'X-AOS-Agent-Assertion': await signAssertion(k1, ASSISTANT, claims.url),
    });
    expect(serverHooks().map((e) => e.params.context.from.agent)).toEqual([
      { url: 'unknown', name: 'Trusted bank', version: 'unknown', metadata: { identity: { verified: false, source: 'claim' } } },
      VERIFIED_FROM(k1.kid),
    ]);
  });

  test("every spelling of the proxy's headers is dropped before the agent (CGI servers read _ as -)", async () => {
    await rawRpc(`${optional.url}/a2a/jsonrpc`, v03Send(1, 'a'), {
      X_AOS_Agent_Assertion: 'x.y.z',
      x_aos_agent_name: 'Trusted bank',
      'X-AOS_Agent-Url': 'https://bank',
      x_aos_unchecked: 'true',
      x_aos_reasoning: 'secret plan',
    });
    const got = postsTo(agent)[0]!.headers;
    expect(Object.keys(got).filter((h) => /^x[-_]aos[-_]/i.test(h))).toEqual([]);
  });
});

describe('key rotation through the key files', () => {
  test('trust both keys, switch the signer to the new key, then drop the old key: no call fails; the old key is refused afterwards', async () => {
    const trustFile = await writeJwks(dir, [k1, k2], 'rotation.jwks.json');
    const signFile = await writeSigningKey(dir, k1, 'rotation-signing.jwk.json');
    const server = await serverProxy({ ASSERTION_TRUST_JWKS_FILE: trustFile, IDENTITY_POLICY: 'required', CREDENTIALS_REFRESH_MS: '100' });
    const client = await proxy({ ...CLIENT_ENV, UPSTREAM_URL: server.url, ASSERTION_SIGNING_KEY_FILE: signFile, CREDENTIALS_REFRESH_MS: '100' });
    const call = async (text: string) => textOf((await rawRpc(`${client.url}/a2a/jsonrpc`, v03Send(1, text))).json);
    const issuer = () => serverHooks().at(-1)?.params.context.from.agent.metadata.identity.issuer;

    expect(await call('before')).toBe('echo: before');
    expect(issuer()).toBe(k1.kid);
    // Step 2: the signer's Secret now holds the new key (its kid inside the JWK).
    await writeFile(signFile, JSON.stringify(k2.privateJwk));
    await waitFor(async () => (await call('during')) === 'echo: during' && issuer() === k2.kid, 10_000, 'the signer to use the new key');
    // Step 3: the old key leaves the trust set.
    await writeFile(trustFile, JSON.stringify({ keys: [k2.publicJwk] }));
    await waitFor(
      async () => {
        const r = await rawRpc(`${server.url}/a2a/jsonrpc`, v03Send(2, 'old key'), { 'X-AOS-Agent-Assertion': await signAssertion(k1, ASSISTANT, server.url) });
        return r.json?.error?.code === -31401;
      },
      10_000,
      'the old key to be dropped',
    );
    expect(await call('after')).toBe('echo: after');
    expect(issuer()).toBe(k2.kid);
  });
});

describe("the reference guardian's peer rules match verified callers only", () => {
  test('an allow-listed agent id passes when verified and is "unknown" when only claimed', async () => {
    const policyFile = join(dir, 'peers-policy.json');
    // The name is listed too: an assertion proves its id, so another agent writing this name is not allowed.
    await writeFile(policyFile, JSON.stringify({ peers: { allow: ['cooking-assistant', 'Cooking assistant'] } }));
    const trust = await writeJwks(dir, [k1], 'peers.jwks.json');
    // The reference guardian's engine, in-process (what GUARDIAN_URL unset gives), with that policy.
    const viaPolicy = await startTestProxy(
      {
        ROLE: 'server',
        UPSTREAM_URL: agent.origin,
        ASSERTION_TRUST_JWKS_FILE: trust,
        ASSERTION_AUDIENCE: 'http://baker-guard.test',
        IDENTITY_POLICY: 'claims',
      },
      embeddedGuardian(policyFile),
    );
    started.push(viaPolicy);
    const verified = await rawRpc(`${viaPolicy.url}/a2a/jsonrpc`, v03Send(1, 'hi'), {
      'X-AOS-Agent-Assertion': await signAssertion(k1, ASSISTANT, 'http://baker-guard.test'),
    });
    expect(textOf(verified.json)).toBe('echo: hi');
    // Even where claims are shown to the guardian (IDENTITY_POLICY=claims), a claimed name is no verified identity.
    const claimed = await rawRpc(`${viaPolicy.url}/a2a/jsonrpc`, v03Send(2, 'hi'), { 'X-AOS-Agent-Name': 'Cooking assistant' });
    expect(errorOf(claimed.json)).toMatchObject({ code: -31403, reason: 'GUARDIAN_DENIED', metadata: { reasonCode: 'PEER_UNKNOWN' } });
    const other = await rawRpc(`${viaPolicy.url}/a2a/jsonrpc`, v03Send(3, 'hi'), {
      'X-AOS-Agent-Assertion': await signAssertion(k1, { ...ASSISTANT, id: 'pastry-bot', name: 'Cooking assistant' }, 'http://baker-guard.test'),
    });
    expect(errorOf(other.json)).toMatchObject({ code: -31403, metadata: { reasonCode: 'PEER_NOT_ALLOWED' } });
    expect(postsTo(agent)).toHaveLength(1);
  });
});
