/**
 * The `jose` library, loaded on first use: a proxy that neither signs nor verifies never loads it.
 * jose ships ESM only; Node 20.19+ `require`s it (and jest transforms it, see jest.config.js), so
 * the types come in with resolution-mode "import" and the module through require().
 */
import type * as Jose from 'jose' with { 'resolution-mode': 'import' };

export type JoseModule = typeof Jose;
export type JWK = Jose.JWK;
export type JSONWebKeySet = Jose.JSONWebKeySet;
export type JWTPayload = Jose.JWTPayload;
export type JWTVerifyGetKey = Jose.JWTVerifyGetKey;
export type CryptoKeyLike = Awaited<ReturnType<JoseModule['importJWK']>>;

let loaded: JoseModule | undefined;

export function jose(): JoseModule {
  return (loaded ??= require('jose') as JoseModule);
}

/** A compact JWS's protected header and claims, read without verifying: what a token claims, never who sent it. */
export function unverifiedJwt(token: string): { readonly header: Jose.ProtectedHeaderParameters; readonly payload: JWTPayload } | undefined {
  try {
    const j = jose();
    return { header: j.decodeProtectedHeader(token), payload: j.decodeJwt(token) };
  } catch {
    return undefined;
  }
}

/** Asymmetric signature algorithms accepted anywhere (never `none`, never HMAC with a public key). */
export const ASSERTION_ALGORITHMS = ['ES256', 'ES384', 'EdDSA'] as const;
export const OIDC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

/** Clock skew allowed between signer and verifier. */
export const CLOCK_TOLERANCE_S = 5;

/** A jose failure in words a caller and an operator understand (never the token, never the claims). */
export function joseProblem(err: unknown): string {
  const e = err as { code?: string; claim?: string; reason?: string; message?: string };
  switch (e.code) {
    case 'ERR_JWT_EXPIRED':
      return 'expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (e.claim === 'aud') return 'issued for another audience';
      if (e.claim === 'iss') return 'issued by another issuer';
      if (e.claim === 'iat') return e.reason === 'check_failed' ? 'too old or issued in the future' : 'has no valid issue time (iat)';
      if (e.claim === 'nbf') return 'not valid yet';
      if (e.claim === 'typ') return 'not of the expected type';
      return `claim ${e.claim ?? '?'} is missing or invalid`;
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return 'signed with an algorithm that is not allowed';
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return 'signed by a key that is not trusted';
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return 'names a key id that matches several trusted keys';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'signature does not verify';
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
      return 'malformed';
    case 'ERR_JWKS_TIMEOUT':
    case 'ERR_JWKS_INVALID':
      return 'cannot be checked: the trusted keys are unavailable';
    default:
      return 'cannot be checked';
  }
}
