/**
 * Caller identity sources without sockets: client-certificate identities (SPIFFE ID, else CN),
 * OIDC bearer tokens (real tokens against a local JWKS), and the policy that combines them
 * (required / optional / claims; a bad credential refuses under every policy; precedence).
 */
import type { Socket } from 'node:net';
import pino from 'pino';
import { parseClaimMap, type ClaimMap } from '../../../src/config/config';
import { claimedPeer, createCallerIdentifier, spent, verifiedPeer, type CallerSources } from '../../../src/identity/caller';
import { jose } from '../../../src/identity/jose';
import { identityFromCertificate, isSpiffeId, parseSubjectAltName, tlsPeerIdentity } from '../../../src/identity/mtls';
import { agentFromClaims, bearerToken, OidcVerifier } from '../../../src/identity/oidc';
import type { AssertionVerifier } from '../../../src/identity/assertion';
import type { CredentialCheck, VerifiedIdentity } from '../../../src/identity/types';
import { makeKey, unsignedJwt, type TestKey } from '../../helpers/keys';
import { ownerKey } from '../../../src/ownership/principal';

const silent = pino({ level: 'silent' });

describe('client certificates (mTLS)', () => {
  test('subjectaltname text is read entry by entry, JSON-quoted values included', () => {
    expect(parseSubjectAltName('DNS:localhost, URI:spiffe://td.example/ns/a/sa/b, IP Address:127.0.0.1')).toEqual([
      { type: 'DNS', value: 'localhost' },
      { type: 'URI', value: 'spiffe://td.example/ns/a/sa/b' },
      { type: 'IP Address', value: '127.0.0.1' },
    ]);
    // A comma inside a value cannot smuggle in a second entry.
    expect(parseSubjectAltName('URI:"https://x.example/a, URI:spiffe://evil/x", DNS:a')).toEqual([
      { type: 'URI', value: 'https://x.example/a, URI:spiffe://evil/x' },
      { type: 'DNS', value: 'a' },
    ]);
    expect(parseSubjectAltName(undefined)).toEqual([]);
  });

  test('SPIFFE IDs: lower-case trust domain, clean path segments', () => {
    expect(isSpiffeId('spiffe://example.org/ns/prod/sa/cooking')).toBe(true);
    expect(isSpiffeId('spiffe://example.org')).toBe(true);
    for (const bad of [
      'spiffe://Example.org/x',
      'spiffe://example.org/a/../b',
      'spiffe://example.org/a?q',
      'spiffe://user@example.org/x',
      'spiffe://example.org:8080/x',
      'spiffe:///x',
      'spiffe://example.org/a//b',
    ]) {
      expect({ bad, ok: isSpiffeId(bad) }).toEqual({ bad, ok: false });
    }
  });

  test('the SPIFFE ID is the identity; the CN, when present, is the name', () => {
    const r = identityFromCertificate({
      subject: { CN: 'cooking-assistant' },
      subjectaltname: 'URI:spiffe://kitchen.test/agent/cooking',
      issuer: { CN: 'Kitchen CA' },
    });
    expect(r).toEqual({
      ok: true,
      identity: {
        source: 'mtls',
        subject: 'spiffe://kitchen.test/agent/cooking',
        issuer: 'Kitchen CA',
        stableSubject: true,
        agent: { id: 'spiffe://kitchen.test/agent/cooking', name: 'cooking-assistant', url: 'unknown', version: 'unknown' },
      },
    });
    const noCn = identityFromCertificate({ subjectaltname: 'URI:spiffe://kitchen.test/agent/cooking' });
    expect(noCn.ok && noCn.identity.agent.name).toBe('spiffe://kitchen.test/agent/cooking');
  });

  test('without a SPIFFE ID the subject CN is the identity (other URI SANs do not count)', () => {
    const r = identityFromCertificate({
      subject: { CN: 'legacy-agent', O: 'Kitchen' },
      subjectaltname: 'URI:https://kitchen.test/agent, DNS:x',
      issuer: { CN: 'Kitchen CA' },
    });
    expect(r.ok && r.identity).toMatchObject({ subject: 'legacy-agent', issuer: 'Kitchen CA', agent: { id: 'legacy-agent', name: 'legacy-agent' } });
    // A CN is unique only under its CA: the CA stays part of the caller's task owner.
    expect(r.ok && r.identity.stableSubject).toBeUndefined();
  });

  test("a CA without one CN is named by its whole DN (SPIRE's C=US, O=SPIFFE): a CN caller's owner never has an empty issuer", () => {
    const r = identityFromCertificate({ subject: { CN: 'legacy-agent' }, issuer: { C: 'US', O: 'SPIFFE' } });
    expect(r.ok && r.identity.issuer).toBe('C=US, O=SPIFFE');
    expect(r.ok && ownerKey(r.identity)).toBe('mtls:C=US, O=SPIFFE:legacy-agent');
    const two = identityFromCertificate({ subject: { CN: 'x' }, issuer: { CN: ['A', 'B'], O: 'K' } });
    expect(two.ok && two.identity.issuer).toBe('CN=A+B, O=K');
    // A SPIFFE caller's owner is its ID alone; a CN caller's always names an issuer, so the two never meet.
    const spiffe = identityFromCertificate({ subjectaltname: 'URI:spiffe://kitchen.test/a', issuer: { O: 'SPIFFE' } });
    expect(spiffe.ok && ownerKey(spiffe.identity)).toBe('mtls::spiffe%3A//kitchen.test/a');
  });

  test.each([
    ['no issuer', { subject: { CN: 'a' } }, 'has an issuer with no name'],
    ['an empty issuer', { subject: { CN: 'a' }, issuer: {} }, 'has an issuer with no name'],
    [
      'a CN spelled as a SPIFFE ID',
      { subject: { CN: 'spiffe://kitchen.test/a' }, issuer: { CN: 'K' } },
      'has a subject CN spelled as a SPIFFE ID, and no SPIFFE ID',
    ],
    [
      'the same, upper case and spaced',
      { subject: { CN: ' SPIFFE://kitchen.test/a' }, issuer: { CN: 'K' } },
      'has a subject CN spelled as a SPIFFE ID, and no SPIFFE ID',
    ],
  ])('a CN caller with %s is refused', (_what, cert, problem) => {
    expect(identityFromCertificate(cert)).toEqual({ ok: false, credential: 'client certificate', problem });
  });

  test.each([
    ['two SPIFFE IDs', { subject: { CN: 'a' }, subjectaltname: 'URI:spiffe://a.test/x, URI:spiffe://a.test/y' }, 'has more than one SPIFFE ID'],
    ['two CNs', { subject: { CN: ['a', 'b'] } }, 'has more than one subject CN'],
    ['a malformed SPIFFE ID', { subjectaltname: 'URI:spiffe://A.test/x' }, 'has a malformed SPIFFE ID'],
    ['neither', { subject: { O: 'Kitchen' } }, 'has neither a SPIFFE ID nor a subject CN'],
  ])('refused: %s', (_what, cert, problem) => {
    expect(identityFromCertificate(cert)).toEqual({ ok: false, credential: 'client certificate', problem });
  });

  test('a plain TCP socket has no certificate; an unverified certificate is refused with the TLS reason; the answer is kept per connection', () => {
    expect(tlsPeerIdentity({} as Socket)).toBeUndefined();
    let asked = 0;
    const tlsSocket = {
      encrypted: true,
      authorized: false,
      authorizationError: 'SELF_SIGNED_CERT_IN_CHAIN',
      getPeerCertificate: () => (asked++, { subject: { CN: 'x' } }),
    } as unknown as Socket;
    expect(tlsPeerIdentity(tlsSocket)).toEqual({ ok: false, credential: 'client certificate', problem: 'is not trusted (SELF_SIGNED_CERT_IN_CHAIN)' });
    tlsPeerIdentity(tlsSocket);
    expect(asked).toBe(1);
    const noCert = { encrypted: true, authorized: false, getPeerCertificate: () => ({}) } as unknown as Socket;
    expect(tlsPeerIdentity(noCert)).toBeUndefined();
  });
});

