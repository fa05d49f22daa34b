/**
 * No secret, key, token or assertion in any log line (pino at trace level) or metric, whatever
 * happens: valid and refused assertions, valid and refused bearer tokens, a guardian token file,
 * TLS keys, key rotation. The logs must still say what happened (who called, why a call was refused).
 */
import { Writable } from 'node:stream';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeClient, rawRpc, sendReq, textOf, type TestAgent } from '../../helpers/agent';
import type { TestGuardian } from '../../helpers/guardian';
import { makeKey, signAssertion, startIssuer, unsignedJwt, writeJwks, writeSigningKey, type Issuer, type TestKey } from '../../helpers/keys';
import { freePort, waitFor } from '../../helpers/net';
import { createPki, type Pki } from '../../helpers/pki';
import { configFrom } from '../../../src/config/config';
import { createLogger } from '../../../src/runtime/log';
import { startProxy, type ProxyInstance } from '../../../src/server';
import { useStack } from '../../helpers/proxy-harness';

const stack = useStack({ name: 'Cake Baker', version: '2.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let pki: Pki;
let issuer: Issuer;
let signing: TestKey;
let next: TestKey;
let rogue: TestKey;
let idp: TestKey;
const logText: string[] = [];
const proxies: ProxyInstance[] = [];
const secrets: string[] = [];
const GUARDIAN_TOKEN = 'guardian-token-9f8e7d6c5b4a';

const sink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    logText.push(chunk.toString('utf8'));
    cb();
  },
});

