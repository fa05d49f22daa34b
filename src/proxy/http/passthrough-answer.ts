/**
 * Answers to unjudged traffic (PASSTHROUGH_PATHS, NON_A2A=forward) on their way back. They pass as they
 * come, except an answer that is an agent card: relayed with the agent's own URLs, it would lead the
 * caller around the proxy, so it is rewritten as the card route rewrites cards, or refused. Card readers
 * parse the body whatever its label says (`response.json()`), so the first bytes are read as a JSON
 * reader reads them (through a UTF-8 or UTF-16/32 byte order mark, JSON whitespace and NULs, behind a
 * content coding): an answer that cannot start a JSON object or array streams on at once; one that can
 * is held whole (MAX_BODY_BYTES, the in-flight budget) and read.
 */
import type { Transform } from 'node:stream';
import type * as Zlib from 'node:zlib';
import type { Logger } from 'pino';
import { agentAddress, cardIn, cardToServe, type CardJson, type RewriteOptions } from '../../a2a/card';
import { wideDecode } from '../../a2a/classify';
import { restCodec } from '../../a2a/bindings/rest';
import { BoundedBytes } from '../../core/bounded';
import { contentCodings } from '../../core/http';
import { proxyError, type ProxyError } from '../../core/errors';
import { decodeBody } from './body';
import { dropAgentBytes, UpstreamAnswer } from './forward';
import { relayPlain, sendError, type RelayContext } from './responses';
import { rewrittenCardHeaders } from './card-route';

/** Codings the proxy decodes (core/body.ts decodeBody). */
const READABLE: ReadonlySet<string> = new Set(['gzip', 'x-gzip', 'deflate', 'br']);
/** Codings some client decodes (undici's fetch adds zstd); a client leaves a body with any other coding as it is. */
const DECODED_BY_CLIENTS: ReadonlySet<string> = new Set([...READABLE, 'zstd', 'compress', 'x-compress']);

/** Leading whitespace (and NULs) read before an answer counts as JSON anyway. */
const WHITESPACE_LIMIT = 64 * 1024;
/** Compressed bytes held while their first decoded bytes are awaited: past the first the agent waits, past the second the answer is held whole. */
const SNIFF_PAUSE_BYTES = 64 * 1024;
const SNIFF_HOLD_BYTES = 1024 * 1024;

/** The caller's Accept-Encoding for an unjudged request: only the codings the proxy can read back. */
export function readableCodings(accept: string | string[]): string {
  const items = (Array.isArray(accept) ? accept.join(',') : accept).split(',').map((s) => s.trim());
  const kept = items.filter((item) => {
    const name = (item.split(';', 1)[0] as string).trim().toLowerCase();
    return name === 'identity' || READABLE.has(name);
  });
  return kept.length === 0 ? 'identity' : kept.join(', ');
}

export interface PassthroughOptions {
  /** The request's method: a HEAD answer has no body. */
  readonly method: string;
  /** How a card found in the answer is rewritten (the card route's options for this request). */
  readonly rewrite: () => RewriteOptions;
  /** PUBLIC_URL unset: a rewritten card is kept out of shared caches. */
  readonly hostBound: boolean;
  /** For the log. */
  readonly path: string;
  readonly logger: Logger;
}

type Verdict = 'json' | 'other';

/** Relay an unjudged answer: streamed, or held and read when it could be JSON. */
export function relayPassthrough(ctx: RelayContext, opts: PassthroughOptions): void {
  const status = ctx.upRes.statusCode;
  if (opts.method.toUpperCase() === 'HEAD' || status === 204 || status === 304) return relayPlain(ctx);
  const codings = contentCodings(ctx.upRes.headers['content-encoding']);
  // What a client reads: every coding it knows undone, the bytes as they are when one is unknown to it (undici's fetch).
  if (codings.length === 0 || codings.every((c) => !DECODED_BY_CLIENTS.has(c))) return new PassthroughReader(ctx, opts, undefined).start();
  if (codings.length === 1 && READABLE.has(codings[0] as string)) return new PassthroughReader(ctx, opts, codings[0]).start();
  ctx.upReq.abort();
  refuse(ctx, opts, `content coding "${codings.join(', ').slice(0, 64)}" the proxy cannot read (it could hide an agent card)`);
}

