/**
 * Which tasks and contexts an A2A call names, and which ones an answer creates. Pure; reads the
 * canonical JSON-RPC request the guardian sees (REST calls arrive already mapped by a2a/rest.ts)
 * and the agent's answers in every wire shape: v1.0 and v0.3, JSON-RPC and REST, unary results
 * and stream events.
 *
 * Ids are read the way the SDK reads them, so nothing the agent acts on escapes the check: every
 * spelling its parser accepts (`taskId` and `task_id`), and any JSON value turned into text as
 * `String()` does (`["t-1"]` is the task `t-1` to ts-proto's `fromJSON`). An empty id is unset.
 */
import type { Codec } from '../a2a/binding';
import type { Operation } from '../a2a/operations';
import { isObject, type JsonObject } from '../core/json';

export interface TaskRefs {
  readonly tasks: readonly string[];
  readonly contexts: readonly string[];
}

export const NO_REFS: TaskRefs = Object.freeze({ tasks: Object.freeze([]), contexts: Object.freeze([]) });

/** An id as the agent's parser reads it, or undefined when unset. */
function idText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  const s = typeof v === 'string' ? v : String(v);
  return s === '' ? undefined : s;
}

/** Values of one field under each spelling given (`taskId`, `task_id`). */
function ids(obj: JsonObject, ...names: string[]): string[] {
  const out: string[] = [];
  for (const n of names) {
    const s = idText(obj[n]);
    if (s !== undefined) out.push(s);
  }
  return out;
}

/** Collects ids without duplicates, in first-seen order. */
class Refs {
  private readonly t = new Set<string>();
  private readonly c = new Set<string>();
  task(...v: string[]): void {
    for (const x of v) this.t.add(x);
  }
  context(...v: string[]): void {
    for (const x of v) this.c.add(x);
  }
  done(): TaskRefs {
    return this.t.size === 0 && this.c.size === 0 ? NO_REFS : { tasks: [...this.t], contexts: [...this.c] };
  }
}

// A v0.3 push-config resource name, `tasks/{taskId}/pushNotificationConfigs/...`: the SDK's v0.3 REST router reads the task from it.
const TASK_NAME = /^tasks\/([^/]+)(?:\/|$)/;

/** The task of a v0.3 resource name (`tasks/{taskId}/...`), or undefined. */
function taskOfName(name: unknown): string | undefined {
  const m = typeof name === 'string' ? TASK_NAME.exec(name) : null;
  return m === null || m[1] === undefined || m[1] === '' ? undefined : m[1];
}

function messageRefs(m: unknown, into: Refs): void {
  if (!isObject(m)) return;
  into.task(...ids(m, 'taskId', 'task_id'));
  into.context(...ids(m, 'contextId', 'context_id'));
  for (const key of ['referenceTaskIds', 'reference_task_ids']) {
    const list = m[key];
    if (Array.isArray(list))
      for (const x of list) {
        const s = idText(x);
        if (s !== undefined) into.task(s);
      }
    else {
      const s = idText(list);
      if (s !== undefined) into.task(s);
    }
  }
}

/**
 * The tasks and contexts a request names (those whose owner must be the caller). `request` is the
 * JSON-RPC request (REST: its JSON-RPC equivalent); its method tells v1.0 from v0.3 shapes.
 */
export function namedByRequest(op: Operation, request: JsonObject): TaskRefs {
  const params = request.params;
  if (!isObject(params)) return NO_REFS;
  const refs = new Refs();
  const v1 = request.method === op.v1Method;
  switch (op.aosMethod) {
    case 'message/send':
    case 'message/stream': {
      // `request` is the v0.3 proto's field name for the message (its JSON name is `message`).
      messageRefs(params.message, refs);
      messageRefs(params.request, refs);
      const conf = params.configuration;
      if (isObject(conf)) {
        for (const push of [conf.taskPushNotificationConfig, conf.task_push_notification_config]) {
          if (isObject(push)) refs.task(...ids(push, 'taskId', 'task_id'));
        }
      }
      break;
    }
    case 'tasks/list':
      // A list filtered to another caller's context would page through that caller's tasks: refused like a message to it.
      refs.context(...ids(params, 'contextId', 'context_id'));
      break;
    case 'tasks/get':
    case 'tasks/cancel':
    case 'tasks/resubscribe':
      refs.task(...ids(params, 'id'));
      break;
    case 'tasks/pushNotificationConfig/set':
    case 'tasks/pushNotificationConfig/get':
    case 'tasks/pushNotificationConfig/list':
    case 'tasks/pushNotificationConfig/delete': {
      // v1.0: {taskId, id = config id}; v0.3: {id = task id, pushNotificationConfigId} (set: {taskId, pushNotificationConfig}).
      refs.task(...ids(params, 'taskId', 'task_id'));
      if (!v1 && op.aosMethod !== 'tasks/pushNotificationConfig/set') refs.task(...ids(params, 'id'));
      const task = taskOfName(params.name);
      if (task !== undefined) refs.task(task);
      break;
    }
    default:
      break;
  }
  return refs.done();
}

