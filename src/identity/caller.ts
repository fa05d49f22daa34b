/**
 * Who is calling, per call: the three verified sources, then IDENTITY_POLICY for a caller that has
 * none. Also the AOS form of the caller that the guardian sees (`from` of server-side request hooks).
 *
 * - Every credential the caller presents is checked; one that fails refuses the call under every
 *   policy (a forged, expired, replayed or re-targeted credential is an attack or a misconfiguration,
 *   never "no identity").
 * - Several verified credentials: the assertion wins (it names the agent), then the bearer token,
 *   then the client certificate (it names the connection).
 * - None: `required` refuses; `optional` makes the caller "unknown"; `claims` believes the
 *   X-AOS-Agent-* headers (development only), marked unverified.
 *
 * The guardian tells them apart by `agent.metadata.identity` (README "What the guardian sees"):
 * `{"verified": true, "source", "subject", "issuer"?}` or `{"verified": false, "source"?: "claim"}`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { Role } from '../aos/hook-points';
import { partialFromHeaders } from '../aos/identity';
import type { PartialAgent } from '../aos/schemas';
import type { AssertionVerifier } from './assertion';
import { tlsPeerIdentity } from './mtls';
import { claimedBy, type ClaimedBy } from './claimed';
import { bearerToken, type OidcVerifier } from './oidc';
import { ASSERTION_HEADER, type AgentFields, type CredentialCheck, type CredentialKind, UNKNOWN_FIELD, type VerifiedIdentity } from './types';

export type IdentityPolicy = 'required' | 'optional' | 'claims';

export type CallerResult =
  | {
      readonly ok: true;
      readonly identity: VerifiedIdentity | undefined;
      readonly peer: PartialAgent;
      /** The caller presented a credential good for one use (an assertion): use it up, once the request routes somewhere. */
      readonly spend?: () => Promise<CallerResult>;
    }
  | { readonly ok: false; readonly message: string; readonly metadata: Readonly<Record<string, string>> };

/** The caller of a request that routes to an A2A operation or a forwarded route: its one-use credentials spent. */
export function spent(result: CallerResult): CallerResult | Promise<CallerResult> {
  return result.ok && result.spend !== undefined ? result.spend() : result;
}

export interface CallerSources {
  readonly role: Role;
  readonly policy: IdentityPolicy;
  readonly assertions: AssertionVerifier | undefined;
  readonly oidc: OidcVerifier | undefined;
  /** A client CA is configured: client certificates are identities. */
  readonly mtls: boolean;
  /** ROLE=client/both: the observed client agent, which is the caller. */
  readonly localAgent: () => AgentFields;
  /** Told the outcome of each identification (a metric). */
  readonly onOutcome?: (outcome: VerifiedIdentity['source'] | 'unverified' | 'claimed' | 'refused') => void;
}

export type CallerIdentifier = ((headers: IncomingHttpHeaders, socket: Socket) => Promise<CallerResult>) & {
  /** The identity a request's credential claims, unverified (claimed.ts); absent when none is read that way. */
  readonly claimed?: ClaimedBy;
};

/** A caller with no verified identity, as the guardian sees it. */
export const UNVERIFIED: PartialAgent = Object.freeze({
  url: UNKNOWN_FIELD,
  name: UNKNOWN_FIELD,
  version: UNKNOWN_FIELD,
  metadata: { identity: { verified: false } },
});
const UNVERIFIED_RESULT: CallerResult = Object.freeze({ ok: true, identity: undefined, peer: UNVERIFIED });

/** The caller as the guardian sees it: the verified agent fields and how they were verified. */
export function verifiedPeer(identity: VerifiedIdentity): PartialAgent {
  const { agent } = identity;
  const marker = { verified: true, source: identity.source, subject: identity.subject, ...(identity.issuer === undefined ? {} : { issuer: identity.issuer }) };
  return { url: agent.url, name: agent.name, version: agent.version, id: agent.id, metadata: { identity: marker } };
}

/** `claims`: what the caller's X-AOS-Agent-* headers say, marked as a claim. */
export function claimedPeer(headers: IncomingHttpHeaders): PartialAgent {
  return { ...partialFromHeaders(headers), metadata: { identity: { verified: false, source: 'claim' } } };
}

