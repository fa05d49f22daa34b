/**
 * The member names of A2A objects, in each spelling an A2A decoder reads: v1.0 protobuf JSON names
 * and proto names (the SDK's ts-proto `fromJSON` reads both), and v0.3 JSON names. A decoder that
 * matches names another way takes other spellings for them too: Go's encoding/json (the Go A2A SDKs)
 * any letter case, others `_` or `-` folded. `TaskId` is nothing to the guardian, the proxy and a
 * JavaScript agent, and the task id to a Go one; so a member that folds onto an A2A name without
 * being one of its spellings is refused wherever the proxy reads A2A objects (requests, and answers
 * it judges or binds).
 *
 * The v1.0 list is what @a2a-js/sdk's generated `fromJSON` functions read (`object.<name>` in its
 * dist/index.cjs); the v0.3 names are those of the v0.3 JSON schema that v1.0 lacks, and the proto
 * names its v0.3 server and client read (dist/compat/v0_3).
 */
import { fieldKey, findInObjects, type JsonObject } from '../core/json';

const V1_NAMES = [
  'acceptedOutputModes',
  'accepted_output_modes',
  'apiKeySecurityScheme',
  'api_key_security_scheme',
  'append',
  'artifact',
  'artifactId',
  'artifactUpdate',
  'artifact_id',
  'artifact_update',
  'artifacts',
  'authentication',
  'authorizationCode',
  'authorizationUrl',
  'authorization_code',
  'authorization_url',
  'bearerFormat',
  'bearer_format',
  'capabilities',
  'clientCredentials',
  'client_credentials',
  'configs',
  'configuration',
  'contextId',
  'context_id',
  'credentials',
  'data',
  'defaultInputModes',
  'defaultOutputModes',
  'default_input_modes',
  'default_output_modes',
  'description',
  'deviceAuthorizationUrl',
  'deviceCode',
  'device_authorization_url',
  'device_code',
  'documentationUrl',
  'documentation_url',
  'examples',
  'extendedAgentCard',
  'extended_agent_card',
  'extensions',
  'filename',
  'flows',
  'header',
  'history',
  'historyLength',
  'history_length',
  'httpAuthSecurityScheme',
  'http_auth_security_scheme',
  'iconUrl',
  'icon_url',
  'id',
  'implicit',
  'includeArtifacts',
  'include_artifacts',
  'inputModes',
  'input_modes',
  'key',
  'lastChunk',
  'last_chunk',
  'list',
  'location',
  'mediaType',
  'media_type',
  'message',
  'messageId',
  'message_id',
  'metadata',
  'mtlsSecurityScheme',
  'mtls_security_scheme',
  'name',
  'nextPageToken',
  'next_page_token',
  'oauth2MetadataUrl',
  'oauth2SecurityScheme',
  'oauth2_metadata_url',
  'oauth2_security_scheme',
  'openIdConnectSecurityScheme',
  'openIdConnectUrl',
  'open_id_connect_security_scheme',
  'open_id_connect_url',
  'organization',
  'outputModes',
  'output_modes',
  'pageSize',
  'pageToken',
  'page_size',
  'page_token',
  'params',
  'parts',
  'password',
  'pkceRequired',
  'pkce_required',
  'protected',
  'protocolBinding',
  'protocolVersion',
  'protocol_binding',
  'protocol_version',
  'provider',
  'pushNotifications',
  'push_notifications',
  'raw',
  'referenceTaskIds',
  'reference_task_ids',
  'refreshUrl',
  'refresh_url',
  'required',
  'returnImmediately',
  'return_immediately',
  'role',
  'scheme',
  'schemes',
  'scopes',
  'securityRequirements',
  'securitySchemes',
  'security_requirements',
  'security_schemes',
  'signature',
  'signatures',
  'skills',
  'state',
  'status',
  'statusTimestampAfter',
  'statusUpdate',
  'status_timestamp_after',
  'status_update',
  'streaming',
  'supportedInterfaces',
  'supported_interfaces',
  'tags',
  'task',
  'taskId',
  'taskPushNotificationConfig',
  'task_id',
  'task_push_notification_config',
  'tasks',
  'tenant',
  'text',
  'timestamp',
  'token',
  'tokenUrl',
  'token_url',
  'totalSize',
  'total_size',
  'uri',
  'url',
  'value',
  'version',
];
const V03_NAMES = [
  'kind',
  'file',
  'bytes',
  'mimeType',
  'final',
  'blocking',
  'pushNotificationConfig',
  'pushNotificationConfigId',
  'request',
  'content',
  'additionalInterfaces',
  'preferredTransport',
  'transport',
  'supportsAuthenticatedExtendedCard',
  'msg',
  'stateTransitionHistory',
  // Proto names of the v0.3 gRPC messages, which the SDK's v0.3 REST server reads too.
  'additional_interfaces',
  'fileWithBytes',
  'fileWithUri',
  'file_with_bytes',
  'file_with_uri',
  'mime_type',
  'preferred_transport',
  'pushNotification',
  'push_notification',
  'push_notification_config',
  'security',
  'supports_authenticated_extended_card',
  'update',
  'state_transition_history',
  'push_notification_config_id',
];
/** The JSON-RPC envelope's own members. */
const RPC_NAMES = ['jsonrpc', 'method', 'result', 'error', 'code'];