/** How to read an answer of the call's binding: the A2A object inside it (JSON-RPC `result`, the REST body itself), and back. */
export type AnswerForm = Pick<Codec, 'resultOf' | 'withResult'>;

const UPDATE_KEYS = ['statusUpdate', 'status_update', 'artifactUpdate', 'artifact_update'] as const;

/** The task and context a result, a stream event or a REST body names, in every shape. */
function resultRefs(x: unknown, into: Refs): void {
  if (!isObject(x)) return;
  // v1.0 (and v0.3 REST): one wrapper key.
  const task = x.task;
  if (isObject(task)) {
    into.task(...ids(task, 'id'));
    into.context(...ids(task, 'contextId', 'context_id'));
  }
  for (const key of ['message', 'msg']) {
    const m = x[key];
    if (isObject(m)) {
      into.task(...ids(m, 'taskId', 'task_id'));
      into.context(...ids(m, 'contextId', 'context_id'));
    }
  }
  for (const key of UPDATE_KEYS) {
    const u = x[key];
    if (isObject(u)) {
      into.task(...ids(u, 'taskId', 'task_id'));
      into.context(...ids(u, 'contextId', 'context_id'));
    }
  }
  // v0.3 JSON-RPC: the bare object, told apart by `kind`.
  switch (x.kind) {
    case 'task':
      into.task(...ids(x, 'id'));
      into.context(...ids(x, 'contextId', 'context_id'));
      break;
    case 'message':
    case 'status-update':
    case 'artifact-update':
      into.task(...ids(x, 'taskId', 'task_id'));
      into.context(...ids(x, 'contextId', 'context_id'));
      break;
    default:
      break;
  }
}

/**
 * The tasks and contexts an answer to message/send or message/stream creates (or continues): a
 * unary body, or the data of one stream event (a JSON-RPC response, or a REST StreamResponse).
 */
export function createdByAnswer(body: unknown, form: AnswerForm): TaskRefs {
  const refs = new Refs();
  resultRefs(form.resultOf(body), refs);
  return refs.done();
}

/**
 * What an answer about one task names (tasks/get, tasks/cancel: a Task; v1.0 bare, v0.3 with its
 * `kind`, REST its body): the task and its context, bound to the caller like a new task's, so an
 * agent that answers with another context cannot hand the caller a context that stays anyone's.
 */
export function namedByTaskAnswer(body: unknown, form: AnswerForm): TaskRefs {
  const refs = new Refs();
  const result = form.resultOf(body);
  resultRefs(result, refs);
  // The result is a Task whatever its `kind` says (the SDK's v1.0 client reads it without looking).
  if (isObject(result)) {
    refs.task(...ids(result, 'id'));
    refs.context(...ids(result, 'contextId', 'context_id'));
  }
  return refs.done();
}

/**
 * The tasks a push-notification-config answer names (set and get: one config; list: `configs`, or a
 * bare array in v0.3 JSON-RPC): by `taskId` (v1.0, v0.3 JSON-RPC) or by the config's resource `name`
 * (v0.3 REST, `tasks/{taskId}/pushNotificationConfigs/...`). Bound like a task answer's, so an agent
 * cannot hand the caller a config, and its webhook, of another caller's task.
 */
