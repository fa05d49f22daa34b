/**
 * The proxy's listener over TLS, and mutual TLS as a caller identity, with certificates made in the
 * test (CA, server, clients with and without a SPIFFE ID, a client from another CA) and real SDK
 * clients over https (undici Agent with the test CA and the client certificate as the SDK's fetch).
 */
import tls from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';
import { copyFile } from 'node:fs/promises';
import { makeClient, postsTo, sendReq, textOf, type TestAgent } from '../../helpers/agent';
import type { TestGuardian } from '../../helpers/guardian';
import { waitFor } from '../../helpers/net';
import { createPki, type Issued, type Pki } from '../../helpers/pki';
import { validateAosRequest } from '../../helpers/schema';
import { startTestProxy, useStack, type TestProxy } from '../../helpers/proxy-harness';

const stack = useStack({ name: 'Cake Baker', version: '2.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let pki: Pki;
let other: Pki;
let serverCert: Issued;
let spiffeClient: Issued;
let cnClient: Issued;
let strangerClient: Issued;
const started: TestProxy[] = [];
const agents: Agent[] = [];

const SPIFFE = 'spiffe://kitchen.test/ns/agents/sa/cooking-assistant';

beforeAll(async () => {
  ({ agent, guardian } = stack);
  pki = await createPki('Kitchen CA');
  other = await pki.otherCa();
  [serverCert, spiffeClient, cnClient, strangerClient] = await Promise.all([
    pki.issue({ cn: 'cake-baker-guard', server: true, name: 'server' }),
    pki.issue({ cn: 'cooking-assistant', spiffe: SPIFFE, name: 'spiffe-client' }),
    pki.issue({ cn: 'legacy-agent', name: 'cn-client' }),
    other.issue({ cn: 'cooking-assistant', spiffe: SPIFFE, name: 'stranger' }),
  ]);
});
afterAll(async () => {
  for (const p of started.splice(0)) await p.close();
  for (const a of agents.splice(0)) await a.close();
  await pki.close();
});

async function tlsProxy(env: Record<string, string>): Promise<TestProxy> {
  const p = await startTestProxy({
    ROLE: 'server',
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    OBSERVED_AGENT_INSTRUCTIONS: 'Bake.',
    TLS_CERT_FILE: serverCert.certFile,
    TLS_KEY_FILE: serverCert.keyFile,
    TLS_CLIENT_CA_FILE: pki.caFile,
    ...env,
  });
  started.push(p);
  return p;
}

/** A fetch that trusts the test CA and presents `client` (if any): what the SDK client uses. */
function tlsFetch(client?: Issued): typeof fetch {
  const dispatcher = new Agent({ connect: { ca: pki.caCert, ...(client === undefined ? {} : { cert: client.cert, key: client.key }) } });
  agents.push(dispatcher);
  return ((input: string | URL | Request, init?: RequestInit) =>
    undiciFetch(input as string, { ...(init as object), dispatcher } as never)) as unknown as typeof fetch;
}

const serverHooks = () => guardian.calls().filter((e) => 'instructions' in (e.params?.context?.to?.agent ?? {}));
const v03Send = (id: number, text: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'message/send',
    params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
  });
async function post(url: string, f: typeof fetch, body: string, headers: Record<string, string> = {}) {
  const r = await f(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: r.status, json: (await r.json().catch(() => undefined)) as any };
}

describe('TLS_CLIENT_CERT=required', () => {
  let p: TestProxy;
  beforeAll(async () => {
    p = await tlsProxy({ IDENTITY_POLICY: 'required' });
  });

  test.each(['1.0', '0.3'] as const)('SDK %s over https with a SPIFFE client certificate: the SPIFFE ID is the verified caller', async (version) => {
    expect(p.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const client = await makeClient(p.url, 'JSONRPC', version, { fetchImpl: tlsFetch(spiffeClient) });
    expect(textOf(await client.sendMessage(sendReq('a cake over TLS')))).toBe('echo: a cake over TLS');
    const [e] = serverHooks();
    expect(e.params.context.from.agent).toEqual({
      url: 'unknown',
      name: 'cooking-assistant',
      version: 'unknown',
      id: SPIFFE,
      metadata: { identity: { verified: true, source: 'mtls', subject: SPIFFE, issuer: 'Kitchen CA' } },
    });
    expect(validateAosRequest(e, 'message/send')).toEqual([]);
    expect(postsTo(agent)).toHaveLength(1);
  });

  test('the rewritten card points at https://', async () => {
    const card = (await (await tlsFetch(spiffeClient)(`${p.url}/.well-known/agent-card.json`)).json()) as { supportedInterfaces: Array<{ url: string }> };
    for (const i of card.supportedInterfaces) expect(new URL(i.url).origin).toBe(p.url);
  });

  test('no client certificate, or one from another CA: the handshake fails; nothing reaches the guardian or the agent', async () => {
    await expect(post(`${p.url}/a2a/jsonrpc`, tlsFetch(), v03Send(1, 'hi'))).rejects.toThrow();
    await expect(post(`${p.url}/a2a/jsonrpc`, tlsFetch(strangerClient), v03Send(2, 'hi'))).rejects.toThrow();
    await expect(fetch(`${p.url.replace('https:', 'http:')}/a2a/jsonrpc`, { method: 'POST', body: v03Send(3, 'hi') })).rejects.toThrow();
    expect(guardian.calls()).toEqual([]);
    expect(postsTo(agent)).toEqual([]);
  });
});

describe('TLS_CLIENT_CERT=optional', () => {
  let p: TestProxy;
  beforeAll(async () => {
    p = await tlsProxy({ TLS_CLIENT_CERT: 'optional', IDENTITY_POLICY: 'required' });
  });

  test('a certificate with only a subject CN: the CN is the verified caller', async () => {
    const r = await post(`${p.url}/a2a/jsonrpc`, tlsFetch(cnClient), v03Send(1, 'hi'));
    expect(textOf(r.json)).toBe('echo: hi');
    expect(serverHooks()[0].params.context.from.agent).toMatchObject({
      id: 'legacy-agent',
      name: 'legacy-agent',
      metadata: { identity: { verified: true, source: 'mtls', subject: 'legacy-agent' } },
    });
  });

  test('no certificate: IDENTITY_POLICY=required refuses with -31401', async () => {
    const r = await post(`${p.url}/a2a/jsonrpc`, tlsFetch(), v03Send(2, 'hi'));
    expect(r.json.error).toMatchObject({
      code: -31401,
      data: [{ reason: 'UNAUTHENTICATED', metadata: { missing: 'verified identity', accepted: 'client certificate' } }],
    });
    expect(postsTo(agent)).toEqual([]);
  });

  test('a certificate the client CA did not sign is refused, never treated as "no identity"', async () => {
    const r = await post(`${p.url}/a2a/jsonrpc`, tlsFetch(strangerClient), v03Send(3, 'hi'));
    expect(r.json.error).toMatchObject({
      code: -31401,
      data: [{ metadata: { credential: 'client certificate', problem: expect.stringMatching(/^is not trusted \(/) } }],
    });
    expect(guardian.calls()).toEqual([]);
    expect(postsTo(agent)).toEqual([]);
  });

  test('IDENTITY_POLICY=optional: no certificate -> "unknown"', async () => {
    const q = await tlsProxy({ TLS_CLIENT_CERT: 'optional' });
    await post(`${q.url}/a2a/jsonrpc`, tlsFetch(), v03Send(4, 'hi'));
    expect(serverHooks()[0].params.context.from.agent).toEqual({
      url: 'unknown',
      name: 'unknown',
      version: 'unknown',
      metadata: { identity: { verified: false } },
    });
  });
});

describe('listener certificate rotation', () => {
  test('new certificate files are served to new connections without a restart', async () => {
    const dir = pki.dir;
    const certFile = `${dir}/rotating.cert.pem`;
    const keyFile = `${dir}/rotating.key.pem`;
    await copyFile(serverCert.certFile, certFile);
    await copyFile(serverCert.keyFile, keyFile);
    const p = await tlsProxy({ TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile, TLS_CLIENT_CA_FILE: '', CREDENTIALS_REFRESH_MS: '100' });
    const serial = () =>
      new Promise<string>((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port: Number(new URL(p.url).port), ca: pki.caCert }, () => {
          resolve(s.getPeerCertificate().serialNumber);
          s.end();
        });
        s.on('error', reject);
      });
    const before = await serial();
    const renewed = await pki.issue({ cn: 'cake-baker-guard', server: true, name: 'renewed' });
    await copyFile(renewed.keyFile, keyFile);
    await copyFile(renewed.certFile, certFile);
    await waitFor(async () => (await serial()) !== before, 10_000, 'the renewed certificate');
    const r = await post(`${p.url}/a2a/jsonrpc`, tlsFetch(), v03Send(1, 'after renewal'));
    expect(textOf(r.json)).toBe('echo: after renewal');
  });
});
