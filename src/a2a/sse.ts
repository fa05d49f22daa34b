/**
 * Incremental Server-Sent Events parser and writer for a proxy that forwards a stream unchanged
 * while inspecting every event in order.
 *
 * Parsing follows the WHATWG "event stream interpretation" rules (HTML §9.2.6): lines end with
 * CRLF, LF or CR; one leading UTF-8 BOM is ignored; `:` starts a comment; known fields are `data`,
 * `event`, `id` and `retry`; a blank line ends the event. Unlike a browser, the parser also returns
 * blocks that dispatch nothing (keep-alive comments, stray blank lines) and the exact bytes of every
 * block, so that writing each event's `raw` in order reproduces the input byte for byte.
 *
 * Chunks may split anywhere, including inside a UTF-8 sequence or between CR and LF. Lines are
 * decoded only once complete, and only at ASCII CR/LF boundaries, so a split character is never
 * decoded in halves.
 */

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const NUL = '\u0000';

/** Same default as the A2A SDK client (`DEFAULT_MAX_SSE_EVENT_SIZE_BYTES`). */
export const DEFAULT_MAX_SSE_EVENT_BYTES = 4 * 1024 * 1024;

// Field names compared as bytes so that classifying a line allocates nothing.
const DATA = Buffer.from('data', 'latin1');
const EVENT = Buffer.from('event', 'latin1');
const ID = Buffer.from('id', 'latin1');
const RETRY = Buffer.from('retry', 'latin1');
/** Longest known field name: a longer name cannot be one we act on, so we stop looking for its colon. */
const MAX_FIELD_NAME = 5;

export interface SseEvent {
  /**
   * The exact bytes of this block: any comment or ignored lines, the field lines and the blank line
   * that ended it. May be a view into a pushed chunk (do not mutate pushed chunks afterwards).
   * Exception to "exact per event": when a CR that ends an event is the last byte of a chunk and
   * the next chunk starts with the LF of that CRLF, the event has already been returned, so that LF
   * is carried at the start of the next block's `raw`. The concatenation is always exact.
   */
  raw: Buffer;
  /** The data lines joined with "\n" (empty when there were none, or when they were empty). */
  data: string;
  /** Value of the last `event` field in the block, if any (the WHATWG default type is "message"). */
  event?: string;
  /** Value of the last valid `id` field in the block (ids containing NUL are ignored). */
  id?: string;
  /** Value of the last valid `retry` field in the block (ASCII digits only). */
  retry?: number;
  /** At least one `data` line was seen: a WHATWG client would dispatch this event (possibly with empty data). */
  hasData: boolean;
  /**
   * No `data`, `event`, valid `id` or valid `retry` line: only comments, blank lines or lines the
   * WHATWG rules ignore. A client takes no action on it; a proxy can forward it as is (keep-alives).
   */
  commentOnly: boolean;
  /**
   * True when a blank line ended the block. False only for the remainder flushed by `end()`
   * (a stream that stopped without the final blank line).
   */
  terminated: boolean;
}

export interface SseParserOptions {
  /** Maximum bytes in one block (its `raw`); larger blocks make `push()` throw. Default 4 MiB. */
  maxEventBytes?: number;
}

/** Thrown by `push()` when one event (or the still-unterminated current block) exceeds the limit. */
export class SseEventTooLargeError extends Error {
  override readonly name = 'SseEventTooLargeError';

  constructor(
    readonly maxEventBytes: number,
    /** Size of the offending block when it was detected (at least `maxEventBytes + 1`). */
    readonly eventBytes: number,
    /** Complete events of the failing `push()` that came before the oversized one, so they can still be forwarded. */
    readonly events: SseEvent[],
  ) {
    super(`SSE event of at least ${eventBytes} bytes exceeds the limit of ${maxEventBytes} bytes`);
  }
}

/**
 * Usage: call `push(chunk)` for every chunk and handle the events it returns, then `end()` when the
 * upstream body ends. After an error, or after `end()`, the parser refuses further input.
 */
export class SseParser {
  readonly maxEventBytes: number;

  // Raw bytes of the current block from earlier chunks, kept as views: copied once, at dispatch.
  private blockParts: Buffer[] = [];
  private blockBytes = 0;
  // Start of the current line when it began in an earlier chunk (its bytes are also in blockParts).
  private lineParts: Buffer[] = [];
  private lineBytes = 0;
  // The previous chunk ended with CR: an LF first in the next chunk is the second half of a CRLF.
  private skipLF = false;
  // The current block starts with such an LF; it is not counted against the limit, so the outcome
  // does not depend on where the chunks were split.
  private carriedLF = false;
  private atStreamStart = true;
  private ended = false;
  private failure: SseEventTooLargeError | undefined;

  // Fields of the current block.
  private data = '';
  private hasData = false;
  private eventType: string | undefined;
  private id: string | undefined;
  private retry: number | undefined;
  private sawField = false;

