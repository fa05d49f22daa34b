/**
 * Identity assertions without sockets: real keys and signatures (jose), a trust set from a JWKS,
 * and every way an assertion must be refused: forged (untrusted key), tampered, expired, issued for
 * another audience, replayed, too long-lived, of another type, alg none, malformed agent claims.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { AssertionSigner, AssertionVerifier, ASSERTION_TYP } from '../../../src/identity/assertion';
import { jose } from '../../../src/identity/jose';
import { generateAssertionKey } from '../../../src/identity/keygen';
import { parseSigningKey, parseTrustedJwks, TrustIndex } from '../../../src/identity/keys';
import { ownerKey } from '../../../src/ownership/principal';
import { ReplayCache } from '../../../src/identity/replay';
import { bindTo, makeKey, signAssertion, startIssuer, unsignedJwt, type TestKey } from '../../helpers/keys';
import { waitFor } from '../../helpers/net';

const AUD = 'https://baker-guard.example:8443';
const AGENT = { id: 'cooking-assistant', name: 'Cooking assistant', url: 'https://kitchen.example/a', version: '1.0.0' };
const silent = pino({ level: 'silent' });

/** A verifier trusting `keys`; `agents` binds a kid to the agent ids it may assert (the JWK's `agents`). */
function verifierFor(
  keys: readonly TestKey[],
  audiences: readonly string[] = [AUD],
  replayCacheSize = 1000,
  agents: Record<string, string[]> = {},
): AssertionVerifier {
  const set = parseTrustedJwks(
    JSON.stringify({ keys: keys.map((k) => ({ ...k.publicJwk, ...(agents[k.kid] === undefined ? {} : { agents: agents[k.kid] }) })) }),
  );
  const trust = { getKey: jose().createLocalJWKSet(set), set: () => set };
  return new AssertionVerifier(() => trust, { audiences, replayCacheSize });
}

let es: TestKey;
let ed: TestKey;
let rogue: TestKey;
beforeAll(async () => {
  [es, ed, rogue] = await Promise.all([makeKey('k-es', 'ES256'), makeKey('k-ed', 'EdDSA'), makeKey('k-es', 'ES256')]);
});

describe('AssertionSigner -> AssertionVerifier', () => {
  test.each(['ES256', 'EdDSA'] as const)('%s: a signed assertion verifies into the agent it names', async (alg) => {
    const key = alg === 'ES256' ? es : ed;
    const signer = AssertionSigner.fromKey(await parseSigningKey(JSON.stringify(key.privateJwk)), 30);
    const token = await signer.sign(AGENT, AUD);
    const header = jose().decodeProtectedHeader(token);
    expect(header).toEqual({ alg, kid: key.kid, typ: ASSERTION_TYP });
    const claims = jose().decodeJwt(token);
    expect(claims).toMatchObject({ sub: AGENT.id, aud: AUD, agent: AGENT });
    expect((claims.exp as number) - (claims.iat as number)).toBe(30);
    expect(typeof claims.jti).toBe('string');
    const r = await verifierFor([es, ed]).verify(token);
    expect(r).toEqual({ ok: true, identity: { source: 'assertion', subject: AGENT.id, issuer: key.kid, agent: AGENT }, spend: expect.any(Function) });
  });

  test('every assertion has its own id, so two calls are never a replay of each other', async () => {
    const signer = AssertionSigner.fromKey(await parseSigningKey(JSON.stringify(es.privateJwk)), 30);
    const [a, b] = await Promise.all([signer.sign(AGENT, AUD), signer.sign(AGENT, AUD)]);
    expect(jose().decodeJwt(a as string).jti).not.toBe(jose().decodeJwt(b as string).jti);
    const v = verifierFor([es]);
    expect((await v.verify(a as string)).ok).toBe(true);
    expect((await v.verify(b as string)).ok).toBe(true);
  });

  test('the lifetime is capped at 60 s whatever the configuration says', async () => {
    const signer = AssertionSigner.fromKey(await parseSigningKey(JSON.stringify(es.privateJwk)), 3600);
    const c = jose().decodeJwt(await signer.sign(AGENT, AUD));
    expect((c.exp as number) - (c.iat as number)).toBe(60);
  });

  test('a PEM (PKCS#8) key works too; its key id is the RFC 7638 thumbprint unless set', async () => {
    const { privateKey } = await jose().generateKeyPair('ES256', { extractable: true });
    const pem = await jose().exportPKCS8(privateKey);
    const k = await parseSigningKey(pem);
    expect(k.kid).toBe(await jose().calculateJwkThumbprint(k.publicJwk, 'sha256'));
    expect((await parseSigningKey(pem, 'rotation-2')).kid).toBe('rotation-2');
    expect(k.publicJwk).not.toHaveProperty('d');
  });
});

