/**
 * Decisions on a worker thread (./worker), so a large envelope never holds the proxy's event loop:
 * the embedded guardian sends the envelopes it does not judge in place here.
 *
 * One worker, started on first use, decides one envelope at a time from a bounded queue, within the
 * same time budget per call as a remote guardian (GUARDIAN_TIMEOUT_MS). Like the engine, it denies
 * rather than fails what it cannot judge, so FAIL_MODE=open never passes content a caller made too
 * costly: a call whose budget ends while its decision has run most of it, or whose decision ends the
 * worker, is denied as too complex; one that waited most of it, or finds the queue full, is denied as
 * busy. Decisions wait in a line per caller, served round-robin, and a full queue refuses the caller
 * holding the most (core/caller-lines.ts): one caller's large envelopes never refuse another's. A
 * decision that runs for a whole budget ends the worker (a policy pattern may be stuck
 * backtracking); the next decision starts a new one. A caller that leaves is dropped from the queue
 * (or its answer ignored once the worker has begun). A new policy reaches the worker before any
 * decision asked after the swap.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { envelopeSlices, type EnvelopeBytes } from '../aos/envelope';
import { TOO_COMPLEX, type GuardianOutcome } from '../aos/outcome';
import type { CallerTurn } from '../aos/guardian';
import type { SuccessResult } from '../aos/schemas';
import { CallerLines } from '../core/caller-lines';
import { parseJsonInPieces } from '../core/json-pieces';
import type { JsonObject } from '../core/json';
import { nextTurn } from '../core/turns';

/** A caller that may go away (the proxy's Cancellation). */
export interface Leaving {
  onCancel(fn: () => void): () => void;
}

/** What the worker starts with. */
export interface WorkerInit {
  readonly policy: string;
  readonly source: string;
}

/**
 * A policy to swap in; a part of an envelope's text (or of its UTF-8 bytes); the end of an envelope,
 * to decide on. Parts of one envelope come in order, with no other envelope's between them.
 */
export type ToWorker =
  | { readonly type: 'policy'; readonly text: string }
  | { readonly type: 'part'; readonly id: number; readonly part: string | Uint8Array }
  | { readonly type: 'decide'; readonly id: number };

/**
 * An envelope goes to the worker in parts of this many characters (bytes), one per turn of the
 * event loop: copying 9 MiB at once holds the loop for tens of ms (fresh pages), a part for ~1 ms.
 */
export const PART_SIZE = 256 * 1024;

/** A decision; with `payload`, a large modify's payload as UTF-8 JSON (the result holds `{}` in its place). */
export type FromWorker =
  { readonly id: number; readonly result: SuccessResult; readonly payload?: Uint8Array } | { readonly id: number; readonly error: string };

export interface OffLoopOptions {
  /** The policy text in force and its file (named in problems). */
  readonly policy: () => string;
  readonly source: string;
  /** Budget per decision, waiting included. */
  readonly timeoutMs: number;
  /** Decisions waiting for the worker at most; more are denied as busy at once. */
  readonly maxQueue: number;
  /** Told why a worker was ended or died (for the log). */
  readonly onWorkerEnd?: (why: string) => void;
  /** The proxy's turn for a caller (its round-robin order), between pieces of a large modify's parse; else the next turn. */
  readonly callerTurn?: () => CallerTurn | undefined;
}

const deny = (message: string, code: string): GuardianOutcome => ({ ok: true, result: { decision: 'deny', message, reasonCode: [code] } });
export { TOO_COMPLEX };
export const BUSY = (why: string): GuardianOutcome => deny(`The guardian is busy with other large requests (${why}); retry later.`, 'GUARDIAN_BUSY');

interface Job {
  readonly id: number;
  /** Its caller's line (the proxy's caller key; '' when none is named). */
  readonly key: string;
  readonly body: string | EnvelopeBytes;
  readonly caller: Leaving | undefined;
  readonly resolve: (outcome: GuardianOutcome) => void;
  /** The caller's budget ends (performance.now()). */
  readonly deadline: number;
  /** When the worker began it. */
  started: number | undefined;
  timer: NodeJS.Timeout | undefined;
  unsubscribe: (() => void) | undefined;
  done: boolean;
}

export class OffLoopDecider {
  private worker: Worker | undefined;
  private readonly queue: CallerLines<Job>;
  private running: Job | undefined;
  /** Ends a worker whose decision runs for the whole budget. */
  private runTimer: NodeJS.Timeout | undefined;
  private nextId = 1;
  private closed = false;
  /** Decisions whose large modify is being parsed (the worker has moved on): close() settles them too. */
  private readonly parsing = new Set<Job>();

  constructor(private readonly opts: OffLoopOptions) {
    this.queue = new CallerLines(opts.maxQueue);
  }

