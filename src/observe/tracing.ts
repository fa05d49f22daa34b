/**
 * Tracing behind a small interface, so the pipeline never touches OpenTelemetry itself.
 *
 * Off (no OTLP endpoint configured): nothing of OpenTelemetry is loaded. The only work per call is
 * reading the caller's `traceparent`: the guardian still receives it (its decision joins the
 * caller's trace) and the audit line names the trace. Headers to the agent pass through untouched.
 * On: `./otel` is required lazily and opens a server span per call, a client span per guardian hook
 * and per upstream call, and injects W3C trace context naming those spans.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Phase, Role, Side } from '../aos/hook-points';
import type { OtelConfig } from '../config';

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

const noop = (): void => undefined;
const NO_SPAN: HookSpan & UpstreamSpan = { headers: undefined, end: noop };
const NO_CALL: CallSpan = { traceId: undefined, spanId: undefined, hook: () => NO_SPAN, upstream: () => NO_SPAN, end: noop };

const MAX_TRACESTATE = 512;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** The caller's trace context when it is a valid W3C version-00 traceparent (all-zero ids are invalid). */
export function callerTrace(headers: IncomingHttpHeaders): { headers: TraceHeaders; traceId: string } | undefined {
  const tp = headers.traceparent;
  if (typeof tp !== 'string') return undefined;
  const m = TRACEPARENT.exec(tp.trim());
  if (m === null || /^0+$/.test(m[1] as string) || /^0+$/.test(m[2] as string)) return undefined;
  const ts = headers.tracestate;
  const joined = Array.isArray(ts) ? ts.join(',') : ts;
  // It goes into the proxy's own request to the guardian: an oversized one made the guardian refuse that
  // request (431), which is "no valid answer", so a caller could fail its call open. W3C asks vendors to
  // carry 512 characters; anything longer or not printable ASCII is dropped, as OpenTelemetry does.
  const tracestate = joined !== undefined && joined.length <= MAX_TRACESTATE && /^[\x20-\x7e]*$/.test(joined) ? joined : undefined;
  return { headers: { traceparent: tp.trim(), tracestate }, traceId: m[1] as string };
}

/** Tracing off: the caller's context (if any) goes to the guardian as it came. */
export const NOOP_TRACER: Tracer = {
  enabled: false,
  startCall(headers) {
    const caller = callerTrace(headers);
    if (caller === undefined) return NO_CALL;
    const toGuardian: HookSpan = { headers: caller.headers, end: noop };
    return { traceId: caller.traceId, spanId: undefined, hook: () => toGuardian, upstream: () => NO_SPAN, end: noop };
  },
  shutdown: () => Promise.resolve(),
};

export interface TracerOptions {
  readonly version: string;
  /** Called when a batch of spans could not be exported (counted in the metrics). */
  readonly onExportFailure?: () => void;
}

/** The tracer the configuration asks for; OpenTelemetry is only loaded when it is on. */
export function createTracer(otel: OtelConfig | undefined, opts: TracerOptions): Tracer {
  if (otel === undefined) return NOOP_TRACER;
  // Lazy: the SDK and exporter cost start-up time and memory that a proxy without tracing never pays.
  const { createOtelTracer } = require('./otel') as typeof import('./otel');
  return createOtelTracer(otel, opts);
}
