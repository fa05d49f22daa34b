/**
 * What an A2A call means, reduced to the facts a guardian decides on: the operation, the tenant,
 * and per operation the task id, config id, context id, message parts and webhook URL/token.
 *
 * Two sides are read:
 * - a call the SDK request handler acted on (handler-recorder.ts), in the SDK's core v1 shapes;
 * - a payload a guardian approved (the A2A JSON-RPC request of an AOS envelope), read the way the
 *   SDK reads it. v1.0 method names are proto-JSON (camelCase or snake_case field names, values
 *   coerced with String() as ts-proto does); v0.3 method names are the v0.3 JSON-RPC schema, and,
 *   where the proxy hands the guardian a v0.3 REST body under the same name, the v0.3 proto-JSON
 *   reading (`message.content[]`, `request`, `name`).
 *
 * When an approved payload has two readings that differ (a `taskId` and a `task_id` with other
 * values, `parts` and `content` with other texts, ...), it is ambiguous: the guardian cannot know
 * which one the agent will act on, so no handler call matches it.
 */
import type { HandlerCall } from './handler-recorder';

export type OpKey = 'send' | 'stream' | 'get' | 'list' | 'cancel' | 'subscribe' | 'pushSet' | 'pushGet' | 'pushList' | 'pushDelete' | 'extCard';

export interface Facts {
  /** An OpKey, or `other:<name>` for a handler method this table does not know. */
  readonly op: string;
  /** The tenant the call is scoped to ('' = default). */
  readonly tenant: string;
  readonly fields: Readonly<Record<string, string>>;
}

export interface HandlerFacts extends Facts {
  /** The request object's own `tenant` field (the scope is the context's tenant). */
  readonly paramsTenant: string;
}

export type ApprovedReading = { readonly kind: 'facts'; readonly facts: Facts } | { readonly kind: 'ambiguous'; readonly op: OpKey; readonly why: string };

export const HANDLER_OPS: Readonly<Record<string, OpKey>> = {
  sendMessage: 'send',
  sendMessageStream: 'stream',
  getTask: 'get',
  listTasks: 'list',
  cancelTask: 'cancel',
  resubscribe: 'subscribe',
  createTaskPushNotificationConfig: 'pushSet',
  getTaskPushNotificationConfig: 'pushGet',
  listTaskPushNotificationConfigs: 'pushList',
  deleteTaskPushNotificationConfig: 'pushDelete',
  getAuthenticatedExtendedAgentCard: 'extCard',
};

export const V1_METHODS: Readonly<Record<string, OpKey>> = {
  SendMessage: 'send',
  SendStreamingMessage: 'stream',
  GetTask: 'get',
  ListTasks: 'list',
  CancelTask: 'cancel',
  SubscribeToTask: 'subscribe',
  CreateTaskPushNotificationConfig: 'pushSet',
  GetTaskPushNotificationConfig: 'pushGet',
  ListTaskPushNotificationConfigs: 'pushList',
  DeleteTaskPushNotificationConfig: 'pushDelete',
  GetExtendedAgentCard: 'extCard',
};

export const V03_METHODS: Readonly<Record<string, OpKey>> = {
  'message/send': 'send',
  'message/stream': 'stream',
  'tasks/get': 'get',
  'tasks/list': 'list',
  'tasks/cancel': 'cancel',
  'tasks/resubscribe': 'subscribe',
  'tasks/pushNotificationConfig/set': 'pushSet',
  'tasks/pushNotificationConfig/get': 'pushGet',
  'tasks/pushNotificationConfig/list': 'pushList',
  'tasks/pushNotificationConfig/delete': 'pushDelete',
  'agent/getAuthenticatedExtendedCard': 'extCard',
};

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);
const obj = (x: unknown): Obj => (isObj(x) ? x : {});
/** ts-proto's isSet. */
const isSet = (v: unknown): boolean => v !== null && v !== undefined;
/** A value as a comparable string: strings as they are, anything else as JSON ('' when absent). */
const key = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));
/** ts-proto's String() coercion of a set field, '' when unset. */
const str = (v: unknown): string => (isSet(v) ? String(v) : '');
const b64 = (s: string): string => Buffer.from(s, 'base64').toString('base64');

