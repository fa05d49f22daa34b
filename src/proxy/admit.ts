/**
 * Admission, the same for every adapter: who is calling (every credential checked), this proxy's
 * assertion for the agent, the caller's place within its shares, its service parameters, a refusal
 * counted and logged, an open stream tracked for shutdown, and the call opened with its span.
 * The adapters write what these decide in their own terms (an HTTP error body, a gRPC status).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { allowListRefusal, readServiceParameters, type ServiceParameters } from '../a2a/service-parameters';
import { proxyError, type ProxyError } from '../core/errors';
import { Cancellation } from '../core/cancel';
import { monotonicMs } from '../core/clock';
import type { CallerResult } from '../identity/caller';
import { ANONYMOUS, ownerKey } from '../ownership/principal';
import type { BodyLease } from './budget';
import type { Leaving } from '../core/fair-queue';
import { callerKey, type Admission } from './callers';
import { openExchange, type Call, type Exchange } from './call';
import type { SharedDeps } from './deps';

export type Verified = Extract<CallerResult, { ok: true }>;

/** What a refusal's log line says besides its reason. */
export interface RefusalFacts {
  readonly remoteAddress: string | undefined;
  readonly binding?: string;
  readonly traceId?: string | undefined;
}

/** The facts of a call an adapter has read from its wire form. */
export interface CallFacts extends Pick<Call, 'started' | 'codec' | 'op' | 'wireMethod' | 'id' | 'shape' | 'remoteAddress'> {
  readonly binding: string;
  readonly httpMethod: string;
  readonly path: string;
  readonly caller: Verified;
  readonly serviceParameters: ServiceParameters;
}

export interface Admit {
  /** Who is calling: every credential presented checked (one-use ones not spent yet). */
  identify(headers: IncomingHttpHeaders, socket: Socket): Promise<CallerResult>;
  /**
   * Before the caller's credential is verified: the refusal of a caller whose credential claims a key
   * already at its bound (calls in flight, an empty rate bucket), or undefined to verify it as ever.
   * Saves the signature checks of a busy caller's retries, which would be refused after them anyway.
   */
  precheck(headers: IncomingHttpHeaders, remoteAddress: string | undefined): ProxyError | undefined;
  /**
   * This proxy's assertion for the agent, signed as the call arrives (while its body comes), or undefined (no signing
   * key). Take it when forwarding: the early one, or a new one once the call has taken half its lifetime (a slow
   * body, a wait for a place, a slow guardian), so the agent never gets one that expires on the way. A promise of
   * undefined: signing failed (the agent's side decides).
   */
  sign(): ForwardAssertion | undefined;
  /**
   * The caller's place within its shares (calls in flight, rate); the lease is charged to it first.
   * Past its calls in flight the call may wait for a place (CALL_WAIT_MS); `leaving` ends that wait.
   * `closed` says whether the call went away meanwhile: then its place is given back at once ('gone').
   * Returns the place's release (or undefined: no limits), or the error to refuse with.
   */
  enter(lease: BodyLease, known: Verified | undefined, remoteAddress: string | undefined, closed: () => boolean, leaving?: Leaving): Entered | Promise<Entered>;
  /** The caller's service parameters, or the error to refuse the call with (`malformed`: they do not read as one value). */
  serviceParameters(headers: IncomingHttpHeaders, version: string | undefined): ServiceParameters | { readonly error: ProxyError; readonly malformed: boolean };
  /** Count and log a refusal; the adapter answers it. */
  refused(err: ProxyError, facts: RefusalFacts): void;
  /** Count an open stream and end it with `terminate` at shutdown; returns the untrack function. */
  trackStream(terminate: () => void): () => void;
  /** The call's span and exchange. */
  open(headers: IncomingHttpHeaders, facts: CallFacts): Exchange;
}

/** The assertion to forward with a call, as fresh as the call needs it. */
export type ForwardAssertion = () => Promise<string | undefined>;

export type Entered = { readonly ok: true; readonly leave: (() => void) | undefined } | { readonly ok: false; readonly error: ProxyError } | 'gone';

const NO_LIMITS: Entered = Object.freeze({ ok: true, leave: undefined });

/** The key a caller's shares and turns are counted under: its verified identity, else its address. */
export function admittedKey(known: Verified | undefined, remoteAddress: string | undefined, ipv6Prefix: number): string {
  return callerKey(known === undefined ? ANONYMOUS : ownerKey(known.identity), remoteAddress, ipv6Prefix);
}

