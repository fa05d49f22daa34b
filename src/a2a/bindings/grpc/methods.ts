/**
 * The A2A gRPC services mapped onto the operation table: v1.0's `lf.a2a.v1.A2AService` (a2a.proto),
 * whose RPC names are the v1.0 JSON-RPC method names, and v0.3's `a2a.v1.A2AService`, whose calls the
 * guardian sees as the v0.3 JSON-RPC request (v03.ts). What gRPC adds is the request and response
 * message types. Pure: no protobuf code is loaded here.
 */
import { OPERATIONS, operationForMethod, type Operation } from '../../operations';
import { routeFold } from '../../target';

export const GRPC_SERVICE = 'lf.a2a.v1.A2AService';
/** A2A v0.3's service (its package is `a2a.v1`; the v1.0 service moved to `lf.a2a.v1`). */
export const GRPC_SERVICE_V03 = 'a2a.v1.A2AService';

/** Message type names as the SDK's generated code exports them (`Empty` has no fields). */
export type GrpcMessageType =
  | 'SendMessageRequest'
  | 'SendMessageResponse'
  | 'StreamResponse'
  | 'GetTaskRequest'
  | 'Task'
  | 'ListTasksRequest'
  | 'ListTasksResponse'
  | 'CancelTaskRequest'
  | 'SubscribeToTaskRequest'
  | 'TaskPushNotificationConfig'
  | 'GetTaskPushNotificationConfigRequest'
  | 'ListTaskPushNotificationConfigsRequest'
  | 'ListTaskPushNotificationConfigsResponse'
  | 'DeleteTaskPushNotificationConfigRequest'
  | 'GetExtendedAgentCardRequest'
  | 'AgentCard'
  | 'Empty';

/** v0.3 message type names (a2a.proto of A2A v0.3, package a2a.v1). */
export type GrpcV03MessageType =
  | 'SendMessageRequest'
  | 'SendMessageResponse'
  | 'StreamResponse'
  | 'GetTaskRequest'
  | 'Task'
  | 'CancelTaskRequest'
  | 'TaskSubscriptionRequest'
  | 'CreateTaskPushNotificationConfigRequest'
  | 'TaskPushNotificationConfig'
  | 'GetTaskPushNotificationConfigRequest'
  | 'ListTaskPushNotificationConfigRequest'
  | 'ListTaskPushNotificationConfigResponse'
  | 'DeleteTaskPushNotificationConfigRequest'
  | 'GetAgentCardRequest'
  | 'AgentCard'
  | 'Empty';

interface MethodBase {
  /** RPC name, e.g. `SendMessage`. */
  readonly name: string;
  /** HTTP/2 `:path`: `/lf.a2a.v1.A2AService/SendMessage`. */
  readonly path: string;
  readonly op: Operation;
  /** Server-streaming (the request side is always one message). */
  readonly streaming: boolean;
  /** The JSON-RPC method the guardian sees: the v1.0 name (v1.0 service), the v0.3 name (v0.3 service). */
  readonly jsonRpcMethod: string;
}

export type GrpcMethod =
  | (MethodBase & { readonly version: '1.0'; readonly request: GrpcMessageType; readonly response: GrpcMessageType })
  | (MethodBase & { readonly version: '0.3'; readonly request: GrpcV03MessageType; readonly response: GrpcV03MessageType });

/** RPC -> request and response message types (a2a.proto, v1.0). */
const MESSAGES: Readonly<Record<string, readonly [GrpcMessageType, GrpcMessageType]>> = {
  SendMessage: ['SendMessageRequest', 'SendMessageResponse'],
  SendStreamingMessage: ['SendMessageRequest', 'StreamResponse'],
  GetTask: ['GetTaskRequest', 'Task'],
  ListTasks: ['ListTasksRequest', 'ListTasksResponse'],
  CancelTask: ['CancelTaskRequest', 'Task'],
  SubscribeToTask: ['SubscribeToTaskRequest', 'StreamResponse'],
  CreateTaskPushNotificationConfig: ['TaskPushNotificationConfig', 'TaskPushNotificationConfig'],
  GetTaskPushNotificationConfig: ['GetTaskPushNotificationConfigRequest', 'TaskPushNotificationConfig'],
  ListTaskPushNotificationConfigs: ['ListTaskPushNotificationConfigsRequest', 'ListTaskPushNotificationConfigsResponse'],
  DeleteTaskPushNotificationConfig: ['DeleteTaskPushNotificationConfigRequest', 'Empty'],
  GetExtendedAgentCard: ['GetExtendedAgentCardRequest', 'AgentCard'],
};

