/**
 * A2A v0.3 gRPC messages (`a2a.v1`, as the SDK's generated code reads them) <-> the v0.3 JSON-RPC
 * form the guardian sees: `params` of a request (message/send, tasks/get {id}, ...) and `result`
 * of an answer (a Task with its `kind`, a bare list of push configs, null for a delete). Resource
 * names become ids (`tasks/{id}` -> `id`, `tasks/{id}/pushNotificationConfigs/{cid}` -> `id`,
 * `pushNotificationConfigId`).
 *
 * Both ways are exact, or they throw: a message whose JSON form cannot carry all of it (a name that
 * is not `tasks/{id}`, a part without content, a role or state v0.3 JSON has no word for, a next-page
 * token a v0.3 list answer cannot hold) has no form to judge, and a JSON form that does not come back
 * as itself (a member v0.3 protobuf does not have, `kind` naming another type, bytes that are not
 * canonical base64) would be read one way by the guardian and another by the agent. Pure.
 */
import { isObject, type JsonObject } from '../../../core/json';
import type { GrpcV03MessageType } from './methods';

/** A decoded message as the generated code holds it (ts-proto: oneofs as `{ $case, value }`, Structs as plain objects). */
type Proto = Record<string, unknown>;

class FormError extends Error {}

function fail(why: string): never {
  throw new FormError(why);
}

/* ---------------------------------------------------------------------------------------------- */
/* Reading JSON (the guardian's form) into the generated code's objects                           */
/* ---------------------------------------------------------------------------------------------- */

function obj(v: unknown, what: string): JsonObject {
  if (!isObject(v)) fail(`${what} is not an object`);
  return v;
}

function optObj(v: unknown, what: string): JsonObject | undefined {
  return v === undefined || v === null ? undefined : obj(v, what);
}

function str(v: unknown, what: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') fail(`${what} is not a string`);
  return v;
}

function bool(v: unknown, what: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') fail(`${what} is not a boolean`);
  return v;
}

function int(v: unknown, what: string): number {
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) fail(`${what} is not a 32-bit integer`);
  return v;
}

function list(v: unknown, what: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(`${what} is not a list`);
  return v;
}

function strings(v: unknown, what: string): string[] {
  return list(v, what).map((x, i) => str(x, `${what}[${i}]`));
}

function stringMap(v: unknown, what: string): Record<string, string> {
  const o = optObj(v, what) ?? {};
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, str(x, `${what}.${k}`)]));
}

/** A google.protobuf.Struct member (metadata, data): any JSON object, or absent. */
function struct(v: unknown, what: string): Proto | undefined {
  return optObj(v, what);
}

/* ---------------------------------------------------------------------------------------------- */
/* Names and enums                                                                                */
/* ---------------------------------------------------------------------------------------------- */

const TASK_NAME = /^tasks\/([^/]+)$/;
const CONFIG_NAME = /^tasks\/([^/]+)\/pushNotificationConfigs\/([^/]+)$/;

function taskOfName(name: unknown, what: string): string {
  const m = typeof name === 'string' ? TASK_NAME.exec(name) : null;
  if (m === null) fail(`${what} is not tasks/{id}`);
  return m[1] as string;
}

function configOfName(name: unknown): { task: string; config: string } {
  const m = typeof name === 'string' ? CONFIG_NAME.exec(name) : null;
  if (m === null) fail('name is not tasks/{id}/pushNotificationConfigs/{configId}');
  return { task: m[1] as string, config: m[2] as string };
}

/** An id as a resource name segment: one segment, never empty. */
function segment(v: unknown, what: string): string {
  const s = str(v, what);
  if (s === '' || s.includes('/')) fail(`${what} is empty or holds a "/"`);
  return s;
}

const ROLES: Readonly<Record<number, string>> = { 1: 'user', 2: 'agent' };
/** v0.3 JSON's task states; TASK_STATE_UNSPECIFIED is its `unknown`. */
const STATES: Readonly<Record<number, string>> = {
  0: 'unknown',
  1: 'submitted',
  2: 'working',
  3: 'completed',
  4: 'failed',
  5: 'canceled',
  6: 'input-required',
  7: 'rejected',
  8: 'auth-required',
};

