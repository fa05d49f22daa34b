/**
 * OIDC bearer tokens: the classic ways to make a verifier accept a `from` the caller does
 * not own, each against the real jose verifier the proxy uses (OidcVerifier over the issuer's JWKS):
 * algorithm confusion (none, HS256 keyed with the issuer's public key, an algorithm the key is not
 * for), key tricks (a trusted kid on an attacker key, an embedded `jwk`, `jku`/`x5u` headers, no kid),
 * `crit` and unencoded payloads, issuer and audience spellings (trailing slash, case, arrays, empty),
 * time claims as strings or beyond the skew, and subjects that are not usable identities (numbers,
 * control characters, oversized). Every forged variant is refused; the same token built honestly is
 * accepted with its subject (the oracle is not vacuous).
 */
import { createHmac, createPrivateKey, sign as cryptoSign, type JsonWebKey } from 'node:crypto';
import pino from 'pino';
import { parseClaimMap, type ClaimMap } from '../../../src/config/config';
import { jose } from '../../../src/identity/jose';
import { OidcVerifier } from '../../../src/identity/oidc';
import { makeKey, type TestKey } from '../../helpers/keys';

const ISS = 'https://issuer.test/realms/agents';
const AUD = 'a2a-baker';
const claims = parseClaimMap('id=sub,name=azp') as ClaimMap;
const b64 = (o: unknown): string => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');

let key: TestKey;
let attacker: TestKey;
let verifier: OidcVerifier;

beforeAll(async () => {
  [key, attacker] = await Promise.all([makeKey('idp-1', 'ES256'), makeKey('idp-1', 'ES256')]);
  verifier = new OidcVerifier(
    { issuer: ISS, audiences: [AUD], jwksUrl: undefined, claims, refreshMs: 30_000, logger: pino({ level: 'silent' }) },
    jose().createLocalJWKSet({ keys: [key.publicJwk] }),
  );
});

const now = (): number => Math.floor(Date.now() / 1000);
const honestClaims = (): Record<string, unknown> => ({ iss: ISS, aud: AUD, sub: 'svc-victim', azp: 'victim-agent', iat: now(), exp: now() + 300 });

async function sign(k: TestKey, payload: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  return new (jose().SignJWT)(payload).setProtectedHeader({ alg: k.alg, kid: k.kid, ...header }).sign(k.privateKey);
}

/** A JWS by hand: any header, any payload text, an HMAC keyed as the attacker likes. */
function hmacToken(header: Record<string, unknown>, payload: Record<string, unknown>, secret: string | Buffer): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

