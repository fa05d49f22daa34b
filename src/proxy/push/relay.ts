/**
 * Push deliveries through the proxy (docs/guides/push-deliveries.md):
 *
 *   caller --push config (url U, token T)--> proxy --judged, then url R/<k>, token k--> agent
 *   agent --POST R/<k> (the notification)--> relay listener --response hooks--> POST U (token T) --> caller's webhook
 *
 * - The call stage (after the request hooks approved the caller's config as sent) keeps the caller's
 *   webhook under a fresh unguessable key k (store.ts: memory, or the owner store's Redis) and gives
 *   the agent the relay URL instead. Answers that show configs (set, get, list) get the caller's own
 *   URL, token and authentication back before task ownership's and the guardian's checks see them.
 * - A delivery is accepted only for a known key and the config's task (a new task's config is pinned
 *   to the first task delivered for it, which must be the caller's when task ownership is on); it is
 *   judged as a response hook of `message/stream` (payload: a JSON-RPC response whose result is the
 *   delivered object; the caller's side carries `metadata.pushDelivery`); deny drops it, modify
 *   delivers the replacement; then it goes to the webhook (deliver.ts), retried with back-off within
 *   the caller's bounded queue. Every delivery has an audit line, counts and a span.
 */
import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../../config/config';
import type { Metrics } from '../../admin/metrics';
import type { Tracer } from '../../observe/tracing';
import type { AuditRecord } from '../../observe/audit';
import type { ChainLink } from '../../observe/decision-log';
import type { OwnerStore } from '../../ownership/store';
import { taskKey } from '../../ownership/store';
import { namedByRequest } from '../../ownership/tasks';
import { operationForMethod, type Operation } from '../../a2a/operations';
import { jsonRpcCodec } from '../../a2a/bindings';
import { HOOK_ORDER } from '../../aos/hook-points';
import { isObject, type JsonObject } from '../../core/json';
import { callerLimited, proxyError } from '../../core/errors';
import { Cancellation } from '../../core/cancel';
import { callerKey } from '../callers';
import { finishCall, openExchange, type Exchange } from '../call';
import type { HookRun, HookRunInput } from '../hooks';
import type { AnswerCheck, AnswerHook } from '../ownership';
import type { CallFlow, Stage } from '../stages';
import { END } from '../stages';
import { deliveredTaskId, relayedConfigs, restoreConfig, rewriteRequest, unreadableWebhook, webhooksOf } from './configs';
import { deliver, PinnedDispatchers, systemResolver, type DeliveryResult, type Resolver } from './deliver';
import { configName, type PushRecord, type PushStore } from './store';

export interface PushRelayDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly tracer: Tracer;
  readonly store: PushStore;
  /** Task ownership's store (a new task's config is pinned only to a task of the config's caller). */
  readonly owners?: OwnerStore | undefined;
  readonly runHooks: (input: HookRunInput) => Promise<HookRun>;
  readonly decisionLog?: ((record: AuditRecord) => ChainLink) | undefined;
  /** Host resolution at delivery time (tests inject one). */
  readonly resolve?: Resolver;
  /** First retry delay in ms (doubling). */
  readonly retryBaseMs?: number;
}

const RELAY_PATH = '/a2a-guard/push/';
const SHOWS_CONFIGS: ReadonlySet<string> = new Set([
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
]);
const CARRIES_CONFIGS: ReadonlySet<string> = new Set(['tasks/pushNotificationConfig/set', 'message/send', 'message/stream']);
const DELIVERY_TIMEOUT_MS = 10_000;
/** The largest key the relay reads from a path (keys are 43 characters). */
const KEY = /^[A-Za-z0-9_-]{43}$/;

export type PushOutcome =
  | 'delivered'
  | 'denied'
  | 'guardian_unavailable'
  | 'refused_address'
  | 'refused_key'
  | 'refused_task'
  | 'refused_body'
  | 'refused_queue'
  | 'refused_config'
  | 'failed'
  | 'retried';

export class PushRelay {
  private server: http.Server | undefined;
  private base: string | undefined;
  /** Deliveries waiting or retrying, per caller. */
  private readonly queued = new Map<string, number>();
  /** One config's deliveries go in order. */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly streamOp: Operation;
  private closed = false;
  private readonly dispatchers: PinnedDispatchers;
  /** Retries waiting out their back-off: close() wakes them, so each ends with its audit line. */
  private readonly sleepers = new Set<() => void>();

