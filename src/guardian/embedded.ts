/**
 * The reference guardian's policy engine in-process (GUARDIAN_URL unset): same decisions as the
 * standalone service, no network hop.
 */
import type { Guardian } from '../aos/guardian';
import type { Envelope } from '../aos/schemas';
import type { GuardianOutcome } from '../proxy/enforce';
import { loadPolicy } from './policy';
import { createEngine } from './engine';

export function embeddedGuardian(policyFile: string): Guardian {
  const engine = createEngine(loadPolicy(policyFile));
  return {
    describe: `embedded (${policyFile})`,
    decide(envelope: Envelope): Promise<GuardianOutcome> {
      try {
        return Promise.resolve({ ok: true, result: engine.decide(envelope) });
      } catch (err) {
        return Promise.resolve({ ok: false, kind: 'internal', detail: (err as Error).message });
      }
    },
    ping: () => Promise.resolve(true),
    close: () => undefined,
  };
}