export function createCallerIdentifier(src: CallerSources): CallerIdentifier {
  const count = src.onOutcome ?? (() => undefined);
  if (src.role !== 'server') {
    // The caller is this proxy's own agent; one identity per agent snapshot.
    let seen: AgentFields | undefined;
    let result: CallerResult | undefined;
    return async () => {
      const agent = src.localAgent();
      if (agent !== seen || result === undefined) {
        seen = agent;
        const identity: VerifiedIdentity = {
          source: 'local',
          subject: agent.id,
          agent: { id: agent.id, name: agent.name, url: agent.url, version: agent.version },
        };
        result = { ok: true, identity, peer: verifiedPeer(identity) };
      }
      count('local');
      return result;
    };
  }

  const accepted = [src.assertions && 'assertion (X-AOS-Agent-Assertion)', src.oidc && 'bearer token', src.mtls && 'client certificate'].filter(
    (x): x is string => typeof x === 'string',
  );

  const identify: CallerIdentifier = async (headers, socket) => {
    const pending: Array<CredentialCheck | Promise<CredentialCheck>> = [];
    const assertion = headers[ASSERTION_HEADER];
    if (src.assertions !== undefined && typeof assertion === 'string' && assertion !== '') {
      // Repeated headers arrive joined with ", "; a JWS has no comma.
      pending.push(
        assertion.includes(',') ? { ok: false, credential: 'assertion', problem: 'was sent more than once' } : src.assertions.verify(assertion.trim()),
      );
    }
    const token = src.oidc === undefined ? undefined : bearerToken(headers);
    if (src.oidc !== undefined && token !== undefined) pending.push(src.oidc.verify(token));
    const cert = src.mtls ? tlsPeerIdentity(socket) : undefined;
    if (cert !== undefined) pending.push(cert);

    // No credential (the common case without identities configured): the policy alone decides.
    if (pending.length === 0) return unidentified(headers);
    const checks = await Promise.all(pending);
    const failed = checks.find((c): c is Extract<CredentialCheck, { ok: false }> => !c.ok);
    if (failed !== undefined) {
      count('refused');
      return refusal(failed.credential, failed.problem);
    }
    const identity = pick(checks);
    if (identity !== undefined) {
      count(identity.source);
      const result: CallerResult = { ok: true, identity, peer: verifiedPeer(identity) };
      const spends = checks.flatMap((c) => (c.ok && c.spend !== undefined ? [c.spend] : []));
      return spends.length === 0 ? result : { ...result, spend: () => spendAll(spends, result) };
    }
    return unidentified(headers);
  };
  const claimed = claimedBy(src.assertions, src.oidc);
  return claimed === undefined ? identify : Object.assign(identify, { claimed });

  /** Every one-use credential of the call used up; one used already refuses the call, as at its check. */
  async function spendAll(spends: readonly (() => Promise<string | undefined>)[], result: CallerResult): Promise<CallerResult> {
    for (const spend of spends) {
      const problem = await spend();
      if (problem !== undefined) {
        count('refused');
        return refusal('assertion', problem);
      }
    }
    return result;
  }

  /** A caller with no verified identity, under IDENTITY_POLICY. */
  function unidentified(headers: IncomingHttpHeaders): CallerResult {
    switch (src.policy) {
      case 'required':
        count('refused');
        return {
          ok: false,
          message: `Caller identity required: no verified identity was presented${accepted.length > 0 ? ` (accepted: ${accepted.join(', ')})` : ''}`,
          metadata: { missing: 'verified identity', accepted: accepted.join(', ') },
        };
      case 'claims':
        count('claimed');
        return { ok: true, identity: undefined, peer: claimedPeer(headers) };
      default:
        count('unverified');
        return UNVERIFIED_RESULT;
    }
  }
}

const PRECEDENCE: readonly VerifiedIdentity['source'][] = ['assertion', 'oidc', 'mtls'];

function pick(checks: readonly CredentialCheck[]): VerifiedIdentity | undefined {
  const ids = checks.flatMap((c) => (c.ok ? [c.identity] : []));
  for (const source of PRECEDENCE) {
    const id = ids.find((i) => i.source === source);
    if (id !== undefined) return id;
  }
  return undefined;
}

function refusal(credential: CredentialKind, problem: string): CallerResult {
  return { ok: false, message: `Caller identity not verified: the ${credential} ${problem}`, metadata: { credential, problem } };
}