  /** A decision for the caller `key` names (its line; '' when none is named). */
  decide(body: string | EnvelopeBytes, caller?: Leaving, key = ''): Promise<GuardianOutcome> {
    if (this.closed) return Promise.resolve({ ok: false, kind: 'internal', detail: 'the embedded guardian is closed' });
    return new Promise((resolve) => {
      const { timeoutMs } = this.opts;
      const job: Job = {
        id: this.nextId++,
        key,
        body,
        caller,
        resolve,
        deadline: performance.now() + timeoutMs,
        started: undefined,
        timer: undefined,
        unsubscribe: undefined,
        done: false,
      };
      job.timer = setTimeout(() => this.expire(job), timeoutMs);
      job.timer.unref();
      job.unsubscribe = caller?.onCancel(() => this.settle(job, { ok: false, kind: 'cancelled', detail: 'the caller went away' }));
      if (job.done) return;
      const waiting = this.queue.size;
      const out = this.queue.push(key, job);
      if (out !== undefined) this.settle(out, BUSY(`${waiting} waiting`));
      this.pump();
    });
  }

  /** A new policy: the worker compiles it before the next decision it is sent. */
  setPolicy(text: string): void {
    this.worker?.postMessage({ type: 'policy', text } satisfies ToWorker);
  }

  /** Settles every call still waiting; resolves when the worker has stopped. */
  close(): Promise<void> {
    this.closed = true;
    for (const job of [...this.queue.items(), ...(this.running === undefined ? [] : [this.running]), ...this.parsing]) {
      this.settle(job, { ok: false, kind: 'internal', detail: 'the embedded guardian is closed' });
    }
    return this.stopWorker();
  }

  private settle(job: Job, outcome: GuardianOutcome): void {
    if (job.done) return;
    job.done = true;
    if (job.timer !== undefined) clearTimeout(job.timer);
    job.unsubscribe?.();
    this.queue.delete(job.key, job);
    job.resolve(outcome);
  }

  /** A large modify: its payload parsed a piece per turn (the worker is free for the next decision meanwhile). */
  private async settleModify(job: Job, result: SuccessResult, payload: Uint8Array): Promise<void> {
    const bytes = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
    // A caller answered meanwhile (gone, out of time) stops the parse at its next turn.
    const shared = this.opts.callerTurn?.();
    const wait = shared === undefined || job.caller === undefined ? nextTurn : () => shared(job.key, job.caller as Leaving);
    const turn = (): Promise<void> => (job.done ? Promise.reject(new Error('answered')) : wait());
    let value: unknown;
    this.parsing.add(job);
    try {
      const parsed = await parseJsonInPieces(bytes, turn);
      value = typeof parsed === 'object' ? parsed.value : JSON.parse(bytes.toString());
    } catch {
      if (!job.done) this.settle(job, { ok: false, kind: 'internal', detail: 'the modified payload could not be read' });
      return;
    } finally {
      this.parsing.delete(job);
    }
    const modified = result.modifiedRequest as NonNullable<SuccessResult['modifiedRequest']>;
    const whole = { ...result, modifiedRequest: { ...modified, params: { ...modified.params, payload: value as JsonObject } } };
    this.settle(job, { ok: true, result: whole, payloadBytes: bytes });
  }

  /** The caller's budget ran out: a decision that ran most of it was too costly; one that waited most of it found the worker busy. */
  private expire(job: Job): void {
    const ran = job.started === undefined ? 0 : performance.now() - job.started;
    this.settle(
      job,
      ran >= this.opts.timeoutMs / 2 ? TOO_COMPLEX(`no decision within ${this.opts.timeoutMs} ms`) : BUSY(`no decision within ${this.opts.timeoutMs} ms`),
    );
  }

  /** The worker is stuck or dead: drop it; the next decision starts a new one. */
  private restart(why: string): void {
    void this.stopWorker();
    this.opts.onWorkerEnd?.(why);
    this.pump();
  }

  private stopWorker(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.running = undefined;
    if (this.runTimer !== undefined) clearTimeout(this.runTimer);
    this.runTimer = undefined;
    if (worker === undefined) return Promise.resolve();
    worker.removeAllListeners();
    return worker.terminate().then(() => undefined);
  }

  private pump(): void {
    if (this.running !== undefined || this.closed) return;
    let job: Job | undefined;
    while ((job = this.queue.shift()) !== undefined && job.deadline <= performance.now()) this.settle(job, BUSY(`no turn within ${this.opts.timeoutMs} ms`));
    if (job === undefined) return;
    this.running = job;
    job.started = performance.now();
    const worker = (this.worker ??= this.start());
    this.runTimer = setTimeout(() => {
      const stuck = this.running;
      if (stuck !== undefined) this.settle(stuck, TOO_COMPLEX(`no decision within ${this.opts.timeoutMs} ms`));
      this.restart(`a decision ran for ${this.opts.timeoutMs} ms`);
    }, this.opts.timeoutMs);
    this.runTimer.unref();
    void this.send(worker, job);
  }

