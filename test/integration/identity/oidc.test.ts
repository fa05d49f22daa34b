/**
 * OAuth2/OIDC bearer tokens as caller identities: a stand-in issuer on 127.0.0.1 serves its discovery
 * document and JWKS over HTTP and signs real tokens; the proxy verifies them (issuer, audience, expiry,
 * algorithm, key) and maps claims to the AOS agent fields; the token reaches the agent untouched.
 * Key rotation: the issuer publishes a new key; tokens signed with it are accepted once the proxy
 * re-reads the JWKS; after the old key is gone, its tokens are refused.
 */
import { makeClient, postsTo, rawRpc, sendReq, textOf, type TestAgent } from '../../helpers/agent';
import type { TestGuardian } from '../../helpers/guardian';
import { makeKey, startIssuer, unsignedJwt, type Issuer, type TestKey } from '../../helpers/keys';
import { waitFor } from '../../helpers/net';
import { validateAosRequest } from '../../helpers/schema';
import { startTestProxy, useStack, type TestProxy } from '../../helpers/proxy-harness';

const stack = useStack({ name: 'Cake Baker', version: '2.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let issuer: Issuer;
let k1: TestKey;
let k2: TestKey;
let stranger: TestKey;
let p: TestProxy;

const CLAIMS = {
  sub: 'svc-cooking-assistant',
  aud: 'a2a-cake-baker',
  azp: 'Cooking assistant',
  agent_url: 'https://kitchen.example/a2a',
  agent_version: '1.2.0',
};

beforeAll(async () => {
  ({ agent, guardian } = stack);
  [k1, k2, stranger] = await Promise.all([makeKey('idp-1'), makeKey('idp-2', 'EdDSA'), makeKey('idp-1')]);
  issuer = await startIssuer([k1]);
  p = await startTestProxy({
    ROLE: 'server',
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    OBSERVED_AGENT_INSTRUCTIONS: 'Bake.',
    IDENTITY_POLICY: 'required',
    OIDC_ISSUER: issuer.url,
    OIDC_AUDIENCE: 'a2a-cake-baker',
    OIDC_CLAIMS: 'id=sub,name=azp|client_id,url=agent_url,version=agent_version',
    CREDENTIALS_REFRESH_MS: '200',
  });
});
afterAll(async () => {
  await p?.close();
  await issuer?.close();
});

const serverHooks = () => guardian.calls().filter((e) => 'instructions' in (e.params?.context?.to?.agent ?? {}));
const v03Send = (id: number, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
});
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const withBearer = (token: string): typeof fetch =>
  ((input: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  }) as typeof fetch;

test.each(['1.0', '0.3'] as const)(
  'SDK %s with a valid token (discovered keys): the mapped claims are the verified caller; the token reaches the agent untouched',
  async (version) => {
    const token = await issuer.token(k1, CLAIMS);
    const client = await makeClient(p.url, 'JSONRPC', version, { fetchImpl: withBearer(token) });
    expect(textOf(await client.sendMessage(sendReq('an order')))).toBe('echo: an order');
    const [e] = serverHooks();
    expect(e.params.context.from.agent).toEqual({
      url: 'https://kitchen.example/a2a',
      name: 'Cooking assistant',
      version: '1.2.0',
      id: 'svc-cooking-assistant',
      metadata: { identity: { verified: true, source: 'oidc', subject: 'svc-cooking-assistant', issuer: issuer.url } },
    });
    expect(validateAosRequest(e, 'message/send')).toEqual([]);
    expect(postsTo(agent)[0]!.headers['authorization']).toBe(`Bearer ${token}`);
  },
);

test('REST with a valid token', async () => {
  const client = await makeClient(p.url, 'HTTP+JSON', '1.0', { fetchImpl: withBearer(await issuer.token(k1, CLAIMS)) });
  expect(textOf(await client.sendMessage(sendReq('rest order')))).toBe('echo: rest order');
});

test.each([
  ['expired', async () => issuer.token(k1, CLAIMS, { expiresIn: -60 }), 'expired'],
  ['for another audience', async () => issuer.token(k1, { ...CLAIMS, aud: 'some-other-api' }), 'issued for another audience'],
  ['from another issuer', async () => issuer.token(k1, { ...CLAIMS, iss: 'https://evil.example' }), 'issued by another issuer'],
  ['signed by a key the issuer does not publish (same kid)', async () => issuer.token(stranger, CLAIMS), 'signature does not verify'],
  [
    'alg none',
    async () => unsignedJwt({ ...CLAIMS, iss: issuer.url, exp: Math.floor(Date.now() / 1000) + 60 }),
    'signed with an algorithm that is not allowed',
  ],
  ['not a JWT at all', async () => 'sk-live-123', 'is not a signed JWT'],
])('refused: a token %s', async (_what, make, problem) => {
  const r = await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(1, 'hi'), bearer(await make()));
  expect(r.json.error).toMatchObject({ code: -31401, data: [{ reason: 'UNAUTHENTICATED', metadata: { credential: 'bearer token', problem } }] });
  const rest = await rawRpc(
    `${p.url}/a2a/rest/message:send`,
    { message: { messageId: 'r', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
    { 'a2a-version': '1.0', ...bearer(await make()) },
  );
  expect(rest.status).toBe(401);
  expect(guardian.calls()).toEqual([]);
  expect(postsTo(agent)).toEqual([]);
});

test('no token under IDENTITY_POLICY=required: -31401 naming the bearer token', async () => {
  const r = await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(1, 'hi'), { authorization: 'Basic dXNlcjpwdw==' });
  expect(r.json.error).toMatchObject({ code: -31401, data: [{ metadata: { missing: 'verified identity', accepted: 'bearer token' } }] });
});

test('key rotation at the issuer: the new key is picked up, the removed one is refused', async () => {
  issuer.keys = [k1, k2];
  // A token under an unknown kid makes the proxy re-read the JWKS (at most once per refresh interval).
  await waitFor(
    async () => (await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(1, 'new key'), bearer(await issuer.token(k2, CLAIMS)))).json?.result !== undefined,
    10_000,
    'a token under the new key',
  );
  const fetchesBefore = issuer.fetches();
  issuer.keys = [k2];
  await waitFor(
    async () => (await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(2, 'old key'), bearer(await issuer.token(k1, CLAIMS)))).json?.error?.code === -31401,
    10_000,
    'the old key to be dropped',
  );
  expect(issuer.fetches()).toBeGreaterThan(fetchesBefore);
  expect(textOf((await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(3, 'still fine'), bearer(await issuer.token(k2, CLAIMS)))).json)).toBe('echo: still fine');
});

test('an unreachable issuer: tokens are refused ("cannot be checked"), never waved through', async () => {
  const dead = await startTestProxy({
    ROLE: 'server',
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    OIDC_ISSUER: 'http://127.0.0.1:9',
    OIDC_AUDIENCE: 'a2a-cake-baker',
  });
  try {
    const r = await rawRpc(`${dead.url}/a2a/jsonrpc`, v03Send(1, 'hi'), bearer(await issuer.token(k1, CLAIMS)));
    expect(r.json.error).toMatchObject({
      code: -31401,
      data: [{ metadata: { credential: 'bearer token', problem: expect.stringMatching(/^cannot be checked/) } }],
    });
    expect(postsTo(agent)).toEqual([]);
  } finally {
    await dead.close();
  }
});