function refuse(
  ctx: RelayContext,
  opts: PassthroughOptions,
  why: string,
  err: ProxyError = proxyError('upstreamUnavailable', `Agent answer refused: ${why}`),
): void {
  ctx.onUpstreamFailure(why);
  opts.logger.warn({ path: opts.path, why }, 'unjudged answer refused');
  if (ctx.res.headersSent) return void ctx.res.destroy();
  if (!ctx.res.destroyed) sendError(ctx.res, restCodec, err, null);
}

/**
 * The first bytes of a body as a JSON reader sees them: one byte order mark (UTF-8, UTF-16, UTF-32) at
 * the start, then JSON whitespace and NULs (UTF-16/32 text) skipped; the first other byte decides.
 */
class JsonStart {
  /** The first bytes, until four are there to tell a byte order mark. */
  private head: Buffer | undefined = Buffer.alloc(0);
  private skipped = 0;

  push(b: Buffer): Verdict | undefined {
    if (this.head === undefined) return this.scan(b);
    const h = this.head.length === 0 ? b : Buffer.concat([this.head, b]);
    if (h.length < 4) {
      this.head = h;
      return undefined;
    }
    this.head = undefined;
    return this.scan(h.subarray(bomLength(h)));
  }

  /** The body ended: whitespace only (or nothing) is not JSON. */
  end(): Verdict {
    const h = this.head;
    this.head = undefined;
    return (h === undefined ? undefined : this.scan(h.subarray(bomLength(h)))) ?? 'other';
  }

  private scan(b: Buffer): Verdict | undefined {
    for (let i = 0; i < b.length; i++) {
      const c = b[i] as number;
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0x00) {
        if (++this.skipped > WHITESPACE_LIMIT) return 'json';
        continue;
      }
      return c === 0x7b || c === 0x5b ? 'json' : 'other';
    }
    return undefined;
  }
}

function bomLength(h: Buffer): number {
  if (h[0] === 0xef && h[1] === 0xbb && h[2] === 0xbf) return 3;
  if (h[0] === 0 && h[1] === 0 && h[2] === 0xfe && h[3] === 0xff) return 4;
  if ((h[0] === 0xff && h[1] === 0xfe) || (h[0] === 0xfe && h[1] === 0xff)) return 2;
  return 0;
}

/** One unjudged answer: sniffing its first (decoded) bytes, then streaming on or holding it whole. */
class PassthroughReader {
  private state: 'sniffing' | 'streaming' | 'holding' | 'over' = 'sniffing';
  private readonly sniff = new JsonStart();
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** How the upstream body ended while its verdict was awaited (undefined: still coming). */
  private ended: boolean | undefined;
  private decoder: Transform | undefined;
  private writes = 0;
  private relayed: UpstreamAnswer | undefined;
  private kept: BoundedBytes | undefined;

  constructor(
    private readonly ctx: RelayContext,
    private readonly opts: PassthroughOptions,
    private readonly coding: string | undefined,
  ) {}

  start(): void {
    this.ctx.upRes.read({ data: (c) => this.data(c), end: (complete) => this.end(complete) });
  }

  private data(c: Buffer): void {
    const { ctx } = this;
    if (this.state === 'over' || ctx.res.destroyed) return;
    if (this.state === 'streaming') {
      const relayed = this.relayed as UpstreamAnswer;
      relayed.push(c);
      if (relayed.paused) ctx.upRes.pause();
      return;
    }
    // Held bytes count against the in-flight budget, as answers held for inspection do.
    if (!ctx.lease.take(c.length)) return this.fail(proxyError('overloaded'), 'in-flight budget exhausted');
    if (this.state === 'holding') {
      this.keep(c);
      return;
    }
    this.held.push(c);
    this.heldBytes += c.length;
    if (this.coding === undefined) {
      const v = this.sniff.push(c);
      if (v !== undefined) return this.decide(v);
    } else this.feed(c);
    if (this.state !== 'sniffing') return;
    if (this.heldBytes > SNIFF_HOLD_BYTES) return this.decide('json');
    if (this.coding !== undefined && this.heldBytes >= SNIFF_PAUSE_BYTES) ctx.upRes.pause();
  }

