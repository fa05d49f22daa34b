/**
 * Task ownership in the pipeline (README "Task ownership"): a task belongs to the verified caller
 * whose call created it, learned from the agent's answer before that answer is relayed.
 *
 * - Before the guardian: a call that names a task (get, cancel, resubscribe, push configs, a message
 *   continuing a task or context) must name only the caller's own tasks and contexts. Anything else
 *   is answered "task not found", exactly as the agent answers an unknown task, so a task's
 *   existence does not leak. A task id the store does not know (never seen, expired, evicted) is
 *   refused the same way: the proxy cannot show that the caller owns it. An unknown context id is
 *   a new context (clients may choose context ids), held for the caller while the call runs
 *   (provisionally: store.ts) and bound for good only by the agent's answer.
 * - Ids longer than MAX_ID_BYTES are refused as invalid parameters, and a caller holding
 *   TASK_STORE_MAX_PER_CALLER bindings has its new messages refused (-31429): no caller fills the
 *   store for others.
 * - Answers to message/send and every event of message/stream bind the tasks and contexts they
 *   name to the caller (first owner wins) before they go out.
 * - tasks/list answers keep only the caller's own tasks.
 * - Page tokens (tasks/list, push-config lists) are never relayed: the agent's next-page token goes
 *   to the caller sealed for it (ownership/page-token.ts), and a caller's page token is unsealed
 *   before the guardian and the agent see the call. One that does not open (not sealed here, for
 *   another caller, tampered, expired) is refused as an invalid parameter.
 * - The store unreachable (or slower than TASK_STORE_TIMEOUT_MS): FAIL_MODE=closed refuses the
 *   calls and answers that need it (-31504); FAIL_MODE=open passes them, logged and counted.
 */
import type { Logger } from 'pino';
import type { Metrics } from '../admin/metrics';
import type { Operation } from '../a2a/operations';
import type { JsonObject, PartialAgent } from '../aos/schemas';
import type { Owner } from '../ownership/principal';
import { PageTokens, type Opened } from '../ownership/page-token';
import { contextKey, taskKey, type OwnerStore } from '../ownership/store';
import {
  answerPageTokens,
  createdByAnswer,
  filterListed,
  isPaged,
  listedTasks,
  namedByPushConfigAnswer,
  namedByRequest,
  namedByTaskAnswer,
  overstatesTotal,
  requestPageTokens,
  withAnswerPageTokens,
  withRequestPageTokens,
  type AnswerForm,
  type PageTokenAt,
  type TaskRefs,
} from '../ownership/tasks';
import { callerLimited, proxyError, type ProxyError } from '../core/errors';
import { misspelledAnswer, misspelledField } from '../a2a/fields';
import { isObject } from '../core/json';

/** What an answer check decides: pass it on, pass this replacement body, or send this error instead. */
export type AnswerCheck =
  { readonly type: 'pass' } | { readonly type: 'replace'; readonly body: unknown } | { readonly type: 'refuse'; readonly error: ProxyError };

/** The checks the relay runs on the agent's answer to one call (responses.ts calls them). */
export interface AnswerHook {
  /** A unary answer: its parsed body (undefined when not JSON), whether the status is 2xx. */
  readonly unary?: (body: unknown, ok: boolean) => AnswerCheck | Promise<AnswerCheck>;
  /** The parsed data of one stream event, before it is written. */
  readonly event?: (data: unknown, isError?: boolean) => AnswerCheck | Promise<AnswerCheck>;
}

/**
 * Where the call stands, for the guardian and the log: it names only tasks of the caller
 * (`owned`), names none (`none`), or could not be checked (`unchecked`, FAIL_MODE=open).
 */
export type OwnershipState = 'owned' | 'none' | 'unchecked';

export type RequestVerdict =
  /** `request`: what the guardian judges and the agent receives (the caller's own, or a copy with its page token unsealed). */
  | { readonly type: 'pass'; readonly state: OwnershipState; readonly refs: TaskRefs; readonly request: JsonObject }
  | { readonly type: 'refuse'; readonly error: ProxyError };