function enumName(table: Readonly<Record<number, string>>, v: unknown, what: string): string {
  const name = typeof v === 'number' ? table[v] : undefined;
  if (name === undefined) fail(`${what} ${String(v)} has no v0.3 JSON name`);
  return name;
}

function enumNumber(table: Readonly<Record<number, string>>, v: unknown, what: string): number {
  for (const [n, name] of Object.entries(table)) if (name === v) return Number(n);
  fail(`${what} ${JSON.stringify(v)?.slice(0, 32)} is not a v0.3 value`);
}

/* ---------------------------------------------------------------------------------------------- */
/* The A2A objects, both ways                                                                     */
/* ---------------------------------------------------------------------------------------------- */

/** An optional string member: '' is absent (proto3 does not tell them apart). */
const opt = (s: unknown): string | undefined => (typeof s === 'string' && s !== '' ? s : undefined);
const optList = <T>(l: readonly T[] | undefined): readonly T[] | undefined => (l === undefined || l.length === 0 ? undefined : l);

function oneof(v: unknown): { $case: string; value: unknown } | undefined {
  return isObject(v) && typeof v.$case === 'string' ? (v as { $case: string; value: unknown }) : undefined;
}

function partToJson(p: Proto): JsonObject {
  const c = oneof(p.part);
  if (c?.$case === 'text') return { kind: 'text', text: c.value };
  if (c?.$case === 'data') {
    const d = c.value as Proto;
    return { kind: 'data', ...(d.data === undefined ? {} : { data: d.data }) };
  }
  if (c?.$case === 'file') {
    const f = c.value as Proto;
    const file = oneof(f.file);
    const mimeType = opt(f.mimeType);
    if (file?.$case === 'fileWithUri') return { kind: 'file', file: { uri: file.value, ...(mimeType === undefined ? {} : { mimeType }) } };
    if (file?.$case === 'fileWithBytes') {
      return { kind: 'file', file: { bytes: Buffer.from(file.value as Uint8Array).toString('base64'), ...(mimeType === undefined ? {} : { mimeType }) } };
    }
    fail('a file part holds neither a uri nor bytes');
  }
  fail('a part has no content');
}

function partFromJson(j: JsonObject): Proto {
  switch (j.kind) {
    case 'text':
      return { part: { $case: 'text', value: str(j.text, 'text') } };
    case 'data':
      return { part: { $case: 'data', value: { data: struct(j.data, 'data') } } };
    case 'file': {
      const f = obj(j.file, 'file');
      const mimeType = str(f.mimeType, 'mimeType');
      if (f.uri !== undefined && f.bytes !== undefined) fail('a file part holds both a uri and bytes');
      if (f.uri !== undefined) return { part: { $case: 'file', value: { file: { $case: 'fileWithUri', value: str(f.uri, 'uri') }, mimeType } } };
      const b64 = str(f.bytes, 'bytes');
      const bytes = Buffer.from(b64, 'base64');
      // One spelling per value: the guardian's text is the bytes the agent gets.
      if (bytes.toString('base64') !== b64) fail('bytes are not canonical base64');
      return { part: { $case: 'file', value: { file: { $case: 'fileWithBytes', value: bytes }, mimeType } } };
    }
    default:
      fail(`part kind ${JSON.stringify(j.kind)?.slice(0, 32)} is not text, file or data`);
  }
}

/** The parts, metadata and extensions a Message (parts in `content`) and an Artifact share. */
function contentToJson(parts: unknown, x: Proto): JsonObject {
  return { parts: (parts as Proto[]).map(partToJson), metadata: x.metadata, extensions: optList(x.extensions as string[]) };
}

function contentFromJson(j: JsonObject): { parts: Proto[]; metadata: Proto | undefined; extensions: string[] } {
  return {
    parts: list(j.parts, 'parts').map((p, i) => partFromJson(obj(p, `parts[${i}]`))),
    metadata: struct(j.metadata, 'metadata'),
    extensions: strings(j.extensions, 'extensions'),
  };
}

function messageToJson(m: Proto): JsonObject {
  return {
    kind: 'message',
    messageId: m.messageId,
    role: enumName(ROLES, m.role, 'role'),
    contextId: opt(m.contextId),
    taskId: opt(m.taskId),
    ...contentToJson(m.content, m),
  };
}