  private end(complete: boolean): void {
    if (this.state === 'over') return;
    if (this.state === 'streaming') return (this.relayed as UpstreamAnswer).finish(complete);
    if (this.state === 'holding') return this.finishHeld(complete);
    this.ended = complete;
    if (this.ctx.res.destroyed) return this.decide('other');
    // Nothing was sent yet: a cut answer is refused whole rather than relayed in part.
    if (!complete) return this.fail(proxyError('upstreamUnavailable', 'Upstream agent failed mid-answer'), 'upstream closed mid-response');
    if (this.coding === undefined) return this.decide(this.sniff.end());
    if (this.decoder === undefined) return this.decide('other');
    this.decoder.end();
  }

  /** Decoded bytes for the verdict only: the answer goes on as the agent's bytes, or is held and decoded whole. */
  private feed(c: Buffer): void {
    if (this.decoder === undefined) {
      const zlib = require('node:zlib') as typeof Zlib;
      const coding = this.coding as string;
      // As clients tell zlib-wrapped deflate from raw: by the first byte's compression method.
      this.decoder =
        coding === 'br'
          ? zlib.createBrotliDecompress()
          : coding === 'deflate'
            ? ((c[0] as number) & 0x0f) === 8
              ? zlib.createInflate()
              : zlib.createInflateRaw()
            : zlib.createGunzip();
      this.decoder.on('data', (d: Buffer) => {
        const v = this.state === 'sniffing' ? this.sniff.push(d) : undefined;
        if (v !== undefined) this.decide(v);
      });
      // A body this reading cannot decode may still decode for a reader that tries another way: held whole.
      this.decoder.on('error', () => this.decide('json'));
      this.decoder.on('end', () => this.decide(this.sniff.end()));
    }
    this.writes++;
    this.decoder.write(c, () => {
      this.writes--;
      // Everything written is decoded and nothing told yet: the agent may send more.
      if (this.writes === 0 && this.state === 'sniffing' && this.ended === undefined) this.ctx.upRes.resume();
    });
  }

  private decide(v: Verdict): void {
    if (this.state !== 'sniffing') return;
    this.decoder?.destroy();
    this.decoder = undefined;
    const { ctx } = this;
    const held = this.held;
    this.held = [];
    if (ctx.res.destroyed) {
      this.state = 'over';
      return;
    }
    if (v === 'other') {
      this.state = 'streaming';
      // The plain relay reads what was held and then the rest, with its own backpressure on the agent.
      const relayed = new UpstreamAnswer(ctx.upRes.statusCode, ctx.upRes.headers, () => ctx.upRes.resume());
      this.relayed = relayed;
      relayPlain({ ...ctx, upRes: relayed });
      for (const c of held) relayed.push(c);
      ctx.lease.give(this.heldBytes);
      if (this.ended !== undefined) return relayed.finish(this.ended);
      if (!relayed.paused) ctx.upRes.resume();
      return;
    }
    this.state = 'holding';
    this.kept = new BoundedBytes(ctx.maxBodyBytes);
    for (const c of held) if (!this.keep(c)) return;
    if (this.ended !== undefined) return this.finishHeld(this.ended);
    ctx.upRes.resume();
  }

  private keep(c: Buffer): boolean {
    if ((this.kept as BoundedBytes).push(c)) return true;
    this.fail(
      proxyError('upstreamUnavailable', 'Agent answer refused: it could hold an agent card and is larger than MAX_BODY_BYTES'),
      'answer that could hold an agent card is larger than MAX_BODY_BYTES',
    );
    return false;
  }

  private fail(err: ProxyError, why: string): void {
    this.state = 'over';
    this.decoder?.destroy();
    this.ctx.upReq.abort();
    refuse(this.ctx, this.opts, why, err);
  }

