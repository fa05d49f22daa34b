/**
 * The identity sources of the task ownership tests, in one place: two verified callers, A and B.
 *
 * - startIdentities: OAuth2/OIDC bearer tokens of a stand-in issuer (test/helpers/keys.ts, verified
 *   by src/identity/oidc.ts on every call). A test gets the proxy variables that trust the issuer, a
 *   fetch for SDK clients and raw headers per caller.
 * - startTlsIdentities: client certificates over mutual TLS (test/helpers/pki.ts, verified by
 *   src/identity/mtls.ts once per connection): for load runs, where a signature check per call
 *   would dominate.
 * - useIdentityProxy: the OIDC callers and one proxy of a test file's stack that trusts them, started
 *   before the file and closed after it.
 * - startOwnershipStack: a real SDK agent, a real guardian and a ROLE=server a2a-guard trusting the OIDC
 *   callers A and B (task ownership on by IDENTITY_POLICY=required).
 */
import { Agent } from 'undici';
import { startAgent, type AgentOptions, type TestAgent } from './agent';
import { startGuardian, type TestGuardian } from './guardian';
import { startTestProxy, type Stack, type TestProxy } from './proxy-harness';
import { makeKey, startIssuer, type Issuer } from './keys';
import { createPki } from './pki';

export type Caller = 'A' | 'B';

export const AUDIENCE = 'a2a-ownership-tests';
const SUBJECTS: Record<Caller, string> = { A: 'agent-a', B: 'agent-b' };

export interface TestIdentities {
  /** ROLE=server variables: IDENTITY_POLICY=required (which turns ownership on) and the issuer. */
  readonly env: Record<string, string>;
  /** A fetch that presents the caller's credential (for makeClient). */
  fetchAs(caller: Caller): typeof fetch;
  /** Request headers that present the caller's credential (for raw calls). */
  headersAs(caller: Caller): Record<string, string>;
  /** The owner key the proxy derives for the caller. */
  ownerOf(caller: Caller): string;
  close(): Promise<void>;
}

export async function startIdentities(): Promise<TestIdentities> {
  const key = await makeKey('ownership-idp');
  const issuer: Issuer = await startIssuer([key]);
  const tokens: Record<Caller, string> = {
    A: await issuer.token(key, { sub: SUBJECTS.A, aud: AUDIENCE, azp: 'Agent A' }, { expiresIn: 3600 }),
    B: await issuer.token(key, { sub: SUBJECTS.B, aud: AUDIENCE, azp: 'Agent B' }, { expiresIn: 3600 }),
  };
  const headersAs = (c: Caller) => ({ authorization: `Bearer ${tokens[c]}` });
  return {
    env: { IDENTITY_POLICY: 'required', OIDC_ISSUER: issuer.url, OIDC_AUDIENCE: AUDIENCE, OIDC_JWKS_URL: issuer.jwksUrl },
    fetchAs: (c) =>
      ((input: string | URL | Request, init?: RequestInit) => {
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${tokens[c]}`);
        return fetch(input, { ...init, headers });
      }) as typeof fetch,
    headersAs,
    ownerOf: (c) => `oidc:${issuer.url.replace(/%/g, '%25').replace(/:/g, '%3A')}:${SUBJECTS[c]}`,
    close: () => issuer.close(),
  };
}

export interface TlsIdentities {
  /** ROLE=server variables: a TLS listener asking for client certificates of the test CA, IDENTITY_POLICY=required. */
  readonly env: Record<string, string>;
  /** An undici dispatcher that trusts the proxy and presents the caller's certificate. */
  dispatcherAs(caller: Caller): Agent;
  close(): Promise<void>;
}

export async function startTlsIdentities(connections: number): Promise<TlsIdentities> {
  const pki = await createPki('ownership test CA');
  const server = await pki.issue({ cn: 'proxy', server: true });
  const certs = {
    A: await pki.issue({ cn: 'agent-a', spiffe: 'spiffe://ownership.test/agent-a' }),
    B: await pki.issue({ cn: 'agent-b', spiffe: 'spiffe://ownership.test/agent-b' }),
  };
  const dispatchers = {
    A: new Agent({ connections, connect: { ca: pki.caCert, cert: certs.A.cert, key: certs.A.key } }),
    B: new Agent({ connections, connect: { ca: pki.caCert, cert: certs.B.cert, key: certs.B.key } }),
  };
  return {
    env: { IDENTITY_POLICY: 'required', TLS_CERT_FILE: server.certFile, TLS_KEY_FILE: server.keyFile, TLS_CLIENT_CA_FILE: pki.caFile },
    dispatcherAs: (c) => dispatchers[c],
    close: async () => {
      await dispatchers.A.close();
      await dispatchers.B.close();
      await pki.close();
    },
  };
}

export interface OwnershipStack {
  readonly agent: TestAgent;
  readonly guardian: TestGuardian;
  readonly ids: TestIdentities;
  readonly proxy: TestProxy;
  close(): Promise<void>;
}

export async function startOwnershipStack(agentOptions: AgentOptions = {}): Promise<OwnershipStack> {
  const agent = await startAgent(agentOptions);
  const guardian = await startGuardian();
  const ids = await startIdentities();
  const proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', ...ids.env });
  return {
    agent,
    guardian,
    ids,
    proxy,
    async close() {
      await proxy.close();
      await agent.close();
      await guardian.close();
      await ids.close();
    },
  };
}

/** Register beforeAll/afterAll: the OIDC callers A and B, and a proxy of `s` trusting them (with `env`). Read inside hooks and tests. */
export function useIdentityProxy(s: Stack, env: Record<string, string | undefined> = {}): { readonly ids: TestIdentities; readonly proxy: TestProxy } {
  let ids: TestIdentities | undefined;
  let proxy: TestProxy | undefined;
  beforeAll(async () => {
    ids = await startIdentities();
    proxy = await s.proxy({ ...env, ...ids.env });
  });
  afterAll(async () => {
    await ids?.close();
  });
  const must = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('useIdentityProxy: not started yet (use it inside a hook or test)');
    return v;
  };
  return {
    get ids() {
      return must(ids);
    },
    get proxy() {
      return must(proxy);
    },
  };
}
