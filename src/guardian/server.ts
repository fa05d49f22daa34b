/**
 * The reference guardian as an AOS service: JSON-RPC 2.0 over HTTP POST, on any path.
 * Answers `ping` and every A2A method of the operation table; always HTTP 200 + JSON for
 * JSON-RPC traffic, connections kept alive for the proxy's pooled client.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { operationForMethod } from '../a2a/operations';
import { Envelope, type JsonRpcId } from '../aos/schemas';
import { createEngine, describeHook } from './engine';
import type { Policy } from './policy';

export const GUARDIAN_VERSION = '0.1.0';
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface GuardianServerOptions {
  readonly policy: Policy;
  readonly logger?: Logger;
  /** Larger bodies are refused with -32600 (default 32 MiB: the proxy's 10 MiB limit plus the envelope). */
  readonly maxBodyBytes?: number;
}

/** JSON-RPC error codes used by the guardian (JSON-RPC 2.0 / AOS spec section 6.1). */
export const RpcErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;

interface RpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

type RpcReply =
  | { jsonrpc: '2.0'; id: JsonRpcId | null; result: unknown }
  | { jsonrpc: '2.0'; id: JsonRpcId | null; error: RpcError };

export function createGuardianServer(options: GuardianServerOptions): Server {
  const handleRpc = createRpcHandler(options);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const server = createServer((req, res) => {
    if (req.method !== 'POST') {
      answerNonPost(req, res);
      return;
    }
    readBody(req, maxBodyBytes)
      .then((body) => {
        if (body === undefined) {
          const tooLarge = errorReply(null, RpcErrorCode.invalidRequest, `Request body exceeds ${maxBodyBytes} bytes`);
          sendJson(res, tooLarge, { close: true });
          return;
        }
        sendJson(res, handleRpc(body));
      })
      .catch((err: unknown) => {
        options.logger?.warn({ err }, 'guardian: failed to read request');
        if (!res.headersSent) sendJson(res, errorReply(null, RpcErrorCode.internalError, 'Internal error'), { close: true });
      });
  });
  // Outlive the proxy's pooled sockets, so a request never races an idle-close.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 70_000;
  return server;
}

/** The JSON-RPC layer on its own (raw body text in, reply out), for tests and embedding. */
export function createRpcHandler(options: GuardianServerOptions): (body: string) => RpcReply {
  const engine = createEngine(options.policy);
  const logger = options.logger;

  return (body) => {
    let request: unknown;
    try {
      request = JSON.parse(body);
    } catch {
      return errorReply(null, RpcErrorCode.parseError, 'Invalid JSON payload');
    }
    if (!isRecord(request)) return errorReply(null, RpcErrorCode.invalidRequest, 'Invalid JSON-RPC Request: expected an object');
    const id = validId(request['id']);
    if (request['jsonrpc'] !== '2.0' || typeof request['method'] !== 'string' || id === undefined) {
      return errorReply(id ?? null, RpcErrorCode.invalidRequest, 'Invalid JSON-RPC Request: needs jsonrpc "2.0", a string method and a string or integer id');
    }
    const method = request['method'];
    if (method === 'ping') return { jsonrpc: '2.0', id, result: pingResult() };
    if (operationForMethod(method) === undefined) return errorReply(id, RpcErrorCode.methodNotFound, `Method not found: ${method}`);

    const parsed = Envelope.safeParse(request);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
      return errorReply(id, RpcErrorCode.invalidParams, 'Invalid method parameters', { issues });
    }
    // Decide on the request as received: zod's parse drops unknown context keys (e.g. a full
    // Agent without `id` parses as a partial one), and a modify must echo the request intact.
    const envelope = request as unknown as Envelope;
    const started = process.hrtime.bigint();
    try {
      const result = engine.decide(envelope);
      logDecision(logger, envelope, result.decision, result.reasonCode, started);
      return { jsonrpc: '2.0', id, result };
    } catch (err) {
      logger?.error({ err, method }, 'guardian: engine failed');
      return errorReply(id, RpcErrorCode.internalError, 'Internal error');
    }
  };
}

function pingResult(): { status: 'connected'; version: string; timestamp: string } {
  return { status: 'connected', version: GUARDIAN_VERSION, timestamp: new Date().toISOString() };
}

/** One line per decision: what was decided and why, never the content. */
function logDecision(logger: Logger | undefined, envelope: Envelope, decision: string, reasonCode: string[] | undefined, started: bigint): void {
  if (logger === undefined) return;
  const hook = describeHook(envelope);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  logger.info(
    { envelopeId: envelope.id, method: hook.method, side: hook.side, phase: hook.phase, decision, reasonCode, ms },
    'guardian decision',
  );
}

function validId(value: unknown): JsonRpcId | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  return undefined;
}

function errorReply(id: JsonRpcId | null, code: number, message: string, data?: unknown): RpcReply {
  const error: RpcError = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: '2.0', id, error };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The body as text, or undefined when it exceeds the limit. */
function readBody(req: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      req.resume();
      resolve(undefined);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > maxBytes) {
        done = true;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!done) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, reply: unknown, opts: { close?: boolean; status?: number } = {}): void {
  const body = JSON.stringify(reply);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  };
  if (opts.close === true) headers['connection'] = 'close';
  res.writeHead(opts.status ?? 200, headers);
  res.end(body);
}

/** GET /healthz for container health checks; every other non-POST is 405. */
function answerNonPost(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  if (req.method === 'GET' && (req.url === '/healthz' || req.url?.startsWith('/healthz?') === true)) {
    sendJson(res, { status: 'ok', version: GUARDIAN_VERSION });
    return;
  }
  res.setHeader('allow', 'POST');
  sendJson(res, errorReply(null, RpcErrorCode.invalidRequest, 'AOS requests are JSON-RPC over HTTP POST'), { status: 405 });
}