export function namedByPushConfigAnswer(body: unknown, form: AnswerForm): TaskRefs {
  const refs = new Refs();
  const result = form.resultOf(body);
  const configs = Array.isArray(result) ? result : isObject(result) && Array.isArray(result.configs) ? result.configs : [result];
  for (const c of configs) {
    if (!isObject(c)) continue;
    refs.task(...ids(c, 'taskId', 'task_id'));
    const task = taskOfName(c.name);
    if (task !== undefined) refs.task(task);
  }
  return refs.done();
}

/** The ids of the tasks a tasks/list answer holds (a task without a readable id is listed as undefined). */
export function listedTasks(body: unknown, form: AnswerForm): (string | undefined)[] | undefined {
  const result = form.resultOf(body);
  if (!isObject(result)) return undefined;
  const tasks = result.tasks;
  if (tasks === undefined) return [];
  if (!Array.isArray(tasks)) return undefined;
  return tasks.map((t) => (isObject(t) ? idText(t.id) : undefined));
}

/**
 * The agent's count of all tasks (`totalSize`) is not the caller's: does the answer state a total
 * other than `kept`? (A page of the caller's own tasks still carried the count of everyone's.)
 */
export function overstatesTotal(body: unknown, form: AnswerForm, kept: number): boolean {
  const result = form.resultOf(body);
  if (!isObject(result)) return false;
  return ['totalSize', 'total_size'].some((key) => key in result && Number(result[key]) !== kept);
}

/**
 * A tasks/list answer with only the tasks `keep` says yes to (by index into listedTasks). The
 * total becomes the number kept: the caller learns nothing about the tasks of others, not even
 * how many there are.
 */
export function filterListed(body: unknown, form: AnswerForm, keep: readonly boolean[]): unknown {
  const result = form.resultOf(body);
  if (!isObject(result)) return body;
  const tasks = Array.isArray(result.tasks) ? result.tasks.filter((_, i) => keep[i] === true) : [];
  const filtered: JsonObject = Array.isArray(result.tasks) ? { ...result, tasks } : { ...result };
  for (const key of ['totalSize', 'total_size']) if (key in filtered) filtered[key] = tasks.length;
  return form.withResult(body, filtered);
}

/** Operations whose calls carry a page token (`pageToken`) and whose answers the next one (`nextPageToken`). */
const PAGED: ReadonlySet<string> = new Set(['tasks/list', 'tasks/pushNotificationConfig/list']);

export const isPaged = (op: Operation): boolean => PAGED.has(op.aosMethod);

/** A page token in a request's params or an answer's result: the member and the text the agent reads there. */
export interface PageTokenAt {
  readonly key: string;
  readonly token: string;
}

function tokensIn(obj: unknown, keys: readonly string[]): PageTokenAt[] {
  if (!isObject(obj)) return [];
  const out: PageTokenAt[] = [];
  for (const key of keys) {
    const token = idText(obj[key]);
    if (token !== undefined) out.push({ key, token });
  }
  return out;
}

function withTokens(obj: JsonObject, tokens: readonly PageTokenAt[]): JsonObject {
  const out: JsonObject = { ...obj };
  for (const t of tokens) out[t.key] = t.token;
  return out;
}

const REQUEST_TOKEN_KEYS = ['pageToken', 'page_token'];
const ANSWER_TOKEN_KEYS = ['nextPageToken', 'next_page_token'];

/** The page tokens a request carries (in every spelling the SDK reads; an empty token is none). */
export function requestPageTokens(request: JsonObject): PageTokenAt[] {
  return tokensIn(request.params, REQUEST_TOKEN_KEYS);
}

/** A copy of the request with these page tokens in its params. */
export function withRequestPageTokens(request: JsonObject, tokens: readonly PageTokenAt[]): JsonObject {
  return isObject(request.params) ? { ...request, params: withTokens(request.params, tokens) } : request;
}

/** The next-page tokens of an answer (an empty token is the last page). */
export function answerPageTokens(body: unknown, form: AnswerForm): PageTokenAt[] {
  return tokensIn(form.resultOf(body), ANSWER_TOKEN_KEYS);
}

/** A copy of the answer with these next-page tokens. */
export function withAnswerPageTokens(body: unknown, form: AnswerForm, tokens: readonly PageTokenAt[]): unknown {
  const result = form.resultOf(body);
  return isObject(result) ? form.withResult(body, withTokens(result, tokens)) : body;
}
