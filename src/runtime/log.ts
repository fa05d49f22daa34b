/**
 * pino, configured once. Message content, reasoning and tokens are only logged at debug, and the
 * info lines carry none, so no redaction pass is needed on the hot path.
 */
import fs from 'node:fs';
import pino, { type Logger } from 'pino';

/** The one base binding of every logger here; writeLine writes it itself. */
const SERVICE = 'a2a-guard';

/**
 * Every line's time as ISO-8601 UTC and its level by name ("info", not 30): what log pipelines and
 * people read without a lookup table. The proxy's and the reference guardian's loggers share them.
 */
export const LINE_FORMAT = {
  timestamp: pino.stdTimeFunctions.isoTime,
  formatters: { level: (label: string) => ({ level: label }) },
} satisfies pino.LoggerOptions;

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const logger = pino({ level, base: { service: SERVICE }, ...LINE_FORMAT }, destination);
  if (destination !== undefined) known.set(logger, destination);
  return logger;
}

/** Loggers made above and where they write: their options are known, so writeLine can build their lines itself. */
const known = new WeakMap<Logger, pino.DestinationStream>();

/** A character JSON.stringify or pino's string escaper would not write as it is: a control, `"`, `\\`, or a surrogate. */
const UNPLAIN = /["\\\x00-\x1f\ud800-\udfff]/;

/**
 * Text that JSON.stringify and pino's string escaper both write as it is, between quotes. A loop
 * costs ~35 instructions a character, the regex ~13 and ~80 more to start (callgrind): the loop
 * for short text, the regex from 8 characters (a 36-character id: 1,370 instructions, now 610).
 */
export function plainText(s: string): boolean {
  if (s.length >= 8) return !UNPLAIN.test(s);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return false;
  }
  return true;
}

/** Field names already found plain (the audit record's few). */
const plainKeys = new Set<string>();

/**
 * `logger[level](fields, msg)`, byte for byte (test/unit/log-line.test.ts), for the one line every
 * call writes: pino's generic serializer (per-key stringifier and serializer lookups, its string
 * escaper) was ~17 µs of a unary call's CPU under load in the V8 profile of `npm run bench`
 * (2026-11-24); the audit line hot in a loop: pino 2.5 µs, this 1.7 µs. Any logger createLogger did
 * not make, a level that is off, and any value it cannot write the same way (escapes, circular
 * objects) take pino's path. A/B in one `npm run bench` (2026-11-29, docs/performance.md), with the
 * audit line's writer: CPU per unary call under load 9 % less than pino's path.
 */
export function writeLine(logger: Logger, level: 'info' | 'warn', fields: Record<string, unknown>, msg: string): void {
  const out = known.get(logger);
  // pino rewrites objects that look like an HTTP request or response (its LOG): its path for those.
  if (out === undefined || !plainText(msg) || fields.socket !== undefined || typeof fields.setHeader === 'function') return void logger[level](fields, msg);
  if (!logger.isLevelEnabled(level)) return;
  // pino's line: level, time, the base bindings, the fields in order (undefined ones left out), msg.
  let line = lineStart(level);
  for (const key in fields) {
    const v = fields[key];
    let text: string | undefined;
    switch (typeof v) {
      case 'undefined':
        continue;
      case 'string':
        if (!plainText(v)) return void logger[level](fields, msg);
        text = `"${v}"`;
        break;
      case 'number':
        text = Number.isFinite(v) ? String(v) : 'null';
        break;
      case 'boolean':
        text = v ? 'true' : 'false';
        break;
      case 'object':
        // pino's error serializer applies to "err"; a toJSON may give undefined (pino leaves the field out).
        if (key === 'err') return void logger[level](fields, msg);
        try {
          text = JSON.stringify(v) as string | undefined;
        } catch {
          return void logger[level](fields, msg);
        }
        if (text === undefined) return void logger[level](fields, msg);
        break;
      default:
        return void logger[level](fields, msg);
    }
    if (!Object.hasOwn(fields, key)) return void logger[level](fields, msg);
    if (!plainKeys.has(key)) {
      if (!plainText(key)) return void logger[level](fields, msg);
      if (plainKeys.size < 256) plainKeys.add(key);
    }
    line += `,"${key}":${text}`;
  }
  out.write(`${line},"msg":"${msg}"}\n`);
}

/**
 * Where `level` lines of this logger go when their text is made here (writeLine, the audit line):
 * its destination; null when the level is off (nothing to write); undefined when pino must write
 * them (a logger createLogger did not make).
 */
export function lineOut(logger: Logger, level: 'info' | 'warn'): pino.DestinationStream | null | undefined {
  const out = known.get(logger);
  if (out === undefined) return undefined;
  return logger.isLevelEnabled(level) ? out : null;
}

/** The last line start made per level, and its millisecond: lines in the same millisecond share it. */
const infoStart = { at: -1, text: '' };
const warnStart = { at: -1, text: '' };

/** A line as pino starts it, up to the fields: level, time and the base binding (no closing brace). */
export function lineStart(level: 'info' | 'warn'): string {
  const start = level === 'info' ? infoStart : warnStart;
  const now = Date.now();
  if (now !== start.at) {
    start.at = now;
    start.text = `{"level":"${level}","time":"${new Date(now).toISOString()}","service":"${SERVICE}"`;
  }
  return start.text;
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
