/**
 * TLS out of the proxy: towards the guardian (CA bundle, client certificate, server name, a token file
 * that rotates) and towards the upstream (a ROLE=client sidecar calling a ROLE=server sidecar over
 * mutual TLS, with a signed assertion on top). Certificate failures are logged with their cause and
 * what to change, instead of a bare "connect".
 */
import https from 'node:https';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { makeClient, postsTo, rawRpc, sendReq, textOf, type TestAgent } from '../../helpers/agent';
import type { TestGuardian } from '../../helpers/guardian';
import { makeKey, writeJwks, writeSigningKey } from '../../helpers/keys';
import { closeServer, freePort, waitFor } from '../../helpers/net';
import { createPki, type Issued, type Pki } from '../../helpers/pki';
import { configFrom } from '../../../src/config/config';
import { createLogger } from '../../../src/runtime/log';
import { startProxy, type ProxyInstance } from '../../../src/server';
import { useStack } from '../../helpers/proxy-harness';

const stack = useStack({ name: 'Cake Baker', version: '2.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let pki: Pki;
let guardianCert: Issued;
let namedGuardianCert: Issued;
let proxyClientCert: Issued;
const started: ProxyInstance[] = [];

beforeAll(async () => {
  ({ agent, guardian } = stack);
  pki = await createPki('Ops CA');
  [guardianCert, namedGuardianCert, proxyClientCert] = await Promise.all([
    pki.issue({ cn: 'guardian', server: true, name: 'guardian' }),
    pki.issue({ cn: 'guardian.internal', server: true, dns: ['guardian.internal'], name: 'guardian-named' }),
    pki.issue({ cn: 'a2a-guard', spiffe: 'spiffe://ops.test/a2a-guard', name: 'proxy-client' }),
  ]);
});
afterAll(async () => {
  for (const p of started.splice(0)) await p.close();
  await pki.close();
});

/** Log lines of one proxy, as JSON objects. */
function capture(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger('debug', sink), lines };
}

async function start(env: Record<string, string>, logger = createLogger('silent')): Promise<ProxyInstance> {
  const config = configFrom({ PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', ...env });
  const p = await startProxy({ config, logger });
  started.push(p);
  return p;
}

/** An AOS guardian over https that forwards to the test guardian's script and records Authorization headers. */
async function httpsGuardian(cert: Issued, opts: { requireClientCert?: boolean } = {}): Promise<{ url: string; auth: string[]; close(): Promise<void> }> {
  const auth: string[] = [];
  const server = https.createServer(
    { cert: cert.cert, key: cert.key, ca: pki.caCert, requestCert: opts.requireClientCert === true, rejectUnauthorized: opts.requireClientCert === true },
    (req, res) => {
      auth.push(String(req.headers.authorization));
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const env = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; method: string };
        const result =
          env.method === 'ping' ? { status: 'connected', version: '1', timestamp: new Date().toISOString() } : { decision: 'allow', message: 'ok' };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: env.id, result }));
      });
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `https://127.0.0.1:${port}`, auth, close: () => closeServer(server as unknown as import('node:http').Server) };
}

const v03Send = (id: number, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
});
const failures = (lines: Array<Record<string, unknown>>) => lines.filter((l) => l['msg'] === 'guardian connection failed');

