/**
 * The a2a-guard toolkit for AOS guardian authors (the package's main entry, `import ... from 'a2a-guard'`):
 *
 * - the AOS envelope and answer schemas (zod) and their TypeScript types;
 * - an envelope builder (for calling a guardian, and for testing one);
 * - the guardian client a2a-guard itself uses (keep-alive, time budget, retry, circuit breaker);
 * - a server helper: a guardian is a typed function `(envelope) => decision` plus `serveGuardian(fn)`.
 *
 * Only what is exported here (and from the package's other `exports` entries) is public API.
 */
export {
  A2AContext,
  A2ARole,
  Agent,
  AgentContext,
  AgentProvider,
  DecisionSchema,
  Envelope,
  FullAgentContext,
  GuardianError,
  GuardianSuccess,
  JsonObject,
  JsonRpcErrorObject,
  JsonRpcId,
  ModifiedRequest,
  PartialAgent,
  PartialAgentContext,
  PingAnswer,
  SuccessResult,
} from './aos/schemas';
export { buildEnvelope, envelopeJson, type EnvelopeInput } from './aos/envelope';
export { hookContext } from './aos/identity';
export { acceptsModify, allow, deny, isA2AMethod, modify, type DecisionDetails } from './aos/decisions';
export { HttpGuardian, interpret, type Guardian, type HttpGuardianOptions } from './aos/guardian';
export type { GuardianFailureKind, GuardianOutcome } from './aos/outcome';
export {
  DEFAULT_MAX_BODY_BYTES,
  RpcErrorCode,
  createGuardianService,
  guardianRequestListener,
  guardianRpcHandler,
  serveGuardian,
  type DecisionEvent,
  type GuardianFunction,
  type GuardianLogger,
  type GuardianServiceOptions,
  type RpcError,
  type RpcReply,
  type RunningGuardian,
  type ServeOptions,
} from './aos/serve';
