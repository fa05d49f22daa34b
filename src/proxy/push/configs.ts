/**
 * Where webhook configs sit in A2A requests and answers, and their rewrite (pure). A push config is
 * any object with a string `url` among the push members of a call: the whole params of a push-config
 * set/create (v1.0 flat, v0.3 `pushNotificationConfig`, v0.3 REST `config.pushNotificationConfig`,
 * snake_case spellings alike), and `configuration` of message/send and message/stream (never the
 * message: a v1.0 file part has a `url` too).
 */
import type { Operation } from '../../a2a/operations';
import { isObject, type JsonObject } from '../../core/json';

/** The caller's own webhook: what the proxy delivers to and shows back. */
export interface CallerWebhook {
  readonly url: string;
  readonly token?: string;
  readonly authentication?: JsonObject;
}

/** Operations whose requests carry webhook configs. */
const CARRIERS: ReadonlySet<string> = new Set(['tasks/pushNotificationConfig/set', 'message/send', 'message/stream']);

const CONFIG_MEMBERS = ['configuration'];

/** The roots of a request's params where webhook configs may be: empty when the operation carries none. */
function roots(op: Operation, params: JsonObject): JsonObject[] {
  if (!CARRIERS.has(op.aosMethod)) return [];
  if (op.aosMethod === 'tasks/pushNotificationConfig/set') return [params];
  return CONFIG_MEMBERS.map((k) => params[k]).filter(isObject);
}

/** Every object with a string `url` at or below `node` (depth-bounded: canonical JSON is already bounded). */
function urlObjects(node: unknown, out: JsonObject[], depth = 0): JsonObject[] {
  if (depth > 16) return out;
  if (Array.isArray(node)) {
    for (const x of node) urlObjects(x, out, depth + 1);
    return out;
  }
  if (!isObject(node)) return out;
  if (typeof node.url === 'string') out.push(node);
  for (const [k, v] of Object.entries(node)) if (k !== 'url' && typeof v === 'object' && v !== null) urlObjects(v, out, depth + 1);
  return out;
}

/**
 * Why a request's webhook configs cannot be relayed: a `url` that is not a string (the SDK reads
 * `["http://..."]` as that URL, so it would go to the agent unrewritten), or configs nested deeper
 * than the walk reads. undefined: every config is readable.
 */
export function unreadableWebhook(op: Operation, request: JsonObject): string | undefined {
  const params = request.params;
  if (!isObject(params)) return undefined;
  const check = (node: unknown, depth: number): string | undefined => {
    if (depth > 16) return 'push notification config nested too deep';
    if (Array.isArray(node)) {
      for (const x of node) {
        const why = check(x, depth + 1);
        if (why !== undefined) return why;
      }
      return undefined;
    }
    if (!isObject(node)) return undefined;
    if (Object.hasOwn(node, 'url') && typeof node.url !== 'string') return 'push notification config url must be a string';
    for (const [k, v] of Object.entries(node)) {
      if (k === 'url' || typeof v !== 'object' || v === null) continue;
      const why = check(v, depth + 1);
      if (why !== undefined) return why;
    }
    return undefined;
  };
  for (const r of roots(op, params)) {
    const why = check(r, 0);
    if (why !== undefined) return why;
  }
  return undefined;
}

/** The webhook configs a request carries (the caller's, as the guardian judged them). */
export function webhooksOf(op: Operation, request: JsonObject): CallerWebhook[] {
  const params = request.params;
  if (!isObject(params)) return [];
  return roots(op, params)
    .flatMap((r) => urlObjects(r, []))
    .map(callerWebhook);
}

function callerWebhook(c: JsonObject): CallerWebhook {
  const token = typeof c.token === 'string' && c.token !== '' ? c.token : undefined;
  const authentication = isObject(c.authentication) ? c.authentication : undefined;
  return { url: c.url as string, ...(token === undefined ? {} : { token }), ...(authentication === undefined ? {} : { authentication }) };
}

/**
 * The request with every webhook config pointed at the relay: `relayUrl(i)` for the i-th config of
 * webhooksOf, whose token becomes `relayToken(i)` (the agent sends it back) and whose authentication
 * is dropped (the caller's credentials are for its webhook, which the proxy reaches, not the agent).
 */
export function rewriteRequest(op: Operation, request: JsonObject, relay: (i: number) => { url: string; token: string }): JsonObject {
  const copy = structuredClone(request);
  const params = copy.params;
  if (!isObject(params)) return copy;
  let i = 0;
  for (const r of roots(op, params)) {
    for (const c of urlObjects(r, [])) {
      const to = relay(i++);
      c.url = to.url;
      c.token = to.token;
      delete c.authentication;
    }
  }
  return copy;
}

/**
 * The relay URLs in an answer (a push config set/get/list result, in any binding's form), each with
 * the object holding it: the caller's webhook goes back in their place.
 */
export function relayedConfigs(answer: unknown, isRelayUrl: (url: string) => boolean): JsonObject[] {
  return urlObjects(answer, []).filter((c) => isRelayUrl(c.url as string));
}

/** Put the caller's webhook back into one config object of an answer (mutates the answer copy). */
export function restoreConfig(c: JsonObject, hook: CallerWebhook): void {
  c.url = hook.url;
  if (hook.token === undefined) delete c.token;
  else c.token = hook.token;
  if (hook.authentication === undefined) delete c.authentication;
  else c.authentication = hook.authentication;
}

/** The task a delivered object names: v1.0 StreamResponse (`task`, `statusUpdate`, ...) or a bare v0.3 event. */
export function deliveredTaskId(body: unknown): string | undefined {
  if (!isObject(body)) return undefined;
  const wrapped = ['task', 'statusUpdate', 'artifactUpdate', 'message', 'status_update', 'artifact_update'].filter((k) => k in body);
  if (wrapped.length > 1) return undefined;
  if (wrapped.length === 1) {
    const k = wrapped[0] as string;
    const inner = body[k];
    if (!isObject(inner)) return undefined;
    return str(k === 'task' ? inner.id : (inner.taskId ?? inner.task_id));
  }
  switch (body.kind) {
    case 'task':
      return str(body.id);
    case 'status-update':
    case 'artifact-update':
    case 'message':
      return str(body.taskId);
    default:
      return undefined;
  }
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
