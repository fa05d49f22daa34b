/**
 * The reference guardian as an AOS service: the policy engine (./engine) served by the toolkit's
 * server helper (../aos/serve), exactly as a guardian written against the published package is.
 * This file adds only what is specific to it: the policy, its version, one log line per decision.
 */
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { createGuardianService, type DecisionEvent, type GuardianFunction, type GuardianServiceOptions } from '../aos/serve';
import { createEngine, type Engine } from './engine';
import type { Policy } from './policy';
import { logDecision, traceIdOf } from './decision-log';

export { DEFAULT_MAX_BODY_BYTES, RpcErrorCode } from '../aos/serve';

export const GUARDIAN_VERSION = '0.1.0';

export interface GuardianServerOptions {
  /** The policy (fixed); or give `engine`. */
  readonly policy?: Policy;
  /** Where decisions come from when the policy can change (a ReloadablePolicy); wins over `policy`. */
  readonly engine?: { current(): Engine };
  readonly logger?: Logger;
  /** Larger bodies are refused with -32600 (default 32 MiB: the proxy's 10 MiB limit plus the envelope). */
  readonly maxBodyBytes?: number;
  /** When set, AOS requests must carry `Authorization: Bearer <token>` (GUARDIAN_TOKEN). */
  readonly token?: string | undefined;
}

export function createGuardianServer(options: GuardianServerOptions): Server {
  const { decide, service } = referenceGuardian(options);
  return createGuardianService(decide, service);
}

/** The reference guardian as the toolkit sees it: a decision function and its service options. */
export function referenceGuardian(options: GuardianServerOptions): { decide: GuardianFunction; service: GuardianServiceOptions } {
  const source = options.engine ?? fixedEngine(options.policy);
  const { logger } = options;
  return {
    decide: (envelope) => source.current().decide(envelope),
    service: {
      version: GUARDIAN_VERSION,
      token: options.token,
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
      ...(logger === undefined
        ? {}
        : { logger, onDecision: ({ envelope, result, ms, traceparent }: DecisionEvent) => logDecision(logger, envelope, result, ms, traceIdOf(traceparent)) }),
    },
  };
}

function fixedEngine(policy: Policy | undefined): { current(): Engine } {
  if (policy === undefined) throw new Error('the reference guardian needs a policy or an engine');
  const engine = createEngine(policy);
  return { current: () => engine };
}