export function createAdmit(deps: SharedDeps): Admit {
  const { config, logger, metrics } = deps;
  return {
    identify(headers, socket) {
      return deps.identify(headers, socket).catch((err: unknown) => {
        logger.error({ err: (err as Error).message }, 'caller identity could not be checked');
        return { ok: false as const, message: 'Caller identity could not be checked', metadata: {} };
      });
    },

    precheck(headers, remoteAddress) {
      const limits = deps.callerLimits;
      const claimed = limits === undefined ? undefined : deps.identify.claimed?.(headers);
      // Reads only (CallerLimits.atBound): nothing is taken under a key that is not verified.
      return claimed === undefined ? undefined : limits?.atBound(callerKey(ownerKey(claimed), remoteAddress, config.perCaller.ipv6Prefix));
    },

    sign() {
      const sign = deps.signAssertion;
      if (sign === undefined) return undefined;
      const signed = (): Promise<string | undefined> => {
        // The first calls after start wait (bounded) for the card that names the observed agent.
        const cards = deps.identities.pending;
        return (cards === undefined ? sign() : cards.then(sign)).catch((err: unknown) => {
          logger.error({ err: (err as Error).message }, 'could not sign the identity assertion; forwarding without it');
          return undefined;
        });
      };
      const at = monotonicMs();
      const early = signed();
      // Past half its lifetime, the rest may not cover the way to the agent and the agent's own check.
      const young = (config.identity.assertionTtlSeconds * 1000) / 2;
      return () => (monotonicMs() - at < young ? early : signed());
    },

    enter(lease, known, remoteAddress, closed, leaving) {
      const key = admittedKey(known, remoteAddress, config.perCaller.ipv6Prefix);
      lease.charge(key);
      const limits = deps.callerLimits;
      if (limits === undefined) return NO_LIMITS;
      const after = (r: Admission): Entered => {
        if (closed()) {
          if (r.ok) r.leave();
          return 'gone';
        }
        return r.ok ? { ok: true, leave: r.leave } : r;
      };
      const admitted = limits.admit(key, leaving);
      return admitted instanceof Promise ? admitted.then(after) : after(admitted);
    },

    serviceParameters(headers, version) {
      const read = readServiceParameters(headers, version);
      if ('problem' in read) return { error: proxyError('rejected', read.problem), malformed: true };
      const notAllowed = allowListRefusal(read, config.a2aVersions, config.a2aExtensions);
      return notAllowed === undefined ? read : { error: notAllowed, malformed: false };
    },

    refused(err, facts) {
      metrics.call('refused', 'refused');
      logger.info(
        {
          outcome: 'refused',
          ...(facts.binding === undefined ? {} : { binding: facts.binding }),
          reason: err.message,
          remoteAddress: facts.remoteAddress,
          ...(facts.binding === undefined ? { traceId: facts.traceId } : {}),
        },
        'request refused',
      );
    },

    trackStream: (terminate) => trackStream(deps, terminate),

    open(headers, f) {
      const span = deps.tracer.startCall(headers, {
        method: f.op.aosMethod,
        wireMethod: f.wireMethod,
        binding: f.binding,
        role: config.role,
        httpMethod: f.httpMethod,
        path: f.path,
        remoteAddress: f.remoteAddress,
      });
      return openExchange({
        started: f.started,
        codec: f.codec,
        op: f.op,
        wireMethod: f.wireMethod,
        id: f.id,
        shape: f.shape,
        caller: new Cancellation(),
        identity: f.caller.identity,
        callerPeer: f.caller.peer,
        owner: ownerKey(f.caller.identity),
        key: admittedKey(f.caller, f.remoteAddress, config.perCaller.ipv6Prefix),
        span,
        remoteAddress: f.remoteAddress,
        serviceParameters: f.serviceParameters,
      });
    },
  };
}

/** An open stream: counted in the gauge and ended by a shutdown (an error event, or UNAVAILABLE); returns the untrack function. */
export function trackStream(deps: Pick<SharedDeps, 'streams' | 'metrics'>, terminate: () => void): () => void {
  deps.streams.add(terminate);
  deps.metrics.openStreams.inc();
  return () => {
    if (deps.streams.delete(terminate)) deps.metrics.openStreams.dec();
  };
}
