/**
 * @a2a-guard/toolkit: what an AOS guardian author needs, with zod as its only dependency.
 *
 * - the AOS envelope and answer schemas (zod) and their TypeScript types;
 * - `allow`, `deny`, `modify`: a guardian's answers without hand-writing their shape;
 * - `serveGuardian`: a guardian is a typed function `(envelope) => decision` plus one call;
 * - `buildEnvelope`: envelopes as a2a-guard sends them (e.g. to test a guardian).
 *
 * Only what is exported here and from the package's other `exports` entries is public API.
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
  ServiceParametersView,
  SuccessResult,
} from './schemas';
export { PHASES, SIDES, type Phase, type Side } from './hook-points';
export { buildEnvelope, envelopeJson, type EnvelopeInput } from './envelope';
export { acceptsModify, allow, deny, isA2AMethod, modify, type DecisionDetails } from './decisions';
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
} from './serve';
