/**
 * The tracing interface the pipeline speaks (tracing.ts) and the OpenTelemetry tracer implements
 * (otel.ts, loaded only when tracing is on). Types only: both import them from here, so neither
 * imports the other for them.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Phase, Role, Side } from '../aos/hook-points';

/** W3C trace context to send with an outgoing call. */
export interface TraceHeaders {
  readonly traceparent: string;
  readonly tracestate?: string | undefined;
}

export interface CallStart {
  /** AOS method (operation table name). */
  readonly method: string;
  readonly wireMethod: string;
  readonly binding: string;
  readonly role: Role;
  readonly httpMethod: string;
  readonly path: string;
  readonly remoteAddress: string | undefined;
}

export interface CallEnd {
  readonly outcome: string;
  readonly decision: string;
  readonly reasonCodes: readonly string[];
  readonly upstreamStatus: number | null;
  readonly error?: string | undefined;
}

export interface HookStart {
  readonly method: string;
  readonly side: Side;
  readonly phase: Phase;
  readonly envelopeId: string;
}

export interface HookEnd {
  readonly decision: string;
  readonly reasonCodes?: readonly string[] | undefined;
  readonly failureKind?: string | undefined;
  readonly failureDetail?: string | undefined;
}

export interface HookSpan {
  /** Trace context for the guardian call (undefined: send none). */
  readonly headers: TraceHeaders | undefined;
  end(result: HookEnd): void;
}

export interface UpstreamSpan {
  /** Trace context for the agent (undefined: leave the caller's headers as they are). */
  readonly headers: TraceHeaders | undefined;
  /** Idempotent: the first call ends the span; `endedAt` is a performance.now() time (default: now). */
  end(status: number | undefined, error?: string, endedAt?: number): void;
}

export interface CallSpan {
  /** The trace this call belongs to (the caller's, or the proxy's own when tracing is on). */
  readonly traceId: string | undefined;
  /** The proxy's server span (undefined when tracing is off). */
  readonly spanId: string | undefined;
  hook(start: HookStart): HookSpan;
  upstream(httpMethod: string, url: URL): UpstreamSpan;
  end(result: CallEnd): void;
}

export interface Tracer {
  readonly enabled: boolean;
  startCall(headers: IncomingHttpHeaders, start: CallStart): CallSpan;
  /** Export what is buffered and stop (bounded by `timeoutMs`). */
  shutdown(timeoutMs?: number): Promise<void>;
}

export interface TracerOptions {
  readonly version: string;
  /** Called when a batch of spans could not be exported (counted in the metrics). */
  readonly onExportFailure?: () => void;
}