/** v0.3 RPC -> the AOS method of its operation, and its request and response message types (a2a.proto, v0.3). */
const MESSAGES_V03: Readonly<Record<string, readonly [string, GrpcV03MessageType, GrpcV03MessageType]>> = {
  SendMessage: ['message/send', 'SendMessageRequest', 'SendMessageResponse'],
  SendStreamingMessage: ['message/stream', 'SendMessageRequest', 'StreamResponse'],
  GetTask: ['tasks/get', 'GetTaskRequest', 'Task'],
  CancelTask: ['tasks/cancel', 'CancelTaskRequest', 'Task'],
  TaskSubscription: ['tasks/resubscribe', 'TaskSubscriptionRequest', 'StreamResponse'],
  CreateTaskPushNotificationConfig: ['tasks/pushNotificationConfig/set', 'CreateTaskPushNotificationConfigRequest', 'TaskPushNotificationConfig'],
  GetTaskPushNotificationConfig: ['tasks/pushNotificationConfig/get', 'GetTaskPushNotificationConfigRequest', 'TaskPushNotificationConfig'],
  ListTaskPushNotificationConfig: ['tasks/pushNotificationConfig/list', 'ListTaskPushNotificationConfigRequest', 'ListTaskPushNotificationConfigResponse'],
  DeleteTaskPushNotificationConfig: ['tasks/pushNotificationConfig/delete', 'DeleteTaskPushNotificationConfigRequest', 'Empty'],
  // v0.3's GetAgentCard answers the card a JSON-RPC caller gets with agent/getAuthenticatedExtendedCard (REST: GET /v1/card).
  GetAgentCard: ['agent/getAuthenticatedExtendedCard', 'GetAgentCardRequest', 'AgentCard'],
};

function buildTable(): ReadonlyMap<string, GrpcMethod> {
  const table = new Map<string, GrpcMethod>();
  for (const [name, [request, response]] of Object.entries(MESSAGES)) {
    const op = operationForMethod(name);
    if (op === undefined || op.v1Method !== name) throw new Error(`gRPC method ${name} has no row in the operation table`);
    const path = `/${GRPC_SERVICE}/${name}`;
    table.set(path, { version: '1.0', name, path, op, streaming: op.streaming, jsonRpcMethod: name, request, response });
  }
  for (const [name, [aosMethod, request, response]] of Object.entries(MESSAGES_V03)) {
    const op = OPERATIONS.find((o) => o.aosMethod === aosMethod);
    if (op === undefined || op.v03Method === null) throw new Error(`v0.3 gRPC method ${name} has no v0.3 row in the operation table`);
    const path = `/${GRPC_SERVICE_V03}/${name}`;
    table.set(path, { version: '0.3', name, path, op, streaming: op.streaming, jsonRpcMethod: op.v03Method, request, response });
  }
  return table;
}

export const GRPC_METHODS: ReadonlyMap<string, GrpcMethod> = buildTable();

/**
 * The method for an exact `:path`, or undefined. No folding of case, slashes or encodings: a gRPC
 * server routes on the exact string, so anything else is a method the proxy does not know (refused).
 */
export function grpcMethodForPath(path: string): GrpcMethod | undefined {
  return GRPC_METHODS.get(path);
}

/**
 * Does the path end in a method of an A2A gRPC service (`.../lf.a2a.v1.A2AService/SendMessage`: any
 * package, any letter case, under any prefix; v1.0 and v0.3 method names)? gRPC-Web, Connect and Twirp
 * carry gRPC calls over HTTP at such paths, in bodies the HTTP binding does not read as A2A: the HTTP
 * port refuses them, under PASSTHROUGH_PATHS and NON_A2A=forward too (calls the guardian would never
 * see). A path where the service is not followed by an A2A method (an agent's `/A2AService/jsonrpc`
 * endpoint) is an ordinary path.
 */
export function looksLikeGrpc(segments: readonly string[]): boolean {
  const n = segments.length;
  if (n < 2) return false;
  // routeFold: a router comparing with Unicode case folding reads `A2Aſervice` (U+017F) as the service.
  return GRPC_METHOD_NAMES.has(routeFold(segments[n - 1] as string)) && routeFold(segments[n - 2] as string).endsWith(SERVICE_SUFFIX);
}

const SERVICE_SUFFIX = 'a2aservice';
/** The RPC names of the v1.0 service and of v0.3's `a2a.v1.A2AService`, lower-cased. */
const GRPC_METHOD_NAMES: ReadonlySet<string> = new Set([...Object.keys(MESSAGES), ...Object.keys(MESSAGES_V03)].map((m) => m.toLowerCase()));