/* ------------------------------------------------------------------------------------------ */
/* Handler side                                                                               */
/* ------------------------------------------------------------------------------------------ */

function corePartKey(p: unknown): string {
  const c = obj(obj(p)['content']);
  const v = c['value'];
  switch (c['$case']) {
    case 'text':
      return `text:${key(v)}`;
    case 'url':
      return `url:${key(v)}`;
    case 'data':
      return `data:${JSON.stringify(v ?? null)}`;
    case 'raw': {
      const buf = isObj(v) && Array.isArray(v['data']) ? Buffer.from(v['data'] as number[]) : Buffer.alloc(0);
      return `raw:${buf.toString('base64')}`;
    }
    default:
      return 'none:';
  }
}

export function handlerFacts(call: HandlerCall): HandlerFacts {
  const p = obj(call.params);
  const op = HANDLER_OPS[call.method] ?? `other:${call.method}`;
  const fields: Record<string, string> = {};
  switch (op) {
    case 'send':
    case 'stream': {
      const m = obj(p['message']);
      fields['taskId'] = key(m['taskId']);
      fields['contextId'] = key(m['contextId']);
      fields['parts'] = JSON.stringify((Array.isArray(m['parts']) ? m['parts'] : []).map(corePartKey));
      fields['pushUrl'] = key(obj(obj(p['configuration'])['taskPushNotificationConfig'])['url']);
      break;
    }
    case 'get':
    case 'cancel':
    case 'subscribe':
      fields['taskId'] = key(p['id']);
      break;
    case 'pushSet':
      fields['taskId'] = key(p['taskId']);
      fields['configId'] = key(p['id']);
      fields['url'] = key(p['url']);
      fields['token'] = key(p['token']);
      break;
    case 'pushGet':
    case 'pushDelete':
      fields['taskId'] = key(p['taskId']);
      fields['configId'] = key(p['id']);
      break;
    case 'pushList':
      fields['taskId'] = key(p['taskId']);
      break;
    case 'list':
      fields['contextId'] = key(p['contextId']);
      break;
    default:
      break;
  }
  return { op, tenant: call.contextTenant ?? '', paramsTenant: key(p['tenant']), fields };
}

/* ------------------------------------------------------------------------------------------ */
/* Approved side                                                                              */
/* ------------------------------------------------------------------------------------------ */

type Pref = 'camel' | 'snake';
/** A proto-JSON field under either spelling, in the order a reader prefers. */
const pick = (o: Obj, camel: string, snake: string, pref: Pref): unknown => {
  const [a, b] = pref === 'camel' ? [camel, snake] : [snake, camel];
  return isSet(o[a]) ? o[a] : o[b];
};

/** v1 proto-JSON Part (Part.fromJSON: text, then raw, url, data). */
function v1PartKey(p: unknown): string {
  const o = obj(p);
  if (isSet(o['text'])) return `text:${String(o['text'])}`;
  if (isSet(o['raw'])) return `raw:${b64(String(o['raw']))}`;
  if (isSet(o['url'])) return `url:${String(o['url'])}`;
  if (isSet(o['data'])) return `data:${JSON.stringify(o['data'])}`;
  return 'none:';
}

function readV1(op: OpKey, p: Obj, pref: Pref): Facts {
  const f: Record<string, string> = {};
  switch (op) {
    case 'send':
    case 'stream': {
      const m = obj(p['message']);
      f['taskId'] = str(pick(m, 'taskId', 'task_id', pref));
      f['contextId'] = str(pick(m, 'contextId', 'context_id', pref));
      f['parts'] = JSON.stringify((Array.isArray(m['parts']) ? m['parts'] : []).map(v1PartKey));
      const cfg = obj(p['configuration']);
      f['pushUrl'] = str(obj(pick(cfg, 'taskPushNotificationConfig', 'task_push_notification_config', pref))['url']);
      break;
    }
    case 'get':
    case 'cancel':
    case 'subscribe':
      f['taskId'] = str(p['id']);
      break;
    case 'pushSet':
      f['taskId'] = str(pick(p, 'taskId', 'task_id', pref));
      f['configId'] = str(p['id']);
      f['url'] = str(p['url']);
      f['token'] = str(p['token']);
      break;
    case 'pushGet':
    case 'pushDelete':
      f['taskId'] = str(pick(p, 'taskId', 'task_id', pref));
      f['configId'] = str(p['id']);
      break;
    case 'pushList':
      f['taskId'] = str(pick(p, 'taskId', 'task_id', pref));
      break;
    case 'list':
      f['contextId'] = str(pick(p, 'contextId', 'context_id', pref));
      break;
    case 'extCard':
      break;
  }
  return { op, tenant: str(p['tenant']), fields: f };
}