  /** The envelope in parts, a turn of the event loop apart; abandoned when its caller is answered meanwhile. */
  private async send(worker: Worker, job: Job): Promise<void> {
    for (const part of parts(job.body)) {
      if (!this.stillSending(worker, job)) return;
      if (typeof part === 'string') worker.postMessage({ type: 'part', id: job.id, part } satisfies ToWorker);
      else worker.postMessage({ type: 'part', id: job.id, part } satisfies ToWorker, [part.buffer as ArrayBuffer]);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (this.stillSending(worker, job)) worker.postMessage({ type: 'decide', id: job.id } satisfies ToWorker);
  }

  /** Whether `job` still has the worker; a job answered (caller gone, budget spent) before the worker had it all frees it for the next. */
  private stillSending(worker: Worker, job: Job): boolean {
    if (this.worker !== worker || this.running !== job) return false;
    if (!job.done) return true;
    this.next();
    return false;
  }

  /** The running decision is over: on to the next one. */
  private next(): void {
    this.running = undefined;
    clearTimeout(this.runTimer);
    this.runTimer = undefined;
    this.pump();
  }

  private start(): Worker {
    // Loaded on first use: a proxy that never sees a large envelope never loads worker_threads.
    const { Worker: WorkerThread }: typeof import('node:worker_threads') = require('node:worker_threads');
    const init: WorkerInit = { policy: this.opts.policy(), source: this.opts.source };
    const script = workerScript();
    const worker = script.typescript
      ? new WorkerThread(TYPESCRIPT_BOOT, { eval: true, workerData: { ...init, script: script.file, root: script.root } })
      : new WorkerThread(script.file, { workerData: init });
    worker.unref();
    worker.on('message', (m: FromWorker) => {
      const job = this.running;
      if (job === undefined || job.id !== m.id) return;
      if ('result' in m && m.payload !== undefined)
        this.settleModify(job, m.result, m.payload).catch(() =>
          this.settle(job, { ok: false, kind: 'internal', detail: 'the modified payload could not be read' }),
        );
      else this.settle(job, 'result' in m ? { ok: true, result: m.result } : { ok: false, kind: 'internal', detail: m.error });
      this.next();
    });
    // A worker that dies while deciding (out of memory, say) died of that envelope.
    const fail = (why: string): void => {
      if (this.worker !== worker) return;
      const job = this.running;
      if (job !== undefined) this.settle(job, TOO_COMPLEX('the worker ended'));
      this.restart(why);
    };
    worker.on('error', (err) => fail(`the worker failed: ${err.message}`));
    worker.on('exit', (code) => fail(`the worker exited (${code})`));
    return worker;
  }
}

/** An envelope's text in slices, or its bytes copied in slices into buffers of their own (moved to the worker, not copied again). */
function* parts(body: string | EnvelopeBytes): Generator<string | Uint8Array> {
  if (typeof body === 'string') {
    for (let at = 0; at < body.length; at += PART_SIZE) yield body.slice(at, at + PART_SIZE);
    return;
  }
  for (const chunk of envelopeSlices(body)) {
    for (let at = 0; at < chunk.length; at += PART_SIZE) {
      const end = Math.min(chunk.length, at + PART_SIZE);
      const part = new Uint8Array(end - at);
      part.set(chunk.subarray(at, end));
      yield part;
    }
  }
}

/**
 * The worker's script: beside this file once compiled (dist/src/guardian), or there from the
 * bundle (dist/a2a-guard.bundle.js). Under ts-jest this file is TypeScript and so is the worker.
 */
function workerScript(): { file: string; typescript: boolean; root: string } {
  if (__filename.endsWith('.ts')) return { file: path.join(__dirname, 'worker.ts'), typescript: true, root: path.join(__dirname, '..', '..') };
  const beside = path.join(__dirname, 'worker.js');
  const file = fs.existsSync(beside) ? beside : path.join(__dirname, 'src', 'guardian', 'worker.js');
  return { file, typescript: false, root: '' };
}

/** Loads the TypeScript worker by compiling each module as it is required (tests only: the TypeScript compiler is a dev dependency). */
const TYPESCRIPT_BOOT = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const ts = require(require.resolve('typescript', { paths: [workerData.root] }));
const options = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true };
require.extensions['.ts'] = (module, file) => module._compile(ts.transpileModule(fs.readFileSync(file, 'utf8'), { fileName: file, compilerOptions: options }).outputText, file);
require(workerData.script);
`;
