/**
 * Key material for identity assertions, from files (Kubernetes Secrets) or a JWKS URL:
 * - the signing key of a ROLE=client/both proxy: a private JWK (JSON, with `kid`) or a PKCS#8 /
 *   SEC1 PEM key; EC P-256 (ES256), P-384 (ES384) or Ed25519 (EdDSA). Its key id is
 *   ASSERTION_SIGNING_KEY_ID, else the JWK's `kid`, else the RFC 7638 thumbprint of the public key;
 * - the trusted keys of a ROLE=server proxy: a JWKS (public keys only, each with a `kid`).
 * Rotation: the trust set holds the old and the new key while signers switch (README "Key rotation").
 */
import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { StartupError } from '../files';
import { ASSERTION_ALGORITHMS, type CryptoKeyLike, type JSONWebKeySet, type JWK, jose } from './jose';

export type AssertionAlgorithm = (typeof ASSERTION_ALGORITHMS)[number];

export interface SigningKey {
  readonly key: CryptoKeyLike;
  readonly kid: string;
  readonly alg: AssertionAlgorithm;
  /** The public half as a JWK (kid, alg, use), for a trust set. */
  readonly publicJwk: JWK;
}

/** Which algorithm a key supports; undefined for key types assertions do not use. */
export function algorithmOf(key: KeyObject): AssertionAlgorithm | undefined {
  const type = key.asymmetricKeyType;
  if (type === 'ed25519') return 'EdDSA';
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1' || curve === 'P-256') return 'ES256';
    if (curve === 'secp384r1' || curve === 'P-384') return 'ES384';
  }
  return undefined;
}

/** Parse a signing key file's text. Throws an Error whose message never contains key material. */
export async function parseSigningKey(text: string, kidOverride?: string): Promise<SigningKey> {
  const trimmed = text.trim();
  let privateKey: KeyObject;
  let fileKid: string | undefined;
  try {
    if (trimmed.startsWith('{')) {
      const jwk = JSON.parse(trimmed) as JWK;
      if (typeof jwk.d !== 'string') throw new Error('the JWK has no private part ("d")');
      fileKid = typeof jwk.kid === 'string' && jwk.kid !== '' ? jwk.kid : undefined;
      privateKey = createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' });
    } else {
      privateKey = createPrivateKey(trimmed);
    }
  } catch (err) {
    // Parser messages describe the structure, not the content; still, keep only the first line.
    throw new Error(`not a private key (JWK or PEM): ${String((err as Error).message).split('\n')[0]}`);
  }
  const alg = algorithmOf(privateKey);
  if (alg === undefined) throw new Error(`key type ${privateKey.asymmetricKeyType ?? 'unknown'} is not supported: use EC P-256 (ES256), P-384 (ES384) or Ed25519 (EdDSA)`);
  const j = jose();
  const publicJwk = createPublicKey(privateKey).export({ format: 'jwk' }) as JWK;
  const kid = kidOverride ?? fileKid ?? (await j.calculateJwkThumbprint(publicJwk, 'sha256'));
  const privateJwk = privateKey.export({ format: 'jwk' }) as JWK;
  // A CryptoKey signs faster with jose than a KeyObject it converts on every call.
  const key = await j.importJWK({ ...privateJwk, alg }, alg);
  return { key, kid, alg, publicJwk: { ...publicJwk, kid, alg, use: 'sig' } };
}

/**
 * Parse a trusted JWKS. Refused: anything but `{"keys": [...]}`, a key without `kid`, a private key
 * (a verifier must never hold signing keys), a key whose algorithm assertions do not use.
 */
export function parseTrustedJwks(text: string): JSONWebKeySet {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error('not JSON');
  }
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) throw new Error('expected {"keys": [...]} with at least one key');
  const kids = new Set<string>();
  keys.forEach((k: unknown, i) => {
    const jwk = k as JWK;
    if (typeof jwk !== 'object' || jwk === null) throw new Error(`keys[${i}] is not an object`);
    if (typeof jwk.kid !== 'string' || jwk.kid === '') throw new Error(`keys[${i}] has no "kid" (assertions name their key by kid)`);
    if (kids.has(jwk.kid)) throw new Error(`keys[${i}]: kid "${jwk.kid}" appears twice`);
    kids.add(jwk.kid);
    if ('d' in jwk || 'p' in jwk || 'k' in jwk) throw new Error(`keys[${i}] (kid "${jwk.kid}") is a private or secret key: a trust set holds public keys only`);
    let alg: AssertionAlgorithm | undefined;
    try {
      alg = algorithmOf(createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' }));
    } catch (err) {
      throw new Error(`keys[${i}] (kid "${jwk.kid}") is not a valid public key: ${(err as Error).message}`);
    }
    if (alg === undefined || (jwk.alg !== undefined && jwk.alg !== alg)) {
      throw new Error(`keys[${i}] (kid "${jwk.kid}"): only EC P-256 (ES256), P-384 (ES384) and Ed25519 (EdDSA) keys are accepted`);
    }
  });
  return { keys: keys as JWK[] };
}

/** Start-up form of a parse failure: names the variable, never the content. */
export function startupKeyError(variable: string, path: string, err: unknown): StartupError {
  return new StartupError(`${variable}=${path}: ${(err as Error).message}`);
}