describe('guardian over TLS', () => {
  test('an untrusted (here: unknown CA) guardian certificate is logged with its cause and the variable to set; with GUARDIAN_CA_FILE it works', async () => {
    const g = await httpsGuardian(guardianCert);
    try {
      const { logger, lines } = capture();
      const blind = await start({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: g.url }, logger);
      const r = await rawRpc(`${blind.url}/a2a/jsonrpc`, v03Send(1, 'hi'));
      expect(r.json.error).toMatchObject({ code: -31503 });
      const [f] = failures(lines);
      expect(f).toMatchObject({
        level: 'warn',
        guardian: `${g.url}/`,
        code: expect.stringMatching(/^(SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)$/),
        hint: expect.stringContaining('GUARDIAN_CA_FILE'),
      });
      expect(String(f?.['cause'])).toMatch(/verify|certificate/i);

      const trusting = await start({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: g.url, GUARDIAN_CA_FILE: pki.caFile });
      expect(textOf((await rawRpc(`${trusting.url}/a2a/jsonrpc`, v03Send(2, 'hi'))).json)).toBe('echo: hi');
      expect(await trusting.guardian.ping()).toBe(true);
    } finally {
      await g.close();
    }
  });

  test('a guardian that requires a client certificate: GUARDIAN_CERT_FILE/KEY_FILE; without them the failure names them', async () => {
    const g = await httpsGuardian(guardianCert, { requireClientCert: true });
    try {
      const { logger, lines } = capture();
      const without = await start({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: g.url, GUARDIAN_CA_FILE: pki.caFile }, logger);
      expect((await rawRpc(`${without.url}/a2a/jsonrpc`, v03Send(1, 'hi'))).json.error.code).toBe(-31503);
      expect(failures(lines)[0]).toMatchObject({ hint: expect.stringContaining('GUARDIAN_CERT_FILE') });

      const withCert = await start({
        UPSTREAM_URL: agent.origin,
        GUARDIAN_URL: g.url,
        GUARDIAN_CA_FILE: pki.caFile,
        GUARDIAN_CERT_FILE: proxyClientCert.certFile,
        GUARDIAN_KEY_FILE: proxyClientCert.keyFile,
      });
      expect(textOf((await rawRpc(`${withCert.url}/a2a/jsonrpc`, v03Send(2, 'hi'))).json)).toBe('echo: hi');
    } finally {
      await g.close();
    }
  });

  test('GUARDIAN_SERVER_NAME: a certificate for guardian.internal, reached at 127.0.0.1', async () => {
    const g = await httpsGuardian(namedGuardianCert);
    try {
      const { logger, lines } = capture();
      const noName = await start({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: g.url, GUARDIAN_CA_FILE: pki.caFile }, logger);
      expect((await rawRpc(`${noName.url}/a2a/jsonrpc`, v03Send(1, 'hi'))).json.error.code).toBe(-31503);
      expect(failures(lines)[0]).toMatchObject({ code: 'ERR_TLS_CERT_ALTNAME_INVALID', hint: expect.stringContaining('GUARDIAN_SERVER_NAME') });
      const named = await start({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: g.url, GUARDIAN_CA_FILE: pki.caFile, GUARDIAN_SERVER_NAME: 'guardian.internal' });
      expect(textOf((await rawRpc(`${named.url}/a2a/jsonrpc`, v03Send(2, 'hi'))).json)).toBe('echo: hi');
    } finally {
      await g.close();
    }
  });

  test('GUARDIAN_TOKEN_FILE is re-read when it changes (projected service-account tokens rotate)', async () => {
    const tokenFile = join(pki.dir, 'guardian-token');
    await writeFile(tokenFile, 'token-one\n');
    const p = await start({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, GUARDIAN_TOKEN_FILE: tokenFile, CREDENTIALS_REFRESH_MS: '100' });
    await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(1, 'a'));
    expect(guardian.headers.at(-1)?.['authorization']).toBe('Bearer token-one');
    await writeFile(tokenFile, 'token-two');
    await waitFor(
      async () => {
        await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(2, 'b'));
        return guardian.headers.at(-1)?.['authorization'] === 'Bearer token-two';
      },
      10_000,
      'the rotated token',
    );
  });

  test('an unreadable token or CA file stops the start, naming the variable', async () => {
    await expect(start({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, GUARDIAN_TOKEN_FILE: '/nonexistent/token' })).rejects.toThrow(
      /^GUARDIAN_TOKEN_FILE=\/nonexistent\/token: cannot read the file \(ENOENT\)/,
    );
    await expect(start({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, GUARDIAN_CA_FILE: guardianCert.keyFile })).rejects.toThrow(
      'GUARDIAN_CA_FILE does not load: no PEM certificate in it',
    );
    await expect(
      start({
        UPSTREAM_URL: agent.origin,
        GUARDIAN_URL: guardian.url,
        GUARDIAN_CA_FILE: pki.caFile,
        GUARDIAN_CERT_FILE: proxyClientCert.certFile,
        GUARDIAN_KEY_FILE: guardianCert.keyFile,
      }),
    ).rejects.toThrow(/GUARDIAN_CA_FILE\/_CERT_FILE\/_KEY_FILE do not load/);
    await expect(
      start({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, TLS_CERT_FILE: guardianCert.certFile, TLS_KEY_FILE: '/nonexistent/key.pem' }),
    ).rejects.toThrow(/^TLS_KEY_FILE=\/nonexistent\/key.pem: cannot read the file/);
  });
});