function messageFromJson(j: JsonObject): Proto {
  const { parts, ...rest } = contentFromJson(j);
  return {
    messageId: str(j.messageId, 'messageId'),
    contextId: str(j.contextId, 'contextId'),
    taskId: str(j.taskId, 'taskId'),
    role: enumNumber(ROLES, j.role, 'role'),
    content: parts,
    ...rest,
  };
}

function statusToJson(s: Proto): JsonObject {
  return {
    state: enumName(STATES, s.state, 'task state'),
    message: s.update === undefined ? undefined : messageToJson(s.update as Proto),
    timestamp: s.timestamp,
  };
}

function statusFromJson(j: JsonObject): Proto {
  const message = optObj(j.message, 'status.message');
  const timestamp = str(j.timestamp, 'timestamp');
  return {
    state: enumNumber(STATES, j.state, 'task state'),
    update: message === undefined ? undefined : messageFromJson(message),
    timestamp: timestamp === '' ? undefined : timestamp,
  };
}

function artifactToJson(a: Proto): JsonObject {
  return {
    artifactId: a.artifactId,
    name: opt(a.name),
    description: opt(a.description),
    ...contentToJson(a.parts, a),
  };
}

function artifactFromJson(j: JsonObject): Proto {
  return {
    artifactId: str(j.artifactId, 'artifactId'),
    name: str(j.name, 'name'),
    description: str(j.description, 'description'),
    ...contentFromJson(j),
  };
}

function taskToJson(t: Proto): JsonObject {
  return {
    kind: 'task',
    id: t.id,
    contextId: t.contextId,
    status: t.status === undefined ? undefined : statusToJson(t.status as Proto),
    artifacts: optList((t.artifacts as Proto[]).map(artifactToJson)),
    history: optList((t.history as Proto[]).map(messageToJson)),
    metadata: t.metadata,
  };
}

function taskFromJson(j: JsonObject): Proto {
  const status = optObj(j.status, 'status');
  return {
    id: str(j.id, 'id'),
    contextId: str(j.contextId, 'contextId'),
    status: status === undefined ? undefined : statusFromJson(status),
    artifacts: list(j.artifacts, 'artifacts').map((a, i) => artifactFromJson(obj(a, `artifacts[${i}]`))),
    history: list(j.history, 'history').map((m, i) => messageFromJson(obj(m, `history[${i}]`))),
    metadata: struct(j.metadata, 'metadata'),
  };
}

function statusUpdateToJson(e: Proto): JsonObject {
  return {
    kind: 'status-update',
    taskId: e.taskId,
    contextId: e.contextId,
    status: e.status === undefined ? undefined : statusToJson(e.status as Proto),
    final: e.final,
    metadata: e.metadata,
  };
}

function statusUpdateFromJson(j: JsonObject): Proto {
  const status = optObj(j.status, 'status');
  return {
    taskId: str(j.taskId, 'taskId'),
    contextId: str(j.contextId, 'contextId'),
    status: status === undefined ? undefined : statusFromJson(status),
    final: bool(j.final, 'final'),
    metadata: struct(j.metadata, 'metadata'),
  };
}

function artifactUpdateToJson(e: Proto): JsonObject {
  return {
    kind: 'artifact-update',
    taskId: e.taskId,
    contextId: e.contextId,
    artifact: e.artifact === undefined ? undefined : artifactToJson(e.artifact as Proto),
    append: e.append,
    lastChunk: e.lastChunk,
    metadata: e.metadata,
  };
}

function artifactUpdateFromJson(j: JsonObject): Proto {
  const artifact = optObj(j.artifact, 'artifact');
  return {
    taskId: str(j.taskId, 'taskId'),
    contextId: str(j.contextId, 'contextId'),
    artifact: artifact === undefined ? undefined : artifactFromJson(artifact),
    append: bool(j.append, 'append'),
    lastChunk: bool(j.lastChunk, 'lastChunk'),
    metadata: struct(j.metadata, 'metadata'),
  };
}

/** A Task, Message or update event, told apart by `kind` (JSON) or the oneof case (protobuf). */
const EVENT_CASES: Readonly<Record<string, readonly [string, (p: Proto) => JsonObject, (j: JsonObject) => Proto]>> = {
  task: ['task', taskToJson, taskFromJson],
  msg: ['message', messageToJson, messageFromJson],
  statusUpdate: ['status-update', statusUpdateToJson, statusUpdateFromJson],
  artifactUpdate: ['artifact-update', artifactUpdateToJson, artifactUpdateFromJson],
};

