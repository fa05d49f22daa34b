/**
 * Agent card signatures (A2A v1.0 section 8.4). An entry of `signatures` is a JWS with a detached
 * payload, `{protected, signature}`: the payload is the card without `signatures`, its empty members
 * removed ("", null, [] and {}, at any depth, as the SDKs clean a card before they verify it), in
 * RFC 8785 canonical JSON. A verifier rebuilds the payload from the card it received, so a proxy
 * that rewrites the card's URLs signs the rewritten card with its own key (CARD_SIGNING_KEY_FILE),
 * and can check the agent's signature first (CARD_SIGNATURES=require, CARD_TRUST_JWKS_FILE).
 */
import { sign, verify, type KeyObject } from 'node:crypto';

type CardJson = Record<string, unknown>;

/** Where the proxy publishes the public keys of its card signatures. */
export const CARD_JWKS_PATH = '/.well-known/a2a-guard/jwks.json';

/**
 * RFC 8785 canonical JSON of `v` with empty members dropped: undefined when `v` itself is empty.
 * Strings and numbers as ECMAScript serialises them (what JCS specifies), members in UTF-16 code
 * unit order (JavaScript's default sort). Written to strings directly: a member named `__proto__`
 * stays a member.
 */
export function canonicalJson(v: unknown): string | undefined {
  if (v === null || v === undefined || v === '') return undefined;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error('a card number is not finite');
    return JSON.stringify(v);
  }
  if (typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) {
    const items = v.map(canonicalJson).filter((s): s is string => s !== undefined);
    return items.length === 0 ? undefined : `[${items.join(',')}]`;
  }
  const members: string[] = [];
  for (const k of Object.keys(v).sort()) {
    const s = canonicalJson((v as Record<string, unknown>)[k]);
    if (s !== undefined) members.push(`${JSON.stringify(k)}:${s}`);
  }
  return members.length === 0 ? undefined : `{${members.join(',')}}`;
}

/** The JWS payload of a card: itself without `signatures`, canonical. */
export function cardPayload(card: CardJson): string {
  const rest: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(card)) if (k !== 'signatures') Object.defineProperty(rest, k, { value: val, enumerable: true });
  return canonicalJson(rest) ?? '{}';
}

const b64url = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

/**
 * Where the card holds an empty entry in a list (`{}`, `[]`, `""`, null): the signing input drops it, so
 * anyone on the way can add one to a signed card (`"security": [{}]`) and every signature still verifies.
 * An empty member of an object means what its absence means; an empty entry of a list does not. (An entry
 * that only empties out, `{"bearer": []}`, is uncovered too, but is how a requirement without scopes is
 * written: refusing it would refuse honest cards; docs/guides say what a signature does not cover.)
 */
const isEmpty = (v: unknown): boolean =>
  v === null || v === '' || (Array.isArray(v) ? v.length === 0 : typeof v === 'object' && Object.keys(v as object).length === 0);

function emptyEntry(v: unknown, at: string, depth: number): string | undefined {
  if (v === null || typeof v !== 'object' || depth > 64) return undefined;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (isEmpty(v[i])) return `${at}[${i}]`;
      const inner = emptyEntry(v[i], `${at}[${i}]`, depth + 1);
      if (inner !== undefined) return inner;
    }
    return undefined;
  }
  for (const [k, val] of Object.entries(v)) {
    if (depth === 0 && k === 'signatures') continue;
    const inner = emptyEntry(val, `${at}.${k}`, depth + 1);
    if (inner !== undefined) return inner;
  }
  return undefined;
}

/** node:crypto's form of each JWS algorithm the proxy signs and verifies with (ECDSA as JWS wants it: r || s). */
const ALGORITHMS: Readonly<Record<string, { hash: string | null; p1363: boolean }>> = {
  ES256: { hash: 'sha256', p1363: true },
  ES384: { hash: 'sha384', p1363: true },
  EdDSA: { hash: null, p1363: false },
};

export interface CardSignature {
  readonly protected: string;
  readonly signature: string;
}

/** One signature over `card` (its `signatures` ignored) with `key`; the protected header names the key and, when given, where its JWKS is. */
export function signCard(
  card: CardJson,
  key: { readonly privateKey: KeyObject; readonly kid: string; readonly alg: string },
  jku: string | undefined,
): CardSignature {
  const header = { alg: key.alg, typ: 'JOSE', kid: key.kid, ...(jku === undefined ? {} : { jku }) };
  const prot = b64url(JSON.stringify(header));
  const input = Buffer.from(`${prot}.${b64url(cardPayload(card))}`, 'ascii');
  const how = ALGORITHMS[key.alg] as (typeof ALGORITHMS)[string];
  const sig = sign(how.hash, input, how.p1363 ? { key: key.privateKey, dsaEncoding: 'ieee-p1363' } : key.privateKey);
  return { protected: prot, signature: b64url(sig) };
}

export interface TrustedCardKey {
  readonly key: KeyObject;
  readonly alg: string;
}

/**
 * Why none of the card's signatures verifies with `trust` (undefined: one does). Only the algorithms
 * of the trusted key named by `kid`, no `crit` (no extension is understood here), the payload rebuilt
 * from the card as received.
 */
export function cardSignatureProblem(card: CardJson, trust: ReadonlyMap<string, TrustedCardKey>): string | undefined {
  const list = card.signatures;
  if (!Array.isArray(list) || list.length === 0) return 'the card is not signed';
  const uncovered = emptyEntry(card, 'card', 0);
  if (uncovered !== undefined) return `${uncovered} is an empty entry, which no signature covers (an empty security requirement reads as "no authentication")`;
  let payload: string;
  try {
    payload = b64url(cardPayload(card));
  } catch (err) {
    return (err as Error).message;
  }
  const problems: string[] = [];
  for (const entry of list.slice(0, 16)) {
    const e = entry as Record<string, unknown> | null;
    if (typeof e?.protected !== 'string' || typeof e.signature !== 'string') {
      problems.push('an entry without protected and signature');
      continue;
    }
    let header: Record<string, unknown>;
    try {
      header = JSON.parse(Buffer.from(e.protected, 'base64url').toString('utf8')) as Record<string, unknown>;
    } catch {
      problems.push('a protected header that is not JSON');
      continue;
    }
    const trusted = typeof header.kid === 'string' ? trust.get(header.kid) : undefined;
    if (trusted === undefined) {
      problems.push(`key ${JSON.stringify(String(header.kid).slice(0, 64))} is not trusted`);
      continue;
    }
    if (header.alg !== trusted.alg || 'crit' in header) {
      problems.push(`key ${header.kid as string}: algorithm or header not accepted`);
      continue;
    }
    const how = ALGORITHMS[trusted.alg] as (typeof ALGORITHMS)[string];
    const input = Buffer.from(`${e.protected}.${payload}`, 'ascii');
    const sig = Buffer.from(e.signature, 'base64url');
    let ok = false;
    try {
      ok = verify(how.hash, input, how.p1363 ? { key: trusted.key, dsaEncoding: 'ieee-p1363' } : trusted.key, sig);
    } catch {
      // A signature of the wrong length or form: it does not verify.
    }
    if (ok) return undefined;
    problems.push(`key ${header.kid as string}: the signature does not verify`);
  }
  return problems.join('; ');
}