/**
 * Who wrote the request being checked: the caller (its page tokens are sealed ones) or the guardian,
 * whose `modify` is checked again (it saw, and may keep, the agent's own tokens).
 */
export type RequestOrigin = 'caller' | 'guardian';

export interface OwnershipDeps {
  readonly store: OwnerStore;
  readonly failMode: 'closed' | 'open';
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Bindings one caller may hold (TASK_STORE_MAX_PER_CALLER); default unbounded. */
  readonly maxPerCaller?: number;
  /** How long a binding lives (TASK_OWNERSHIP_TTL_SECONDS): when a caller at its share may try again. */
  readonly ttlSeconds?: number;
  /** How long a sealed page token opens (default 24 h). */
  readonly pageTokenLifetimeSeconds?: number;
  /** How long a provisional hold lives unless renewed (default 60 s; renewed every third of it while its call runs). */
  readonly provisionalSeconds?: number;
}

const PAGE_TOKEN_LIFETIME_S = 24 * 3600;
const PROVISIONAL_S = 60;

/** The longest task or context id, in UTF-8 bytes (SDKs use UUIDs: 36). */
export const MAX_ID_BYTES = 1024;

/** Contexts one caller may hold provisionally at once on this replica (one or two per call in flight). */
const MAX_PENDING_PER_CALLER = 1024;

/** Operations whose answers bind new tasks and contexts: refused to a caller that holds its share. */
const CREATES: ReadonlySet<string> = new Set(['message/send', 'message/stream']);

const PASS: AnswerCheck = Object.freeze({ type: 'pass' });

/** The longest id echoed in a "task not found" message. */
const MAX_ECHOED_ID = 256;

/**
 * The contexts one call holds provisionally: renewed while it runs, let go when it ends (`end`, at
 * the call's end whatever its outcome; those its answer confirmed are bound already and stay).
 */
export class CallHolds {
  private readonly keys: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(
    private readonly owner: Owner,
    private readonly ownership: TaskOwnership,
  ) {}

  /** Held now (the store answered): counted for the caller until `end`. */
  add(keys: readonly string[]): void {
    this.keys.push(...keys);
    this.ownership.pendingChange(this.owner, keys.length);
    if (this.ended) return this.end();
    const every = (this.ownership.provisionalSeconds * 1000) / 3;
    this.timer ??= setInterval(() => this.ownership.renew(this.keys, this.owner), every);
    this.timer.unref();
  }

  end(): void {
    this.ended = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.keys.length === 0) return;
    const keys = this.keys.splice(0);
    this.ownership.pendingChange(this.owner, -keys.length);
    this.ownership.release(keys, this.owner);
  }
}

export class TaskOwnership {
  private readonly pageTokens: PageTokens;
  /** Per caller, the contexts its calls in flight on this replica hold provisionally. */
  private readonly pending = new Map<Owner, number>();

  constructor(private readonly deps: OwnershipDeps) {
    this.pageTokens = new PageTokens({
      secret: (refresh) => deps.store.sharedSecret(refresh),
      lifetimeSeconds: deps.pageTokenLifetimeSeconds ?? PAGE_TOKEN_LIFETIME_S,
    });
  }

  get store(): OwnerStore {
    return this.deps.store;
  }

  get provisionalSeconds(): number {
    return this.deps.provisionalSeconds ?? PROVISIONAL_S;
  }

  /** What one call of `owner` will hold provisionally; `end()` it when the call ends. */
  holdsFor(owner: Owner): CallHolds {
    return new CallHolds(owner, this);
  }

  /** @internal CallHolds' count of a caller's provisional holds. */
  pendingChange(owner: Owner, n: number): void {
    const now = (this.pending.get(owner) ?? 0) + n;
    if (now <= 0) this.pending.delete(owner);
    else this.pending.set(owner, now);
  }

  /** @internal Keep a long call's holds alive; a failure is left to the hold's TTL. */
  renew(keys: readonly string[], owner: Owner): void {
    if (keys.length > 0)
      this.deps.store
        .renew(keys, owner, this.provisionalSeconds)
        .catch((err: unknown) => this.deps.logger.debug({ err: (err as Error).message }, 'task ownership: provisional holds not renewed'));
  }