function eventToJson(r: Proto, cases: readonly string[]): JsonObject {
  const c = oneof(r.payload);
  const row = c !== undefined && cases.includes(c.$case) ? EVENT_CASES[c.$case] : undefined;
  if (c === undefined || row === undefined) fail('the answer holds no task, message or event');
  return row[1](c.value as Proto);
}

function eventFromJson(j: JsonObject, cases: readonly string[]): Proto {
  for (const $case of cases) {
    const row = EVENT_CASES[$case] as (typeof EVENT_CASES)[string];
    if (row[0] === j.kind) return { payload: { $case, value: row[2](j) } };
  }
  fail(`result kind ${JSON.stringify(j.kind)?.slice(0, 32)} is not one of this answer's`);
}

function pushConfigToJson(c: Proto): JsonObject {
  const auth = c.authentication as Proto | undefined;
  return {
    id: opt(c.id),
    url: c.url,
    token: opt(c.token),
    authentication: auth === undefined ? undefined : { schemes: auth.schemes, credentials: opt(auth.credentials) },
  };
}

function pushConfigFromJson(j: JsonObject): Proto {
  const auth = optObj(j.authentication, 'authentication');
  return {
    id: str(j.id, 'id'),
    url: str(j.url, 'url'),
    token: str(j.token, 'token'),
    authentication: auth === undefined ? undefined : { schemes: strings(auth.schemes, 'schemes'), credentials: str(auth.credentials, 'credentials') },
  };
}

/** The resource name a config of `task` with config id `id` has when the SDKs write it. */
const configName = (task: string, id: string): string => `tasks/${task}/pushNotificationConfigs/${id}`;

/**
 * TaskPushNotificationConfig {name, pushNotificationConfig} -> {taskId, pushNotificationConfig}; the
 * name is carried as well when it is not the one taskId and the config's id make.
 */
function taskPushConfigToJson(c: Proto): JsonObject {
  const name = c.name as string;
  const task = /^tasks\/([^/]+)(?:\/|$)/.exec(name)?.[1];
  if (task === undefined) fail('name is not tasks/{id}/...');
  const config = c.pushNotificationConfig as Proto | undefined;
  const canonical = configName(task, String(config?.id ?? ''));
  return { taskId: task, pushNotificationConfig: config === undefined ? undefined : pushConfigToJson(config), name: name === canonical ? undefined : name };
}

function taskPushConfigFromJson(j: JsonObject): Proto {
  const task = segment(j.taskId, 'taskId');
  const config = optObj(j.pushNotificationConfig, 'pushNotificationConfig');
  const pushNotificationConfig = config === undefined ? undefined : pushConfigFromJson(config);
  const name = j.name === undefined ? configName(task, String(pushNotificationConfig?.id ?? '')) : str(j.name, 'name');
  return { name, pushNotificationConfig };
}

/* ---------------------------------------------------------------------------------------------- */
/* Agent cards                                                                                    */
/* ---------------------------------------------------------------------------------------------- */

function securityToJson(s: Proto): JsonObject {
  const schemes = s.schemes as Record<string, Proto>;
  return Object.fromEntries(Object.entries(schemes).map(([k, v]) => [k, v.list]));
}

function securityFromJson(j: JsonObject): Proto {
  return { schemes: Object.fromEntries(Object.entries(j).map(([k, v]) => [k, { list: strings(v, `security.${k}`) }])) };
}

const FLOWS: Readonly<Record<string, readonly string[]>> = {
  authorizationCode: ['authorizationUrl', 'tokenUrl'],
  clientCredentials: ['tokenUrl'],
  implicit: ['authorizationUrl'],
  password: ['tokenUrl'],
};

function flowsToJson(f: Proto): JsonObject {
  const c = oneof(f.flow);
  if (c === undefined) return {};
  const v = c.value as Proto;
  const urls = FLOWS[c.$case] ?? fail(`OAuth flow ${c.$case}`);
  return { [c.$case]: { ...Object.fromEntries(urls.map((u) => [u, v[u]])), refreshUrl: opt(v.refreshUrl), scopes: v.scopes } };
}

