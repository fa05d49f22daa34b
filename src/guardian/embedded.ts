/**
 * The reference guardian's policy engine in-process (GUARDIAN_URL unset): same decisions as the
 * standalone service, no network hop, the same log line per decision, and a policy that reloads.
 */
import type { Logger } from 'pino';
import type { Guardian, TraceContext } from '../aos/guardian';
import type { Envelope } from '../aos/schemas';
import type { GuardianOutcome } from '../aos/outcome';
import { logDecision, traceIdOf } from './decision-log';
import { ReloadablePolicy, type ReloadEvents } from './reload';

export interface EmbeddedGuardian extends Guardian {
  readonly policy: ReloadablePolicy;
}

/** Throws PolicyError when the policy file is invalid. */
export function embeddedGuardian(policyFile: string, opts: { logger?: Logger; events?: ReloadEvents } = {}): EmbeddedGuardian {
  const policy = new ReloadablePolicy(policyFile, opts.events);
  return {
    policy,
    describe: `embedded (${policyFile})`,
    decide(envelope: Envelope, _body: unknown, _caller?: unknown, trace?: TraceContext): Promise<GuardianOutcome> {
      const started = performance.now();
      try {
        const result = policy.current().decide(envelope);
        logDecision(opts.logger, envelope, result, performance.now() - started, traceIdOf(trace?.traceparent));
        return Promise.resolve({ ok: true, result });
      } catch (err) {
        opts.logger?.error({ err, method: envelope.method }, 'guardian: engine failed');
        return Promise.resolve({ ok: false, kind: 'internal', detail: (err as Error).message });
      }
    },
    ping: () => Promise.resolve(true),
    close: () => policy.unwatch(),
  };
}
