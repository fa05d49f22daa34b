/**
 * A real OTLP/HTTP receiver for tests: a node:http server on 127.0.0.1 that accepts trace exports
 * (POST /v1/traces), decodes the OTLP JSON encoding into flat spans, and keeps protobuf bodies raw.
 *
 *   const otlp = await startOtlpReceiver();
 *   ... OTEL_EXPORTER_OTLP_ENDPOINT=otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL=http/json ...
 *   await waitFor(() => otlp.spans.length >= 6, ...);
 */
import http from 'node:http';
import { closeServer, listen } from './net';

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Record<string, unknown>;
  readonly status: { code?: number; message?: string };
  /** service.name of the resource that sent it. */
  readonly service: string;
}

export interface OtlpReceiver {
  /** http://127.0.0.1:<port> (the base: exporters append /v1/traces). */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Every export request: path, content type and raw body. */
  readonly requests: Array<{ path: string; contentType: string; body: Buffer }>;
  /** Answer the next exports with this HTTP status (default 200). */
  failWith(status: number | undefined): void;
  clear(): void;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number; arrayValue?: { values?: AnyValue[] } };

function valueOf(v: AnyValue | undefined): unknown {
  if (v === undefined) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributes(list: Array<{ key: string; value: AnyValue }> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) out[a.key] = valueOf(a.value);
  return out;
}

interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: AnyValue }> };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: Array<{ key: string; value: AnyValue }>;
        status?: { code?: number; message?: string };
      }>;
    }>;
  }>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  let failStatus: number | undefined;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = String(req.headers['content-type'] ?? '');
      requests.push({ path: req.url ?? '', contentType, body });
      if (failStatus !== undefined) {
        res.writeHead(failStatus, { 'content-type': 'text/plain' }).end('no');
        return;
      }
      if (contentType.startsWith('application/json')) {
        const parsed = JSON.parse(body.toString('utf8')) as ExportRequest;
        for (const rs of parsed.resourceSpans ?? []) {
          const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                kind: s.kind,
                attributes: attributes(s.attributes),
                status: s.status ?? {},
                service,
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  const url = await listen(server);
  return {
    url,
    spans,
    requests,
    failWith: (status) => {
      failStatus = status;
    },
    clear: () => {
      spans.length = 0;
      requests.length = 0;
    },
    close: () => closeServer(server),
  };
}
