/**
 * Proven identities. Can a ROLE=server proxy be made to show the guardian a verified
 * caller (or a `from` name, url, id) the caller did not prove, or can task ownership take caller B
 * for caller A? Real parts: an @a2a-js/sdk agent (JSON-RPC, REST, gRPC) whose request handler is
 * recorded, the scriptable recording guardian (or the reference guardian's engine in-process),
 * real keys, a stand-in OIDC issuer, real X.509 certificates over mutual TLS.
 *
 * Oracles: what the guardian recorded (`from.agent` and its `metadata.identity`) and what the SDK
 * agent's handler acted on; every refusal probe has an allow control beside it that proves the
 * oracle fires. Probes that found nothing stay as regression tests; findings are named
 * `FINDING probe-N` and fail on the code they were found on:
 *   probe-1 (fixed) a key bound to agent X signs agent Y's name or url, and the reference guardian's peer
 *          allow-list (which matches names and urls) lets X in as Y (all three bindings);
 *   probe-2 (fixed) a client certificate whose subject CN is spelled like a SPIFFE ID reaches the guardian
 *          exactly as the certificate carrying that SPIFFE ID (same id, subject, issuer);
 *   probe-3 (fixed) under a client CA whose subject has no CN, that certificate's owner key is the SPIFFE
 *          caller's owner key: it reads the SPIFFE caller's tasks (JSON-RPC and gRPC over mTLS).
 */
import 'reflect-metadata';
import http2 from 'node:http2';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { Agent, fetch as undiciFetch } from 'undici';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import { rawRpc, textOf, type TestAgent } from '../../helpers/agent';
import type { Envelope, TestGuardian } from '../../helpers/guardian';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { bindTo, makeKey, signAssertion, startIssuer, unsignedJwt, writeJwks, type Issuer, type TestKey } from '../../helpers/keys';
import { freePort } from '../../helpers/net';
import { rawGrpc, grpcFrame } from '../../helpers/grpc';
import { rawRoundTrip } from '../../helpers/wire';
import { createPki, type Issued, type Pki } from '../../helpers/pki';
import { jose } from '../../../src/identity/jose';
import { embeddedGuardian } from '../../../src/guardian/embedded';
import { startTestProxy, useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);
x509.cryptoProvider.set(webcrypto as never);

const sdk: typeof A2A = require('@a2a-js/sdk');
interface GrpcMethodDef {
  requestSerialize: (v: unknown) => Buffer;
}
const grpcSdk = require('@a2a-js/sdk/server/grpc') as { A2AService: Record<'sendMessage' | 'getTask', GrpcMethodDef> };

const COOK = { id: 'cooking-assistant', name: 'Cooking assistant', url: 'https://kitchen.example/agents/cooking-assistant', version: '1.0.0' };
const EVIL = { id: 'evil-bot', name: 'Evil bot', url: 'https://evil.example/bot', version: '6.6.6' };
const OIDC_AUD = 'a2a-probe';
const SEND_PATH = '/lf.a2a.v1.A2AService/SendMessage';
const GV1 = { 'a2a-version': '1.0' };

const rec = handlerRecorder();
const stack = useStack({ name: 'Cake Baker', version: '2.0.0', grpc: true, wrapRequestHandler: rec.wrap });
let agent: TestAgent;
let guardian: TestGuardian;
let dir: string;
let kCook: TestKey; // bound to cooking-assistant
let kEvil: TestKey; // bound to evil-bot
let kFree: TestKey; // bound to no agent
let kStranger: TestKey; // not trusted
let idpKey: TestKey;
let issuer: Issuer;
let server: TestProxy; // assertions + OIDC, IDENTITY_POLICY=required (task ownership on), gRPC too
let aud: string;
const started: TestProxy[] = [];
const dispatchers: Agent[] = [];

