/**
 * pino, configured once. Message content, reasoning and tokens are only logged at debug, and the
 * info lines carry none, so no redaction pass is needed on the hot path.
 */
import pino, { type Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'a2a-guard' } }, destination);
}

/**
 * Asynchronous stdout for the long-running proxy: lines written in the same tick leave in one write,
 * and a slow log reader never blocks a request. `flushSync()` it before exiting.
 */
export function stdoutDestination(): pino.DestinationStream & { flushSync(): void } {
  return pino.destination({ dest: 1, sync: false });
}

export type { Logger };