/** Why `v` refuses `token` (it must refuse it). */
async function problemOf(v: AssertionVerifier, token: string): Promise<string> {
  const r = await v.verify(token);
  if (r.ok) throw new Error('expected a refusal');
  expect(r.credential).toBe('assertion');
  return r.problem;
}

/** Verified and spent, as for a request that routes to an A2A operation: the problem, or undefined. */
async function spendProblem(v: AssertionVerifier, token: string): Promise<string | undefined> {
  const r = await v.verify(token);
  if (!r.ok) return r.problem;
  return r.spend?.();
}

describe('refused assertions', () => {
  test('forged: signed by a key that is not trusted (even under a trusted kid)', async () => {
    expect(await problemOf(verifierFor([es]), await signAssertion(rogue, AGENT, AUD))).toBe('signature does not verify');
    expect(await problemOf(verifierFor([es]), await signAssertion(ed, AGENT, AUD))).toBe('signed by a key that is not trusted');
  });

  test('tampered: a changed claim breaks the signature', async () => {
    const token = await signAssertion(es, AGENT, AUD);
    const [h, p, s] = token.split('.');
    const claims = JSON.parse(Buffer.from(p as string, 'base64url').toString());
    claims.agent.name = 'Cake Baker';
    const forged = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
    expect(await problemOf(verifierFor([es]), forged)).toBe('signature does not verify');
  });

  test('expired', async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(await problemOf(verifierFor([es]), await signAssertion(es, AGENT, AUD, { iat: now - 50, exp: now - 10 }))).toBe('expired');
  });

  test('issued too long ago, or in the future', async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(await problemOf(verifierFor([es]), await signAssertion(es, AGENT, AUD, { iat: now - 120, exp: now + 30 }))).toMatch(/expired|longer/);
    expect(await problemOf(verifierFor([es]), await signAssertion(es, AGENT, AUD, { iat: now + 60, exp: now + 90 }))).toBe('too old or issued in the future');
  });

  test('re-targeted: issued for another audience', async () => {
    expect(await problemOf(verifierFor([es]), await signAssertion(es, AGENT, 'https://other-guard.example'))).toBe('issued for another audience');
  });

  test('several audiences may be accepted (a proxy reached under two names)', async () => {
    const v = verifierFor([es], [AUD, 'https://baker.internal']);
    expect((await v.verify(await signAssertion(es, AGENT, 'https://baker.internal'))).ok).toBe(true);
  });

  test('replayed: the same assertion a second time, once it was spent (checked again, not spent, it still verifies)', async () => {
    const v = verifierFor([es]);
    const token = await signAssertion(es, AGENT, AUD);
    expect((await v.verify(token)).ok).toBe(true);
    expect(await spendProblem(v, token)).toBeUndefined();
    expect(await problemOf(v, token)).toBe('was already used (replayed)');
    // Two checks of it before either spends it: the second spend loses.
    const twice = await signAssertion(es, AGENT, AUD);
    const [a, b] = [await v.verify(twice), await v.verify(twice)];
    expect([a.ok && (await a.spend?.()), b.ok && (await b.spend?.())]).toEqual([undefined, 'was already used (replayed)']);
  });

  test('a lifetime over 60 s', async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(await problemOf(verifierFor([es]), await signAssertion(es, AGENT, AUD, { iat: now, exp: now + 61 }))).toBe('lives longer than 60 s');
  });

  test('another JWT type (an OIDC token signed by the same key is not an assertion)', async () => {
    expect(await problemOf(verifierFor([es]), await signAssertion(es, AGENT, AUD, { typ: 'at+jwt' }))).toBe('not of the expected type');
  });

  test('alg none', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = unsignedJwt({ agent: AGENT, sub: AGENT.id, aud: AUD, iat: now, exp: now + 30, jti: 'x' }, ASSERTION_TYP);
    expect(await problemOf(verifierFor([es]), token)).toBe('signed with an algorithm that is not allowed');
  });

  test.each([
    ['no agent claim', { agent: undefined }],
    ['agent without url', { agent: { id: 'a', name: 'n', version: '1' } }],
    ['agent id not a string', { agent: { id: 7, name: 'n', url: 'u', version: '1' } }],
    ['agent name with a control character', { agent: { id: 'a', name: 'n\u0000', url: 'u', version: '1' } }],
    ['agent name over 1024 characters', { agent: { id: 'a', name: 'n'.repeat(1025), url: 'u', version: '1' } }],
  ])('malformed agent claim: %s', async (_what, over) => {
    expect(await problemOf(verifierFor([es]), await signAssertion(es, AGENT, AUD, over))).toBe('has no valid agent claim (id, name, url, version)');
  });

  test('sub and agent.id disagree', async () => {
    expect(await problemOf(verifierFor([es]), await signAssertion(es, AGENT, AUD, { sub: 'someone-else' }))).toBe(
      'names another agent in sub than in agent.id',
    );
  });

  test('garbage and oversized tokens', async () => {
    expect(await problemOf(verifierFor([es]), 'not.a.jwt')).toBe('malformed');
    expect(await problemOf(verifierFor([es]), 'x'.repeat(9000))).toBe('too large');
  });

  test('a full replay cache refuses rather than forgets', async () => {
    const v = verifierFor([es], [AUD], 100);
    for (let i = 0; i < 100; i++) expect(await spendProblem(v, await signAssertion(es, AGENT, AUD))).toBeUndefined();
    expect(await spendProblem(v, await signAssertion(es, AGENT, AUD))).toBe("cannot be checked for replay now (this key's share of the replay cache is full)");
  });

  test("each trusted key has its share of the cache: one key filling its own does not refuse another's assertions", async () => {
    const other = await makeKey('other-signer');
    const v = verifierFor([es, other], [AUD], 100);
    for (let i = 0; i < 50; i++) expect(await spendProblem(v, await signAssertion(es, AGENT, AUD))).toBeUndefined();
    expect(await spendProblem(v, await signAssertion(es, AGENT, AUD))).toMatch(/share of the replay cache is full/);
    for (let i = 0; i < 50; i++) expect(await spendProblem(v, await signAssertion(other, AGENT, AUD))).toBeUndefined();
  });
});