function flowsFromJson(j: JsonObject): Proto {
  const keys = Object.keys(j);
  if (keys.length === 0) return { flow: undefined };
  const $case = keys[0] as string;
  const urls = FLOWS[$case];
  if (keys.length > 1 || urls === undefined) fail('flows holds other than one OAuth flow');
  const v = obj(j[$case], $case);
  return {
    flow: {
      $case,
      value: { ...Object.fromEntries(urls.map((u) => [u, str(v[u], u)])), refreshUrl: str(v.refreshUrl, 'refreshUrl'), scopes: stringMap(v.scopes, 'scopes') },
    },
  };
}

function schemeToJson(s: Proto): JsonObject {
  const c = oneof(s.scheme);
  const v = (c?.value ?? {}) as Proto;
  const description = opt(v.description);
  switch (c?.$case) {
    case 'apiKeySecurityScheme':
      return { type: 'apiKey', name: v.name, in: v.location, description };
    case 'httpAuthSecurityScheme':
      return { type: 'http', scheme: v.scheme, bearerFormat: opt(v.bearerFormat), description };
    case 'mtlsSecurityScheme':
      return { type: 'mutualTLS', description };
    case 'oauth2SecurityScheme':
      return {
        type: 'oauth2',
        description,
        flows: v.flows === undefined ? undefined : flowsToJson(v.flows as Proto),
        oauth2MetadataUrl: opt(v.oauth2MetadataUrl),
      };
    case 'openIdConnectSecurityScheme':
      return { type: 'openIdConnect', description, openIdConnectUrl: v.openIdConnectUrl };
    default:
      fail('a security scheme has no type');
  }
}

function schemeFromJson(j: JsonObject): Proto {
  const description = str(j.description, 'description');
  const scheme = (value: Proto, $case: string): Proto => ({ scheme: { $case, value: { description, ...value } } });
  switch (j.type) {
    case 'apiKey':
      return scheme({ name: str(j.name, 'name'), location: str(j.in, 'in') }, 'apiKeySecurityScheme');
    case 'http':
      return scheme({ scheme: str(j.scheme, 'scheme'), bearerFormat: str(j.bearerFormat, 'bearerFormat') }, 'httpAuthSecurityScheme');
    case 'mutualTLS':
      return scheme({}, 'mtlsSecurityScheme');
    case 'oauth2': {
      const flows = optObj(j.flows, 'flows');
      return scheme(
        { flows: flows === undefined ? undefined : flowsFromJson(flows), oauth2MetadataUrl: str(j.oauth2MetadataUrl, 'oauth2MetadataUrl') },
        'oauth2SecurityScheme',
      );
    }
    case 'openIdConnect':
      return scheme({ openIdConnectUrl: str(j.openIdConnectUrl, 'openIdConnectUrl') }, 'openIdConnectSecurityScheme');
    default:
      fail(`security scheme type ${JSON.stringify(j.type)?.slice(0, 32)}`);
  }
}

function cardToJson(c: Proto): JsonObject {
  const caps = c.capabilities as Proto | undefined;
  const provider = c.provider as Proto | undefined;
  return {
    protocolVersion: c.protocolVersion,
    name: c.name,
    description: c.description,
    url: c.url,
    preferredTransport: opt(c.preferredTransport),
    additionalInterfaces: optList((c.additionalInterfaces as Proto[]).map((i) => ({ url: i.url, transport: i.transport }))),
    provider: provider === undefined ? undefined : { organization: provider.organization, url: provider.url },
    version: c.version,
    documentationUrl: opt(c.documentationUrl),
    capabilities:
      caps === undefined
        ? undefined
        : {
            streaming: caps.streaming,
            pushNotifications: caps.pushNotifications,
            extensions: optList(
              (caps.extensions as Proto[]).map((e) => ({ uri: e.uri, description: opt(e.description), required: e.required, params: e.params })),
            ),
          },
    securitySchemes:
      Object.keys(c.securitySchemes as Proto).length === 0
        ? undefined
        : Object.fromEntries(Object.entries(c.securitySchemes as Record<string, Proto>).map(([k, v]) => [k, schemeToJson(v)])),
    security: optList((c.security as Proto[]).map(securityToJson)),
    defaultInputModes: c.defaultInputModes,
    defaultOutputModes: c.defaultOutputModes,
    skills: (c.skills as Proto[]).map((s) => ({
      id: s.id,
      name: s.name,
      description: s.description,
      tags: s.tags,
      examples: optList(s.examples as string[]),
      inputModes: optList(s.inputModes as string[]),
      outputModes: optList(s.outputModes as string[]),
      security: optList((s.security as Proto[]).map(securityToJson)),
    })),
    supportsAuthenticatedExtendedCard: c.supportsAuthenticatedExtendedCard,
    signatures: optList((c.signatures as Proto[]).map((s) => ({ protected: s.protected, signature: s.signature, header: s.header }))),
  };
}