describe('OIDC bearer tokens', () => {
  const ISS = 'https://issuer.test/realms/agents';
  const claims = parseClaimMap('id=sub,name=azp|client_id,url=agent_url,version=agent_version') as ClaimMap;
  let key: TestKey;
  let other: TestKey;
  let verifier: OidcVerifier;
  const token = (k: TestKey, body: Record<string, unknown>, header: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return new (jose().SignJWT)({ iss: ISS, aud: 'a2a-baker', sub: 'svc-cooking', iat: now, exp: now + 300, ...body })
      .setProtectedHeader({ alg: k.alg, kid: k.kid, ...header })
      .sign(k.privateKey);
  };
  beforeAll(async () => {
    [key, other] = await Promise.all([makeKey('idp-1', 'ES256'), makeKey('idp-1', 'ES256')]);
    const jwks = jose().createLocalJWKSet({ keys: [key.publicJwk] });
    verifier = new OidcVerifier({ issuer: ISS, audiences: ['a2a-baker'], jwksUrl: undefined, claims, refreshMs: 30_000, logger: silent }, jwks);
  });

  test('bearerToken reads only the Bearer scheme', () => {
    expect(bearerToken({ authorization: 'Bearer abc.def.ghi' })).toBe('abc.def.ghi');
    expect(bearerToken({ authorization: 'bearer   abc' })).toBe('abc');
    expect(bearerToken({ authorization: 'Basic dXNlcjpwdw==' })).toBeUndefined();
    expect(bearerToken({ authorization: 'Bearer a b' })).toBeUndefined();
    expect(bearerToken({})).toBeUndefined();
  });

  test('a valid token maps the configured claims onto the agent fields', async () => {
    const r = await verifier.verify(await token(key, { azp: 'cooking-assistant', agent_url: 'https://kitchen.test/a', agent_version: '2.1' }));
    expect(r).toEqual({
      ok: true,
      identity: {
        source: 'oidc',
        subject: 'svc-cooking',
        issuer: ISS,
        agent: { id: 'svc-cooking', name: 'cooking-assistant', url: 'https://kitchen.test/a', version: '2.1' },
      },
    });
  });

  test("the owner a token claims, read unverified, is the owner it verifies into; another issuer's token claims none", async () => {
    const t = await token(key, {});
    const r = await verifier.verify(t);
    if (!r.ok) throw new Error(r.problem);
    const claimed = verifier.claimed(t);
    expect(claimed === undefined ? undefined : ownerKey(claimed)).toBe(ownerKey(r.identity));
    expect(verifier.claimed(await token(other, {}))).toEqual(claimed);
    expect(verifier.claimed(await token(key, { iss: 'https://evil.test' }))).toBeUndefined();
    expect(verifier.claimed(await token(key, { sub: undefined }))).toBeUndefined();
    expect(verifier.claimed('opaque-api-key')).toBeUndefined();
  });

  test('claims fall back in order; unmapped fields are "unknown"', () => {
    expect(agentFromClaims({ sub: 's', client_id: 'c' }, claims)).toEqual({ id: 's', name: 'c', url: 'unknown', version: 'unknown' });
    expect(agentFromClaims({ sub: 42 }, claims)).toBeUndefined();
  });

  test.each([
    ['expired', { exp: Math.floor(Date.now() / 1000) - 60 }, 'expired'],
    ['another audience', { aud: 'someone-else' }, 'issued for another audience'],
    ['another issuer', { iss: 'https://evil.test' }, 'issued by another issuer'],
    ['no exp', { exp: undefined }, 'claim exp is missing or invalid'],
    ['no sub', { sub: undefined }, 'claim sub is missing or invalid'],
  ])('refused: %s', async (_what, body, problem) => {
    expect(await verifier.verify(await token(key, body))).toEqual({ ok: false, credential: 'bearer token', problem });
  });

  test('refused: a key the issuer does not publish (same kid), alg none, not a JWT', async () => {
    expect(await verifier.verify(await token(other, {}))).toEqual({ ok: false, credential: 'bearer token', problem: 'signature does not verify' });
    const now = Math.floor(Date.now() / 1000);
    expect(await verifier.verify(unsignedJwt({ iss: ISS, aud: 'a2a-baker', sub: 'x', exp: now + 60 }))).toEqual({
      ok: false,
      credential: 'bearer token',
      problem: 'signed with an algorithm that is not allowed',
    });
    expect(await verifier.verify('opaque-api-key')).toEqual({ ok: false, credential: 'bearer token', problem: 'is not a signed JWT' });
  });

  test('OIDC_CLAIMS is checked at start', () => {
    expect(parseClaimMap('id=sub')).toEqual({ id: ['sub'], name: [], url: [], version: [] });
    expect(parseClaimMap('name=azp')).toBe('must map id (e.g. id=sub)');
    expect(parseClaimMap('id=sub,role=x')).toMatch(/FIELD one of id, name, url, version/);
    expect(parseClaimMap('id=s u b')).toMatch(/claim names are/);
  });
});

