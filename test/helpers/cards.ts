import { jose, type JWK } from '../../src/identity/jose';
import { freePort } from './net';
/** Every endpoint URL of an agent card as JSON (v1 supportedInterfaces, v0.3 url and additionalInterfaces) or as an SDK object. */
export function endpointUrls(card: any): string[] {
  const out: string[] = [];
  if (typeof card?.url === 'string') out.push(card.url);
  for (const key of ['supportedInterfaces', 'additionalInterfaces']) for (const i of card?.[key] ?? []) out.push(i.url);
  return out;
}

/**
 * Canonical JSON as an agent card verifier builds it (A2A v1.0 section 8.4: empties dropped, RFC 8785),
 * written apart from the proxy's: members sorted into a Map, scalars written by JSON.stringify.
 */
export function referenceCanonical(v: unknown): string | undefined {
  const clean = (x: unknown): unknown => {
    if (x === '' || x === null || x === undefined) return undefined;
    if (Array.isArray(x)) {
      const a = x.map(clean).filter((y) => y !== undefined);
      return a.length > 0 ? a : undefined;
    }
    if (typeof x === 'object') {
      const out = new Map<string, unknown>();
      for (const k of Object.keys(x as object).sort()) {
        const c = clean((x as Record<string, unknown>)[k]);
        if (c !== undefined) out.set(k, c);
      }
      return out.size > 0 ? out : undefined;
    }
    return x;
  };
  const write = (x: unknown): string => {
    if (x instanceof Map) return `{${[...x].map(([k, y]) => `${JSON.stringify(k)}:${write(y)}`).join(',')}}`;
    if (Array.isArray(x)) return `[${x.map(write).join(',')}]`;
    return JSON.stringify(x);
  };
  const c = clean(v);
  return c === undefined ? undefined : write(c);
}

/**
 * Verify a card's single signature with `jose` (not the proxy's code) against a JWKS, over the payload a
 * verifier builds (A2A v1.0 section 8.4, referenceCanonical): the protected header of the signature that
 * verified. Throws when the card has not exactly one signature, its key is not in the set, or it does not verify.
 */
export async function joseVerifyCard(card: any, jwks: { keys: Array<Record<string, unknown>> }): Promise<Record<string, unknown>> {
  const j = jose();
  if (!Array.isArray(card?.signatures) || card.signatures.length !== 1) throw new Error('the card does not carry exactly one signature');
  const sig = card.signatures[0];
  const header = j.decodeProtectedHeader(sig);
  const jwk = jwks.keys.find((k) => k['kid'] === header.kid);
  if (jwk === undefined) throw new Error(`key ${String(header.kid)} is not in the JWKS`);
  const key = await j.importJWK(jwk as JWK, header.alg);
  const { signatures: _s, ...rest } = card;
  const payload = j.base64url.encode(new TextEncoder().encode(referenceCanonical(rest) ?? '{}'));
  await j.flattenedVerify({ payload, protected: sig.protected, signature: sig.signature }, key, { algorithms: ['ES256', 'ES384', 'EdDSA'] });
  return header as Record<string, unknown>;
}

/** A proxy that signs cards names its PUBLIC_URL in them: a port chosen first, so the URL is known at start. */
export async function atPublicUrl(): Promise<{ PORT: string; PUBLIC_URL: string }> {
  const port = await freePort();
  return { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` };
}