function cardFromJson(j: JsonObject): Proto {
  const caps = optObj(j.capabilities, 'capabilities');
  const provider = optObj(j.provider, 'provider');
  const each = <T>(v: unknown, what: string, f: (o: JsonObject) => T): T[] => list(v, what).map((x, i) => f(obj(x, `${what}[${i}]`)));
  return {
    protocolVersion: str(j.protocolVersion, 'protocolVersion'),
    name: str(j.name, 'name'),
    description: str(j.description, 'description'),
    url: str(j.url, 'url'),
    preferredTransport: str(j.preferredTransport, 'preferredTransport'),
    additionalInterfaces: each(j.additionalInterfaces, 'additionalInterfaces', (i) => ({ url: str(i.url, 'url'), transport: str(i.transport, 'transport') })),
    provider: provider === undefined ? undefined : { organization: str(provider.organization, 'organization'), url: str(provider.url, 'url') },
    version: str(j.version, 'version'),
    documentationUrl: str(j.documentationUrl, 'documentationUrl'),
    capabilities:
      caps === undefined
        ? undefined
        : {
            streaming: bool(caps.streaming, 'streaming'),
            pushNotifications: bool(caps.pushNotifications, 'pushNotifications'),
            extensions: each(caps.extensions, 'extensions', (e) => ({
              uri: str(e.uri, 'uri'),
              description: str(e.description, 'description'),
              required: bool(e.required, 'required'),
              params: struct(e.params, 'params'),
            })),
          },
    securitySchemes: Object.fromEntries(Object.entries(optObj(j.securitySchemes, 'securitySchemes') ?? {}).map(([k, v]) => [k, schemeFromJson(obj(v, k))])),
    security: each(j.security, 'security', securityFromJson),
    defaultInputModes: strings(j.defaultInputModes, 'defaultInputModes'),
    defaultOutputModes: strings(j.defaultOutputModes, 'defaultOutputModes'),
    skills: each(j.skills, 'skills', (s) => ({
      id: str(s.id, 'id'),
      name: str(s.name, 'name'),
      description: str(s.description, 'description'),
      tags: strings(s.tags, 'tags'),
      examples: strings(s.examples, 'examples'),
      inputModes: strings(s.inputModes, 'inputModes'),
      outputModes: strings(s.outputModes, 'outputModes'),
      security: each(s.security, 'security', securityFromJson),
    })),
    supportsAuthenticatedExtendedCard: bool(j.supportsAuthenticatedExtendedCard, 'supportsAuthenticatedExtendedCard'),
    signatures: each(j.signatures, 'signatures', (s) => ({
      protected: str(s.protected, 'protected'),
      signature: str(s.signature, 'signature'),
      header: struct(s.header, 'header'),
    })),
  };
}

/* ---------------------------------------------------------------------------------------------- */
/* Requests and answers by message type                                                           */
/* ---------------------------------------------------------------------------------------------- */

interface Form {
  toJson(p: Proto): unknown;
  fromJson(j: unknown): Proto;
}

const ofObject =
  (f: (j: JsonObject) => Proto, what: string) =>
  (j: unknown): Proto =>
    f(obj(j, what));

