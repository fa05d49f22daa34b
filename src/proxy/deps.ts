/**
 * What the proxy's request handler is built from (server.ts assembles it). Its own module so that
 * the stages and the card route can name it without importing the pipeline that runs them.
 */
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Metrics } from '../admin/metrics';
import type { CardCache } from '../a2a/card';
import type { CardGate } from './card-judge';
import type { CardSigning } from '../identity/card-signing';
import type { Guardian } from '../aos/guardian';
import type { FairTurns } from './fair';
import type { Identities } from '../aos/identity';
import type { BodyBudget } from './http/body';
import type { CallerLimits } from './callers';
import type { Upstream } from './http/forward';
import type { CallerIdentifier } from '../identity/caller';
import type { TaskOwnership } from './ownership';
import type { Tracer } from '../observe/tracing';
import type { AuditRecord } from '../observe/audit';
import type { ChainLink } from '../observe/decision-log';
import type { Line } from './window';
import type { PushRelay } from './push/relay';

export interface ProxyDeps {
  readonly config: Config;
  readonly guardian: Guardian;
  readonly identities: Identities;
  readonly upstream: Upstream;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Open streams, ended with an error event when the proxy shuts down. */
  readonly streams: Set<() => void>;
  /** True once shutdown began: answers carry Connection: close. */
  readonly draining: () => boolean;
  /** Request-body bytes held across all calls (MAX_INFLIGHT_BODY_BYTES). */
  readonly bodyBudget: BodyBudget;
  /** What one caller may hold of what every caller shares: calls in flight, rate, guardian calls (proxy/callers.ts). */
  readonly callerLimits?: CallerLimits | undefined;
  /** Turns of the CPU stages, round-robin per caller (proxy/fair.ts); undefined: first come, first served. */
  readonly fair?: FairTurns | undefined;
  /** The agent's card: names its REST and JSON-RPC endpoints. */
  readonly upstreamCard: CardCache;
  /** Cards served signed by the proxy, or the agent's signature checked first (a2a/card-signature.ts); undefined: neither. */
  readonly cardSigning?: CardSigning | undefined;
  /** INSPECT_CARDS: every card served is judged by the guardian first (card-judge.ts); undefined: not judged. */
  readonly cardJudge?: CardGate | undefined;
  /** Who is calling (verified sources, then IDENTITY_POLICY); see src/identity/caller.ts. */
  readonly identify: CallerIdentifier;
  /** ROLE=client/both with a signing key: a fresh identity assertion for the upstream. */
  readonly signAssertion: (() => Promise<string>) | undefined;
  /** Task ownership (TASK_OWNERSHIP), or undefined when off. */
  readonly ownership?: TaskOwnership | undefined;
  readonly tracer: Tracer;
  /** Appends each finished call's audit record to DECISION_LOG_FILE and says where it is in the chain (when configured). */
  readonly decisionLog?: ((record: AuditRecord) => ChainLink) | undefined;
  /** Places for stream events going to the guardian, shared by all streams (window.ts). */
  readonly streamLine?: Line;
  /** Push deliveries through the proxy (PUSH_DELIVERIES=relay), or undefined. */
  readonly push?: PushRelay | undefined;
}
