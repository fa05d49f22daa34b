/**
 * The identity machinery one proxy needs, built from its configuration at start: only what the
 * configuration uses (no signer without a key, no verifier without trust, jose not even loaded when
 * neither is set), with the start-up warnings an operator should see.
 */
import type { Logger } from 'pino';
import { type Config, normaliseAudience } from '../config/config';
import type { Agent } from '../aos/schemas';
import { AssertionSigner, AssertionVerifier } from './assertion';
import { type CallerIdentifier, type CallerSources, createCallerIdentifier } from './caller';
import { OidcVerifier } from './oidc';
import type { ReplayGuard } from './replay';

export interface IdentityRuntime {
  readonly identify: CallerIdentifier;
  /** ROLE=client/both with ASSERTION_SIGNING_KEY_FILE: a fresh assertion of the observed agent for the upstream. */
  readonly signAssertion: (() => Promise<string>) | undefined;
}

export async function setupIdentity(
  config: Config,
  observedClient: () => Agent,
  logger: Logger,
  onOutcome?: CallerSources['onOutcome'],
  replay?: ReplayGuard,
): Promise<IdentityRuntime> {
  const id = config.identity;
  const signs = config.role !== 'server';
  const verifies = config.role === 'server';

  let signAssertion: IdentityRuntime['signAssertion'];
  if (signs && id.signingKeyFile !== undefined) {
    const signer = await AssertionSigner.open({
      file: id.signingKeyFile,
      kid: id.signingKeyId,
      ttlSeconds: id.assertionTtlSeconds,
      refreshMs: id.refreshMs,
      logger,
    });
    // The upstream as the server side knows itself; UPSTREAM_URL unless the upstream is reached under another name.
    const audience = id.audiences[0] ?? normaliseAudience(config.upstreamUrl);
    signAssertion = () => signer.sign(observedClient(), audience);
    // Everyone who reaches this listener is signed as the observed agent (and owns its tasks upstream).
    if (!isLoopbackHost(config.host)) {
      logger.warn(
        { host: config.host },
        'ROLE=%s signs identity assertions for every caller of its listener, which is not loopback (HOST=%s): anyone who reaches it is verified upstream as the observed agent; set HOST=127.0.0.1 unless only that agent can reach this address',
        config.role,
        config.host,
      );
    }
  } else if (signs) {
    logger.warn(
      'ROLE=%s without ASSERTION_SIGNING_KEY_FILE: the server side cannot verify who is calling (X-AOS-Agent-* headers are only a claim)',
      config.role,
    );
  }

  const trusts = id.trustJwksFile !== undefined || id.trustJwksUrl !== undefined;
  // Settings that do nothing in this role are said so, not silently ignored.
  if (!signs && id.signingKeyFile !== undefined) logger.warn('ASSERTION_SIGNING_KEY_FILE is ignored with ROLE=server (only client sidecars sign)');
  if (!verifies && (trusts || id.oidc !== undefined || id.policy !== 'optional')) {
    logger.warn("ROLE=%s: the caller is this proxy's own agent; ASSERTION_TRUST_JWKS_*, OIDC_* and IDENTITY_POLICY apply to ROLE=server only", config.role);
  }
  const assertions =
    verifies && trusts
      ? AssertionVerifier.open({
          file: id.trustJwksFile,
          url: id.trustJwksUrl,
          audiences: id.audiences,
          replayCacheSize: id.replayCacheSize,
          ...(replay === undefined ? {} : { replay }),
          refreshMs: id.refreshMs,
          logger,
        })
      : undefined;
  const oidc =
    verifies && id.oidc !== undefined
      ? new OidcVerifier({
          issuer: id.oidc.issuer,
          audiences: id.oidc.audiences,
          jwksUrl: id.oidc.jwksUrl,
          claims: id.oidc.claims,
          refreshMs: id.refreshMs,
          logger,
        })
      : undefined;
  oidc?.prepare();
  const mtls = verifies && config.tls.listener?.clientCaFile !== undefined;

  if (verifies) {
    const sources = [assertions && 'assertions', oidc && 'oidc', mtls && 'mtls'].filter((s): s is string => typeof s === 'string');
    if (id.policy === 'claims') {
      logger.warn("IDENTITY_POLICY=claims: callers' X-AOS-Agent-* headers are believed when nothing is verified; anyone can claim any name (development only)");
    } else if (sources.length === 0) {
      logger.warn(
        'no caller identity source is configured (ASSERTION_TRUST_JWKS_*, OIDC_ISSUER, TLS_CLIENT_CA_FILE): every caller is "unknown" to the guardian',
      );
    } else {
      logger.info({ policy: id.policy, sources }, 'caller identities are verified');
    }
  }

  const identify = createCallerIdentifier({
    role: config.role,
    policy: id.policy,
    assertions,
    oidc,
    mtls,
    localAgent: observedClient,
    ...(onOutcome === undefined ? {} : { onOutcome }),
  });
  return { identify, signAssertion };
}

/** A listen address only this host's processes reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}
