/**
 * THE A2A operation table. Every other module asks this one what an operation is called on the
 * wire (v0.3 / v1.0 JSON-RPC, v1.0 / v0.3 REST), whether it streams and which guardian decisions
 * its hook accepts. The AOS envelope `method` is always `aosMethod` (the v0.3-style name).
 */
export type Decision = 'allow' | 'deny' | 'modify';

export type HttpVerb = 'GET' | 'POST' | 'DELETE';

/** A REST route template: `{name}` segments capture path parameters; `:verb` suffixes are literal. */
export interface RestRoute {
  readonly verb: HttpVerb;
  readonly path: string;
}

export interface Operation {
  /** AOS envelope method (v0.3 JSON-RPC name, or the v0.3-style name when v0.3 has none). */
  readonly aosMethod: string;
  /** v0.3 JSON-RPC method, or null when v0.3 has no JSON-RPC method for it. */
  readonly v03Method: string | null;
  /** v1.0 JSON-RPC method. */
  readonly v1Method: string;
  readonly streaming: boolean;
  /** Decisions the hook accepts; anything else from the guardian is "no valid answer". */
  readonly decisions: readonly Decision[];
  /** Where the task id and the message live in JSON-RPC `params` (documentation for guardian authors). */
  readonly taskIdAt: string | null;
  readonly messageAt: string | null;
  /** v1.0 REST routes (each may also carry a leading `/{tenant}` segment). */
  readonly restV1: readonly RestRoute[];
  /** v0.3 REST routes (under `/v1`). */
  readonly restV03: readonly RestRoute[];
  /** The result is an AgentCard whose URLs must be rewritten to the proxy. */
  readonly returnsCard: boolean;
}

const ALL: readonly Decision[] = ['allow', 'deny', 'modify'];
const NO_MODIFY: readonly Decision[] = ['allow', 'deny'];