/** An ES256 JWS by hand with the issuer's own key: headers jose would not write, over any payload segment. */
function es256(header: Record<string, unknown>, payloadSegment: string): string {
  const input = `${b64(header)}.${payloadSegment}`;
  const k = createPrivateKey({ key: key.privateJwk as JsonWebKey, format: 'jwk' });
  return `${b64(header)}.${payloadSegment}.${cryptoSign('sha256', Buffer.from(input), { key: k, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

type Forge = () => Promise<string>;

const FORGED: Record<string, Forge> = {
  'alg none': async () => `${b64({ alg: 'none', kid: key.kid })}.${b64(honestClaims())}.`,
  'alg None (case)': async () => `${b64({ alg: 'None', kid: key.kid })}.${b64(honestClaims())}.`,
  'HS256 keyed with the public JWK (JSON)': async () => hmacToken({ alg: 'HS256', kid: key.kid }, honestClaims(), JSON.stringify(key.publicJwk)),
  'HS256 keyed with the public x coordinate': async () =>
    hmacToken({ alg: 'HS256', kid: key.kid }, honestClaims(), Buffer.from(String(key.publicJwk.x), 'base64url')),
  'HS256 keyed with the public key PEM': async () => {
    const pem = (await jose().importJWK(key.publicJwk, 'ES256', { extractable: true })) as Parameters<ReturnType<typeof jose>['exportSPKI']>[0];
    return hmacToken({ alg: 'HS256', kid: key.kid }, honestClaims(), await jose().exportSPKI(pem));
  },
  'attacker key under the trusted kid': async () => sign(attacker, honestClaims()),
  'attacker key, no kid': async () => sign(attacker, honestClaims(), { kid: undefined }),
  'embedded jwk header (self-signed)': async () => sign(attacker, honestClaims(), { jwk: attacker.publicJwk, kid: undefined }),
  'jku header naming the attacker keys': async () => sign(attacker, honestClaims(), { jku: 'https://evil.test/jwks.json' }),
  'x5u header': async () => sign(attacker, honestClaims(), { x5u: 'https://evil.test/cert.pem' }),
  'crit naming an unknown extension (issuer key)': async () => es256({ alg: 'ES256', kid: key.kid, crit: ['exp-ext'], 'exp-ext': 1 }, b64(honestClaims())),
  'b64:false, unencoded payload (issuer key)': async () => es256({ alg: 'ES256', kid: key.kid, b64: false, crit: ['b64'] }, JSON.stringify(honestClaims())),
  'issuer with a trailing slash': async () => sign(key, { ...honestClaims(), iss: `${ISS}/` }),
  'issuer in other case': async () => sign(key, { ...honestClaims(), iss: ISS.toUpperCase() }),
  'issuer as an array': async () => sign(key, { ...honestClaims(), iss: [ISS] }),
  'no issuer': async () => sign(key, { ...honestClaims(), iss: undefined }),
  'audience elsewhere': async () => sign(key, { ...honestClaims(), aud: ['other-service'] }),
  'audience empty': async () => sign(key, { ...honestClaims(), aud: '' }),
  'audience as an object': async () => sign(key, { ...honestClaims(), aud: { [AUD]: true } }),
  'audience with a trailing space': async () => sign(key, { ...honestClaims(), aud: `${AUD} ` }),
  'no audience': async () => sign(key, { ...honestClaims(), aud: undefined }),
  'expired beyond the skew': async () => sign(key, { ...honestClaims(), exp: now() - 30 }),
  'exp as a string': async () => sign(key, { ...honestClaims(), exp: String(now() + 300) }),
  'nbf in the future': async () => sign(key, { ...honestClaims(), nbf: now() + 120 }),
  'sub as a number': async () => sign(key, { ...honestClaims(), sub: 12345 }),
  'sub with control characters': async () => sign(key, { ...honestClaims(), sub: 'svc\n{"level":30}' }),
  'sub empty': async () => sign(key, { ...honestClaims(), sub: '' }),
  'sub oversized': async () => sign(key, { ...honestClaims(), sub: 's'.repeat(5000) }),
  'signature of another token': async () => {
    const [h, , s] = (await sign(key, honestClaims())).split('.');
    return `${h}.${b64({ ...honestClaims(), sub: 'svc-admin' })}.${s}`;
  },
  'payload swapped, header kept': async () => {
    const good = (await sign(key, { ...honestClaims(), sub: 'svc-attacker' })).split('.');
    const victim = (await sign(attacker, honestClaims())).split('.');
    return `${good[0]}.${victim[1]}.${good[2]}`;
  },
  'extra segment': async () => `${await sign(key, honestClaims())}.x`,
  'JWE-shaped (five segments)': async () => 'eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..aaaa.bbbb.cccc',
};

test.each(Object.keys(FORGED))('forged: %s is refused, naming the bearer token', async (name) => {
  const token = await (FORGED[name] as Forge)();
  const r = await verifier.verify(token);
  expect(r.ok).toBe(false);
  if (!r.ok) expect(r.credential).toBe('bearer token');
});

test('positive control: the honest token is accepted with its subject (also hand-signed), also with several audiences of which one is ours', async () => {
  expect((await verifier.verify(es256({ alg: 'ES256', kid: key.kid }, b64(honestClaims())))).ok).toBe(true);
  const plain = await verifier.verify(await sign(key, honestClaims()));
  expect(plain).toMatchObject({
    ok: true,
    identity: { source: 'oidc', subject: 'svc-victim', issuer: ISS, agent: { id: 'svc-victim', name: 'victim-agent' } },
  });
  const multi = await verifier.verify(await sign(key, { ...honestClaims(), aud: ['other-service', AUD] }));
  expect(multi.ok).toBe(true);
});
