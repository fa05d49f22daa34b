/** pino, configured once. Message content, reasoning and tokens are only logged at debug. */
import pino, { type Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'a2a-guard' },
      redact: { paths: ['*.authorization', '*.headers.authorization', 'token', '*.token'], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

export type { Logger };
