/**
 * The OpenTelemetry side of ./tracing (loaded only when tracing is on): a BasicTracerProvider with a
 * batch processor and the OTLP/HTTP exporter (protobuf or JSON), spans started with explicit parent
 * contexts (no global context manager, no AsyncLocalStorage on the hot path).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Attributes, Context, Span, TextMapGetter } from '@opentelemetry/api';
import type { SpanExporter, ReadableSpan, Sampler } from '@opentelemetry/sdk-trace-base';
import type { ExportResult } from '@opentelemetry/core';
import type { OtelConfig } from '../config/config';
import type { CallSpan, CallStart, HookSpan, TraceHeaders, Tracer, TracerOptions, UpstreamSpan } from './trace-types';

type Api = typeof import('@opentelemetry/api');
type Sdk = typeof import('@opentelemetry/sdk-trace-base');

const headerGetter: TextMapGetter<IncomingHttpHeaders> = {
  keys: (h) => Object.keys(h),
  get: (h, key) => h[key],
};

function samplerFor(sdk: Sdk, cfg: OtelConfig): Sampler {
  const ratio = () => new sdk.TraceIdRatioBasedSampler(cfg.samplerRatio);
  switch (cfg.sampler) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: ratio() });
    case 'parentbased_always_on':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
}

/** The exporter for the configured protocol, reporting failed batches. */
function exporterFor(cfg: OtelConfig, onFailure: (() => void) | undefined): SpanExporter {
  const options = { url: cfg.tracesUrl, headers: { ...cfg.headers } };
  const inner: SpanExporter =
    cfg.protocol === 'http/json'
      ? new (require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options)
      : new (require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(options);
  if (onFailure === undefined) return inner;
  return {
    export(spans: ReadableSpan[], done: (r: ExportResult) => void): void {
      inner.export(spans, (r) => {
        if (r.code !== 0) onFailure();
        done(r);
      });
    },
    shutdown: () => inner.shutdown(),
    ...(inner.forceFlush === undefined ? {} : { forceFlush: () => (inner.forceFlush as () => Promise<void>)() }),
  };
}

export function createOtelTracer(cfg: OtelConfig, opts: TracerOptions): Tracer {
  const api = require('@opentelemetry/api') as Api;
  const sdk = require('@opentelemetry/sdk-trace-base') as Sdk;
  const { resourceFromAttributes, defaultResource } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');

  const resource = defaultResource().merge(
    resourceFromAttributes({
      ...cfg.resourceAttributes,
      'service.name': cfg.serviceName,
      'service.version': opts.version,
    }),
  );
  const provider = new sdk.BasicTracerProvider({
    resource,
    sampler: samplerFor(sdk, cfg),
    spanProcessors: [new sdk.BatchSpanProcessor(exporterFor(cfg, opts.onExportFailure))],
  });
  const tracer = provider.getTracer('a2a-guard', opts.version);
  const propagator = new W3CTraceContextPropagator();
  const { SpanKind, SpanStatusCode, ROOT_CONTEXT, trace } = api;

  /** traceparent / tracestate naming `span`. */
  function contextHeaders(span: Span): TraceHeaders {
    const carrier: Record<string, string> = {};
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, api.defaultTextMapSetter);
    return { traceparent: carrier.traceparent as string, tracestate: carrier.tracestate };
  }

  function child(parent: Context, name: string, attributes: Attributes): Span {
    return tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent);
  }

  function startCall(headers: IncomingHttpHeaders, start: CallStart): CallSpan {
    const callerContext = propagator.extract(ROOT_CONTEXT, headers, headerGetter);
    const attributes: Attributes = {
      'a2a.method': start.method,
      'a2a.wire_method': start.wireMethod,
      'a2a.binding': start.binding,
      'a2a_guard.role': start.role,
      'http.request.method': start.httpMethod,
      'url.path': start.path,
    };
    if (start.remoteAddress !== undefined) attributes['client.address'] = start.remoteAddress;
    const server = tracer.startSpan(`a2a ${start.method}`, { kind: SpanKind.SERVER, attributes }, callerContext);
    const ctx = server.spanContext();
    const parent = trace.setSpan(ROOT_CONTEXT, server);
    return {
      traceId: ctx.traceId,
      spanId: ctx.spanId,
      hook(h): HookSpan {
        const span = child(parent, `guardian ${h.method} ${h.side} ${h.phase}`, {
          'aos.method': h.method,
          'aos.side': h.side,
          'aos.phase': h.phase,
          'aos.envelope_id': h.envelopeId,
        });
        return {
          headers: contextHeaders(span),
          end(r) {
            span.setAttribute('aos.decision', r.decision);
            if (r.reasonCodes !== undefined && r.reasonCodes.length > 0) span.setAttribute('aos.reason_codes', [...r.reasonCodes]);
            if (r.failureKind !== undefined) {
              span.setAttribute('aos.failure.kind', r.failureKind);
              if (r.failureDetail !== undefined) span.setAttribute('aos.failure.detail', r.failureDetail);
              span.setStatus({ code: SpanStatusCode.ERROR, message: r.failureKind });
            }
            span.end();
          },
        };
      },
      upstream(httpMethod, url): UpstreamSpan {
        const span = child(parent, `upstream ${httpMethod}`, {
          'http.request.method': httpMethod,
          'server.address': url.hostname,
          'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
        });
        let ended = false;
        return {
          headers: contextHeaders(span),
          end(status, error, endedAt) {
            if (ended) return;
            ended = true;
            if (status !== undefined) span.setAttribute('http.response.status_code', status);
            if (error !== undefined) {
              span.setAttribute('error.type', error);
              span.setStatus({ code: SpanStatusCode.ERROR, message: error });
            } else if (status !== undefined && status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
            // OpenTelemetry reads a number below the time origin as a performance.now() time.
            span.end(endedAt);
          },
        };
      },
      end(r) {
        server.setAttribute('a2a_guard.outcome', r.outcome);
        server.setAttribute('aos.decision', r.decision);
        if (r.reasonCodes.length > 0) server.setAttribute('aos.reason_codes', [...r.reasonCodes]);
        if (r.upstreamStatus !== null) server.setAttribute('a2a_guard.upstream_status', r.upstreamStatus);
        if (r.outcome === 'guardian_unavailable' || r.outcome === 'upstream_error' || r.outcome === 'answer_refused') {
          server.setStatus({ code: SpanStatusCode.ERROR, message: r.error ?? r.outcome });
        }
        server.end();
      },
    };
  }

  return {
    enabled: true,
    startCall,
    async shutdown(timeoutMs = 5000) {
      await Promise.race([provider.shutdown(), new Promise<void>((r) => setTimeout(r, timeoutMs).unref())]);
    },
  };
}