beforeAll(async () => {
  ({ agent, guardian } = stack);
  dir = await mkdtemp(join(tmpdir(), 'a2a-guard-probe-'));
  const [c, e, f, s, i] = await Promise.all([
    makeKey('cook-2026'),
    makeKey('evil-2026'),
    makeKey('free-2026', 'EdDSA'),
    makeKey('cook-2026'),
    makeKey('idp-1'),
  ]);
  kCook = bindTo(c, COOK.id);
  kEvil = bindTo(e, EVIL.id);
  kFree = f;
  kStranger = s;
  idpKey = i;
  issuer = await startIssuer([idpKey]);
  const port = await freePort();
  aud = `http://127.0.0.1:${port}`;
  server = await startTestProxy({
    ROLE: 'server',
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    PORT: String(port),
    GRPC_PORT: '0',
    ASSERTION_AUDIENCE: aud,
    ASSERTION_TRUST_JWKS_FILE: await writeJwks(dir, [kCook, kEvil, kFree], 'trust.jwks.json'),
    IDENTITY_POLICY: 'required',
    OIDC_ISSUER: issuer.url,
    OIDC_AUDIENCE: OIDC_AUD,
    OIDC_JWKS_URL: issuer.jwksUrl,
    OBSERVED_AGENT_INSTRUCTIONS: 'Bake.',
  });
  started.push(server);
});
afterAll(async () => {
  for (const p of started.splice(0)) await p.close();
  for (const d of dispatchers.splice(0)) await d.close();
  await issuer?.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => rec.clear());

const isServerHook = (e: Envelope): boolean => 'instructions' in (e.params?.context?.to?.agent ?? {});
const requestHooks = (): Envelope[] => guardian.calls().filter((e) => isServerHook(e) && e.params?.payload?.method !== undefined);
const froms = (): unknown[] => requestHooks().map((e) => e.params.context.from.agent);
const acted = (): string[] => rec.calls.map((c) => c.method);
const v03Send = (id: number | string, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}-${Math.random()}`, role: 'user', parts: [{ kind: 'text', text }] } },
});
const v03Get = (id: number, taskId: string) => ({ jsonrpc: '2.0', id, method: 'tasks/get', params: { id: taskId } });
const errorOf = (json: any) => ({ code: json?.error?.code, metadata: json?.error?.data?.[0]?.metadata });
const verifiedAs = (a: typeof COOK, source: string, subject: string, iss?: string) => ({
  url: a.url,
  name: a.name,
  version: a.version,
  id: a.id,
  metadata: { identity: { verified: true, source, subject, ...(iss === undefined ? {} : { issuer: iss }) } },
});
const now = () => Math.floor(Date.now() / 1000);
const b64 = (o: unknown) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');

/** A compact JWS over exactly these header and payload texts (duplicate members kept as written). */
async function signRaw(key: TestKey, headerText: string, payloadText: string): Promise<string> {
  const input = `${b64(headerText)}.${b64(payloadText)}`;
  // jose would re-serialise the header and payload (dropping duplicates): sign the exact texts by hand.
  const alg = key.alg === 'ES256' ? { name: 'ECDSA', hash: 'SHA-256' } : { name: 'Ed25519' };
  const sig = await webcrypto.subtle.sign(alg, key.privateKey as webcrypto.CryptoKey, Buffer.from(input));
  return `${input}.${Buffer.from(sig).toString('base64url')}`;
}

const jsonrpc = (headers: Record<string, string | undefined>, text = 'hello') => rawRpc(`${server.url}/a2a/jsonrpc`, v03Send(1, text), headers);

async function expectRefused(headers: Record<string, string | undefined>, problem?: string | RegExp): Promise<void> {
  const r = await jsonrpc(headers);
  expect(errorOf(r.json).code).toBe(-31401);
  if (problem !== undefined) expect(String(errorOf(r.json).metadata?.problem ?? errorOf(r.json).metadata?.missing)).toMatch(problem);
  expect(requestHooks()).toEqual([]);
  expect(acted()).toEqual([]);
}

// -------------------------------------------------------------------------------------------------
// Assertions (JSON-RPC)
// -------------------------------------------------------------------------------------------------

describe('assertions: forged, re-keyed and re-scoped', () => {
  test('control: the bound key asserting its own agent is verified and the agent acts', async () => {
    const r = await jsonrpc({ 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, aud), 'X-AOS-Agent-Name': 'Trusted bank', 'X-AOS-Agent-Id': 'bank' });
    expect(textOf(r.json)).toBe('echo: hello');
    expect(froms()).toEqual([verifiedAs(COOK, 'assertion', COOK.id, kCook.kid)]);
    expect(acted()).toEqual(['sendMessage']);
  });

  test('alg none with the assertion type, naming the bound kid: refused', async () => {
    const token = unsignedJwt({ sub: COOK.id, aud, iat: now(), exp: now() + 30, jti: 'none-1', agent: COOK }, 'aos-agent+jwt');
    await expectRefused({ 'X-AOS-Agent-Assertion': token });
    const withKid = `${b64({ alg: 'none', kid: kCook.kid, typ: 'aos-agent+jwt' })}.${b64({ sub: COOK.id, aud, iat: now(), exp: now() + 30, jti: 'none-2', agent: COOK })}.`;
    await expectRefused({ 'X-AOS-Agent-Assertion': withKid });
  });

  test('HS256 keyed with the trusted public key (x, the JWK text, the SPKI PEM): refused', async () => {
    const claims = { sub: COOK.id, aud, iat: now(), exp: now() + 30, agent: COOK };
    const { createPublicKey } = await import('node:crypto');
    const pemText = createPublicKey({ key: kCook.publicJwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string;
    const secrets = [Buffer.from(String(kCook.publicJwk.x), 'base64url'), Buffer.from(JSON.stringify(kCook.publicJwk)), Buffer.from(pemText)];
    for (const [i, secret] of secrets.entries()) {
      const token = await new (jose().SignJWT)({ ...claims, jti: `hs-${i}` })
        .setProtectedHeader({ alg: 'HS256', kid: kCook.kid, typ: 'aos-agent+jwt' })
        .sign(secret);
      await expectRefused({ 'X-AOS-Agent-Assertion': token }, 'signed with an algorithm that is not allowed');
    }
  });

  test('kid of the bound key, signed by another trusted key or by an untrusted key of the same kid: refused', async () => {
    await expectRefused({ 'X-AOS-Agent-Assertion': await signAssertion(kEvil, COOK, aud, { kid: kCook.kid }) }, 'signature does not verify');
    await expectRefused({ 'X-AOS-Agent-Assertion': await signAssertion(kStranger, COOK, aud) }, 'signature does not verify');
  });

  test('a key bound to another agent, or an unbound key, cannot assert the bound agent (nor its id with a look-alike sub)', async () => {
    await expectRefused({ 'X-AOS-Agent-Assertion': await signAssertion(kEvil, COOK, aud) }, /do not let assert this agent/);
    await expectRefused({ 'X-AOS-Agent-Assertion': await signAssertion(kFree, COOK, aud) }, /do not let assert this agent/);
    await expectRefused(
      { 'X-AOS-Agent-Assertion': await signAssertion(kEvil, { ...COOK, id: 'cooking\u2011assistant' }, aud) },
      /do not let assert this agent/,
    );
    await expectRefused({ 'X-AOS-Agent-Assertion': await signAssertion(kEvil, EVIL, aud, { sub: COOK.id }) }, 'names another agent in sub than in agent.id');
    await expectRefused({ 'X-AOS-Agent-Assertion': await signAssertion(kEvil, COOK, aud, { sub: EVIL.id }) }, 'names another agent in sub than in agent.id');
  });

  test('duplicate members in the signed JSON (sub, agent, kid): what verifies is what the guardian sees', async () => {
    const t = now();
    const cookAgent = JSON.stringify(COOK);
    const evilAgent = JSON.stringify(EVIL);
    // sub twice, the last naming the bound agent: the key is bound to evil-bot only.
    await expectRefused({
      'X-AOS-Agent-Assertion': await signRaw(
        kEvil,
        `{"alg":"ES256","kid":"${kEvil.kid}","typ":"aos-agent+jwt"}`,
        `{"sub":"${EVIL.id}","aud":"${aud}","iat":${t},"exp":${t + 30},"jti":"dup-1","agent":${cookAgent},"sub":"${COOK.id}"}`,
      ),
    });
    // kid twice: the last names the cook key, but evil signed.
    await expectRefused({
      'X-AOS-Agent-Assertion': await signRaw(
        kEvil,
        `{"alg":"ES256","kid":"${kEvil.kid}","typ":"aos-agent+jwt","kid":"${kCook.kid}"}`,
        `{"sub":"${COOK.id}","aud":"${aud}","iat":${t},"exp":${t + 30},"jti":"dup-2","agent":${cookAgent}}`,
      ),
    });
    // agent twice: the last (its own) is what the guardian sees.
    const r = await jsonrpc({
      'X-AOS-Agent-Assertion': await signRaw(
        kEvil,
        `{"alg":"ES256","kid":"${kCook.kid}","typ":"aos-agent+jwt","kid":"${kEvil.kid}"}`,
        `{"sub":"${EVIL.id}","aud":"${aud}","iat":${t},"exp":${t + 30},"jti":"dup-3","agent":${cookAgent},"agent":${evilAgent}}`,
      ),
    });
    expect(textOf(r.json)).toBe('echo: hello');
    expect(froms()).toEqual([verifiedAs(EVIL, 'assertion', EVIL.id, kEvil.kid)]);
  });

  test('lifetime edges: 61 s, issued in the future, exp or iat as strings, nbf ahead, a huge exp: refused', async () => {
    const t = now();
    const cases: Array<Parameters<typeof signAssertion>[3]> = [
      { iat: t, exp: t + 61 },
      { iat: t + 40, exp: t + 60 },
      { iat: t - 100, exp: t + 10 },
      { exp: String(t + 30) as unknown as number },
      { iat: String(t) as unknown as number },
      { iat: t, exp: 1e20 },
    ];
    for (const over of cases) await expectRefused({ 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, aud, over) });
    const nbf = await new (jose().SignJWT)({ sub: COOK.id, aud, iat: t, exp: t + 30, nbf: t + 20, jti: 'nbf-1', agent: COOK })
      .setProtectedHeader({ alg: 'ES256', kid: kCook.kid, typ: 'aos-agent+jwt' })
      .sign(kCook.privateKey);
    await expectRefused({ 'X-AOS-Agent-Assertion': nbf }, 'not valid yet');
  });

  test('audience spellings: trailing slash, upper case, an array holding a foreign one only: refused; an array holding ours: accepted', async () => {
    for (const a of [`${aud}/`, aud.toUpperCase(), ['http://127.0.0.1:1'], `${aud} `]) {
      await expectRefused({ 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, aud, { aud: a }) });
    }
    const r = await jsonrpc({ 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, aud, { aud: ['http://elsewhere.test', aud] }) });
    expect(textOf(r.json)).toBe('echo: hello');
  });

  test('two assertion headers (raw HTTP/1.1), a valid one in each: refused; one header with surrounding spaces: verified', async () => {
    const port = Number(new URL(server.url).port);
    const body = JSON.stringify(v03Send(9, 'twice'));
    const a1 = await signAssertion(kCook, COOK, aud);
    const a2 = await signAssertion(kEvil, EVIL, aud);
    const raw = (hdrs: string) =>
      `POST /a2a/jsonrpc HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\ncontent-type: application/json\r\n${hdrs}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    for (const hdrs of [
      `X-AOS-Agent-Assertion: ${a2}\r\nx-aos-agent-assertion: ${a1}\r\n`,
      `x-aos-agent-assertion:\r\nX-Aos-Agent-Assertion: ${a1}\r\n`,
      `X-AOS-Agent-Assertion: ${a1}\r\nX-AOS-Agent-Assertion: \r\n`,
    ]) {
      const text = await rawRoundTrip(port, raw(hdrs));
      expect(text).toContain('-31401');
    }
    expect(requestHooks()).toEqual([]);
    expect(acted()).toEqual([]);
    const ok = await rawRoundTrip(port, raw(`X-Aos-Agent-Assertion:   ${await signAssertion(kCook, COOK, aud)}  \r\n`));
    expect(ok).toContain('echo: twice');
    expect(froms()).toEqual([verifiedAs(COOK, 'assertion', COOK.id, kCook.kid)]);
  });

  test('the assertion in spellings other than the header name (underscores, a prefix, a query, a cookie) is no identity', async () => {
    const a = await signAssertion(kCook, COOK, aud);
    for (const h of [
      { X_AOS_Agent_Assertion: a },
      { 'X-AOS-Agent-Assertion-Bin': a },
      { 'X-Forwarded-AOS-Agent-Assertion': a },
      { cookie: `x-aos-agent-assertion=${a}` },
      { authorization: `Bearer ${a}` },
    ]) {
      const r = await jsonrpc(h);
      expect(errorOf(r.json).code).toBe(-31401);
    }
    const q = await rawRpc(`${server.url}/a2a/jsonrpc?x-aos-agent-assertion=${a}`, v03Send(1, 'q'));
    expect(q.json?.error?.code).toEqual(expect.any(Number));
    expect(requestHooks()).toEqual([]);
    expect(acted()).toEqual([]);
  });

  test('an OIDC token of the trusted issuer presented as an assertion, and an assertion presented as a bearer token: refused', async () => {
    const idToken = await issuer.token(idpKey, { sub: COOK.id, aud: [OIDC_AUD, aud], agent: COOK, jti: 'x-1' }, { expiresIn: 30 });
    await expectRefused({ 'X-AOS-Agent-Assertion': idToken });
    await expectRefused({ authorization: `Bearer ${await signAssertion(kCook, COOK, aud)}` });
  });
});