/** v0.3 JSON-RPC part (toCorePart): by `kind`; undefined when the SDK would refuse it. */
function v03RpcPartKey(p: unknown): string | undefined {
  const o = obj(p);
  if (o['kind'] === 'text') return `text:${key(o['text'])}`;
  if (o['kind'] === 'data') return `data:${JSON.stringify(o['data'] ?? null)}`;
  if (o['kind'] === 'file') {
    const file = obj(o['file']);
    if ('bytes' in file) return `raw:${b64(String(file['bytes']))}`;
    if ('uri' in file) return `url:${key(file['uri'])}`;
  }
  return undefined;
}

/** v0.3 proto-JSON part (Part2.fromJSON: text, then file, then data). */
function v03ProtoPartKey(p: unknown): string {
  const o = obj(p);
  if (isSet(o['text'])) return `text:${String(o['text'])}`;
  if (isSet(o['file'])) {
    const file = obj(o['file']);
    const uri = pick(file, 'fileWithUri', 'file_with_uri', 'camel');
    if (isSet(uri)) return `url:${String(uri)}`;
    const bytes = pick(file, 'fileWithBytes', 'file_with_bytes', 'camel');
    if (isSet(bytes)) return `raw:${b64(String(bytes))}`;
    return 'none:';
  }
  if (isSet(o['data'])) return `data:${JSON.stringify(obj(o['data'])['data'] ?? null)}`;
  return 'none:';
}

/** The v0.3 JSON-RPC reading; undefined when the SDK would refuse the request before the handler. */
function readV03Rpc(op: OpKey, p: Obj): Facts | undefined {
  const f: Record<string, string> = {};
  switch (op) {
    case 'send':
    case 'stream': {
      const m = p['message'];
      if (!isObj(m) || typeof m['messageId'] !== 'string' || m['messageId'] === '') return undefined;
      if (m['role'] !== 'user' && m['role'] !== 'agent') return undefined;
      if (!Array.isArray(m['parts'])) return undefined;
      const parts = m['parts'].map(v03RpcPartKey);
      if (parts.some((x) => x === undefined)) return undefined;
      f['taskId'] = key(m['taskId']);
      f['contextId'] = key(m['contextId']);
      f['parts'] = JSON.stringify(parts);
      f['pushUrl'] = key(obj(obj(p['configuration'])['pushNotificationConfig'])['url']);
      break;
    }
    case 'get':
    case 'cancel':
    case 'subscribe':
      f['taskId'] = key(p['id']);
      break;
    case 'pushSet': {
      const c = p['pushNotificationConfig'];
      if (!isObj(c)) return undefined;
      f['taskId'] = key(p['taskId']);
      f['configId'] = key(c['id']);
      f['url'] = key(c['url']);
      f['token'] = key(c['token']);
      break;
    }
    case 'pushGet':
    case 'pushDelete':
      f['taskId'] = key(p['id']);
      f['configId'] = key(p['pushNotificationConfigId']);
      break;
    case 'pushList':
      f['taskId'] = key(p['id']);
      break;
    case 'list':
      f['contextId'] = key(p['contextId']);
      break;
    case 'extCard':
      break;
  }
  return { op, tenant: '', fields: f };
}

/**
 * The v0.3 REST (proto-JSON) reading of the same params, only where the payload carries that
 * binding's own fields (`content`, `request`, `name`), with either field-name spelling.
 */