/** One v0.3 message type <-> its v0.3 JSON-RPC form (request params or answer result). */
const FORMS: Readonly<Record<GrpcV03MessageType, Form>> = {
  SendMessageRequest: {
    toJson: (r) => {
      const c = r.configuration as Proto | undefined;
      return {
        message: r.request === undefined ? undefined : messageToJson(r.request as Proto),
        configuration:
          c === undefined
            ? undefined
            : {
                acceptedOutputModes: optList(c.acceptedOutputModes as string[]),
                pushNotificationConfig: c.pushNotification === undefined ? undefined : pushConfigToJson(c.pushNotification as Proto),
                historyLength: c.historyLength === 0 ? undefined : c.historyLength,
                // Always written: an absent `blocking` is not false to every v0.3 JSON-RPC reader.
                blocking: c.blocking,
              },
        metadata: r.metadata,
      };
    },
    fromJson: ofObject((j) => {
      const message = optObj(j.message, 'message');
      const c = optObj(j.configuration, 'configuration');
      const push = optObj(c?.pushNotificationConfig, 'pushNotificationConfig');
      return {
        request: message === undefined ? undefined : messageFromJson(message),
        configuration:
          c === undefined
            ? undefined
            : {
                acceptedOutputModes: strings(c.acceptedOutputModes, 'acceptedOutputModes'),
                pushNotification: push === undefined ? undefined : pushConfigFromJson(push),
                historyLength: int(c.historyLength, 'historyLength'),
                blocking: bool(c.blocking, 'blocking'),
              },
        metadata: struct(j.metadata, 'metadata'),
      };
    }, 'params'),
  },
  SendMessageResponse: { toJson: (r) => eventToJson(r, ['task', 'msg']), fromJson: ofObject((j) => eventFromJson(j, ['task', 'msg']), 'result') },
  StreamResponse: {
    toJson: (r) => eventToJson(r, ['task', 'msg', 'statusUpdate', 'artifactUpdate']),
    fromJson: ofObject((j) => eventFromJson(j, ['task', 'msg', 'statusUpdate', 'artifactUpdate']), 'result'),
  },
  GetTaskRequest: {
    toJson: (r) => ({ id: taskOfName(r.name, 'name'), historyLength: r.historyLength === 0 ? undefined : r.historyLength }),
    fromJson: ofObject((j) => ({ name: `tasks/${segment(j.id, 'id')}`, historyLength: int(j.historyLength, 'historyLength') }), 'params'),
  },
  Task: { toJson: taskToJson, fromJson: ofObject(taskFromJson, 'result') },
  CancelTaskRequest: { toJson: (r) => ({ id: taskOfName(r.name, 'name') }), fromJson: ofObject((j) => ({ name: `tasks/${segment(j.id, 'id')}` }), 'params') },
  TaskSubscriptionRequest: {
    toJson: (r) => ({ id: taskOfName(r.name, 'name') }),
    fromJson: ofObject((j) => ({ name: `tasks/${segment(j.id, 'id')}` }), 'params'),
  },
  CreateTaskPushNotificationConfigRequest: {
    toJson: (r) => {
      const task = taskOfName(r.parent, 'parent');
      if (r.config === undefined) fail('config is missing');
      const config = taskPushConfigToJson(r.config as Proto);
      const pushId = String((config.pushNotificationConfig as JsonObject | undefined)?.id ?? '');
      // The config's own name may name another task than `parent`: shown (and checked) as `name`.
      const name = config.name ?? (config.taskId === task ? undefined : configName(config.taskId as string, pushId));
      return { taskId: task, pushNotificationConfig: config.pushNotificationConfig, configId: r.configId === pushId ? undefined : r.configId, name };
    },
    fromJson: ofObject((j) => {
      const task = segment(j.taskId, 'taskId');
      const config = taskPushConfigFromJson({
        taskId: task,
        pushNotificationConfig: j.pushNotificationConfig,
        ...(j.name === undefined ? {} : { name: j.name }),
      });
      const pushId = String((config.pushNotificationConfig as Proto | undefined)?.id ?? '');
      return { parent: `tasks/${task}`, configId: j.configId === undefined ? pushId : str(j.configId, 'configId'), config };
    }, 'params'),
  },
  TaskPushNotificationConfig: { toJson: taskPushConfigToJson, fromJson: ofObject(taskPushConfigFromJson, 'result') },
  GetTaskPushNotificationConfigRequest: {
    toJson: (r) => {
      const n = configOfName(r.name);
      return { id: n.task, pushNotificationConfigId: n.config };
    },
    fromJson: ofObject((j) => ({ name: configName(segment(j.id, 'id'), segment(j.pushNotificationConfigId, 'pushNotificationConfigId')) }), 'params'),
  },
  DeleteTaskPushNotificationConfigRequest: {
    toJson: (r) => {
      const n = configOfName(r.name);
      return { id: n.task, pushNotificationConfigId: n.config };
    },
    fromJson: ofObject((j) => ({ name: configName(segment(j.id, 'id'), segment(j.pushNotificationConfigId, 'pushNotificationConfigId')) }), 'params'),
  },
  ListTaskPushNotificationConfigRequest: {
    // Paging is not in v0.3 JSON-RPC: shown under the names the other lists use, when the caller sets it.
    toJson: (r) => ({ id: taskOfName(r.parent, 'parent'), pageSize: r.pageSize === 0 ? undefined : r.pageSize, pageToken: opt(r.pageToken) }),
    fromJson: ofObject(
      (j) => ({ parent: `tasks/${segment(j.id, 'id')}`, pageSize: int(j.pageSize, 'pageSize'), pageToken: str(j.pageToken, 'pageToken') }),
      'params',
    ),
  },
  ListTaskPushNotificationConfigResponse: {
    toJson: (r) => {
      // v0.3 JSON-RPC answers a bare list: a next-page token has no place in it (and would go unsealed).
      if (r.nextPageToken !== '') fail('a v0.3 push config list answer with a next-page token has no JSON-RPC form');
      return (r.configs as Proto[]).map(taskPushConfigToJson);
    },
    fromJson: (j) => ({ configs: list(j, 'result').map((c, i) => taskPushConfigFromJson(obj(c, `result[${i}]`))), nextPageToken: '' }),
  },
  GetAgentCardRequest: { toJson: () => ({}), fromJson: ofObject(() => ({}), 'params') },
  AgentCard: { toJson: cardToJson, fromJson: ofObject(cardFromJson, 'result') },
  // A delete answers null in v0.3 JSON-RPC.
  Empty: {
    toJson: () => null,
    fromJson: (j) => {
      if (j !== null && !(isObject(j) && Object.keys(j).length === 0)) fail('a delete answers null');
      return {};
    },
  },
};