// -------------------------------------------------------------------------------------------------
// The peer name and url an assertion carries (reference guardian)
// -------------------------------------------------------------------------------------------------

describe('the name and url beside a bound agent id', () => {
  let viaPolicy: TestProxy;
  const AUD = 'http://baker-guard.probe.test';
  beforeAll(async () => {
    const policyFile = join(dir, 'peers.json');
    // The cook's id, name and url are allowed: only the id is what its key proves (the fix of probe-1: allow rules
    // read an assertion-verified caller's id alone), so another key writing the cook's name or url gets nowhere.
    await writeFile(policyFile, JSON.stringify({ peers: { allow: ['cooking-assistant', 'Cooking assistant', 'https://kitchen.example/agents/*'] } }));
    viaPolicy = await startTestProxy(
      {
        ROLE: 'server',
        UPSTREAM_URL: agent.origin,
        ASSERTION_TRUST_JWKS_FILE: await writeJwks(dir, [kCook, kEvil], 'peers.jwks.json'),
        ASSERTION_AUDIENCE: AUD,
        IDENTITY_POLICY: 'required',
        GRPC_PORT: '0',
      },
      embeddedGuardian(policyFile),
    );
    started.push(viaPolicy);
  });
  type Binding = 'jsonrpc' | 'rest' | 'grpc';
  /** 'allowed' when the agent answered, else the guardian's reason code (or the failure). */
  const send = async (binding: Binding, key: TestKey, as: typeof COOK): Promise<string> => {
    const h = { 'X-AOS-Agent-Assertion': await signAssertion(key, as, AUD) };
    if (binding === 'jsonrpc') {
      const r = await rawRpc(`${viaPolicy.url}/a2a/jsonrpc`, v03Send(1, 'let me in'), h);
      return textOf(r.json) === 'echo: let me in' ? 'allowed' : String(errorOf(r.json).metadata?.reasonCode ?? errorOf(r.json).code);
    }
    if (binding === 'rest') {
      const r = await rawRpc(
        `${viaPolicy.url}/a2a/rest/message:send`,
        { message: { messageId: `r-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'let me in' }] } },
        { 'a2a-version': '1.0', ...h },
      );
      return r.status === 200 ? 'allowed' : String(r.json?.error?.details?.find((d: any) => d?.metadata?.reasonCode)?.metadata?.reasonCode ?? r.status);
    }
    const g = await rawGrpc(viaPolicy.grpcAddress as string, SEND_PATH, grpcSend('let me in'), { ...GV1, 'x-aos-agent-assertion': h['X-AOS-Agent-Assertion'] });
    return g.grpcStatus === 0 ? 'allowed' : String(g.details.find((d) => d.metadata['reasonCode'] !== undefined)?.metadata['reasonCode'] ?? g.grpcStatus);
  };
  const BINDINGS: Binding[] = ['jsonrpc', 'rest', 'grpc'];

  test('controls: the cook key as the cook is allowed; the evil key as itself is not in the allowed list (each binding)', async () => {
    for (const b of BINDINGS) {
      expect(await send(b, kCook, COOK)).toBe('allowed');
      expect(await send(b, kEvil, EVIL)).toBe('PEER_NOT_ALLOWED');
    }
    expect(acted()).toEqual(['sendMessage', 'sendMessage', 'sendMessage']);
  });

  test('a key bound to evil-bot signing the name or url of the cooking assistant does not pass its allow-list, on any binding', async () => {
    const outcomes: Record<string, string> = {};
    for (const b of BINDINGS) {
      outcomes[`${b} name`] = await send(b, kEvil, { ...EVIL, name: COOK.name });
      outcomes[`${b} url`] = await send(b, kEvil, { ...EVIL, url: COOK.url });
      outcomes[`${b} folded name`] = await send(b, kEvil, { ...EVIL, name: 'Cooking\u00a0assistant' });
    }
    // The key proves evil-bot only; a name or url it did not prove must not let it through an allow rule.
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(outcomes).map((k) => [k, 'PEER_NOT_ALLOWED'])));
    expect(acted()).toEqual([]);
  });
});

// -------------------------------------------------------------------------------------------------
// OIDC
// -------------------------------------------------------------------------------------------------

describe('OIDC bearer tokens', () => {
  const tok = (claims: Record<string, unknown>, opts?: { expiresIn?: number }) => issuer.token(idpKey, { aud: OIDC_AUD, ...claims }, opts);

  test('control: a token of the issuer is verified (scheme in any case)', async () => {
    const t = await tok({ sub: 'agent-a', azp: 'Agent A' });
    expect(textOf((await jsonrpc({ authorization: `bEaReR ${t}` })).json)).toBe('echo: hello');
    expect(froms()).toEqual([
      {
        url: 'unknown',
        name: 'Agent A',
        version: 'unknown',
        id: 'agent-a',
        metadata: { identity: { verified: true, source: 'oidc', subject: 'agent-a', issuer: issuer.url } },
      },
    ]);
    expect(acted()).toEqual(['sendMessage']);
  });

  test('another audience, issuer with a trailing slash or other case, expired, alg none, HS256 with the public key, a foreign key under the issuer kid: refused', async () => {
    const t = now();
    const forged = [
      await tok({ sub: 'agent-a', aud: 'someone-else' }),
      await tok({ sub: 'agent-a', iss: `${issuer.url}/` }),
      await tok({ sub: 'agent-a', iss: issuer.url.toUpperCase() }),
      await tok({ sub: 'agent-a', iss: [issuer.url] }),
      await tok({ sub: 'agent-a', exp: t - 60 }),
      unsignedJwt({ iss: issuer.url, aud: OIDC_AUD, sub: 'agent-a', exp: t + 60 }),
      await new (jose().SignJWT)({ iss: issuer.url, aud: OIDC_AUD, sub: 'agent-a', exp: t + 60 })
        .setProtectedHeader({ alg: 'HS256', kid: idpKey.kid })
        .sign(Buffer.from(JSON.stringify(idpKey.publicJwk))),
      await new (jose().SignJWT)({ iss: issuer.url, aud: OIDC_AUD, sub: 'agent-a', exp: t + 60 })
        .setProtectedHeader({ alg: 'ES256', kid: idpKey.kid })
        .sign(kCook.privateKey),
    ];
    for (const f of forged) await expectRefused({ authorization: `Bearer ${f}` });
  });

  test('no sub, an empty or non-string sub, sub with control characters: refused', async () => {
    for (const sub of [undefined, '', 42, ['agent-a'], 'agent-a\n']) {
      await expectRefused({ authorization: `Bearer ${await tok(sub === undefined ? { azp: 'x' } : { sub })}` });
    }
  });

  test('two Authorization headers (raw HTTP/1.1): the proxy and the agent never disagree on the token', async () => {
    const port = Number(new URL(server.url).port);
    const ta = await tok({ sub: 'agent-a', azp: 'Agent A' });
    const tb = await tok({ sub: 'agent-b', azp: 'Agent B' });
    const body = JSON.stringify(v03Send(3, 'two tokens'));
    const text = await rawRoundTrip(
      port,
      `POST /a2a/jsonrpc HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\nauthorization: Bearer ${ta}\r\nAuthorization: Bearer ${tb}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    if (text.includes('echo: two tokens')) {
      expect((froms()[0] as any)?.id).toBe('agent-a');
      const seen = rec.calls[0]?.headers['authorization'];
      expect(seen === undefined || seen === `Bearer ${ta}`).toBe(true);
    } else {
      expect(acted()).toEqual([]);
    }
  });
});

// -------------------------------------------------------------------------------------------------
// Several credentials at once
// -------------------------------------------------------------------------------------------------

describe('several credentials at once', () => {
  test('a valid assertion with a forged token, and a valid token with a forged assertion: refused', async () => {
    await expectRefused({ 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, aud), authorization: `Bearer ${await signAssertion(kCook, COOK, aud)}` });
    await expectRefused({
      'X-AOS-Agent-Assertion': await signAssertion(kStranger, COOK, aud),
      authorization: `Bearer ${await issuer.token(idpKey, { sub: 'agent-a', aud: OIDC_AUD })}`,
    });
  });

  test('a valid evil assertion with a valid token whose sub is the cook: the assertion wins, the cook is not shown', async () => {
    const r = await jsonrpc({
      'X-AOS-Agent-Assertion': await signAssertion(kEvil, EVIL, aud),
      authorization: `Bearer ${await issuer.token(idpKey, { sub: COOK.id, azp: COOK.name, aud: OIDC_AUD })}`,
    });
    expect(textOf(r.json)).toBe('echo: hello');
    expect(froms()).toEqual([verifiedAs(EVIL, 'assertion', EVIL.id, kEvil.kid)]);
  });
});

// -------------------------------------------------------------------------------------------------
// Replay across bindings, and gRPC metadata
// -------------------------------------------------------------------------------------------------

function grpcSend(text: string): Buffer {
  return grpcFrame(
    grpcSdk.A2AService.sendMessage.requestSerialize(
      sdk.SendMessageRequest.fromJSON({ message: { messageId: `g-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] } }),
    ),
  );
}

describe('gRPC metadata and replay across bindings', () => {
  const grpcAddr = () => server.grpcAddress as string;

  test('control: an assertion in gRPC metadata is verified, claims beside it change nothing', async () => {
    const a = await rawGrpc(grpcAddr(), SEND_PATH, grpcSend('grpc hi'), {
      ...GV1,
      'x-aos-agent-assertion': await signAssertion(kCook, COOK, aud),
      'x-aos-agent-name': 'Trusted bank',
    });
    expect(a.grpcStatus).toBe(0);
    expect(froms()).toEqual([verifiedAs(COOK, 'assertion', COOK.id, kCook.kid)]);
    expect(acted()).toEqual(['sendMessage']);
  });

  test('a forged assertion, a -bin assertion, two assertion entries (one forged, or both valid): refused, never acted on', async () => {
    const valid = await signAssertion(kCook, COOK, aud);
    const cases: http2.OutgoingHttpHeaders[] = [
      { 'x-aos-agent-assertion': await signAssertion(kStranger, COOK, aud) },
      { 'x-aos-agent-assertion-bin': Buffer.from(await signAssertion(kCook, COOK, aud)).toString('base64') },
      { 'x-aos-agent-assertion': [await signAssertion(kStranger, COOK, aud), valid] },
      { 'x-aos-agent-assertion': [valid, await signAssertion(kCook, COOK, aud)] },
    ];
    for (const h of cases) {
      const a = await rawGrpc(grpcAddr(), SEND_PATH, grpcSend('grpc forged'), { ...GV1, ...h });
      expect(a.grpcStatus).toBe(16);
    }
    expect(requestHooks()).toEqual([]);
    expect(acted()).toEqual([]);
  });

  test('one assertion used on JSON-RPC is refused afterwards on REST and gRPC (one replay cache per proxy)', async () => {
    const restOk = await rawRpc(
      `${server.url}/a2a/rest/message:send`,
      { message: { messageId: 'r-0', role: 'ROLE_USER', parts: [{ text: 'rest ok' }] } },
      { 'a2a-version': '1.0', 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, aud) },
    );
    expect(restOk.status).toBe(200);
    expect(froms()).toEqual([verifiedAs(COOK, 'assertion', COOK.id, kCook.kid)]);
    rec.clear();
    const a = await signAssertion(kCook, COOK, aud);
    expect(textOf((await jsonrpc({ 'X-AOS-Agent-Assertion': a }, 'first')).json)).toBe('echo: first');
    const rest = await rawRpc(
      `${server.url}/a2a/rest/message:send`,
      { message: { messageId: 'r-1', role: 'ROLE_USER', parts: [{ text: 'again' }] } },
      { 'a2a-version': '1.0', 'X-AOS-Agent-Assertion': a },
    );
    expect(rest.status).toBe(401);
    const g = await rawGrpc(grpcAddr(), SEND_PATH, grpcSend('again'), { ...GV1, 'x-aos-agent-assertion': a });
    expect(g.grpcStatus).toBe(16);
    expect(acted()).toEqual(['sendMessage']);
  });
});

// -------------------------------------------------------------------------------------------------
// Task ownership across identities
// -------------------------------------------------------------------------------------------------

describe('task ownership: B is never A', () => {
  let taskId: string;
  beforeAll(async () => {
    const r = await rawRpc(`${server.url}/a2a/jsonrpc`, v03Send(1, 'cook task'), { 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, aud) });
    taskId = r.json.result.id as string;
  });
  const get = (headers: Record<string, string>) => rawRpc(`${server.url}/a2a/jsonrpc`, v03Get(2, taskId), headers);

  test('control: the cook reads its own task', async () => {
    const r = await get({ 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, aud) });
    expect(r.json.result?.id).toBe(taskId);
    expect(acted()).toEqual(['getTask']);
  });

  test('the unbound key as a case or zero-width variant of the cook, the evil key, an OIDC token whose sub is the cook, claimed headers: not found or refused', async () => {
    const tries: Array<Record<string, string>> = [
      { 'X-AOS-Agent-Assertion': await signAssertion(kFree, { ...COOK, id: 'Cooking-Assistant' }, aud) },
      { 'X-AOS-Agent-Assertion': await signAssertion(kFree, { ...COOK, id: 'cooking-assistant\u200b' }, aud) },
      { 'X-AOS-Agent-Assertion': await signAssertion(kEvil, { ...EVIL, name: COOK.name, url: COOK.url }, aud) },
      { authorization: `Bearer ${await issuer.token(idpKey, { sub: COOK.id, aud: OIDC_AUD })}` },
      { authorization: `Bearer ${await issuer.token(idpKey, { sub: `${kCook.kid}:${COOK.id}`, aud: OIDC_AUD })}` },
      { 'X-AOS-Agent-Id': COOK.id, 'X-AOS-Agent-Name': COOK.name, 'X-AOS-Agent-Url': COOK.url },
    ];
    for (const h of tries) {
      const r = await get(h);
      expect(r.json.result).toBeUndefined();
      expect(r.json.error).toBeDefined();
    }
    expect(acted()).toEqual([]);
  });

  test('over gRPC, the evil key cannot read the task either', async () => {
    const body = grpcFrame(grpcSdk.A2AService.getTask.requestSerialize(sdk.GetTaskRequest.fromJSON({ id: taskId })));
    const a = await rawGrpc(server.grpcAddress as string, '/lf.a2a.v1.A2AService/GetTask', body, {
      ...GV1,
      'x-aos-agent-assertion': await signAssertion(kEvil, EVIL, aud),
    });
    expect(a.grpcStatus).not.toBe(0);
    expect(acted()).toEqual([]);
    const ok = await rawGrpc(server.grpcAddress as string, '/lf.a2a.v1.A2AService/GetTask', body, {
      ...GV1,
      'x-aos-agent-assertion': await signAssertion(kCook, COOK, aud),
    });
    expect(ok.grpcStatus).toBe(0);
    expect(acted()).toEqual(['getTask']);
  });
});

// -------------------------------------------------------------------------------------------------
// Mutual TLS
// -------------------------------------------------------------------------------------------------

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
type Pair = webcrypto.CryptoKeyPair;
const pemOf = (tag: string, der: ArrayBuffer) =>
  `-----BEGIN ${tag}-----\n${Buffer.from(der)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END ${tag}-----\n`;
let serialN = 0x5100;

interface Ca {
  cert: x509.X509Certificate;
  keys: Pair;
  pem: string;
  file: string;
}
interface Leaf {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
}

/** A CA whose subject is `name` (an organisation without a CN is an ordinary CA subject). */
async function makeCaNamed(name: string, file: string): Promise<Ca> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as Pair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: (serialN++).toString(16),
    name,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const text = cert.toString('pem') + '\n';
  const path = join(dir, file);
  await writeFile(path, text);
  return { cert, keys, pem: text, file: path };
}

async function issueLeaf(ca: Ca, stem: string, o: { subject: string; san?: x509.JsonGeneralName[]; server?: boolean }): Promise<Leaf> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as Pair;
  const san =
    o.server === true
      ? ([
          { type: 'dns', value: 'localhost' },
          { type: 'ip', value: '127.0.0.1' },
        ] as x509.JsonGeneralName[])
      : (o.san ?? []);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: (serialN++).toString(16),
    subject: o.subject,
    issuer: ca.cert.subject,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
      new x509.ExtendedKeyUsageExtension([o.server === true ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth]),
      ...(san.length > 0 ? [new x509.SubjectAlternativeNameExtension(san, o.subject === '')] : []),
      await x509.AuthorityKeyIdentifierExtension.create(ca.keys.publicKey),
    ],
  });
  const certPem = cert.toString('pem') + '\n';
  const keyPem = pemOf('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const certFile = join(dir, `${stem}.cert.pem`);
  const keyFile = join(dir, `${stem}.key.pem`);
  await writeFile(certFile, certPem);
  await writeFile(keyFile, keyPem, { mode: 0o600 });
  return { cert: certPem, key: keyPem, certFile, keyFile };
}

const VICTIM = 'spiffe://kitchen.test/ns/agents/sa/cooking-assistant';

describe('mutual TLS', () => {
  let ca: Ca;
  let tlsProxy: TestProxy;
  const leaves = {} as Record<'victim' | 'cnLikeSpiffe' | 'twoSpiffe' | 'dnsSpiffe' | 'upperSpiffe' | 'stranger', Leaf>;
  beforeAll(async () => {
    ca = await makeCaNamed('O=Kitchen Org, OU=Agents', 'kitchen-org.ca.pem');
    const server0 = await issueLeaf(ca, 'server', { subject: 'O=Kitchen Org, CN=baker-guard', server: true });
    leaves.victim = await issueLeaf(ca, 'victim', { subject: '', san: [{ type: 'url', value: VICTIM }] });
    leaves.cnLikeSpiffe = await issueLeaf(ca, 'cn-like-spiffe', { subject: `CN=${VICTIM}` });
    leaves.twoSpiffe = await issueLeaf(ca, 'two-spiffe', {
      subject: 'CN=x',
      san: [
        { type: 'url', value: 'spiffe://kitchen.test/a' },
        { type: 'url', value: VICTIM },
      ],
    });
    leaves.dnsSpiffe = await issueLeaf(ca, 'dns-spiffe', {
      subject: 'CN=plain-bot',
      san: [
        { type: 'dns', value: 'spiffe.kitchen.test' },
        { type: 'url', value: 'https://kitchen.example/agents/cooking-assistant' },
      ],
    });
    leaves.upperSpiffe = await issueLeaf(ca, 'upper-spiffe', {
      subject: 'CN=y',
      san: [{ type: 'url', value: 'SPIFFE://kitchen.test/ns/agents/sa/cooking-assistant' }],
    });
    const stranger = await makeCaNamed('O=Kitchen Org, OU=Agents', 'stranger.ca.pem');
    leaves.stranger = await issueLeaf(stranger, 'stranger', { subject: '', san: [{ type: 'url', value: VICTIM }] });
    tlsProxy = await startTestProxy({
      ROLE: 'server',
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      OBSERVED_AGENT_INSTRUCTIONS: 'Bake.',
      IDENTITY_POLICY: 'required',
      TLS_CERT_FILE: server0.certFile,
      TLS_KEY_FILE: server0.keyFile,
      TLS_CLIENT_CA_FILE: ca.file,
      TLS_CLIENT_CERT: 'optional',
      GRPC_PORT: '0',
    });
    started.push(tlsProxy);
  });

  function as(leaf: Leaf | undefined): typeof fetch {
    const d = new Agent({ connect: { ca: ca.pem, ...(leaf === undefined ? {} : { cert: leaf.cert, key: leaf.key }) } });
    dispatchers.push(d);
    return ((input: string, init?: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher: d } as never)) as unknown as typeof fetch;
  }
  async function post(f: typeof fetch, body: unknown): Promise<any> {
    const r = await f(`${tlsProxy.url}/a2a/jsonrpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return r.json().catch(() => undefined);
  }

  test('control: the SPIFFE certificate is the verified caller and owns its task', async () => {
    const r = await post(as(leaves.victim), v03Send(1, 'victim task'));
    expect(typeof r?.result?.id).toBe('string');
    expect(froms()).toEqual([
      {
        url: 'unknown',
        name: VICTIM,
        version: 'unknown',
        id: VICTIM,
        metadata: { identity: { verified: true, source: 'mtls', subject: VICTIM, issuer: 'O=Kitchen Org, OU=Agents' } },
      },
    ]);
    const again = await post(as(leaves.victim), v03Get(2, r.result.id));
    expect(again?.result?.id).toBe(r.result.id);
  });

  test('two SPIFFE IDs, an upper-case spiffe scheme, a certificate of another CA with the same names: refused', async () => {
    for (const leaf of [leaves.twoSpiffe, leaves.upperSpiffe, leaves.stranger]) {
      const r = await post(as(leaf), v03Send(1, 'x'));
      expect(r?.error?.code).toBe(-31401);
    }
    expect(requestHooks()).toEqual([]);
    expect(acted()).toEqual([]);
  });

  test('a DNS SAN and a non-SPIFFE URI SAN name nothing: the CN is the caller', async () => {
    await post(as(leaves.dnsSpiffe), v03Send(1, 'x'));
    expect(froms()).toEqual([
      {
        url: 'unknown',
        name: 'plain-bot',
        version: 'unknown',
        id: 'plain-bot',
        metadata: { identity: { verified: true, source: 'mtls', subject: 'plain-bot', issuer: 'O=Kitchen Org, OU=Agents' } },
      },
    ]);
  });

  test('under a client CA without a CN, a certificate whose CN spells a SPIFFE ID does not read the SPIFFE callers tasks', async () => {
    const victimTask = (await post(as(leaves.victim), v03Send(1, 'victim secret'))).result.id as string;
    guardian.clear();
    rec.clear();
    const r = await post(as(leaves.cnLikeSpiffe), v03Get(2, victimTask));
    // The CN-only certificate proved a CN under a CA, not the SPIFFE ID: the victim's task stays "not found" to it.
    expect(r?.result).toBeUndefined();
    expect(JSON.stringify(r ?? null)).not.toContain('victim secret');
    expect(acted()).toEqual([]);
  });

  test('over gRPC with mutual TLS too, the look-alike certificate does not read the SPIFFE callers task', async () => {
    const victimTask = (await post(as(leaves.victim), v03Send(1, 'victim grpc secret'))).result.id as string;
    const getTask = grpcFrame(grpcSdk.A2AService.getTask.requestSerialize(sdk.GetTaskRequest.fromJSON({ id: victimTask })));
    const call = (leaf: Leaf) =>
      new Promise<string | undefined>((resolve) => {
        const session = http2.connect(`https://${tlsProxy.grpcAddress as string}`, { ca: ca.pem, cert: leaf.cert, key: leaf.key, servername: 'localhost' });
        session.on('error', () => resolve('session error'));
        const req = session.request({
          ':method': 'POST',
          ':path': '/lf.a2a.v1.A2AService/GetTask',
          'content-type': 'application/grpc',
          te: 'trailers',
          ...GV1,
        });
        let status: string | undefined;
        req.on('response', (x) => (status = (x['grpc-status'] as string | undefined) ?? status));
        req.on('trailers', (x) => (status = x['grpc-status'] as string | undefined));
        req.on('data', () => undefined);
        req.on('error', () => undefined);
        req.on('close', () => {
          session.close();
          resolve(status);
        });
        req.end(getTask);
      });
    rec.clear();
    expect(await call(leaves.victim)).toBe('0'); // control: the owner reads it over gRPC
    expect(acted()).toEqual(['getTask']);
    rec.clear();
    expect(await call(leaves.cnLikeSpiffe)).not.toBe('0');
    expect(acted()).toEqual([]);
  });
});

describe('mutual TLS under a CA with a CN', () => {
  let pki: Pki;
  let p: TestProxy;
  let victim: Issued;
  let lookalike: Issued;
  beforeAll(async () => {
    pki = await createPki('Kitchen CA probe');
    const srv = await pki.issue({ cn: 'baker-guard', server: true, name: 'probe-server' });
    victim = await pki.issue({ spiffe: VICTIM, name: 'probe-victim' });
    lookalike = await pki.issue({ cn: VICTIM, name: 'probe-lookalike' });
    p = await startTestProxy({
      ROLE: 'server',
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      OBSERVED_AGENT_INSTRUCTIONS: 'Bake.',
      IDENTITY_POLICY: 'required',
      TLS_CERT_FILE: srv.certFile,
      TLS_KEY_FILE: srv.keyFile,
      TLS_CLIENT_CA_FILE: pki.caFile,
    });
    started.push(p);
  });
  afterAll(async () => {
    await pki?.close();
  });
  const fetchAs = (leaf: Issued): typeof fetch => {
    const d = new Agent({ connect: { ca: pki.caCert, cert: leaf.cert, key: leaf.key } });
    dispatchers.push(d);
    return ((input: string, init?: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher: d } as never)) as unknown as typeof fetch;
  };
  const post = async (f: typeof fetch, body: unknown): Promise<any> =>
    (await f(`${p.url}/a2a/jsonrpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();

  test('control: the look-alike does not own the SPIFFE callers task here (the owner key names the CA)', async () => {
    const t = (await post(fetchAs(victim), v03Send(1, 'victim only'))).result.id as string;
    rec.clear();
    const r = await post(fetchAs(lookalike), v03Get(2, t));
    expect(r.result).toBeUndefined();
    expect(acted()).toEqual([]);
  });

  test('a certificate whose subject CN spells a SPIFFE ID never reaches the guardian as that verified SPIFFE identity', async () => {
    await post(fetchAs(victim), v03Send(1, 'real'));
    await post(fetchAs(lookalike), v03Send(2, 'lookalike'));
    const [real, fake] = requestHooks().map((e) => e.params.context.from.agent);
    expect(real).toEqual({
      url: 'unknown',
      name: VICTIM,
      version: 'unknown',
      id: VICTIM,
      metadata: { identity: { verified: true, source: 'mtls', subject: VICTIM, issuer: 'Kitchen CA probe' } },
    });
    // The look-alike proved a CN, not a SPIFFE ID: the guardian must be able to tell it from the real one.
    expect(fake).not.toEqual(real);
  });
});

describe('no identity is inherited across requests of one connection', () => {
  test('HTTP/1.1 keep-alive: a request without an assertion after one with it is refused', async () => {
    const port = Number(new URL(server.url).port);
    const body = (id: number, t: string) => JSON.stringify(v03Send(id, t));
    const one = (extra: string, b: string, close: boolean) =>
      `POST /a2a/jsonrpc HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${extra}${close ? 'connection: close\r\n' : ''}content-length: ${Buffer.byteLength(b)}\r\n\r\n${b}`;
    const text = await rawRoundTrip(
      port,
      one(`X-AOS-Agent-Assertion: ${await signAssertion(kCook, COOK, aud)}\r\n`, body(1, 'first on conn'), false) +
        one('X-AOS-Agent-Id: cooking-assistant\r\n', body(2, 'second on conn'), true),
    );
    expect(text).toContain('echo: first on conn');
    expect(text).not.toContain('echo: second on conn');
    expect(text).toContain('-31401');
    expect(acted()).toEqual(['sendMessage']);
  });

  test('HTTP/2 (gRPC): a stream without an assertion after one with it on the same session is refused', async () => {
    const session = http2.connect(`http://${server.grpcAddress as string}`);
    const call = (h: http2.OutgoingHttpHeaders, text: string) =>
      new Promise<string | undefined>((resolve) => {
        const req = session.request({ ':method': 'POST', ':path': SEND_PATH, 'content-type': 'application/grpc', te: 'trailers', ...GV1, ...h });
        let status: string | undefined;
        req.on('response', (x) => (status = (x['grpc-status'] as string | undefined) ?? status));
        req.on('trailers', (x) => (status = x['grpc-status'] as string | undefined));
        req.on('data', () => undefined);
        req.on('error', () => undefined);
        req.on('close', () => resolve(status));
        req.end(grpcSend(text));
      });
    try {
      expect(await call({ 'x-aos-agent-assertion': await signAssertion(kCook, COOK, aud) }, 'stream 1')).toBe('0');
      expect(await call({ 'x-aos-agent-id': COOK.id }, 'stream 2')).toBe('16');
    } finally {
      session.close();
    }
    expect(acted()).toEqual(['sendMessage']);
  });
});

describe('IDENTITY_POLICY=optional with TASK_OWNERSHIP=true: an unverified caller never owns a verified callers task', () => {
  let p: TestProxy;
  let paud: string;
  beforeAll(async () => {
    const port = await freePort();
    paud = `http://127.0.0.1:${port}`;
    p = await startTestProxy({
      ROLE: 'server',
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      PORT: String(port),
      ASSERTION_AUDIENCE: paud,
      TASK_OWNERSHIP: 'true',
      ASSERTION_TRUST_JWKS_FILE: await writeJwks(dir, [kCook, kEvil], 'optional.jwks.json'),
      IDENTITY_POLICY: 'optional',
    });
    started.push(p);
  });

  test('the cooks task is not found to anonymous callers, claimed or not; the anonymous task is not found to the cook', async () => {
    const cookTask = (await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(1, 'cook'), { 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, paud) })).json.result
      .id as string;
    const anonTask = (await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(2, 'anon'))).json.result.id as string;
    rec.clear();
    for (const h of [{}, { 'X-AOS-Agent-Id': COOK.id, 'X-AOS-Agent-Name': COOK.name }]) {
      const r = await rawRpc(`${p.url}/a2a/jsonrpc`, v03Get(3, cookTask), h);
      expect(r.json.result).toBeUndefined();
    }
    const mine = await rawRpc(`${p.url}/a2a/jsonrpc`, v03Get(4, anonTask), { 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, paud) });
    expect(mine.json.result).toBeUndefined();
    expect(acted()).toEqual([]);
    // control: the cook reads its own, the anonymous caller its own
    expect(
      (await rawRpc(`${p.url}/a2a/jsonrpc`, v03Get(5, cookTask), { 'X-AOS-Agent-Assertion': await signAssertion(kCook, COOK, paud) })).json.result?.id,
    ).toBe(cookTask);
    expect((await rawRpc(`${p.url}/a2a/jsonrpc`, v03Get(6, anonTask))).json.result?.id).toBe(anonTask);
    expect(acted()).toEqual(['getTask', 'getTask']);
  });
});