  constructor(options: SseParserOptions = {}) {
    const max = options.maxEventBytes ?? DEFAULT_MAX_SSE_EVENT_BYTES;
    if (!Number.isSafeInteger(max) || max <= 0) throw new RangeError(`maxEventBytes must be a positive integer, got ${max}`);
    this.maxEventBytes = max;
  }

  /** Bytes received but not yet returned in an event. */
  get bufferedBytes(): number {
    return this.blockBytes;
  }

  /** Feeds one chunk; returns the events completed by it, in stream order. */
  push(chunk: Buffer): SseEvent[] {
    this.assertUsable();
    const out: SseEvent[] = [];
    const len = chunk.length;
    if (len === 0) return out;

    let pos = 0; // start of the current line in this chunk
    let blockStart = 0; // start of the current block's bytes in this chunk
    if (this.skipLF) {
      this.skipLF = false;
      if (chunk[0] === LF) {
        pos = 1;
        if (this.blockBytes === 0) this.carriedLF = true; // the CR ended an event already returned
      }
    }

    // Remember the next LF and CR separately and search again only once we pass them: searching
    // for CR anew on every line of an LF-only stream would rescan to the end of the chunk each time.
    let nextLF = chunk.indexOf(LF, pos);
    let nextCR = chunk.indexOf(CR, pos);
    for (;;) {
      if (nextLF !== -1 && nextLF < pos) nextLF = chunk.indexOf(LF, pos);
      if (nextCR !== -1 && nextCR < pos) nextCR = chunk.indexOf(CR, pos);
      const eol = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      if (eol === -1) break;

      let next = eol + 1;
      if (chunk[eol] === CR) {
        if (next < len) {
          if (chunk[next] === LF) next++;
        } else {
          this.skipLF = true; // the LF, if any, is in the next chunk
        }
      }

      const blank = this.completeLine(chunk, pos, eol);
      pos = next;
      if (blank) {
        const size = this.blockBytes + (next - blockStart) - (this.carriedLF ? 1 : 0);
        if (size > this.maxEventBytes) throw this.fail(size, out);
        out.push(this.dispatch(chunk.subarray(blockStart, next), true));
        blockStart = next;
      }
    }

    // Keep the unfinished line and block (as views) for the next chunk.
    if (pos < len) {
      this.lineParts.push(chunk.subarray(pos));
      this.lineBytes += len - pos;
    }
    if (blockStart < len) {
      this.blockParts.push(chunk.subarray(blockStart));
      this.blockBytes += len - blockStart;
      const size = this.blockBytes - (this.carriedLF ? 1 : 0);
      if (size > this.maxEventBytes) throw this.fail(size, out);
    }
    return out;
  }

  /**
   * Signals the end of the stream. WHATWG discards an event that was not ended by a blank line; we
   * instead return whatever is left as one final event with `terminated: false`, so that (a) the
   * proxy can still forward every byte and (b) it can inspect fields the A2A SDK client acts on: the
   * SDK client dispatches pending `data` at EOF. Its fields come from complete lines only; a last
   * line without a line end is in `raw` but not parsed (neither WHATWG nor the SDK client use it).
   * Returns [] when nothing is pending.
   */
  end(): SseEvent[] {
    this.assertUsable();
    this.ended = true;
    this.skipLF = false;
    this.lineParts = [];
    this.lineBytes = 0;
    if (this.blockBytes === 0) return [];
    return [this.dispatch(undefined, false)];
  }

  private assertUsable(): void {
    if (this.failure) throw this.failure;
    if (this.ended) throw new Error('SseParser: input after end()');
  }

  private fail(size: number, events: SseEvent[]): SseEventTooLargeError {
    this.failure = new SseEventTooLargeError(this.maxEventBytes, size, events);
    // Drop buffered views so a parser kept around after the error does not pin the chunks.
    this.blockParts = [];
    this.lineParts = [];
    return this.failure;
  }

  /** Processes the line ending at `end` in `chunk`, prefixed by any part from earlier chunks. Returns true for a blank line. */
  private completeLine(chunk: Buffer, start: number, end: number): boolean {
    if (this.lineBytes === 0) return this.processLine(chunk, start, end);
    this.lineParts.push(chunk.subarray(start, end));
    const line = Buffer.concat(this.lineParts, this.lineBytes + (end - start));
    this.lineParts = [];
    this.lineBytes = 0;
    return this.processLine(line, 0, line.length);
  }

