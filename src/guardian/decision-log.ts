/**
 * The reference guardian's line per decision, the same for the standalone service and the engine
 * embedded in the proxy: what was decided and why, never the content.
 */
import type { Logger } from 'pino';
import type { Envelope } from '../aos/schemas';
import { describeHook } from './engine';

export function logDecision(
  logger: Logger | undefined,
  envelope: Envelope,
  result: { readonly decision: string; readonly reasonCode?: readonly string[] | undefined; readonly message?: string },
  ms: number,
  traceId: string | undefined,
): void {
  if (logger === undefined || !logger.isLevelEnabled('info')) return;
  const hook = describeHook(envelope);
  logger.info(
    {
      envelopeId: envelope.id,
      method: hook.method,
      side: hook.side,
      phase: hook.phase,
      decision: result.decision,
      reasonCode: result.reasonCode,
      message: result.message,
      ms: Math.round(ms * 1000) / 1000,
      ...(traceId === undefined ? {} : { traceId }),
    },
    'guardian decision',
  );
}

/** The trace id of a W3C traceparent, if it is one. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  if (traceparent === undefined) return undefined;
  const m = /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent.trim());
  return m === null ? undefined : m[1];
}
