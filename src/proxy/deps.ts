/**
 * What both inbound adapters (http/, grpc/) are built from (server.ts assembles it). Its own module
 * so that the middle (admission, stages) can name it without importing an adapter.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/config';
import type { Metrics } from '../admin/metrics';
import type { FairTurns } from './fair';
import type { Identities } from '../aos/identity';
import type { BodyBudget } from './budget';
import type { CallerLimits } from './callers';
import type { CallerIdentifier } from '../identity/caller';
import type { TaskOwnership } from './ownership';
import type { Tracer } from '../observe/tracing';
import type { AuditRecord } from '../observe/audit';
import type { ChainLink } from '../observe/decision-log';
import type { Line } from './window';
import type { PushRelay } from './push/relay';

export interface SharedDeps {
  readonly config: Config;
  readonly identities: Identities;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Open streams, ended with an error (event, or status) when the proxy shuts down. */
  readonly streams: Set<() => void>;
  /** Request-body bytes held across all calls (MAX_INFLIGHT_BODY_BYTES). */
  readonly bodyBudget: BodyBudget;
  /** What one caller may hold of what every caller shares: calls in flight, rate, guardian calls (proxy/callers.ts). */
  readonly callerLimits?: CallerLimits | undefined;
  /** Turns of the CPU stages, round-robin per caller (proxy/fair.ts); undefined: first come, first served. */
  readonly fair?: FairTurns | undefined;
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