function readV03Rest(op: OpKey, p: Obj, pref: Pref): Facts | undefined {
  const f: Record<string, string> = {};
  if (op === 'send' || op === 'stream') {
    const m = isSet(p['message']) ? p['message'] : p['request'];
    // That binding's reading only when its own shape is there: a message with `content`, or only a `request`.
    if (!isObj(m) || !('content' in m || !isSet(p['message']))) return undefined;
    if (str(pick(m, 'messageId', 'message_id', pref)) === '') return undefined;
    f['taskId'] = str(pick(m, 'taskId', 'task_id', pref));
    f['contextId'] = str(pick(m, 'contextId', 'context_id', pref));
    f['parts'] = JSON.stringify((Array.isArray(m['content']) ? m['content'] : []).map(v03ProtoPartKey));
    const cfg = obj(p['configuration']);
    f['pushUrl'] = str(obj(pick(cfg, 'pushNotification', 'push_notification', pref))['url']);
    return { op, tenant: '', fields: f };
  }
  if (op === 'pushSet' && 'name' in p) {
    const m = /^tasks\/([^/]+)(?:\/|$)/.exec(str(p['name']));
    const c = pick(p, 'pushNotificationConfig', 'push_notification_config', pref);
    if (m === null || !isObj(c)) return undefined;
    f['taskId'] = m[1] as string;
    f['configId'] = str(c['id']);
    f['url'] = str(c['url']);
    f['token'] = str(c['token']);
    return { op, tenant: '', fields: f };
  }
  return undefined;
}

const factsKey = (f: Facts): string => JSON.stringify([f.op, f.tenant, Object.entries(f.fields).sort()]);

/** The operation an approved A2A payload names, or undefined when it names none. */
export function approvedOp(payload: unknown): OpKey | undefined {
  const m = obj(payload)['method'];
  return typeof m === 'string' ? (V1_METHODS[m] ?? V03_METHODS[m]) : undefined;
}

/** What an approved payload means to the agent; undefined when it is not an A2A operation. */
export function approvedReading(payload: unknown): ApprovedReading | undefined {
  const req = obj(payload);
  const method = req['method'];
  if (typeof method !== 'string') return undefined;
  const p = obj(req['params']);
  const v1 = V1_METHODS[method];
  const v03 = V03_METHODS[method];
  let readings: Facts[];
  let op: OpKey;
  if (v1 !== undefined) {
    op = v1;
    readings = [readV1(v1, p, 'camel'), readV1(v1, p, 'snake')];
  } else if (v03 !== undefined) {
    op = v03;
    const rpc = readV03Rpc(v03, p);
    const rest = [readV03Rest(v03, p, 'camel'), readV03Rest(v03, p, 'snake')].filter((x): x is Facts => x !== undefined);
    readings = rpc === undefined ? rest : [rpc, ...rest];
    // Neither reading is one the SDK would accept: keep the schema reading, which then matches nothing real.
    if (readings.length === 0) readings = [{ op, tenant: '', fields: { invalid: 'v0.3 params the SDK refuses' } }];
  } else {
    return undefined;
  }
  const distinct = new Map(readings.map((r) => [factsKey(r), r]));
  if (distinct.size > 1) {
    const [a, b] = [...distinct.values()] as [Facts, Facts];
    const differ = Object.keys({ ...a.fields, ...b.fields }).filter((k) => a.fields[k] !== b.fields[k]);
    return { kind: 'ambiguous', op, why: `two readings differ in ${differ.join(', ')}` };
  }
  return { kind: 'facts', facts: readings[0] as Facts };
}

/** Fields in which a handler call differs from an approved reading ([] = the same call). */
export function differences(h: HandlerFacts, a: ApprovedReading): string[] {
  if (a.kind === 'ambiguous') return h.op === a.op ? [`ambiguous approval (${a.why})`] : ['op'];
  const f = a.facts;
  if (h.op !== f.op) return ['op'];
  const out: string[] = [];
  if (h.tenant !== f.tenant) out.push('tenant');
  if (h.paramsTenant !== '' && h.paramsTenant !== f.tenant) out.push('params.tenant');
  for (const k of new Set([...Object.keys(h.fields), ...Object.keys(f.fields)])) {
    if (h.fields[k] !== f.fields[k]) out.push(k);
  }
  return out;
}
