/**
 * Sidecar-to-sidecar identity assertions. A ROLE=client/both proxy signs, per forwarded request, a
 * short-lived JWS of its observed agent and sends it in X-AOS-Agent-Assertion:
 *
 *   header  {"alg": "ES256" | "ES384" | "EdDSA", "kid": "...", "typ": "aos-agent+jwt"}
 *   claims  {"sub": <agent id>, "aud": <the upstream URL it calls>, "iat", "exp" (<= iat + 60),
 *            "jti": <uuid>, "agent": {"id", "name", "url", "version"}}
 *
 * A ROLE=server proxy verifies it against its trusted keys: signature (only the algorithms above,
 * only keys in the trust set, named by `kid`), explicit type, audience = one of its own URLs, not
 * expired, at most 60 s of lifetime, never seen before (jti, per key: replay.ts), and an agent the key may assert (a key
 * whose JWK names `agents` asserts only those; see keys.ts TrustIndex). `from` is then built from
 * the verified `agent` only.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { WatchedFile } from '../credentials/files';
import { ASSERTION_ALGORITHMS, CLOCK_TOLERANCE_S, type JSONWebKeySet, type JWTVerifyGetKey, jose, joseProblem, unverifiedJwt } from './jose';
import { parseTrustedJwks, startupKeyError, trustIndex, watchSigningKey, type SigningKey } from './keys';
import { ReplayCache, type ReplayGuard } from './replay';
import { type AgentFields, type ClaimedIdentity, type CredentialCheck, fieldValue } from './types';

export { ASSERTION_HEADER } from './types';
/** Explicit typing (RFC 8725 3.11): no other JWT (an OIDC token, say) passes as an assertion. */
export const ASSERTION_TYP = 'aos-agent+jwt';
export const MAX_ASSERTION_LIFETIME_S = 60;
const REPLAYED = 'was already used (replayed)';
/** An assertion is a few hundred bytes; anything much larger is not one. */
const MAX_ASSERTION_BYTES = 8192;

/** Signs assertions with the key in ASSERTION_SIGNING_KEY_FILE, re-read when the file changes. */
export class AssertionSigner {
  private constructor(
    private key: SigningKey,
    private readonly ttlSeconds: number,
  ) {}

  static async open(opts: { file: string; kid: string | undefined; ttlSeconds: number; refreshMs: number; logger: Logger }): Promise<AssertionSigner> {
    const { logger } = opts;
    let signer: AssertionSigner | undefined;
    const key = await watchSigningKey({
      file: opts.file,
      variable: 'ASSERTION_SIGNING_KEY_FILE',
      kid: opts.kid,
      refreshMs: opts.refreshMs,
      logger,
      onKey: (next) => {
        if (signer !== undefined) signer.key = next;
        logger.info({ kid: next.kid, alg: next.alg }, 'assertion signing key changed: new assertions use it');
      },
    });
    signer = new AssertionSigner(key, Math.min(opts.ttlSeconds, MAX_ASSERTION_LIFETIME_S));
    logger.info({ kid: key.kid, alg: key.alg, ttlSeconds: signer.ttlSeconds }, 'identity assertions: signing the observed agent for the upstream');
    return signer;
  }

  /** For tests and the key tool: a signer over an already parsed key. */
  static fromKey(key: SigningKey, ttlSeconds: number): AssertionSigner {
    return new AssertionSigner(key, Math.min(ttlSeconds, MAX_ASSERTION_LIFETIME_S));
  }

  get keyId(): string {
    return this.key.kid;
  }

  sign(agent: AgentFields, audience: string): Promise<string> {
    const { key } = this;
    const now = Math.floor(Date.now() / 1000);
    return new (jose().SignJWT)({ agent: { id: agent.id, name: agent.name, url: agent.url, version: agent.version } })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: ASSERTION_TYP })
      .setSubject(agent.id)
      .setAudience(audience)
      .setIssuedAt(now)
      .setExpirationTime(now + this.ttlSeconds)
      .setJti(randomUUID())
      .sign(key.key);
  }
}