export const OPERATIONS: readonly Operation[] = [
  {
    aosMethod: 'message/send',
    v03Method: 'message/send',
    v1Method: 'SendMessage',
    streaming: false,
    decisions: ALL,
    taskIdAt: 'params.message.taskId',
    messageAt: 'params.message',
    returnsCard: false,
    restV1: [{ verb: 'POST', path: '/message:send' }],
    restV03: [{ verb: 'POST', path: '/v1/message:send' }],
  },
  {
    aosMethod: 'message/stream',
    v03Method: 'message/stream',
    v1Method: 'SendStreamingMessage',
    streaming: true,
    decisions: ALL,
    taskIdAt: 'params.message.taskId',
    messageAt: 'params.message',
    returnsCard: false,
    restV1: [{ verb: 'POST', path: '/message:stream' }],
    restV03: [{ verb: 'POST', path: '/v1/message:stream' }],
  },
  {
    aosMethod: 'tasks/get',
    v03Method: 'tasks/get',
    v1Method: 'GetTask',
    streaming: false,
    decisions: ALL,
    taskIdAt: 'params.id',
    messageAt: null,
    returnsCard: false,
    restV1: [{ verb: 'GET', path: '/tasks/{id}' }],
    restV03: [{ verb: 'GET', path: '/v1/tasks/{id}' }],
  },
  {
    aosMethod: 'tasks/list',
    v03Method: null,
    v1Method: 'ListTasks',
    streaming: false,
    decisions: ALL,
    taskIdAt: null,
    messageAt: null,
    returnsCard: false,
    // v0.3 lists GET /v1/tasks in its spec table but not in its proto, and the SDK's v0.3 router has no such
    // route: there `/v1/tasks` falls through to the v1.0 table as ListTasks for tenant "v1".
    restV1: [{ verb: 'GET', path: '/tasks' }],
    restV03: [],
  },
  {
    aosMethod: 'tasks/cancel',
    v03Method: 'tasks/cancel',
    v1Method: 'CancelTask',
    streaming: false,
    decisions: NO_MODIFY,
    taskIdAt: 'params.id',
    messageAt: null,
    returnsCard: false,
    restV1: [{ verb: 'POST', path: '/tasks/{id}:cancel' }],
    restV03: [{ verb: 'POST', path: '/v1/tasks/{id}:cancel' }],
  },
  {
    aosMethod: 'tasks/resubscribe',
    v03Method: 'tasks/resubscribe',
    v1Method: 'SubscribeToTask',
    streaming: true,
    decisions: NO_MODIFY,
    taskIdAt: 'params.id',
    messageAt: null,
    returnsCard: false,
    restV1: [
      { verb: 'POST', path: '/tasks/{id}:subscribe' },
      { verb: 'GET', path: '/tasks/{id}:subscribe' },
    ],
    restV03: [
      { verb: 'GET', path: '/v1/tasks/{id}:subscribe' },
      { verb: 'POST', path: '/v1/tasks/{id}:subscribe' },
    ],
  },
  {
    aosMethod: 'tasks/pushNotificationConfig/set',
    v03Method: 'tasks/pushNotificationConfig/set',
    v1Method: 'CreateTaskPushNotificationConfig',
    streaming: false,
    decisions: ALL,
    taskIdAt: 'params.taskId',
    messageAt: null,
    returnsCard: false,
    restV1: [{ verb: 'POST', path: '/tasks/{taskId}/pushNotificationConfigs' }],
    restV03: [{ verb: 'POST', path: '/v1/tasks/{taskId}/pushNotificationConfigs' }],
  },
  {
    aosMethod: 'tasks/pushNotificationConfig/get',
    v03Method: 'tasks/pushNotificationConfig/get',
    v1Method: 'GetTaskPushNotificationConfig',
    streaming: false,
    decisions: NO_MODIFY,
    taskIdAt: 'params.taskId (v1) / params.id (v0.3)',
    messageAt: null,
    returnsCard: false,
    restV1: [{ verb: 'GET', path: '/tasks/{taskId}/pushNotificationConfigs/{id}' }],
    restV03: [{ verb: 'GET', path: '/v1/tasks/{id}/pushNotificationConfigs/{pushNotificationConfigId}' }], // v0.3 JSON-RPC names
  },
  {
    aosMethod: 'tasks/pushNotificationConfig/list',
    v03Method: 'tasks/pushNotificationConfig/list',
    v1Method: 'ListTaskPushNotificationConfigs',
    streaming: false,
    decisions: ALL,
    taskIdAt: 'params.taskId (v1) / params.id (v0.3)',
    messageAt: null,
    returnsCard: false,
    restV1: [{ verb: 'GET', path: '/tasks/{taskId}/pushNotificationConfigs' }],
    restV03: [{ verb: 'GET', path: '/v1/tasks/{id}/pushNotificationConfigs' }],
  },
  {
    aosMethod: 'tasks/pushNotificationConfig/delete',
    v03Method: 'tasks/pushNotificationConfig/delete',
    v1Method: 'DeleteTaskPushNotificationConfig',
    streaming: false,
    decisions: ALL,
    taskIdAt: 'params.taskId (v1) / params.id (v0.3)',
    messageAt: null,
    returnsCard: false,
    restV1: [{ verb: 'DELETE', path: '/tasks/{taskId}/pushNotificationConfigs/{id}' }],
    restV03: [{ verb: 'DELETE', path: '/v1/tasks/{id}/pushNotificationConfigs/{pushNotificationConfigId}' }],
  },
  {
    aosMethod: 'agent/getAuthenticatedExtendedCard',
    v03Method: 'agent/getAuthenticatedExtendedCard',
    v1Method: 'GetExtendedAgentCard',
    streaming: false,
    decisions: ALL,
    taskIdAt: null,
    messageAt: null,
    returnsCard: true,
    restV1: [{ verb: 'GET', path: '/extendedAgentCard' }],
    restV03: [{ verb: 'GET', path: '/v1/card' }],
  },
];

const byJsonRpcName = new Map<string, Operation>();
const byLooseName = new Map<string, Operation>();
for (const op of OPERATIONS) {
  for (const name of [op.v03Method, op.v1Method, op.aosMethod]) {
    if (name === null) continue;
    byJsonRpcName.set(name, op);
    byLooseName.set(looseKey(name), op);
  }
}

/** Letter case, whitespace and separators do not make a different method to a lenient server. */
function looseKey(name: string): string {
  return name.replace(/[\s_\-/.]/g, '').toLowerCase();
}

/** The operation for an exact JSON-RPC method name (v0.3 or v1.0), or undefined. */
export function operationForMethod(method: string): Operation | undefined {
  return byJsonRpcName.get(method);
}

/**
 * An operation whose name matches only after folding case, whitespace and separators
 * (`Message/Send`, ` message/send`, `sendmessage`). Such requests are refused: a lenient
 * upstream could run them without a guardian decision.
 */
export function operationForLooseMethod(method: string): Operation | undefined {
  return byLooseName.get(looseKey(method));
}

export function acceptsDecision(op: Operation, decision: Decision): boolean {
  return op.decisions.includes(decision);
}
