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
import type { OtelConfig } from '../config/config';
import type { HookSpan, CallSpan, TraceHeaders, Tracer, TracerOptions, UpstreamSpan } from './trace-types';

export type { CallEnd, CallSpan, CallStart, HookEnd, HookSpan, HookStart, TraceHeaders, Tracer, TracerOptions, UpstreamSpan } from './trace-types';

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

/** The tracer the configuration asks for; OpenTelemetry is only loaded when it is on. */
export function createTracer(otel: OtelConfig | undefined, opts: TracerOptions): Tracer {
  if (otel === undefined) return NOOP_TRACER;
  // Lazy: the SDK and exporter cost start-up time and memory that a proxy without tracing never pays.
  const { createOtelTracer } = require('./otel') as typeof import('./otel');
  return createOtelTracer(otel, opts);
}
