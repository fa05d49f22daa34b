/**
 * The reference guardian's policy engine in-process (GUARDIAN_URL unset): same decisions as the
 * standalone service, no network hop, the same log line per decision, and a policy that reloads.
 *
 * Small envelopes are judged in place: the engine's work is linear in the envelope (./detectors),
 * so under INLINE_MAX_CHARS it holds the event loop for a bounded, short time. Larger ones go to a
 * worker thread (./off-loop), which decides on the envelope's JSON text as the standalone guardian
 * does, so a large or hostile call never holds the other callers.
 */
import type { Logger } from 'pino';
import type { CallerTurn, Guardian, GuardianBudget, TraceContext } from '../aos/guardian';
import type { EnvelopeBytes } from '../aos/envelope';
import type { Envelope } from '../aos/schemas';
import type { GuardianOutcome } from '../aos/outcome';
import { CARD_METHOD } from './policy';
import { logDecision, traceIdOf } from './decision-log';
import { OffLoopDecider, type Leaving } from './off-loop';
import { ReloadablePolicy, type ReloadEvents } from './reload';

/** Envelopes of this many characters (bytes) or more are judged on the worker thread. */
export const INLINE_MAX_CHARS = 16 * 1024;

export interface EmbeddedGuardian extends Guardian {
  readonly policy: ReloadablePolicy;
  /** Resolves when its worker thread (if one started) has stopped. */
  close(): Promise<void>;
}

export interface EmbeddedOptions {
  readonly logger?: Logger;
  readonly events?: ReloadEvents;
  /** Budget per decision on the worker thread, waiting included (GUARDIAN_TIMEOUT_MS); default 5000. */
  readonly timeoutMs?: number;
  /** Envelopes at least this long go to the worker thread; default INLINE_MAX_CHARS. */
  readonly inlineMaxChars?: number;
  /** Decisions waiting for the worker thread at most (more are denied as busy at once); default 64. */
  readonly maxQueue?: number;
}

/** Throws PolicyError when the policy file is invalid. */
export function embeddedGuardian(policyFile: string, opts: EmbeddedOptions = {}): EmbeddedGuardian {
  let offLoop: OffLoopDecider | undefined;
  const policy = new ReloadablePolicy(policyFile, opts.events, (text) => offLoop?.setPolicy(text));
  const inlineMax = opts.inlineMaxChars ?? INLINE_MAX_CHARS;
  const log = (envelope: Envelope, outcome: GuardianOutcome, started: number, trace: TraceContext | undefined): GuardianOutcome => {
    if (outcome.ok) logDecision(opts.logger, envelope, outcome.result, performance.now() - started, traceIdOf(trace?.traceparent));
    else if (outcome.kind === 'internal') opts.logger?.error({ method: envelope.method, detail: outcome.detail }, 'guardian: engine failed');
    return outcome;
  };
  let callerTurn: CallerTurn | undefined;
  return {
    policy,
    describe: `embedded (${policyFile})`,
    shareTurns(turn: CallerTurn) {
      callerTurn = turn;
    },
    decide(
      envelope: Envelope,
      body: string | EnvelopeBytes,
      caller?: Leaving,
      trace?: TraceContext,
      _budget?: GuardianBudget,
      callerKey?: string,
    ): Promise<GuardianOutcome> {
      const started = performance.now();
      // Card hooks stay in place: the approved versions of cards live in this thread's engine.
      if (body.length >= inlineMax && envelope.method !== CARD_METHOD) {
        offLoop ??= new OffLoopDecider({
          policy: () => policy.text,
          source: policyFile,
          timeoutMs: opts.timeoutMs ?? 5000,
          maxQueue: opts.maxQueue ?? 64,
          onWorkerEnd: (why) => opts.logger?.warn({ why }, 'guardian: embedded worker replaced'),
          callerTurn: () => callerTurn,
        });
        return offLoop.decide(body, caller, callerKey).then((outcome) => log(envelope, outcome, started, trace));
      }
      let outcome: GuardianOutcome;
      try {
        outcome = { ok: true, result: policy.current().decide(envelope) };
      } catch (err) {
        outcome = { ok: false, kind: 'internal', detail: (err as Error).message };
      }
      return Promise.resolve(log(envelope, outcome, started, trace));
    },
    ping: () => Promise.resolve(true),
    close: () => {
      policy.unwatch();
      return offLoop?.close() ?? Promise.resolve();
    },
  };
}