/** The trust set as it is now: the key lookup jose verifies with, and the JWKS itself (what each key may assert). */
export interface TrustedKeys {
  readonly getKey: JWTVerifyGetKey;
  /** undefined: not loaded yet (a remote set before its first fetch). */
  readonly set: () => JSONWebKeySet | undefined;
}

export interface VerifierOptions {
  /** Accepted audiences, normalised (see normaliseAudience). */
  readonly audiences: readonly string[];
  /** Ids remembered at once, divided equally among the trusted keys (each key's share). */
  readonly replayCacheSize: number;
  /** Where ids are remembered (Redis with TASK_STORE_URL); default this process's cache. */
  readonly replay?: ReplayGuard;
}

/** Verifies assertions against a trust set; one per ROLE=server proxy (the replay cache is its state). */
export class AssertionVerifier {
  private readonly replay: ReplayGuard;

  constructor(
    private readonly trust: () => TrustedKeys,
    private readonly opts: VerifierOptions,
  ) {
    this.replay = opts.replay ?? new ReplayCache();
  }

  /** Trust from ASSERTION_TRUST_JWKS_FILE (re-read when it changes) or ASSERTION_TRUST_JWKS_URL (fetched, cached, refreshed). */
  static open(opts: VerifierOptions & { file: string | undefined; url: URL | undefined; refreshMs: number; logger: Logger }): AssertionVerifier {
    const { logger } = opts;
    if (opts.file !== undefined) {
      const path = opts.file;
      const file = WatchedFile.open(path, { variable: 'ASSERTION_TRUST_JWKS_FILE', intervalMs: opts.refreshMs, onProblem: (m) => logger.warn(m) });
      const load = (text: string): TrustedKeys => {
        const set = parseTrustedJwks(text);
        warnUnbound(set, logger);
        return { getKey: jose().createLocalJWKSet(set), set: () => set };
      };
      let current: TrustedKeys;
      try {
        current = load(file.text());
      } catch (err) {
        throw startupKeyError('ASSERTION_TRUST_JWKS_FILE', path, err);
      }
      file.onChange((content) => {
        try {
          current = load(content.toString('utf8'));
          logger.info({ kids: kidsOf(content.toString('utf8')) }, 'trusted assertion keys changed');
        } catch (err) {
          logger.warn({ problem: (err as Error).message }, 'ASSERTION_TRUST_JWKS_FILE changed but does not load; the previous keys stay trusted');
        }
      });
      logger.info({ kids: kidsOf(file.text()), audiences: opts.audiences }, 'identity assertions: verifying callers against trusted keys');
      return new AssertionVerifier(() => current, opts);
    }
    if (opts.url === undefined) throw new Error('AssertionVerifier.open: no trust source');
    if (opts.url.protocol === 'http:' && !isLoopback(opts.url))
      logger.warn({ url: opts.url.href }, 'ASSERTION_TRUST_JWKS_URL is plain http: anyone on the path can replace the trusted keys');
    const remote = jose().createRemoteJWKSet(opts.url, {
      cacheMaxAge: opts.refreshMs,
      cooldownDuration: Math.min(opts.refreshMs, 30_000),
      timeoutDuration: 5000,
    });
    logger.info({ url: opts.url.href, audiences: opts.audiences }, 'identity assertions: verifying callers against a remote JWKS');
    const trust: TrustedKeys = { getKey: remote, set: () => remote.jwks() };
    return new AssertionVerifier(() => trust, opts);
  }

  /**
   * The identity `token` claims, unverified: the owner it would be once verified (its key, its agent,
   * whether the trust set binds them), or undefined when it names none the trusted keys could vouch for.
   */
  claimed(token: string): ClaimedIdentity | undefined {
    const jwt = token.length > MAX_ASSERTION_BYTES ? undefined : unverifiedJwt(token);
    const kid = jwt?.header.kid;
    const sub = fieldValue(jwt?.payload.sub);
    const set = this.trust().set();
    if (typeof kid !== 'string' || kid === '' || sub === undefined || set === undefined) return undefined;
    const scope = trustIndex(set).scope(kid, sub);
    if (scope === 'refused') return undefined;
    return { source: 'assertion', subject: sub, issuer: kid, ...(scope === 'bound' ? { stableSubject: true as const } : {}) };
  }