/* ---------------------------------------------------------------------------------------------- */
/* Exactness                                                                                      */
/* ---------------------------------------------------------------------------------------------- */

/**
 * JSON as compared: members that are absent, null, '' or [] are one (proto3 writes none of them),
 * members in any order. Anything else must be the same value.
 */
function normalized(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalized);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort()) {
    const x = v[k];
    if (x === undefined || x === null || x === '' || (Array.isArray(x) && x.length === 0)) continue;
    out[k] = normalized(x);
  }
  return out;
}

/** Two v0.3 JSON forms say the same (see `normalized`). */
export function sameV03Json(a: unknown, b: unknown): boolean {
  return JSON.stringify(normalized(a)) === JSON.stringify(normalized(b));
}

/** Whether a JSON value holds a null anywhere inside it. */
function holdsNull(v: unknown): boolean {
  if (v === null) return true;
  if (Array.isArray(v)) return v.some(holdsNull);
  return isObject(v) && Object.values(v).some(holdsNull);
}

/**
 * The JSON form of a decoded v0.3 message (throws when it has none). Plain JSON: undefined members dropped.
 * A null inside it (a Struct's NULL_VALUE in metadata or data) has no one meaning: the v0.3 SDK for
 * JavaScript (@a2a-js/sdk 0.3.x) reads it as 0, other readers as null.
 */
export function v03ToJson(type: GrpcV03MessageType, message: unknown): unknown {
  const json = FORMS[type].toJson(message as Proto);
  if (json === null) return null;
  const plain: unknown = JSON.parse(JSON.stringify(json));
  if (holdsNull(plain)) fail('a null value (a Struct NULL_VALUE, or a number JSON cannot hold) is read as 0 by some v0.3 readers');
  return plain;
}

/**
 * The generated code's object for a JSON form, which must be exactly what that object's own JSON form
 * is: a member the message cannot hold, or a value spelled another way, throws.
 */
export function v03FromJson(type: GrpcV03MessageType, json: unknown): unknown {
  const message = FORMS[type].fromJson(json);
  let again: unknown;
  try {
    again = v03ToJson(type, message);
  } catch (err) {
    fail(`it has no v0.3 protobuf form: ${(err as Error).message}`);
  }
  if (!sameV03Json(again, json)) fail(`it is not the v0.3 JSON-RPC form of ${type} (a member v0.3 protobuf does not hold, or a value spelled another way)`);
  return message;
}
