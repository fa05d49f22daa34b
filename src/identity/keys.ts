/**
 * Key material for identity assertions, from files (Kubernetes Secrets) or a JWKS URL:
 * - the signing key of a ROLE=client/both proxy: a private JWK (JSON, with `kid`) or a PKCS#8 /
 *   SEC1 PEM key; EC P-256 (ES256), P-384 (ES384) or Ed25519 (EdDSA). Its key id is
 *   ASSERTION_SIGNING_KEY_ID, else the JWK's `kid`, else the RFC 7638 thumbprint of the public key;
 * - the trusted keys of a ROLE=server proxy: a JWKS (public keys only, each with a `kid`). A key may
 *   name the agent ids it signs for (`"agents": ["cooking-assistant"]`): it then asserts only those,
 *   no unbound key may assert them, and the agent id alone is the caller's task owner, so the old
 *   and the new key of a rotation speak for the same caller (see TrustIndex).
 * Rotation: the trust set holds the old and the new key while signers switch (README "Key rotation").
 */
import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import { StartupError, WatchedFile } from '../credentials/files';
import { ASSERTION_ALGORITHMS, type CryptoKeyLike, type JSONWebKeySet, type JWK, jose } from './jose';
import { fieldValue } from './types';

export type AssertionAlgorithm = (typeof ASSERTION_ALGORITHMS)[number];

export interface SigningKey {
  readonly key: CryptoKeyLike;
  readonly kid: string;
  readonly alg: AssertionAlgorithm;
  /** The public half as a JWK (kid, alg, use), for a trust set. */
  readonly publicJwk: JWK;
  /** The same key for node:crypto's synchronous sign (agent cards). */
  readonly privateKey: KeyObject;
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
  if (alg === undefined)
    throw new Error(`key type ${privateKey.asymmetricKeyType ?? 'unknown'} is not supported: use EC P-256 (ES256), P-384 (ES384) or Ed25519 (EdDSA)`);
  const j = jose();
  const publicJwk = createPublicKey(privateKey).export({ format: 'jwk' }) as JWK;
  const kid = kidOverride ?? fileKid ?? (await j.calculateJwkThumbprint(publicJwk, 'sha256'));
  const privateJwk = privateKey.export({ format: 'jwk' }) as JWK;
  // A CryptoKey signs faster with jose than a KeyObject it converts on every call.
  const key = await j.importJWK({ ...privateJwk, alg }, alg);
  return { key, kid, alg, publicJwk: { ...publicJwk, kid, alg, use: 'sig' }, privateKey };
}

/**
 * The signing key in `file` (named `variable` in messages), re-read when the file changes: `onKey` gets
 * each new key; a change that does not load is logged and the previous key stays in use.
 */
export async function watchSigningKey(opts: {
  file: string;
  variable: string;
  kid: string | undefined;
  refreshMs: number;
  logger: Logger;
  onKey: (key: SigningKey) => void;
}): Promise<SigningKey> {
  const { logger, variable } = opts;
  const file = WatchedFile.open(opts.file, { variable, intervalMs: opts.refreshMs, onProblem: (m) => logger.warn(m) });
  let key: SigningKey;
  try {
    key = await parseSigningKey(file.text(), opts.kid);
  } catch (err) {
    throw startupKeyError(variable, opts.file, err);
  }
  file.onChange((content) => {
    parseSigningKey(content.toString('utf8'), opts.kid).then(opts.onKey, (err: unknown) =>
      logger.warn({ problem: (err as Error).message }, `${variable} changed but does not load; the previous key stays in use`),
    );
  });
  return key;
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
    if (boundAgents(jwk) === null) throw new Error(`keys[${i}] (kid "${jwk.kid}"): "${AGENTS_MEMBER}" must be a non-empty array of agent ids`);
  });
  return { keys: keys as JWK[] };
}

/** The member of a trusted JWK that names the agent ids the key may assert. */
export const AGENTS_MEMBER = 'agents';

/** The agent ids a trusted JWK names: undefined when it names none, null when the member is malformed. */
export function boundAgents(jwk: JWK): readonly string[] | undefined | null {
  const v = (jwk as Record<string, unknown>)[AGENTS_MEMBER];
  if (v === undefined) return undefined;
  return Array.isArray(v) && v.length > 0 && v.every((a) => fieldValue(a) !== undefined) ? (v as string[]) : null;
}

/**
 * What a key of a trust set may assert for an agent id:
 * - `bound`: the key names the agent (`agents`): the agent id alone is the principal;
 * - `unbound`: the key names no agent and no key of the set is bound to this one: allowed, but only
 *   as this key (its callers' tasks are owned per key);
 * - `refused`: the key is bound to other agents, or the agent is bound to other keys (an unbound
 *   key cannot speak for an agent that has its own keys), or the key's entry is malformed.
 */
export type KeyScope = 'bound' | 'unbound' | 'refused';

export class TrustIndex {
  /** Each kid's entries (a remote set may repeat a kid): their agents, undefined (none) or null (malformed). */
  private readonly byKid = new Map<string, Array<readonly string[] | undefined | null>>();
  private readonly claimedAgents = new Set<string>();
  readonly unboundKids: readonly string[];

  constructor(set: JSONWebKeySet) {
    const unbound: string[] = [];
    for (const jwk of set.keys) {
      if (typeof jwk.kid !== 'string') continue;
      const agents = boundAgents(jwk);
      let entries = this.byKid.get(jwk.kid);
      if (entries === undefined) this.byKid.set(jwk.kid, (entries = []));
      entries.push(agents);
      if (agents === undefined) unbound.push(jwk.kid);
      for (const a of agents ?? []) this.claimedAgents.add(a);
    }
    this.unboundKids = unbound;
  }

  scope(kid: string, agentId: string): KeyScope {
    const entries = this.byKid.get(kid);
    // Every entry under the kid must agree: which of them verified is not known.
    if (entries === undefined || entries.includes(null)) return 'refused';
    if (entries.every((e) => e?.includes(agentId) === true)) return 'bound';
    if (entries.some((e) => e !== undefined)) return 'refused';
    return this.claimedAgents.has(agentId) ? 'refused' : 'unbound';
  }
}

const indexes = new WeakMap<JSONWebKeySet, TrustIndex>();

/** The index of a trust set, made once per set object (a re-read or re-fetched set is a new object). */
export function trustIndex(set: JSONWebKeySet): TrustIndex {
  let index = indexes.get(set);
  if (index === undefined) indexes.set(set, (index = new TrustIndex(set)));
  return index;
}

/** Start-up form of a parse failure: names the variable, never the content. */
export function startupKeyError(variable: string, path: string, err: unknown): StartupError {
  return new StartupError(`${variable}=${path}: ${(err as Error).message}`);
}