  async verify(token: string): Promise<CredentialCheck> {
    const fail = (problem: string): CredentialCheck => ({ ok: false, credential: 'assertion', problem });
    if (token.length > MAX_ASSERTION_BYTES) return fail('too large');
    let payload: Record<string, unknown>;
    let kid: string | undefined;
    const trust = this.trust();
    try {
      const r = await jose().jwtVerify(token, trust.getKey, {
        algorithms: [...ASSERTION_ALGORITHMS],
        typ: ASSERTION_TYP,
        audience: [...this.opts.audiences],
        requiredClaims: ['exp', 'iat', 'jti', 'sub'],
        maxTokenAge: MAX_ASSERTION_LIFETIME_S,
        clockTolerance: CLOCK_TOLERANCE_S,
      });
      payload = r.payload;
      kid = r.protectedHeader.kid;
    } catch (err) {
      return fail(joseProblem(err));
    }
    // The kid names the key, and so what it may assert (our signer always sets it).
    if (typeof kid !== 'string' || kid === '') return fail('names no key (kid)');
    const { iat, exp, jti } = payload;
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > MAX_ASSERTION_LIFETIME_S)
      return fail(`lives longer than ${MAX_ASSERTION_LIFETIME_S} s`);
    if (typeof jti !== 'string' || jti === '' || jti.length > 128) return fail('has no valid id (jti)');
    const agent = agentClaim(payload['agent']);
    if (agent === undefined) return fail('has no valid agent claim (id, name, url, version)');
    if (agent.id !== payload['sub']) return fail('names another agent in sub than in agent.id');
    const set = trust.set();
    const scope = set === undefined ? 'refused' : trustIndex(set).scope(kid, agent.id);
    if (scope === 'refused') return fail('is signed by a key the trusted keys do not let assert this agent');
    // One used already is refused now, before the request's body is read; it is recorded only when spent.
    if ((await this.replay.seen(kid, jti)) === true) return fail(REPLAYED);
    // Each trusted key has its share of the cache, so one signer filling its own never refuses another's.
    const share = Math.max(1, Math.floor(this.opts.replayCacheSize / Math.max(1, set?.keys.length ?? 1)));
    const spend = async (): Promise<string | undefined> => {
      const verdict = await this.replay.add(kid, jti, exp + CLOCK_TOLERANCE_S, share);
      if (verdict === 'replayed') return REPLAYED;
      if (verdict === 'full') return "cannot be checked for replay now (this key's share of the replay cache is full)";
      if (verdict === 'unavailable') return 'cannot be checked for replay now (replay store unavailable)';
      return undefined;
    };
    // A key bound to the agent speaks for the agent itself: its tasks stay its own when the key rotates.
    return { ok: true, identity: { source: 'assertion', subject: agent.id, issuer: kid, agent, ...(scope === 'bound' ? { stableSubject: true } : {}) }, spend };
  }
}

/** The `agent` claim: id, name, url, version, each a bounded string; "unknown" is a valid value. */
function agentClaim(v: unknown): AgentFields | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const a = v as Record<string, unknown>;
  const id = fieldValue(a['id']);
  const name = fieldValue(a['name']);
  const url = fieldValue(a['url']);
  const version = fieldValue(a['version']);
  if (id === undefined || name === undefined || url === undefined || version === undefined) return undefined;
  return { id, name, url, version };
}

/** Keys bound to no agent: said once per load, since binding them is what keeps tasks across a rotation. */
function warnUnbound(set: JSONWebKeySet, logger: Logger): void {
  const kids = trustIndex(set).unboundKids;
  if (kids.length === 0) return;
  logger.warn(
    { kids },
    'trusted assertion keys without "agents": each may assert any agent that no key is bound to, and the tasks of its callers belong to the key (a key rotation loses them); add "agents": ["<agent id>"] to each key',
  );
}

function kidsOf(text: string): string[] {
  try {
    return (JSON.parse(text) as JSONWebKeySet).keys.map((k) => String(k.kid));
  } catch {
    return [];
  }
}

export function isLoopback(url: URL): boolean {
  const h = url.hostname;
  return h === 'localhost' || h === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(h);
}
