/**
 * pino, configured once. Message content, reasoning and tokens are only logged at debug, and the
 * info lines carry none, so no redaction pass is needed on the hot path.
 */
import fs from 'node:fs';
import pino, { type Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'a2a-guard' } }, destination);
}

interface Out {
  write(chunk: string): unknown;
  readonly writableLength: number;
  on?(event: 'error', listener: (err: Error) => void): unknown;
}

/**
 * The proxy's stdout: lines logged during one turn of the event loop leave in one write, on the main
 * thread. process.stdout is a non-blocking libuv stream for pipes (containers) and a synchronous
 * file write otherwise, so no thread-pool hop per line (pino's async SonicBoom costs one) and a
 * stalled log reader never blocks a request: past `maxQueuedBytes` waiting in the stream, lines are
 * dropped and counted instead of growing memory. `flushSync()` before exiting.
 */
export class LogSink implements pino.DestinationStream {
  private pending = '';
  private pendingLines = 0;
  private scheduled = false;
  /** Lines dropped because the reader of stdout stopped reading. */
  dropped = 0;

  constructor(
    private readonly out: Out = process.stdout,
    private readonly fd: number | undefined = 1,
    private readonly maxQueuedBytes = 16 * 1024 * 1024,
  ) {
    // A log reader that went away (EPIPE) must not take the proxy down with an unhandled 'error'.
    out.on?.('error', () => {
      this.broken = true;
    });
  }

  /** stdout failed for good: lines are counted as dropped from then on. */
  private broken = false;

  write(line: string): void {
    this.pending += line;
    this.pendingLines++;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const text = this.pending;
    const lines = this.pendingLines;
    this.pending = '';
    this.pendingLines = 0;
    if (text === '') return;
    if (this.broken || this.out.writableLength > this.maxQueuedBytes) {
      if (this.dropped === 0) process.stderr.write('a2a-guard: stdout is not being read (or failed); dropping log lines\n');
      this.dropped += lines;
      return;
    }
    this.out.write(text);
  };

  /** Write what is pending now (exit paths): straight to the descriptor when nothing is queued ahead of it. */
  flushSync(): void {
    const text = this.pending;
    this.pending = '';
    this.pendingLines = 0;
    if (text === '') return;
    if (this.fd === undefined || this.out.writableLength > 0) {
      this.out.write(text);
      return;
    }
    let buf = Buffer.from(text, 'utf8');
    for (let tries = 0; buf.length > 0 && tries < 1000; tries++) {
      try {
        buf = buf.subarray(fs.writeSync(this.fd, buf));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      }
    }
  }
}

export function stdoutDestination(): LogSink {
  return new LogSink();
}

export type { Logger };
