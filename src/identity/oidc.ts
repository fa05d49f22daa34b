/**
 * Callers without a sidecar that hold an OAuth2/OIDC access token (A2A agent cards declare these in
 * `securitySchemes`): `Authorization: Bearer <JWT>` is verified against the issuer's JWKS (issuer,
 * audience, expiry, an asymmetric algorithm, a trusted key) and configured claims become the AOS
 * agent fields. The token itself is forwarded to the agent untouched.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { ClaimMap } from '../config/config';
import { isLoopback } from './assertion';
import { monotonicMs } from '../core/clock';
import { CLOCK_TOLERANCE_S, type JWTVerifyGetKey, jose, joseProblem, OIDC_ALGORITHMS, unverifiedJwt } from './jose';
import { type AgentFields, type ClaimedIdentity, type CredentialCheck, fieldValue, UNKNOWN_FIELD } from './types';

const MAX_TOKEN_BYTES = 16 * 1024;
const DISCOVERY_RETRY_MS = 10_000;

export interface OidcOptions {
  readonly issuer: string;
  readonly audiences: readonly string[];
  /** Unset: discovered from `<issuer>/.well-known/openid-configuration`. */
  readonly jwksUrl: URL | undefined;
  readonly claims: ClaimMap;
  readonly refreshMs: number;
  readonly logger: Logger;
}

/** The bearer token of a request, if it carries one. Other schemes (Basic, ...) are not ours to judge. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const h = headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(h);
  return m?.[1];
}

/** The AOS agent fields from verified claims: the first present claim of each list; id is required. */
export function agentFromClaims(payload: Readonly<Record<string, unknown>>, map: ClaimMap): AgentFields | undefined {
  const pick = (names: readonly string[]): string | undefined => {
    for (const n of names) {
      const v = fieldValue(payload[n]);
      if (v !== undefined) return v;
    }
    return undefined;
  };
  const id = pick(map.id);
  if (id === undefined) return undefined;
  return { id, name: pick(map.name) ?? UNKNOWN_FIELD, url: pick(map.url) ?? UNKNOWN_FIELD, version: pick(map.version) ?? UNKNOWN_FIELD };
}

export class OidcVerifier {
  private keys: Promise<JWTVerifyGetKey> | undefined;
  private keysFailedAt = -Infinity;

  constructor(
    private readonly opts: OidcOptions,
    keys?: JWTVerifyGetKey,
  ) {
    if (keys !== undefined) this.keys = Promise.resolve(keys);
    const warnHttp = (u: URL) => {
      if (u.protocol === 'http:' && !isLoopback(u)) opts.logger.warn({ url: u.href }, 'OIDC keys come over plain http: anyone on the path can replace them');
    };
    warnHttp(new URL(opts.issuer));
    if (opts.jwksUrl !== undefined) warnHttp(opts.jwksUrl);
  }

  /** Start discovery / the first JWKS fetch now, so the first caller does not wait for it. */
  prepare(): void {
    void this.keySet().catch(() => undefined);
  }

  /** The identity `token` claims, unverified: the owner it would be once verified, or undefined (not one of this issuer's). */
  claimed(token: string): ClaimedIdentity | undefined {
    const payload = token.length > MAX_TOKEN_BYTES ? undefined : unverifiedJwt(token)?.payload;
    const sub = fieldValue(payload?.sub);
    if (sub === undefined || payload?.iss !== this.opts.issuer) return undefined;
    return { source: 'oidc', subject: sub, issuer: this.opts.issuer };
  }

  async verify(token: string): Promise<CredentialCheck> {
    const fail = (problem: string): CredentialCheck => ({ ok: false, credential: 'bearer token', problem });
    if (token.length > MAX_TOKEN_BYTES) return fail('too large');
    if (token.split('.').length !== 3) return fail('is not a signed JWT');
    let keys: JWTVerifyGetKey;
    try {
      keys = await this.keySet();
    } catch {
      return fail("cannot be checked: the issuer's keys are unavailable");
    }
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jose().jwtVerify(token, keys, {
        issuer: this.opts.issuer,
        audience: [...this.opts.audiences],
        algorithms: [...OIDC_ALGORITHMS],
        requiredClaims: ['exp', 'sub'],
        clockTolerance: CLOCK_TOLERANCE_S,
      }));
    } catch (err) {
      return fail(joseProblem(err));
    }
    const sub = fieldValue(payload['sub']);
    if (sub === undefined) return fail('has no valid subject (sub)');
    const agent = agentFromClaims(payload, this.opts.claims);
    if (agent === undefined) return fail(`has none of the claims that name the agent id (${this.opts.claims.id.join(', ')})`);
    return { ok: true, identity: { source: 'oidc', subject: sub, issuer: this.opts.issuer, agent } };
  }

  private keySet(): Promise<JWTVerifyGetKey> {
    if (this.keys !== undefined) return this.keys;
    if (monotonicMs() - this.keysFailedAt < DISCOVERY_RETRY_MS) return Promise.reject(new Error('OIDC discovery failed recently'));
    const remote = (url: URL) =>
      jose().createRemoteJWKSet(url, {
        cacheMaxAge: this.opts.refreshMs,
        cooldownDuration: Math.min(this.opts.refreshMs, 30_000),
        timeoutDuration: 5000,
      });
    const attempt = this.opts.jwksUrl !== undefined ? Promise.resolve(remote(this.opts.jwksUrl)) : this.discover().then(remote);
    this.keys = attempt;
    attempt.catch((err: unknown) => {
      this.keys = undefined;
      this.keysFailedAt = monotonicMs();
      this.opts.logger.warn(
        { issuer: this.opts.issuer, problem: (err as Error).message },
        'OIDC discovery failed; bearer tokens are refused until it succeeds',
      );
    });
    return attempt;
  }

  /** OpenID Connect Discovery 1.0: the document must name the configured issuer exactly. */
  private async discover(): Promise<URL> {
    const where = `${this.opts.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    const res = await fetch(where, { signal: AbortSignal.timeout(5000), headers: { accept: 'application/json' } });
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`${where}: HTTP ${res.status}`);
    }
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (doc.issuer !== this.opts.issuer) throw new Error(`${where}: names issuer ${JSON.stringify(doc.issuer)}, not ${this.opts.issuer}`);
    if (typeof doc.jwks_uri !== 'string' || !URL.canParse(doc.jwks_uri)) throw new Error(`${where}: no valid jwks_uri`);
    const jwks = new URL(doc.jwks_uri);
    if (jwks.protocol !== 'https:' && jwks.protocol !== 'http:') throw new Error(`${where}: jwks_uri is not http(s)`);
    this.opts.logger.info({ issuer: this.opts.issuer, jwks: jwks.href }, 'OIDC discovery: issuer keys found');
    return jwks;
  }
}