  constructor(private readonly deps: PushRelayDeps) {
    this.streamOp = operationForMethod('message/stream') as Operation;
    this.dispatchers = new PinnedDispatchers(deps.config.push.connections);
  }

  /** The URL the agent reaches the relay at (PUSH_RELAY_URL, else the listener's address). */
  get url(): string {
    if (this.base === undefined) throw new Error('push relay is not listening');
    return this.base;
  }

  async listen(): Promise<void> {
    const { config } = this.deps;
    const server = http.createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        this.deps.logger.error({ err }, 'push relay: internal error');
        if (!res.headersSent) answer(res, 500, 'internal error');
        else res.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.push.port, config.push.host, () => resolve());
    });
    this.server = server;
    const { port } = server.address() as AddressInfo;
    const host = config.push.host.includes(':') ? `[${config.push.host}]` : config.push.host === '0.0.0.0' ? '127.0.0.1' : config.push.host;
    this.base = (config.push.url?.href ?? `http://${host}:${port}/`).replace(/\/+$/, '');
    this.deps.logger.info(
      { listen: `${config.push.host}:${port}`, url: this.base },
      'push relay listening: webhooks callers configure are delivered through the proxy',
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of [...this.sleepers]) wake();
    await this.dispatchers.close();
    // Every delivery accepted and not yet sent ends now, counted and audited as not delivered.
    await Promise.allSettled([...this.chains.values()]);
    const server = this.server;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private isRelayUrl = (u: string): boolean => this.base !== undefined && u.startsWith(`${this.base}${RELAY_PATH}`);

  private keyOf(u: string): string {
    return u.slice(`${this.base as string}${RELAY_PATH}`.length);
  }

  /** The call stage: after the request hooks, the caller's webhooks are kept and the agent gets the relay's. */
  stage(): Stage<CallFlow> {
    return {
      name: 'push relay',
      run: (flow) => {
        const op = flow.ex.call.op;
        if (SHOWS_CONFIGS.has(op.aosMethod)) flow.answerHook = this.withRestore(flow.answerHook, flow.ex);
        const approved = flow.approved;
        if (approved !== undefined && op.aosMethod === 'tasks/pushNotificationConfig/delete')
          flow.answerHook = this.withForget(flow.answerHook, flow.ex, op, approved.payload);
        if (approved === undefined || !CARRIES_CONFIGS.has(op.aosMethod)) return undefined;
        // A config the walk cannot read would reach the agent unrewritten: refused, never passed.
        const unreadable = unreadableWebhook(op, approved.payload);
        if (unreadable !== undefined) {
          this.count('refused_config');
          flow.ex.log.decision = 'refused';
          flow.port.fail(proxyError('invalidParams', unreadable));
          return END;
        }
        const hooks = webhooksOf(op, approved.payload);
        if (hooks.length === 0) return undefined;
        return this.rewrite(flow, op, approved, hooks);
      },
    };
  }

  private async rewrite(
    flow: CallFlow,
    op: Operation,
    approved: NonNullable<CallFlow['approved']>,
    hooks: ReturnType<typeof webhooksOf>,
  ): Promise<typeof END | undefined> {
    const { call } = flow.ex;
    const taskId = namedByRequest(op, approved.payload).tasks[0];
    const caller = call.key;
    const keys: string[] = [];
    for (const webhook of hooks) {
      const key = randomBytes(32).toString('base64url');
      const record: PushRecord = { owner: call.owner, caller, taskId, webhook, peer: flow.ex.log.peers.server ?? call.callerPeer };
      let put;
      try {
        put = await this.deps.store.put(key, record);
      } catch (err) {
        // Without the record the agent would get the caller's webhook unjudged, or one that never delivers: refused whatever FAIL_MODE.
        this.deps.logger.warn({ err: (err as Error).message }, 'push relay: config store unavailable; push config refused');
        flow.ex.log.decision = 'refused';
        flow.port.fail(proxyError('taskStoreUnavailable', 'Push config store unavailable'));
        return END;
      }
      if (put === 'full') {
        this.count('refused_queue');
        this.deps.metrics.callerLimited.inc({ resource: 'push_configs' });
        flow.ex.log.decision = 'refused';
        flow.port.fail(
          callerLimited(
            'push configs held',
            60,
            `Too many push configs held by this caller (at most ${this.deps.config.push.configsPerCaller}); retry once some expire`,
          ),
        );
        return END;
      }
      keys.push(key);
    }
    const payload = rewriteRequest(op, approved.payload, (i) => ({ url: `${this.url}${RELAY_PATH}${keys[i] as string}`, token: keys[i] as string }));
    flow.approved = { ...approved, payload, payloadJson: JSON.stringify(payload), payloadBytes: undefined };
    this.deps.logger.info({ method: op.aosMethod, configs: keys.length }, 'push relay: webhook configs rewritten to the relay');
    return undefined;
  }

  /** Answers showing configs get the caller's own webhooks back, before task ownership and the guardian read them. */
  private withRestore(inner: AnswerHook | undefined, ex: Exchange): AnswerHook {
    const restore = async (body: unknown, ok: boolean): Promise<AnswerCheck> => {
      const first = inner?.unary === undefined ? { type: 'pass' as const } : await inner.unary(body, ok);
      if (first.type === 'refuse') return first;
      const current = first.type === 'replace' ? first.body : body;
      if (relayedConfigs(current, this.isRelayUrl).length === 0) return first;
      const copy = structuredClone(current);
      for (const c of relayedConfigs(copy, this.isRelayUrl)) {
        let rec: PushRecord | undefined;
        try {
          rec = await this.deps.store.get(this.keyOf(c.url as string));
        } catch {
          rec = undefined;
        }
        // Never the relay's key to a caller: a config whose record is gone, or another caller's, is refused.
        if (rec === undefined || rec.owner !== ex.call.owner) {
          return { type: 'refuse', error: proxyError('upstreamUnavailable', 'Agent answer names a push config the proxy cannot show') };
        }
        if (rec.taskId !== undefined && typeof c.id === 'string')
          await this.deps.store.alias(configName(rec.owner, rec.taskId, c.id), this.keyOf(c.url as string)).catch(() => undefined);
        restoreConfig(c, rec.webhook);
      }
      return { type: 'replace', body: copy };
    };
    return { ...inner, unary: restore };
  }

  /** A delete the agent answered without an error ends the config's record: no delivery for it goes through any more. */
  private withForget(inner: AnswerHook | undefined, ex: Exchange, op: Operation, request: JsonObject): AnswerHook {
    const params = isObject(request.params) ? request.params : {};
    const v1 = request.method === op.v1Method;
    const taskId = v1 ? params.taskId : params.id;
    // v0.3 without a config id names the config whose id is the task's (the SDK's default).
    const configId = v1 ? params.id : (params.pushNotificationConfigId ?? params.id);
    const forget = async (body: unknown, ok: boolean): Promise<AnswerCheck> => {
      const first = inner?.unary === undefined ? { type: 'pass' as const } : await inner.unary(body, ok);
      if (first.type === 'refuse' || !ok || (isObject(body) && 'error' in body) || typeof taskId !== 'string' || typeof configId !== 'string') return first;
      try {
        const key = await this.deps.store.named(configName(ex.call.owner, taskId, configId));
        if (key !== undefined) await this.deps.store.delete(key);
      } catch (err) {
        this.deps.logger.warn({ err: (err as Error).message }, 'push relay: config store unavailable; a deleted config keeps its record until it expires');
      }
      return first;
    };
    return { ...inner, unary: forget };
  }

  // ---- the relay listener ----

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = req.url ?? '/';
    const key = path.startsWith(RELAY_PATH) ? path.slice(RELAY_PATH.length) : '';
    if (req.method !== 'POST' || !KEY.test(key)) {
      this.count('refused_key');
      req.resume();
      return answer(res, 404, 'no such push config');
    }
    // The key first: a body is read (and held) only for a config that exists.
    let record: PushRecord | undefined;
    try {
      record = await this.deps.store.get(key);
    } catch (err) {
      this.deps.logger.warn({ err: (err as Error).message }, 'push relay: config store unavailable; delivery refused');
      req.resume();
      return answer(res, 503, 'push config store unavailable');
    }
    if (record === undefined) {
      this.count('refused_key');
      this.deps.logger.info({ outcome: 'refused_key' }, 'push relay: delivery for an unknown config refused');
      req.resume();
      return answer(res, 404, 'no such push config');
    }
    const body = await readLimited(req, this.deps.config.maxBodyBytes);
    let delivered: unknown;
    try {
      delivered = body === undefined ? undefined : JSON.parse(body.toString('utf8'));
    } catch {
      delivered = undefined;
    }
    const taskId = deliveredTaskId(delivered);
    if (!isObject(delivered) || taskId === undefined) {
      this.count('refused_body');
      return answer(res, 400, body === undefined ? 'notification too large' : 'notification is not an A2A task or event naming its task');
    }
    const forTask = await this.taskOf(key, record, taskId);
    if (forTask !== taskId) {
      this.count('refused_task');
      this.deps.logger.warn({ outcome: 'refused_task' }, 'push relay: delivery names another task than its config; refused');
      return answer(res, 403, 'notification is for another task than its push config');
    }
    await this.judgeAndQueue(req, res, key, record, taskId, delivered);
  }

  /** The config's task; a new task's config takes the first task delivered for it that its caller owns. */
  private async taskOf(key: string, record: PushRecord, taskId: string): Promise<string | undefined> {
    if (record.taskId !== undefined) return record.taskId;
    const owners = this.deps.owners;
    if (owners !== undefined) {
      // A task nobody holds yet may be the caller's own, still running (its answer binds it later); another caller's never.
      const [owner] = await owners.owners([taskKey(taskId)]);
      if (owner !== undefined && owner !== record.owner) return undefined;
    }
    return this.deps.store.pin(key, taskId);
  }

  private async judgeAndQueue(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    key: string,
    record: PushRecord,
    taskId: string,
    delivered: JsonObject,
  ): Promise<void> {
    const { config, tracer } = this.deps;
    const span = tracer.startCall(req.headers, {
      method: this.streamOp.aosMethod,
      wireMethod: 'push/delivery',
      binding: 'push',
      role: config.role,
      httpMethod: 'POST',
      path: RELAY_PATH,
      remoteAddress: req.socket.remoteAddress,
    });
    const id = `push-${randomUUID()}`;
    const peer = { ...record.peer, metadata: { ...record.peer.metadata, pushDelivery: { taskId, webhook: record.webhook.url } } };
    const ex = openExchange({
      started: performance.now(),
      codec: jsonRpcCodec,
      op: this.streamOp,
      wireMethod: 'push/delivery',
      id,
      shape: { v03: false, errorAsEvent: false },
      caller: new Cancellation(),
      identity: undefined,
      callerPeer: peer,
      owner: record.owner,
      key: callerKey(record.owner, req.socket.remoteAddress, config.perCaller.ipv6Prefix),
      span,
      remoteAddress: req.socket.remoteAddress,
    });
    const payload: JsonObject = { jsonrpc: '2.0', id, result: delivered };
    const run = await this.deps.runHooks({
      ex,
      sides: HOOK_ORDER[config.role].response,
      phase: 'response',
      payload,
      payloadJson: JSON.stringify(payload),
      reasoning: undefined,
    });
    if (run.type === 'block') {
      ex.log.decision = run.decision;
      const outcome: PushOutcome = run.decision === 'failClosed' ? 'guardian_unavailable' : 'denied';
      this.count(outcome);
      this.finish(ex, outcome);
      // Not a 2xx: the notification did not go anywhere, and the agent should not believe it did. A 4xx the SDK does not retry.
      return answer(
        res,
        run.decision === 'failClosed' ? 503 : 403,
        run.decision === 'failClosed' ? 'guardian unavailable: notification not delivered' : 'notification denied by the guardian',
      );
    }
    ex.log.decision = run.modified ? 'modify' : run.unchecked ? 'failOpen' : 'allow';
    const result = run.payload.result;
    if (!isObject(result)) {
      this.count('denied');
      ex.log.error = 'modified notification has no object result';
      this.finish(ex, 'denied');
      return answer(res, 403, 'notification replaced by nothing');
    }
    const n = this.queued.get(record.caller) ?? 0;
    if (n >= config.push.queuePerCaller) {
      this.count('refused_queue');
      ex.log.error = 'caller push queue full';
      this.finish(ex, 'refused_queue');
      res.setHeader('retry-after', '1');
      return answer(res, 429, 'push queue of this caller is full');
    }
    this.queued.set(record.caller, n + 1);
    // The proxy's serialization of what the guardian approved, never the agent's bytes.
    const json = JSON.stringify(result);
    // As the SDK's serializers label them: a bare v0.3 event (kind) is JSON, a v1.0 StreamResponse A2A JSON.
    const contentType = 'kind' in result ? 'application/json' : 'application/a2a+json';
    const prev = this.chains.get(key) ?? Promise.resolve();
    const next = prev
      .then(() => this.send(ex, record, json, contentType))
      .finally(() => {
        const left = (this.queued.get(record.caller) ?? 1) - 1;
        if (left <= 0) this.queued.delete(record.caller);
        else this.queued.set(record.caller, left);
        if (this.chains.get(key) === next) this.chains.delete(key);
      });
    this.chains.set(key, next);
    answer(res, 202, 'accepted for delivery');
  }

  /** Deliver with retries; the exchange's audit line says how it ended. */
  private async send(ex: Exchange, record: PushRecord, json: string, contentType: string): Promise<void> {
    const { config, logger } = this.deps;
    const resolve = this.deps.resolve ?? systemResolver;
    const base = this.deps.retryBaseMs ?? 500;
    let url: URL | undefined;
    try {
      url = new URL(record.webhook.url);
    } catch {
      url = undefined;
    }
    let result: DeliveryResult = url === undefined ? { type: 'refused', why: 'webhook URL does not parse' } : SHUT_DOWN;
    for (let attempt = 0; attempt <= config.push.retries && !this.closed; attempt++) {
      if (attempt > 0) {
        this.count('retried');
        await this.backOff(base * 2 ** (attempt - 1));
        // Closed while waiting: no delivery after close, and the audit line says why.
        if (this.closed) {
          result = { ...SHUT_DOWN, why: `${SHUT_DOWN.why}; last attempt: ${result.why}` };
          break;
        }
      }
      if (url === undefined) break;
      const upSpan = ex.call.span.upstream('POST', url);
      ex.log.upstreamSentAt ??= performance.now();
      result = await deliver(record.webhook, json, contentType, {
        allowPrivate: config.push.allowPrivate,
        resolve,
        timeoutMs: DELIVERY_TIMEOUT_MS,
        dispatchers: this.dispatchers,
        caller: record.caller,
      });
      upSpan.end(
        result.type === 'delivered' ? result.status : result.type === 'failed' ? result.status : undefined,
        result.type === 'delivered' ? undefined : result.why,
      );
      if (result.type !== 'failed' || !result.retry) break;
    }
    ex.log.upstreamEndedAt = performance.now();
    if (result.type === 'delivered') {
      ex.log.upstreamStatus = result.status;
      this.count('delivered');
      this.finish(ex, 'delivered');
      return;
    }
    ex.log.error = result.why;
    if (result.type === 'failed' && result.status !== undefined) ex.log.upstreamStatus = result.status;
    const outcome: PushOutcome = result.type === 'refused' ? 'refused_address' : 'failed';
    this.count(outcome);
    logger.warn({ outcome, why: result.why }, result.type === 'refused' ? 'push relay: webhook refused at delivery' : 'push relay: webhook delivery failed');
    this.finish(ex, outcome);
  }

  /** A back-off wait that close() ends early. */
  private backOff(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.sleepers.add(wake);
    });
  }

  private finish(ex: Exchange, outcome: PushOutcome): void {
    if (outcome !== 'delivered' && outcome !== 'denied' && outcome !== 'guardian_unavailable') ex.log.outcome = 'upstream_error';
    finishCall({ config: this.deps.config, logger: this.deps.logger, metrics: this.deps.metrics, decisionLog: this.deps.decisionLog }, ex, true);
  }

  private count(outcome: PushOutcome): void {
    this.deps.metrics.pushDeliveries.inc({ outcome });
  }
}

const SHUT_DOWN = { type: 'failed', why: 'proxy shut down before the delivery was sent', retry: false } as const satisfies DeliveryResult;

function answer(res: http.ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ error: { code: status, message } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The request body, or undefined past `max` bytes (the rest is drained, not held). */
function readLimited(req: http.IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n > max) over = true;
      if (!over) chunks.push(c);
    });
    req.on('end', () => resolve(over ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