describe('key rotation: the trust set holds both keys during a rollover', () => {
  test('old and new key verify while both are trusted; once the file drops the old key, it is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'a2a-guard-rot-'));
    try {
      const [oldKey, newKey] = await Promise.all([makeKey('2026-01'), makeKey('2026-02', 'EdDSA')]);
      const trust = join(dir, 'trust.jwks.json');
      await writeFile(trust, JSON.stringify({ keys: [oldKey.publicJwk, newKey.publicJwk] }));
      const v = AssertionVerifier.open({ file: trust, url: undefined, audiences: [AUD], replayCacheSize: 1000, refreshMs: 100, logger: silent });
      expect((await v.verify(await signAssertion(oldKey, AGENT, AUD))).ok).toBe(true);
      expect((await v.verify(await signAssertion(newKey, AGENT, AUD))).ok).toBe(true);

      // The rollover is over: the file (a Kubernetes Secret, say) now holds the new key only.
      await writeFile(trust, JSON.stringify({ keys: [newKey.publicJwk] }));
      await waitFor(async () => !(await v.verify(await signAssertion(oldKey, AGENT, AUD))).ok, 5000, 'the old key to be dropped');
      expect((await v.verify(await signAssertion(newKey, AGENT, AUD))).ok).toBe(true);

      // A broken file does not drop the trust set that works.
      await writeFile(trust, '{"keys": [');
      await new Promise((r) => setTimeout(r, 300));
      expect((await v.verify(await signAssertion(newKey, AGENT, AUD))).ok).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('keys bound to agents ("agents" in the trusted JWK)', () => {
  const OTHER = { ...AGENT, id: 'cake-baker', name: 'Cake baker' };
  const ownerOf = async (v: AssertionVerifier, key: TestKey, agent = AGENT): Promise<string> => {
    const r = await v.verify(await signAssertion(key, agent, AUD));
    if (!r.ok) throw new Error(r.problem);
    return ownerKey(r.identity);
  };

  test('the old and the new key of one agent are one task owner: the agent id, not the key', async () => {
    const [oldKey, newKey] = await Promise.all([makeKey('assistant-2026-01'), makeKey('assistant-2026-02', 'EdDSA')]);
    const v = verifierFor([oldKey, newKey], [AUD], 1000, { 'assistant-2026-01': [AGENT.id], 'assistant-2026-02': [AGENT.id] });
    const r = await v.verify(await signAssertion(oldKey, AGENT, AUD));
    // The guardian still sees which key signed.
    expect(r).toEqual({
      ok: true,
      identity: { source: 'assertion', subject: AGENT.id, issuer: 'assistant-2026-01', stableSubject: true, agent: AGENT },
      spend: expect.any(Function),
    });
    expect(await ownerOf(v, oldKey)).toBe('assertion::cooking-assistant');
    expect(await ownerOf(v, newKey)).toBe('assertion::cooking-assistant');
  });

  test('a key bound to one agent cannot assert another; an unbound key cannot assert a bound agent', async () => {
    const [assistant, loose] = await Promise.all([makeKey('assistant'), makeKey('loose')]);
    const v = verifierFor([assistant, loose], [AUD], 1000, { assistant: [AGENT.id] });
    const refusal = 'is signed by a key the trusted keys do not let assert this agent';
    expect(await problemOf(v, await signAssertion(assistant, OTHER, AUD))).toBe(refusal);
    expect(await problemOf(v, await signAssertion(loose, AGENT, AUD))).toBe(refusal);
    // An unbound key still asserts agents no key is bound to, but owns their tasks as that key only.
    const r = await v.verify(await signAssertion(loose, OTHER, AUD));
    expect(r.ok && r.identity.stableSubject).toBeUndefined();
    expect(await ownerOf(v, loose, OTHER)).toBe('assertion:loose:cake-baker');
  });

  test('the owner an assertion claims, read unverified, is the owner it verifies into; a claim no trusted key could vouch for is none', async () => {
    const [assistant, loose] = await Promise.all([makeKey('assistant'), makeKey('loose')]);
    const v = verifierFor([assistant, loose], [AUD], 1000, { assistant: [AGENT.id] });
    const claimed = (t: string) => {
      const id = v.claimed(t);
      return id === undefined ? undefined : ownerKey(id);
    };
    expect(claimed(await signAssertion(assistant, AGENT, AUD))).toBe(await ownerOf(v, assistant));
    expect(claimed(await signAssertion(loose, OTHER, AUD))).toBe(await ownerOf(v, loose, OTHER));
    // A signature that does not verify claims the same owner: the claim is only ever a key to look up.
    const forged = await signAssertion(await makeKey('assistant'), AGENT, AUD);
    expect(claimed(forged)).toBe('assertion::cooking-assistant');
    expect(claimed(await signAssertion(loose, AGENT, AUD))).toBeUndefined();
    expect(claimed(await signAssertion(await makeKey('stranger'), AGENT, AUD))).toBeUndefined();
    expect(claimed('not.a.jws')).toBeUndefined();
    expect(claimed(`${'a'.repeat(9000)}.b.c`)).toBeUndefined();
  });

  test('a key may be bound to several agents; without a kid an assertion is refused (the kid says what the key may assert)', async () => {
    const shared = await makeKey('kitchen');
    const v = verifierFor([shared], [AUD], 1000, { kitchen: [AGENT.id, OTHER.id] });
    expect(await ownerOf(v, shared, OTHER)).toBe('assertion::cake-baker');
    const now = Math.floor(Date.now() / 1000);
    const noKid = await new (jose().SignJWT)({ agent: AGENT, sub: AGENT.id, aud: AUD, iat: now, exp: now + 30, jti: 'no-kid' })
      .setProtectedHeader({ alg: shared.alg, typ: ASSERTION_TYP })
      .sign(shared.privateKey);
    expect(await problemOf(v, noKid)).toBe('names no key (kid)');
  });

  test('a remote trust set (ASSERTION_TRUST_JWKS_URL) binds keys the same way', async () => {
    const key = await makeKey('remote-assistant');
    const issuer = await startIssuer([bindTo(key, AGENT.id)]);
    try {
      const v = AssertionVerifier.open({
        file: undefined,
        url: new URL(issuer.jwksUrl),
        audiences: [AUD],
        replayCacheSize: 1000,
        refreshMs: 1000,
        logger: silent,
      });
      expect(await ownerOf(v, key)).toBe('assertion::cooking-assistant');
      expect(await problemOf(v, await signAssertion(key, OTHER, AUD))).toBe('is signed by a key the trusted keys do not let assert this agent');
    } finally {
      await issuer.close();
    }
  });

  test('a kid that appears twice (a remote set) binds only if every entry binds; a malformed entry binds nothing', () => {
    const jwk = (kid: string, agents?: unknown) => ({ kty: 'EC', kid, ...(agents === undefined ? {} : { agents }) });
    const index = new TrustIndex({ keys: [jwk('k', ['a']), jwk('k', ['a', 'b']), jwk('bad', []), jwk('loose')] });
    expect(index.scope('k', 'a')).toBe('bound');
    expect(index.scope('k', 'b')).toBe('refused');
    expect(index.scope('bad', 'c')).toBe('refused');
    expect(index.scope('loose', 'c')).toBe('unbound');
    expect(index.scope('loose', 'a')).toBe('refused');
    expect(index.scope('unknown', 'c')).toBe('refused');
    expect(index.unboundKids).toEqual(['loose']);
  });

  test('keygen binds the public key to the agent ids it is given', async () => {
    const { publicJwks } = await generateAssertionKey('assistant-2026-03', 'ES256', [AGENT.id]);
    expect(parseTrustedJwks(JSON.stringify(publicJwks)).keys[0]).toMatchObject({ kid: 'assistant-2026-03', agents: [AGENT.id] });
    expect((await generateAssertionKey('plain')).publicJwks.keys[0]).not.toHaveProperty('agents');
  });

  test('a trusted JWKS file with a malformed "agents" does not load', () => {
    for (const agents of [[], 'cooking-assistant', [1], [''], ['a\nb']]) {
      expect(() => parseTrustedJwks(JSON.stringify({ keys: [{ ...es.publicJwk, agents }] }))).toThrow(/"agents" must be a non-empty array of agent ids/);
    }
    expect(parseTrustedJwks(JSON.stringify({ keys: [{ ...es.publicJwk, agents: ['cooking-assistant'] }] })).keys[0]).toMatchObject({
      agents: ['cooking-assistant'],
    });
  });
});

describe('trusted JWKS checks', () => {
  test('refuses private keys, keys without kid, duplicate kids, RSA and symmetric keys, non-JWKS', async () => {
    expect(() => parseTrustedJwks(JSON.stringify({ keys: [es.privateJwk] }))).toThrow(/private or secret key/);
    expect(() => parseTrustedJwks(JSON.stringify({ keys: [{ ...es.publicJwk, kid: undefined }] }))).toThrow(/no "kid"/);
    expect(() => parseTrustedJwks(JSON.stringify({ keys: [es.publicJwk, es.publicJwk] }))).toThrow(/appears twice/);
    expect(() => parseTrustedJwks(JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 'h' }] }))).toThrow(/private or secret/);
    const rsa = await jose().generateKeyPair('RS256', { extractable: true });
    const rsaJwk = { ...(await jose().exportJWK(rsa.publicKey)), kid: 'r' };
    expect(() => parseTrustedJwks(JSON.stringify({ keys: [rsaJwk] }))).toThrow(/only EC P-256/);
    expect(() => parseTrustedJwks(JSON.stringify({ keys: [{ ...es.publicJwk, alg: 'EdDSA' }] }))).toThrow(/only EC P-256/);
    expect(() => parseTrustedJwks('[]')).toThrow(/expected \{"keys"/);
    expect(() => parseTrustedJwks('nope')).toThrow(/not JSON/);
  });

  test('a signing key that is not EC/Ed25519 is refused; errors never echo the key', async () => {
    const rsa = await jose().generateKeyPair('RS256', { extractable: true });
    const pem = await jose().exportPKCS8(rsa.privateKey);
    await expect(parseSigningKey(pem)).rejects.toThrow(/key type rsa is not supported/);
    const err = await parseSigningKey('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----').catch((e: Error) => e);
    expect(String(err)).not.toContain('AAAA');
    await expect(parseSigningKey(JSON.stringify(es.publicJwk))).rejects.toThrow(/no private part/);
  });
});

describe('ReplayCache', () => {
  test('an id is refused until its expiry, then accepted again; the cache drops expired entries', () => {
    let now = 1000;
    const c = new ReplayCache(() => now);
    const add = (id: string, exp: number) => c.add('k1', id, exp, 3);
    expect(add('a', 1010)).toBe('fresh');
    expect(add('a', 1010)).toBe('replayed');
    expect(add('b', 1005)).toBe('fresh');
    expect(add('c', 1020)).toBe('fresh');
    expect(add('d', 1020)).toBe('full');
    now = 1006; // b expired (behind a, which is still live): a full sweep finds it
    expect(add('d', 1020)).toBe('fresh');
    expect(c.size).toBe(3);
    now = 1011;
    expect(add('a', 1030)).toBe('fresh'); // a's entry expired with its assertion (which itself no longer verifies)
    now = 2000;
    expect(add('e', 2010)).toBe('fresh');
    expect(c.size).toBe(1);
  });

  test("per signer: one key's full share never refuses another key's ids, and the same id under two keys is two ids", () => {
    let now = 1000;
    const c = new ReplayCache(() => now);
    for (let i = 0; i < 3; i++) expect(c.add('flooder', `f${i}`, 1050, 3)).toBe('fresh');
    expect(c.add('flooder', 'f3', 1050, 3)).toBe('full');
    expect(c.add('other', 'o1', 1050, 3)).toBe('fresh');
    expect(c.add('other', 'f0', 1050, 3)).toBe('fresh');
    expect(c.add('other', 'f0', 1050, 3)).toBe('replayed');
    // A signer whose ids all expired leaves nothing behind.
    now = 1100;
    expect(c.add('other', 'o2', 1150, 3)).toBe('fresh');
    expect(c.size).toBe(1);
  });
});