/** Every spelling of every A2A member name (the table; test/helpers/classify-reference reads it too). */
export const A2A_MEMBER_NAMES: readonly string[] = [...V1_NAMES, ...V03_NAMES, ...RPC_NAMES];
const EXACT: ReadonlySet<string> = new Set(A2A_MEMBER_NAMES);
/** The members of an error object or a JSON-RPC error answer, folded. */
const ERROR_MEMBERS: ReadonlySet<string> = new Set(['code', 'message', 'details', 'data', 'status', 'error', 'jsonrpc', 'id']);
const FOLDED: ReadonlySet<string> = new Set([...EXACT].map(fieldKey));

/**
 * Free-form members: their keys are the sender's, not A2A fields. Struct values (metadata, a data
 * part's data, an extension's params, a signature's header) and the card's maps keyed by name
 * (security schemes, the schemes a requirement lists, OAuth scopes).
 */
export const A2A_FREE_FORM_MEMBERS: readonly string[] = [
  'metadata',
  'data',
  'params',
  'header',
  'securitySchemes',
  'security_schemes',
  'schemes',
  'scopes',
  'security',
];
const FREE_FORM: ReadonlySet<string> = new Set(A2A_FREE_FORM_MEMBERS);

/**
 * The first member name in `root` that some decoder reads as an A2A member but that is not one of
 * its spellings (`TaskId`, `Tasks`, `CONTEXT_ID`), or undefined. Free-form members are not looked
 * into. Walks without recursion (hostile nesting cannot blow the stack).
 */
export function misspelledField(root: unknown): string | undefined {
  return findInObjects(root, misspelledKey, isFreeForm);
}

const isFreeForm = (k: string): boolean => FREE_FORM.has(k);

function misspelledKey(_o: JsonObject, keys: string[]): string | undefined {
  for (const k of keys) if (!EXACT.has(k) && !FREE_FORM.has(k) && FOLDED.has(fieldKey(k))) return k;
  return undefined;
}

/**
 * Why an agent's answer cannot be judged as A2A, when it has such a member (for the log and FAIL_MODE).
 * An error object (the `error` member) is not looked into: its details are the agent's words, not A2A
 * objects. Everything beside it is (`{"error": ..., "Result": ...}` is a result to a Go client).
 * Callers pass 2xx answers only (a gateway's 403 `{"Message": ...}` reaches the caller as it is); an
 * `event: error` event's data (`isError`) that is a bare error object (`{code, message}` in any
 * spelling, a JSON-RPC error answer) is not looked into. One with any other member (`Task`, `Result`)
 * is: a client that ignores event names acts on it.
 */
export function misspelledAnswer(body: unknown, isError = false): string | undefined {
  if (isError && typeof body === 'object' && body !== null && Object.keys(body).every((k) => ERROR_MEMBERS.has(fieldKey(k)))) return undefined;
  let rest = body;
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && Object.hasOwn(body, 'error')) {
    const { error: _error, ...others } = body as JsonObject;
    rest = others;
  }
  const name = misspelledField(rest);
  return name === undefined ? undefined : `agent answer has a member A2A does not spell so (${name.slice(0, 32)})`;
}