  private finishHeld(complete: boolean): void {
    const { ctx } = this;
    this.state = 'over';
    if (ctx.res.destroyed || ctx.res.writableEnded) return;
    if (!complete) return refuse(ctx, this.opts, 'upstream closed mid-response', proxyError('upstreamUnavailable', 'Upstream agent failed mid-answer'));
    void this.readHeld((this.kept as BoundedBytes).buffer()).catch(() => ctx.res.destroy());
  }

  /** The whole answer: relayed as it came, rewritten when it is an agent card, refused when a card is in it any other way. */
  private async readHeld(raw: Buffer): Promise<void> {
    const { ctx, opts } = this;
    let plain = raw;
    // Bytes that are not what their coding says: a reader that decodes fails, one that ignores the label reads them as they are.
    let mislabelled = false;
    if (this.coding !== undefined) {
      const decoded = await decodeBody(raw, this.coding, ctx.maxBodyBytes);
      if (ctx.res.destroyed) return;
      if (!decoded.ok && decoded.error.httpStatus === 413) return refuse(ctx, opts, 'answer that could hold an agent card decodes to more than MAX_BODY_BYTES');
      if (decoded.ok) {
        if (!ctx.lease.take(decoded.body.length)) return refuse(ctx, opts, 'in-flight budget exhausted', proxyError('overloaded'));
        plain = decoded.body;
      } else mislabelled = true;
    }
    const wide = wideDecode(plain);
    const text = wide ?? plain.toString('utf8', plain[0] === 0xef && plain[1] === 0xbb && plain[2] === 0xbf ? 3 : 0);
    const read = readJson(text);
    const rewrite = opts.rewrite();
    const found = read === undefined ? undefined : cardIn(read.value, (u) => agentAddress(u, rewrite.upstreamBase));
    if (found === undefined) return this.pass(raw);
    // Only a well-formed UTF-8 answer that is itself a card is rewritten; any other card is one the proxy cannot vouch for.
    if (found !== 'top' || !(read as JsonRead).whole || wide !== undefined || mislabelled) {
      const how =
        found !== 'top'
          ? 'inside another value'
          : wide !== undefined
            ? 'in UTF-16/32'
            : mislabelled
              ? `not encoded as its coding (${this.coding as string}) says`
              : 'followed by more text';
      return refuse(ctx, opts, `answer holds an agent card ${how}`);
    }
    const served = cardToServe((read as JsonRead).value as CardJson, rewrite);
    if (served === undefined) return refuse(ctx, opts, 'answer is an agent card whose signature does not verify (CARD_SIGNATURES=require)');
    const body = Buffer.from(JSON.stringify(served), 'utf8');
    const headers = dropAgentBytes({ ...ctx.upRes.headers });
    rewrittenCardHeaders(headers, body, opts.hostBound);
    headers['content-length'] = body.length;
    opts.logger.info({ path: opts.path }, 'unjudged answer is an agent card: rewritten to point at the proxy');
    ctx.res.writeHead(ctx.upRes.statusCode, headers);
    ctx.res.end(body);
  }

  private pass(raw: Buffer): void {
    const { res, upRes } = this.ctx;
    res.writeHead(upRes.statusCode, { ...upRes.headers, 'content-length': raw.length });
    res.end(raw);
  }
}

interface JsonRead {
  readonly value: unknown;
  /** The whole text is this one value (else it is the first value of the text, as a streaming decoder reads it). */
  readonly whole: boolean;
}

/** The text as strict JSON, else its first JSON value (Go's json.Decoder reads one value and leaves the rest), else undefined. */
function readJson(text: string): JsonRead | undefined {
  try {
    return { value: JSON.parse(text), whole: true };
  } catch {
    const first = firstValue(text);
    if (first === undefined) return undefined;
    try {
      return { value: JSON.parse(first), whole: false };
    } catch {
      return undefined;
    }
  }
}

/** The text of the first object or array in `text` (after whitespace), by bracket depth outside strings. */
function firstValue(text: string): string | undefined {
  const start = text.search(/[^ \t\r\n\0]/);
  if (start < 0 || (text[start] !== '{' && text[start] !== '[')) return undefined;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if ((c === 0x7d || c === 0x5d) && --depth === 0) return text.slice(start, i + 1);
  }
  return undefined;
}