describe('the policy over the sources', () => {
  const ASSERTED: VerifiedIdentity = {
    source: 'assertion',
    subject: 'cooking-assistant',
    issuer: 'k1',
    agent: { id: 'cooking-assistant', name: 'Cooking assistant', url: 'https://kitchen.test/a', version: '1.0.0' },
  };
  const OIDC: VerifiedIdentity = {
    source: 'oidc',
    subject: 'svc',
    issuer: 'https://issuer.test',
    agent: { id: 'svc', name: 'svc', url: 'unknown', version: 'unknown' },
  };
  const fakeVerifier = (check: CredentialCheck) => ({ verify: async () => check }) as unknown as AssertionVerifier & OidcVerifier;
  const plain = {} as Socket;
  const claimHeaders = { 'x-aos-agent-name': 'Cooking assistant', 'x-aos-agent-url': 'https://kitchen.test/a', 'x-aos-agent-version': '1' };
  const base = (over: Partial<CallerSources>): CallerSources => ({
    role: 'server',
    policy: 'optional',
    assertions: undefined,
    oidc: undefined,
    mtls: false,
    localAgent: () => ({ id: 'local', name: 'Local', url: 'u', version: 'v' }),
    ...over,
  });

  test('optional: a verified assertion becomes the caller, marked verified; claimed headers alone are never believed', async () => {
    const identify = createCallerIdentifier(base({ assertions: fakeVerifier({ ok: true, identity: ASSERTED }) }));
    const r = await identify({ 'x-aos-agent-assertion': 'a.b.c', ...claimHeaders, 'x-aos-agent-name': 'Cake Baker' }, plain);
    expect(r).toEqual({ ok: true, identity: ASSERTED, peer: verifiedPeer(ASSERTED) });
    expect(r.ok && r.peer).toEqual({
      url: 'https://kitchen.test/a',
      name: 'Cooking assistant',
      version: '1.0.0',
      id: 'cooking-assistant',
      metadata: { identity: { verified: true, source: 'assertion', subject: 'cooking-assistant', issuer: 'k1' } },
    });
    const none = await identify(claimHeaders, plain);
    expect(none).toEqual({
      ok: true,
      identity: undefined,
      peer: { url: 'unknown', name: 'unknown', version: 'unknown', metadata: { identity: { verified: false } } },
    });
  });

  test('a one-use credential is spent only when asked (the request routes somewhere); spent twice, the second refuses the call', async () => {
    let spends = 0;
    const spend = async () => (++spends > 1 ? 'was already used (replayed)' : undefined);
    const outcomes: string[] = [];
    const identify = createCallerIdentifier(
      base({
        assertions: fakeVerifier({ ok: true, identity: ASSERTED, spend }),
        oidc: fakeVerifier({ ok: true, identity: OIDC }),
        onOutcome: (o) => outcomes.push(o),
      }),
    );
    const headers = { 'x-aos-agent-assertion': 'a.b.c', authorization: 'Bearer x.y.z' };
    const checked = await identify(headers, plain);
    expect(spends).toBe(0);
    expect(await spent(checked)).toEqual({ ok: true, identity: ASSERTED, peer: verifiedPeer(ASSERTED) });
    expect(await spent(await identify(headers, plain))).toEqual({
      ok: false,
      message: 'Caller identity not verified: the assertion was already used (replayed)',
      metadata: { credential: 'assertion', problem: 'was already used (replayed)' },
    });
    expect(outcomes).toEqual(['assertion', 'assertion', 'refused']);
    // Nothing to spend: the result itself.
    const none = await createCallerIdentifier(base({}))({}, plain);
    expect(spent(none)).toBe(none);
  });

  test('required: nothing verified is refused, naming what would have been accepted', async () => {
    const identify = createCallerIdentifier(base({ policy: 'required', assertions: fakeVerifier({ ok: true, identity: ASSERTED }), mtls: true }));
    const r = await identify(claimHeaders, plain);
    expect(r).toEqual({
      ok: false,
      message: 'Caller identity required: no verified identity was presented (accepted: assertion (X-AOS-Agent-Assertion), client certificate)',
      metadata: { missing: 'verified identity', accepted: 'assertion (X-AOS-Agent-Assertion), client certificate' },
    });
  });

  test('claims: the headers are believed when nothing is verified, marked as a claim; a verified identity still wins', async () => {
    const identify = createCallerIdentifier(base({ policy: 'claims', oidc: fakeVerifier({ ok: true, identity: OIDC }) }));
    expect(await identify(claimHeaders, plain)).toEqual({ ok: true, identity: undefined, peer: claimedPeer(claimHeaders) });
    expect(claimedPeer(claimHeaders).metadata).toEqual({ identity: { verified: false, source: 'claim' } });
    expect(await identify({ ...claimHeaders, authorization: 'Bearer x.y.z' }, plain)).toMatchObject({ ok: true, identity: OIDC });
  });

  test.each(['required', 'optional', 'claims'] as const)('%s: a credential that fails refuses the call', async (policy) => {
    const identify = createCallerIdentifier(base({ policy, assertions: fakeVerifier({ ok: false, credential: 'assertion', problem: 'expired' }) }));
    expect(await identify({ 'x-aos-agent-assertion': 'a.b.c', ...claimHeaders }, plain)).toEqual({
      ok: false,
      message: 'Caller identity not verified: the assertion expired',
      metadata: { credential: 'assertion', problem: 'expired' },
    });
  });

  test('a good credential does not excuse a bad one', async () => {
    const identify = createCallerIdentifier(
      base({ assertions: fakeVerifier({ ok: true, identity: ASSERTED }), oidc: fakeVerifier({ ok: false, credential: 'bearer token', problem: 'expired' }) }),
    );
    expect(await identify({ 'x-aos-agent-assertion': 'a.b.c', authorization: 'Bearer x.y.z' }, plain)).toMatchObject({
      ok: false,
      metadata: { credential: 'bearer token' },
    });
  });

  test('precedence: assertion, then bearer token, then client certificate', async () => {
    const identify = createCallerIdentifier(
      base({ assertions: fakeVerifier({ ok: true, identity: ASSERTED }), oidc: fakeVerifier({ ok: true, identity: OIDC }) }),
    );
    expect(await identify({ 'x-aos-agent-assertion': 'a.b.c', authorization: 'Bearer x.y.z' }, plain)).toMatchObject({ identity: ASSERTED });
    expect(await identify({ authorization: 'Bearer x.y.z' }, plain)).toMatchObject({ identity: OIDC });
  });

  test('an assertion sent twice (joined with ", ") is refused; one without a configured trust set is ignored', async () => {
    const withTrust = createCallerIdentifier(base({ assertions: fakeVerifier({ ok: true, identity: ASSERTED }) }));
    expect(await withTrust({ 'x-aos-agent-assertion': 'a.b.c, d.e.f' }, plain)).toMatchObject({ ok: false, metadata: { problem: 'was sent more than once' } });
    const noTrust = createCallerIdentifier(base({}));
    expect(await noTrust({ 'x-aos-agent-assertion': 'a.b.c' }, plain)).toMatchObject({ ok: true, identity: undefined });
  });

  test("ROLE=client/both: the caller is the proxy's own observed agent, source local", async () => {
    const identify = createCallerIdentifier(base({ role: 'both', localAgent: () => ({ id: 'me', name: 'Me', url: 'https://me', version: '3' }) }));
    const r = await identify({ ...claimHeaders }, plain);
    expect(r).toMatchObject({
      ok: true,
      identity: { source: 'local', subject: 'me' },
      peer: { name: 'Me', metadata: { identity: { verified: true, source: 'local' } } },
    });
  });

  test('outcomes are counted', async () => {
    const seen: string[] = [];
    const identify = createCallerIdentifier(
      base({ policy: 'required', assertions: fakeVerifier({ ok: true, identity: ASSERTED }), onOutcome: (o) => seen.push(o) }),
    );
    await identify({ 'x-aos-agent-assertion': 'a.b.c' }, plain);
    await identify({}, plain);
    expect(seen).toEqual(['assertion', 'refused']);
  });
});
