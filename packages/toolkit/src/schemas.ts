/**
 * AOS shapes (spec sections 3.1, 3.16, 4.7-4.9, 5) as zod schemas. Everything that crosses the
 * guardian boundary is parsed with these; the inferred types are what the rest of the code uses.
 */
import * as z from 'zod';
import { SIDES } from './hook-points';

export const JsonRpcId = z.union([z.string(), z.number()]);
export type JsonRpcId = z.infer<typeof JsonRpcId>;

/** Any JSON object (A2A payloads are carried as they are). */
export const JsonObject = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObject>;

export const AgentProvider = z.looseObject({ name: z.string(), url: z.string() });
export type AgentProvider = z.infer<typeof AgentProvider>;

/** AOS `Agent` (spec 3.1): the observed agent, in full. */
export const Agent = z.looseObject({
  id: z.string(),
  name: z.string(),
  url: z.string(),
  version: z.string(),
  instructions: z.string(),
  provider: AgentProvider,
  description: z.string().optional(),
});
export type Agent = z.infer<typeof Agent>;

/**
 * AOS `A2APartialAgentDetails` (spec 3.16.3): the peer, as its agent card names it. The caller of a
 * server-side hook also carries `id` (an AOS Agent field) when verified, and `metadata.identity`
 * saying whether and how it was verified (the schema allows further members; README "Identity").
 */
export const PartialAgent = z.object({ url: z.string(), name: z.string(), version: z.string(), id: z.string().optional(), metadata: JsonObject.optional() });
export type PartialAgent = z.infer<typeof PartialAgent>;

/** The role of an agent in an AOS context: the same two values as a hook point's side. */
export const A2ARole = z.enum(SIDES);
export type A2ARole = z.infer<typeof A2ARole>;

export const FullAgentContext = z.object({ agent: Agent, role: A2ARole });
export const PartialAgentContext = z.object({ agent: PartialAgent, role: A2ARole });
export const AgentContext = z.union([FullAgentContext, PartialAgentContext]);
export type AgentContext = z.infer<typeof AgentContext>;

/** The A2A service parameters of a request (a2a-guard's member of the context; the AOS schema leaves it open). */
export const ServiceParametersView = z.object({ 'A2A-Version': z.string(), 'A2A-Extensions': z.array(z.string()) });
export type ServiceParametersView = z.infer<typeof ServiceParametersView>;

export const A2AContext = z.object({ from: AgentContext, to: AgentContext, serviceParameters: ServiceParametersView.optional() });
export type A2AContext = z.infer<typeof A2AContext>;

/** AOS A2A request / response hook (spec 4.8 / 4.9). */
export const Envelope = z.object({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcId,
  method: z.string().min(1),
  params: z.object({
    payload: JsonObject,
    reasoning: z.string().optional(),
    context: A2AContext,
  }),
});
export type Envelope = z.infer<typeof Envelope>;

export const DecisionSchema = z.enum(['allow', 'deny', 'modify']);

/** What a `modify` must carry: an AOS request whose params.payload is the replacement A2A message. */
export const ModifiedRequest = z.looseObject({
  params: z.looseObject({ payload: JsonObject }),
});

/** AOSSuccessResult (spec 5.1.1). */
export const SuccessResult = z.looseObject({
  decision: DecisionSchema,
  message: z.string(),
  reasoning: z.string().optional(),
  reasonCode: z.array(z.string()).optional(),
  data: JsonObject.optional(),
  modifiedRequest: ModifiedRequest.optional(),
});
export type SuccessResult = z.infer<typeof SuccessResult>;

export const JsonRpcErrorObject = z.looseObject({ code: z.number().int(), message: z.string(), data: z.unknown().optional() });

/** A guardian's JSON-RPC answer: an AOSSuccessResponse (spec 5.1) ... */
export const GuardianSuccess = z.looseObject({ jsonrpc: z.literal('2.0'), id: JsonRpcId, result: SuccessResult });
/** ... or a JSON-RPC error response (spec 5.2). */
export const GuardianError = z.looseObject({ jsonrpc: z.literal('2.0'), id: JsonRpcId.nullable(), error: JsonRpcErrorObject });

/** PingRequestSuccessResponse (spec 5.3). */
export const PingAnswer = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcId,
  result: z.looseObject({ status: z.enum(['connected', 'error']), version: z.string(), timestamp: z.string() }),
});
export type PingAnswer = z.infer<typeof PingAnswer>;