  /** @internal Let go of a call's holds; a failure is left to the hold's TTL. */
  release(keys: readonly string[], owner: Owner): void {
    this.deps.store
      .release(keys, owner)
      .catch((err: unknown) => this.deps.logger.debug({ err: (err as Error).message }, 'task ownership: provisional holds not released (they expire)'));
  }

  /**
   * Before the guardian and the agent: may `owner` make this call, and with which request (page tokens
   * unsealed)? A context nobody holds is held for the caller in `holds()` (released when the call ends;
   * without it nothing stays held: the check alone).
   */
  async checkRequest(owner: Owner, op: Operation, request: JsonObject, origin: RequestOrigin = 'caller', holds?: () => CallHolds): Promise<RequestVerdict> {
    // A member spelled another way (`TaskId`, `ID`) in a guardian's modify (classification refused the caller's; gRPC
    // decodes to the exact names): an agent decoding names case-insensitively would act on a task ownership never checked.
    const misspelled = origin === 'guardian' ? misspelledField(request.params) : undefined;
    if (misspelled !== undefined) {
      this.deps.metrics.ownershipOutcome(op.aosMethod, 'refused_misspelled');
      return { type: 'refuse', error: proxyError('invalidParams', `Member ${misspelled.slice(0, 64)} is not spelled as A2A spells it`) };
    }
    if (origin === 'caller' && isPaged(op)) {
      const opened = await this.openPageTokens(owner, op, request);
      if (opened.type === 'refuse') return opened;
      request = opened.request;
    }
    const refs = namedByRequest(op, request);
    // A message that continues no task may start one. The count is known without asking the store
    // (memory: exact; Redis: from this caller's last binding); a caller's own tasks stay open to it.
    const held = origin === 'caller' && refs.tasks.length === 0 && CREATES.has(op.aosMethod) ? this.deps.store.held(owner) : undefined;
    if (held !== undefined && held >= (this.deps.maxPerCaller ?? Infinity)) return this.overQuota(op, owner, 'bindings');
    if (refs.tasks.length === 0 && refs.contexts.length === 0) return { type: 'pass', state: 'none', refs, request };
    // Every id the caller sends may end up as a key in the store: bounded, as the agent's parser would reject nothing.
    const long = [...refs.tasks, ...refs.contexts].find((id) => id.length > MAX_ID_BYTES / 3 && Buffer.byteLength(id) > MAX_ID_BYTES);
    if (long !== undefined) {
      this.deps.metrics.ownershipOutcome(op.aosMethod, 'refused_long_id');
      return { type: 'refuse', error: proxyError('invalidParams', `Task or context id longer than ${MAX_ID_BYTES} bytes`) };
    }
    const keys = [...refs.tasks.map(taskKey), ...refs.contexts.map(contextKey)];
    let owners: (Owner | undefined)[];
    try {
      owners = await this.deps.store.owners(keys);
    } catch (err) {
      const failed = this.storeFailed(op, 'lookup', err);
      return failed === undefined ? { type: 'pass', state: 'unchecked', refs, request } : { type: 'refuse', error: failed };
    }
    const nTasks = refs.tasks.length;
    // A context nobody holds yet is held for the caller now, before the guardian and the agent see the call:
    // unheld, a context a caller opened would be anyone's while its first call runs (a blocking message
    // answers when its task is done), and another caller naming it would join the conversation. Held only
    // provisionally: the agent's answer binds it; a call denied, refused or failed lets it go.
    const fresh = keys.filter((k, i) => i >= nTasks && owners[i] === undefined);
    if (fresh.length > 0) {
      if ((this.pending.get(owner) ?? 0) + fresh.length > MAX_PENDING_PER_CALLER) return this.overQuota(op, owner, 'pending');
      let claimed: Owner[];
      try {
        claimed = await this.deps.store.provisional(fresh, owner, this.provisionalSeconds);
      } catch (err) {
        const failed = this.storeFailed(op, 'bind', err);
        return failed === undefined ? { type: 'pass', state: 'unchecked', refs, request } : { type: 'refuse', error: failed };
      }
      const mine = fresh.filter((_, j) => claimed[j] === owner);
      if (holds === undefined) this.release(mine, owner);
      else holds().add(mine);
      fresh.forEach((k, j) => {
        owners[keys.indexOf(k)] = claimed[j];
      });
    }
    for (let i = 0; i < keys.length; i++) {
      const current = owners[i];
      const isTask = i < nTasks;
      // An unknown context is a new one; an unknown task cannot be shown to be the caller's.
      if (current === owner || (current === undefined && !isTask)) continue;
      const why = current === undefined ? 'unknown_task' : isTask ? 'foreign_task' : 'foreign_context';
      this.deps.metrics.ownershipOutcome(op.aosMethod, `refused_${why}`);
      // The caller's own id back, as the agent words it; never who owns it.
      const named = (isTask ? refs.tasks[i] : refs.contexts[i - nTasks]) as string;
      this.deps.logger.info(
        { method: op.aosMethod, why, [isTask ? 'taskId' : 'contextId']: named.slice(0, MAX_ECHOED_ID) },
        'task ownership: call refused as task not found',
      );
      return { type: 'refuse', error: taskNotFound(isTask ? named : (refs.tasks[0] ?? named)) };
    }
    this.deps.metrics.ownershipOutcome(op.aosMethod, 'owned');
    return { type: 'pass', state: 'owned', refs, request };
  }