  /** Applies one complete line (without its line end) to the current block. Returns true if it is blank. */
  private processLine(buf: Buffer, start: number, end: number): boolean {
    let s = start;
    if (this.atStreamStart) {
      this.atStreamStart = false;
      // The BOM can only be at the start of the first line: its bytes are never CR or LF.
      if (end - s >= 3 && buf[s] === 0xef && buf[s + 1] === 0xbb && buf[s + 2] === 0xbf) s += 3;
    }
    if (s === end) return true;
    if (buf[s] === COLON) return false; // comment

    let colon = -1;
    const scanEnd = Math.min(end, s + MAX_FIELD_NAME + 1);
    for (let i = s; i < scanEnd; i++) {
      if (buf[i] === COLON) {
        colon = i;
        break;
      }
    }
    const nameLen = (colon === -1 ? end : colon) - s;
    if (nameLen > MAX_FIELD_NAME) return false; // unknown field: ignored
    let v = colon === -1 ? end : colon + 1; // no colon: the whole line is the name, the value is ""
    if (v < end && buf[v] === SPACE) v++; // exactly one space is stripped

    if (nameIs(buf, s, nameLen, DATA)) {
      const value = buf.toString('utf8', v, end);
      this.data = this.hasData ? this.data + '\n' + value : value;
      this.hasData = true;
      this.sawField = true;
    } else if (nameIs(buf, s, nameLen, EVENT)) {
      this.eventType = buf.toString('utf8', v, end);
      this.sawField = true;
    } else if (nameIs(buf, s, nameLen, ID)) {
      const value = buf.toString('utf8', v, end);
      if (!value.includes(NUL)) {
        this.id = value;
        this.sawField = true;
      }
    } else if (nameIs(buf, s, nameLen, RETRY)) {
      if (isAsciiDigits(buf, v, end)) {
        this.retry = Number(buf.toString('latin1', v, end));
        this.sawField = true;
      }
    }
    return false;
  }

  /** Builds the event for the current block (plus `tail` from the current chunk) and resets the block. */
  private dispatch(tail: Buffer | undefined, terminated: boolean): SseEvent {
    let raw: Buffer;
    if (this.blockParts.length === 0) {
      raw = tail ?? Buffer.alloc(0);
    } else {
      if (tail) this.blockParts.push(tail);
      raw = this.blockParts.length === 1 ? (this.blockParts[0] as Buffer) : Buffer.concat(this.blockParts);
    }
    // Every key is always present so all events share one object shape.
    const event: SseEvent = {
      raw,
      data: this.data,
      event: this.eventType,
      id: this.id,
      retry: this.retry,
      hasData: this.hasData,
      commentOnly: !this.sawField,
      terminated,
    };
    this.blockParts = [];
    this.blockBytes = 0;
    this.carriedLF = false;
    this.data = '';
    this.hasData = false;
    this.eventType = undefined;
    this.id = undefined;
    this.retry = undefined;
    this.sawField = false;
    return event;
  }
}

function nameIs(buf: Buffer, start: number, len: number, name: Buffer): boolean {
  if (len !== name.length) return false;
  for (let i = 0; i < len; i++) if (buf[start + i] !== name[i]) return false;
  return true;
}

function isAsciiDigits(buf: Buffer, start: number, end: number): boolean {
  if (start === end) return false; // an empty value is not a number
  for (let i = start; i < end; i++) {
    const b = buf[i] as number;
    if (b < 0x30 || b > 0x39) return false;
  }
  return true;
}

/** Parses a complete stream in one go (push + end). */
export function parseSse(input: Buffer, options?: SseParserOptions): SseEvent[] {
  const parser = new SseParser(options);
  const events = parser.push(input);
  for (const e of parser.end()) events.push(e);
  return events;
}

export interface SseEventInit {
  data: string;
  event?: string;
  id?: string;
}

const LINE_BREAK = /\r\n|\r|\n/;

/**
 * Serialises one event: `event: X\n` and `id: X\n` when given, one `data: ` line per line of `data`
 * (CRLF, CR and LF all split lines; a parser joins them back with "\n"), then the blank line.
 * Throws if `event` or `id` contains a line break (it would inject fields) or `id` contains NUL.
 */
export function formatSseEvent(init: SseEventInit): Buffer {
  let text = '';
  if (init.event !== undefined) text += 'event: ' + singleLine('event', init.event) + '\n';
  if (init.id !== undefined) {
    if (init.id.includes(NUL)) throw new TypeError('SSE id must not contain NUL');
    text += 'id: ' + singleLine('id', init.id) + '\n';
  }
  for (const line of init.data.split(LINE_BREAK)) text += 'data: ' + line + '\n';
  return Buffer.from(text + '\n', 'utf8');
}

/** `event: error\ndata: <json>\n\n`: the frame the A2A SDK server sends for an error after the first event. */
export function formatSseErrorEvent(jsonText: string): Buffer {
  return formatSseEvent({ event: 'error', data: jsonText });
}

function singleLine(field: string, value: string): string {
  if (value.includes('\n') || value.includes('\r')) throw new TypeError(`SSE ${field} must not contain a line break`);
  return value;
}
