/**
 * The caller's side of a gRPC call: its per-call facts, reading its one request message (bounded,
 * counted against the in-flight budget, decompressed) and answering it in gRPC terms (a status with
 * the proxy's ErrorInfo, trailers-only before any message, trailers after them).
 */
import http2 from 'node:http2';
import { GRPC_STATUS, MessageReader, isProblem, readMessage, type FramingProblem, type RawMessage } from '../../a2a/bindings/grpc/framing';
import { grpcErrorStatus } from '../../a2a/bindings/grpc/binding';
import type { BodyLease } from '../budget';
import { HELD_COPIES } from '../../core/bounded';
import { proxyError, type ProxyError } from '../../core/errors';
import type { CallerPort } from '../stages';

/** The caller's side of one call: answers in gRPC terms, whatever state the stream is in. */
export class CallerSide implements CallerPort {
  private trailers: http2.OutgoingHttpHeaders | undefined;
  finished = false;

  constructor(readonly stream: http2.ServerHttp2Stream) {
    stream.on('wantTrailers', () => {
      stream.sendTrailers(this.trailers ?? { 'grpc-status': String(GRPC_STATUS.INTERNAL), 'grpc-message': 'answer ended without a status' });
    });
  }

  get open(): boolean {
    return !this.stream.destroyed && !this.stream.closed && !this.finished;
  }

  /** Headers of a response that will carry messages and then trailers. */
  respond(headers: http2.OutgoingHttpHeaders): void {
    if (this.stream.headersSent || !this.open) return;
    this.stream.respond({ ...headers, ':status': 200 }, { waitForTrailers: true });
  }

  /** End with a status: trailers-only before any message, trailers after them. */
  end(status: http2.OutgoingHttpHeaders): void {
    if (!this.open) return;
    this.finished = true;
    if (!this.stream.headersSent) {
      this.stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...status }, { endStream: true });
      // Refused before the request was read to its end: RST_STREAM(NO_ERROR) tells the caller to stop sending (RFC 9113 8.1).
      if (!this.stream.readableEnded) this.stream.close(http2.constants.NGHTTP2_NO_ERROR);
      return;
    }
    this.trailers = status;
    this.stream.end();
  }

  fail(err: ProxyError, statusOverride?: string): void {
    this.end(grpcErrorStatus(err, statusOverride));
  }

  /** Write one message; false when the caller's side is full: `drained` is called once it can take more (or the stream closed). */
  write(frame: Buffer, drained: () => void): boolean {
    if (!this.open || this.stream.write(frame)) return true;
    const done = () => {
      this.stream.off('drain', done);
      this.stream.off('close', done);
      drained();
    };
    this.stream.once('drain', done);
    this.stream.once('close', done);
    return false;
  }
}

export function framingError(p: FramingProblem): ProxyError {
  return proxyError(p.status === 'UNIMPLEMENTED' ? 'methodNotFound' : 'rejected', p.message);
}

/** The one request message of a call (every A2A RPC takes exactly one), bounded and decompressed. */
export function readRequestMessage(
  stream: http2.ServerHttp2Stream,
  encoding: string | undefined,
  maxBytes: number,
  timeoutMs: number,
  lease: BodyLease,
): Promise<Buffer | FramingProblem | 'gone' | 'overloaded'> {
  return new Promise((resolve) => {
    const reader = new MessageReader(maxBytes);
    const messages: RawMessage[] = [];
    let settled = false;
    const done = (v: Buffer | FramingProblem | 'gone' | 'overloaded' | Promise<Buffer | FramingProblem | 'overloaded'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('close', onClose);
      if (v !== 'gone' && !(v instanceof Promise) && !Buffer.isBuffer(v)) stream.pause();
      void Promise.resolve(v).then(resolve);
    };
    const timer = setTimeout(() => done({ status: 'INTERNAL', message: 'request message did not arrive in time' }), timeoutMs);
    timer.unref();
    const onData = (chunk: Buffer) => {
      // Its copies, as for an HTTP body (core/bounded.ts HELD_COPIES): a call the budget cannot carry is cut while read.
      if (!lease.take(chunk.length * HELD_COPIES)) return done('overloaded');
      const got = reader.push(chunk);
      if (isProblem(got)) return done(got);
      messages.push(...got);
      if (messages.length > 1) done({ status: 'INTERNAL', message: 'more than one request message for a unary-request method' });
    };
    const onEnd = () => {
      if (!reader.clean) return done({ status: 'INTERNAL', message: 'request ended inside a message' });
      const m = messages[0];
      if (m === undefined) return done({ status: 'INTERNAL', message: 'no request message' });
      if (!m.compressed) return done(m.data);
      // While it is decompressed, the message holds its wire bytes once and its output as it comes.
      lease.shrinkTo(m.data.length);
      done(readMessage(m, encoding, maxBytes, (n) => lease.take(n)).then((r) => (r === 'budget spent' ? 'overloaded' : r)));
    };
    const onClose = () => done('gone');
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('close', onClose);
  });
}