async function start(env: Record<string, string>): Promise<ProxyInstance> {
  const config = configFrom({ PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', LOG_LEVEL: 'trace', CREDENTIALS_REFRESH_MS: '100', ...env });
  const p = await startProxy({ config, logger: createLogger('trace', sink) });
  proxies.push(p);
  return p;
}

beforeAll(async () => {
  ({ agent, guardian } = stack);
  pki = await createPki('Secrets CA');
  [signing, next, rogue, idp] = await Promise.all([makeKey('sig-1'), makeKey('sig-2', 'EdDSA'), makeKey('sig-1'), makeKey('idp-1')]);
  issuer = await startIssuer([idp]);
  for (const k of [signing, next, rogue, idp]) secrets.push(String(k.privateJwk.d));
});
afterAll(async () => {
  for (const p of proxies.splice(0)) await p.close();
  await issuer.close();
  await pki.close();
});

test('trace-level logs and /metrics of both sidecars carry no secret, key, token or assertion', async () => {
  const dir = pki.dir;
  const tokenFile = join(dir, 'guardian.token');
  await writeFile(tokenFile, GUARDIAN_TOKEN);
  secrets.push(GUARDIAN_TOKEN);
  const serverCert = await pki.issue({ cn: 'baker-guard', server: true, name: 'secrets-server' });
  const clientCert = await pki.issue({ cn: 'kitchen', spiffe: 'spiffe://secrets.test/kitchen', name: 'secrets-client' });
  secrets.push(...[serverCert.key, clientCert.key].map((k) => k.split('\n')[1] as string)); // a line of each private key's base64

  const port = await freePort();
  const serverUrl = `https://127.0.0.1:${port}`;
  const signFile = await writeSigningKey(dir, signing, 'secrets-sign.jwk.json');
  await start({
    ROLE: 'server',
    PORT: String(port),
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    GUARDIAN_TOKEN_FILE: tokenFile,
    TLS_CERT_FILE: serverCert.certFile,
    TLS_KEY_FILE: serverCert.keyFile,
    TLS_CLIENT_CA_FILE: pki.caFile,
    TLS_CLIENT_CERT: 'optional',
    ASSERTION_TRUST_JWKS_FILE: await writeJwks(dir, [signing, next], 'secrets.jwks.json'),
    ASSERTION_AUDIENCE: serverUrl,
    OIDC_ISSUER: issuer.url,
    OIDC_AUDIENCE: 'baker',
    IDENTITY_POLICY: 'optional',
  });
  const client = await start({
    ROLE: 'client',
    UPSTREAM_URL: serverUrl,
    GUARDIAN_URL: guardian.url,
    GUARDIAN_TOKEN_FILE: tokenFile,
    OBSERVED_AGENT_ID: 'cooking-assistant',
    UPSTREAM_CA_FILE: pki.caFile,
    UPSTREAM_CERT_FILE: clientCert.certFile,
    UPSTREAM_KEY_FILE: clientCert.keyFile,
    ASSERTION_SIGNING_KEY_FILE: signFile,
  });

  // Valid calls through both sidecars (the assertion is signed and verified on every call).
  const sdk = await makeClient(client.url, 'JSONRPC', '1.0');
  expect(textOf(await sdk.sendMessage(sendReq('secret recipe')))).toBe('echo: secret recipe');
  const streamed = sdk.sendMessageStream(sendReq('stream 2'));
  for await (const _ of streamed) void _;

  // Straight at the server sidecar (over mTLS with the client's certificate): good and bad credentials.
  const { Agent, fetch: undiciFetch } = await import('undici');
  const tlsAgent = new Agent({ connect: { ca: pki.caCert, cert: clientCert.cert, key: clientCert.key } });
  const post = async (headers: Record<string, string>) => {
    const r = await undiciFetch(`${serverUrl}/a2a/jsonrpc`, {
      method: 'POST',
      dispatcher: tlsAgent,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
      }),
    });
    return (await r.json()) as { error?: { code: number } };
  };
  const tokens = {
    goodAssertion: await signAssertion(signing, { id: 'cooking-assistant', name: 'n', url: 'u', version: 'v' }, serverUrl),
    forged: await signAssertion(rogue, { id: 'cooking-assistant', name: 'n', url: 'u', version: 'v' }, serverUrl),
    expired: await signAssertion(signing, { id: 'cooking-assistant', name: 'n', url: 'u', version: 'v' }, serverUrl, {
      iat: Math.floor(Date.now() / 1000) - 100,
      exp: Math.floor(Date.now() / 1000) - 50,
    }),
    oidc: await issuer.token(idp, { sub: 'svc', aud: 'baker' }),
    oidcWrongAud: await issuer.token(idp, { sub: 'svc', aud: 'other' }),
    none: unsignedJwt({ iss: issuer.url, aud: 'baker', sub: 'svc', exp: Math.floor(Date.now() / 1000) + 60 }),
  };
  secrets.push(...Object.values(tokens));
  expect((await post({ 'x-aos-agent-assertion': tokens.goodAssertion })).error).toBeUndefined();
  expect((await post({ 'x-aos-agent-assertion': tokens.goodAssertion })).error?.code).toBe(-31401); // replay
  expect((await post({ 'x-aos-agent-assertion': tokens.forged })).error?.code).toBe(-31401);
  expect((await post({ 'x-aos-agent-assertion': tokens.expired })).error?.code).toBe(-31401);
  expect((await post({ authorization: `Bearer ${tokens.oidc}` })).error).toBeUndefined();
  expect((await post({ authorization: `Bearer ${tokens.oidcWrongAud}` })).error?.code).toBe(-31401);
  expect((await post({ authorization: `Bearer ${tokens.none}` })).error?.code).toBe(-31401);
  await tlsAgent.close();

  // Rotation: the signing key file changes (the new key is logged by kid, never by content).
  await writeFile(signFile, JSON.stringify(next.privateJwk));
  await waitFor(() => logText.join('').includes('assertion signing key changed'), 10_000, 'the key change to be logged');
  await rawRpc(`${client.url}/a2a/jsonrpc`, {
    jsonrpc: '2.0',
    id: 2,
    method: 'message/send',
    params: { message: { kind: 'message', messageId: 'r', role: 'user', parts: [{ kind: 'text', text: 'after rotation' }] } },
  });

  const metrics = (await Promise.all(proxies.map((p) => p.metrics.registry.metrics()))).join('\n');
  const logs = logText.join('');
  // The capture works and says what happened.
  expect(logs).toContain('"level":"debug"'); // debug lines were captured (LOG_LEVEL=trace lets everything through)
  expect(logs).toContain('"msg":"guardian exchange"'); // debug: the full envelope
  expect(logs).toContain('"caller":"cooking-assistant","callerSource":"assertion"');
  expect(logs).toContain('Caller identity not verified: the assertion was already used (replayed)');
  expect(logs).toContain('Caller identity not verified: the bearer token issued for another audience');
  expect(logs).toContain('"kid":"sig-2"');
  expect(metrics).toContain('a2a_guard_caller_identities_total{outcome="assertion"}');
  expect(metrics).toContain('a2a_guard_caller_identities_total{outcome="refused"}');
  // Nothing secret, anywhere.
  for (const [where, text] of [
    ['logs', logs],
    ['metrics', metrics],
  ] as const) {
    for (const s of secrets) expect({ where, leaked: text.includes(s) ? s.slice(0, 24) : undefined }).toEqual({ where, leaked: undefined });
    expect({ where, jwt: /eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\./.exec(text)?.[0] }).toEqual({ where, jwt: undefined });
    expect(text).not.toContain('PRIVATE KEY');
    expect(text).not.toMatch(/Bearer [A-Za-z0-9._~+/-]{8,}/); // an Authorization value (the refusal texts say "bearer token")
  }
  // And the guardian did get its token (it is configured, just never shown).
  expect(guardian.headers.some((h) => h['authorization'] === `Bearer ${GUARDIAN_TOKEN}`)).toBe(true);
});