  /**
   * The caller holds its share of the store: its new work waits until some of its bindings expire (Redis
   * counts them in eighths of the TTL, so an eighth is when its count can first go down).
   */
  private overQuota(op: Operation, owner: Owner, what: 'bindings' | 'pending'): RequestVerdict {
    this.deps.metrics.ownershipOutcome(op.aosMethod, 'refused_quota');
    this.deps.metrics.callerLimited.inc({ resource: what === 'bindings' ? 'tasks' : 'contexts' });
    this.deps.logger.info({ method: op.aosMethod, owner, what }, 'task ownership: caller holds its share of the owner store; call refused');
    return {
      type: 'refuse',
      error:
        what === 'bindings'
          ? callerLimited(
              'task bindings held',
              (this.deps.ttlSeconds ?? 3600) / 8,
              `Too many tasks held by this caller (at most ${String(this.deps.maxPerCaller)} bindings); retry once some expire`,
            )
          : callerLimited('new contexts in flight', 1, `Too many new contexts in flight for this caller (at most ${MAX_PENDING_PER_CALLER}); retry later`),
    };
  }

  /** The caller's page tokens, unsealed: the agent gets back only tokens it gave this caller. */
  private async openPageTokens(
    owner: Owner,
    op: Operation,
    request: JsonObject,
  ): Promise<{ type: 'pass'; request: JsonObject } | { type: 'refuse'; error: ProxyError }> {
    const sealed = requestPageTokens(request);
    if (sealed.length === 0) return { type: 'pass', request };
    const opened: PageTokenAt[] = [];
    for (const { key, token } of sealed) {
      let r: Opened;
      try {
        r = await this.pageTokens.open(token, owner, op.aosMethod);
      } catch (err) {
        const failed = this.storeFailed(op, 'page token', err);
        // FAIL_MODE=open: the token goes as it came (the agent judges it).
        return failed === undefined ? { type: 'pass', request } : { type: 'refuse', error: failed };
      }
      if (!r.ok) {
        this.deps.metrics.ownershipOutcome(op.aosMethod, 'refused_page_token');
        this.deps.logger.info({ method: op.aosMethod, why: r.why }, 'task ownership: page token refused');
        // Worded as the agent words a page token it cannot read (RequestMalformedError); never whose it is.
        return { type: 'refuse', error: proxyError('invalidParams', 'Invalid page token') };
      }
      opened.push({ key, token: r.token });
    }
    return { type: 'pass', request: withRequestPageTokens(request, opened) };
  }