describe('sidecar to sidecar over mutual TLS, with a signed assertion on top', () => {
  test("the client sidecar presents its certificate and trusts the server sidecar's CA; the assertion still names the agent", async () => {
    const serverCert = await pki.issue({ cn: 'cake-baker-guard', server: true, name: 'baker-guard' });
    const dir = pki.dir;
    const key = await makeKey('kitchen-1');
    const port = await freePort();
    const serverUrl = `https://127.0.0.1:${port}`;
    const server = await start({
      ROLE: 'server',
      PORT: String(port),
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      OBSERVED_AGENT_INSTRUCTIONS: 'Bake.',
      TLS_CERT_FILE: serverCert.certFile,
      TLS_KEY_FILE: serverCert.keyFile,
      TLS_CLIENT_CA_FILE: pki.caFile,
      ASSERTION_TRUST_JWKS_FILE: await writeJwks(dir, [key], 'tls-pair.jwks.json'),
      ASSERTION_AUDIENCE: serverUrl,
      IDENTITY_POLICY: 'required',
    });
    expect(server.url).toBe(serverUrl);
    const client = await start({
      ROLE: 'client',
      UPSTREAM_URL: serverUrl,
      GUARDIAN_URL: guardian.url,
      OBSERVED_AGENT_ID: 'cooking-assistant',
      OBSERVED_AGENT_NAME: 'Cooking assistant',
      UPSTREAM_CA_FILE: pki.caFile,
      UPSTREAM_CERT_FILE: proxyClientCert.certFile,
      UPSTREAM_KEY_FILE: proxyClientCert.keyFile,
      ASSERTION_SIGNING_KEY_FILE: await writeSigningKey(dir, key, 'tls-pair.jwk.json'),
    });
    const sdk = await makeClient(client.url, 'JSONRPC', '1.0');
    expect(textOf(await sdk.sendMessage(sendReq('over mTLS')))).toBe('echo: over mTLS');
    const serverHook = guardian.calls().find((e) => 'instructions' in (e.params?.context?.to?.agent ?? {}));
    // Both credentials verified; the assertion names the agent (it wins over the connection's certificate).
    expect(serverHook?.params.context.from.agent).toMatchObject({
      id: 'cooking-assistant',
      name: 'Cooking assistant',
      metadata: { identity: { verified: true, source: 'assertion' } },
    });
    // The client sidecar's upstream card came over the same TLS settings.
    expect(serverHook && guardian.calls()[0].params.context.to.agent).toMatchObject({ name: 'Cake Baker', url: `${serverUrl}/a2a/jsonrpc` });
  });

  test("without UPSTREAM_CA_FILE the upstream failure is logged with the certificate's cause", async () => {
    const serverCert = await pki.issue({ cn: 'cake-baker-guard', server: true, name: 'baker-guard-2' });
    const server = await start({
      ROLE: 'server',
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      TLS_CERT_FILE: serverCert.certFile,
      TLS_KEY_FILE: serverCert.keyFile,
    });
    const { logger, lines } = capture();
    const client = await start({ ROLE: 'client', UPSTREAM_URL: server.url, GUARDIAN_URL: guardian.url }, logger);
    const r = await rawRpc(`${client.url}/a2a/jsonrpc`, v03Send(1, 'hi'));
    expect(r.json.error).toMatchObject({ code: -31502, data: [{ metadata: { cause: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' } }] });
    expect(lines.find((l) => l['msg'] === 'upstream agent unreachable')).toMatchObject({
      code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      hint: expect.stringContaining('UPSTREAM_CA_FILE'),
    });
    const card = lines.find((l) => String(l['msg']).startsWith('upstream agent card could not be fetched'));
    expect(JSON.stringify(card?.['problems'])).toContain('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    expect(postsTo(agent)).toEqual([]);
  });
});