  /**
   * The checks of the agent's answer to this call, or undefined when its answer needs none. Every one
   * first refuses an answer with an A2A member spelled another way (misspelledField): a caller decoding
   * names case-insensitively would read a task or context ownership never bound or filtered.
   */
  answerHook(owner: Owner, op: Operation, form: AnswerForm): AnswerHook | undefined {
    const hook = this.answerChecks(owner, op, form);
    if (hook === undefined) return undefined;
    const { unary, event } = hook;
    return {
      ...(unary === undefined ? {} : { unary: (body: unknown, ok: boolean) => (ok ? this.misspelled(op, body) : undefined) ?? unary(body, ok) }),
      ...(event === undefined ? {} : { event: (data: unknown, isError?: boolean) => this.misspelled(op, data, isError) ?? event(data) }),
    };
  }

  private misspelled(op: Operation, body: unknown, isError = false): AnswerCheck | undefined {
    const why = misspelledAnswer(body, isError);
    if (why === undefined) return undefined;
    this.deps.metrics.ownershipOutcome(op.aosMethod, 'answer_misspelled');
    this.deps.logger.warn({ method: op.aosMethod, why }, 'task ownership: the agent answered with a member spelled as A2A does not spell it; answer refused');
    return { type: 'refuse', error: proxyError('upstreamUnavailable', 'Agent answer has a member spelled as A2A does not spell it') };
  }

  private answerChecks(owner: Owner, op: Operation, form: AnswerForm): AnswerHook | undefined {
    switch (op.aosMethod) {
      // Whatever the status: a client that ignores it (a 500 with a JSON-RPC result) reads what the answer names.
      case 'message/send':
        return { unary: (body) => this.bind(owner, op, createdByAnswer(body, form), undefined) };
      case 'message/stream':
      case 'tasks/resubscribe': {
        // A stream names the same task in every event: each key is claimed once per call.
        const claimed = new Set<string>();
        return {
          unary: (body) => this.bind(owner, op, createdByAnswer(body, form), claimed),
          event: (data) => this.bind(owner, op, createdByAnswer(data, form), claimed),
        };
      }
      case 'tasks/get':
      case 'tasks/cancel':
        return { unary: (body) => this.bind(owner, op, namedByTaskAnswer(body, form), undefined) };
      case 'tasks/list':
        return { unary: async (body, ok) => this.sealPageTokens(owner, op, form, await this.filterList(owner, op, form, body, ok), body) };
      case 'tasks/pushNotificationConfig/set':
      case 'tasks/pushNotificationConfig/get':
      case 'tasks/pushNotificationConfig/list':
        return {
          unary: async (body) => this.sealPageTokens(owner, op, form, await this.bind(owner, op, namedByPushConfigAnswer(body, form), undefined), body),
        };
      default:
        if (isPaged(op)) return { unary: (body) => this.sealPageTokens(owner, op, form, PASS, body) };
        return undefined;
    }
  }

  /** Bind what an answer names to the caller before it is relayed; an answer naming another caller's task is not relayed. */
  private async bind(owner: Owner, op: Operation, refs: TaskRefs, claimed: Set<string> | undefined): Promise<AnswerCheck> {
    let keys = [...refs.tasks.map(taskKey), ...refs.contexts.map(contextKey)];
    if (claimed !== undefined) keys = keys.filter((k) => !claimed.has(k));
    if (keys.length === 0) return PASS;
    let owners: Owner[];
    try {
      owners = await this.deps.store.claim(keys, owner);
    } catch (err) {
      const failed = this.storeFailed(op, 'bind', err);
      return failed === undefined ? PASS : { type: 'refuse', error: failed };
    }
    if (owners.some((o) => o !== owner)) {
      this.deps.metrics.ownershipOutcome(op.aosMethod, 'answer_conflict');
      this.deps.logger.warn({ method: op.aosMethod }, 'task ownership: the agent answered with a task or context of another caller; answer refused');
      return { type: 'refuse', error: proxyError('upstreamUnavailable', 'Agent answer names a task of another caller') };
    }
    for (const k of keys) claimed?.add(k);
    this.deps.metrics.ownershipOutcome(op.aosMethod, 'bound');
    return PASS;
  }

  private async filterList(owner: Owner, op: Operation, form: AnswerForm, body: unknown, ok: boolean): Promise<AnswerCheck> {
    if (!ok || (isObject(body) && 'error' in body && !('result' in body))) return PASS;
    const ids = listedTasks(body, form);
    if (ids === undefined) {
      // A success the proxy cannot read could list anyone's tasks.
      this.deps.metrics.ownershipOutcome(op.aosMethod, 'list_unreadable');
      if (this.deps.failMode === 'open') {
        this.deps.metrics.failOpenPasses.inc();
        this.deps.logger.warn({ method: op.aosMethod }, 'task ownership: task list cannot be read; passed unfiltered (FAIL_MODE=open)');
        return PASS;
      }
      this.deps.logger.warn({ method: op.aosMethod }, 'task ownership: task list cannot be read; refused (FAIL_MODE=closed)');
      return { type: 'refuse', error: proxyError('upstreamUnavailable', 'Agent task list cannot be read') };
    }
    if (ids.length === 0) return overstatesTotal(body, form, 0) ? { type: 'replace', body: filterListed(body, form, []) } : PASS;
    const known = ids.filter((id): id is string => id !== undefined);
    let owners: (Owner | undefined)[];
    try {
      owners = await this.deps.store.owners(known.map(taskKey));
    } catch (err) {
      const failed = this.storeFailed(op, 'list', err);
      return failed === undefined ? PASS : { type: 'refuse', error: failed };
    }
    const mine = new Set<string>();
    known.forEach((id, i) => {
      if (owners[i] === owner) mine.add(id);
    });
    const keep = ids.map((id) => id !== undefined && mine.has(id));
    if (keep.every((k) => k) && !overstatesTotal(body, form, keep.length)) return PASS;
    this.deps.metrics.ownershipOutcome(op.aosMethod, 'list_filtered');
    return { type: 'replace', body: filterListed(body, form, keep) };
  }

  /** The answer as `check` leaves it, with every next-page token sealed for the caller. */
  private async sealPageTokens(owner: Owner, op: Operation, form: AnswerForm, check: AnswerCheck, body: unknown): Promise<AnswerCheck> {
    if (check.type === 'refuse') return check;
    const answer = check.type === 'replace' ? check.body : body;
    const tokens = answerPageTokens(answer, form);
    if (tokens.length === 0) return check;
    const sealed: PageTokenAt[] = [];
    try {
      for (const { key, token } of tokens) sealed.push({ key, token: await this.pageTokens.seal(token, owner, op.aosMethod) });
    } catch (err) {
      const failed = this.storeFailed(op, 'page token', err);
      return failed === undefined ? check : { type: 'refuse', error: failed };
    }
    return { type: 'replace', body: withAnswerPageTokens(answer, form, sealed) };
  }

  /** The store did not answer: the error to send (FAIL_MODE=closed), or undefined to pass (open, counted). */
  private storeFailed(op: Operation, what: 'lookup' | 'bind' | 'list' | 'page token', err: unknown): ProxyError | undefined {
    const detail = err instanceof Error ? err.message : String(err);
    if (this.deps.failMode === 'open') {
      this.deps.metrics.ownershipOutcome(op.aosMethod, 'store_unavailable_passed');
      this.deps.metrics.failOpenPasses.inc();
      this.deps.logger.warn({ method: op.aosMethod, what, err: detail }, 'task owner store unavailable; passed unchecked (FAIL_MODE=open)');
      return undefined;
    }
    this.deps.metrics.ownershipOutcome(op.aosMethod, 'store_unavailable_refused');
    this.deps.logger.warn({ method: op.aosMethod, what, err: detail }, 'task owner store unavailable; refused (FAIL_MODE=closed)');
    return proxyError('taskStoreUnavailable', 'Task owner store unavailable: task ownership cannot be checked', { store: this.deps.store.kind });
  }
}

/**
 * The caller as the guardian sees it, with the ownership outcome in its metadata (Agent.metadata
 * is free-form in the AOS schema): `{owner, state}`.
 */
export function withTaskOwnership(caller: PartialAgent, owner: Owner, state: OwnershipState): PartialAgent {
  return { ...caller, metadata: { ...caller.metadata, taskOwnership: { owner, state } } };
}

/** The agent's own words for an unknown task. */
export function taskNotFound(taskId: string): ProxyError {
  return proxyError('taskNotFound', `Task not found: ${taskId.slice(0, MAX_ECHOED_ID)}`);
}
