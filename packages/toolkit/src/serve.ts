// Its declarations name node types: a consumer with @types/node installed needs no `types` entry for them.
/// <reference types="node" preserve="true" />
/**
 * Serve a guardian written as a typed function: `(envelope) => decision`, plus one call.
 *
 *   serveGuardian((envelope) => (looksHarmful(envelope) ? deny('No.') : allow()), { port: 7070 });
 *
 * This module owns everything else an AOS guardian service needs: JSON-RPC 2.0 over HTTP POST on
 * any path, `ping` (spec 4.7), -32601 for methods that are not A2A hooks, -32602 for envelopes
 * that fail the AOS schema, a body limit, an optional bearer token, `GET /healthz` for probes,
 * keep-alive tuned for a2a-guard's pooled client, and a clean stop on SIGTERM. The function's
 * answer is checked against the AOS schema before it leaves: a bug in a guardian becomes a
 * JSON-RPC error (which a2a-guard handles by its FAIL_MODE), never a malformed decision.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isPlainObject } from './answer';
import { operationForMethod } from './operations';
import { Envelope, type JsonRpcId, SuccessResult } from './schemas';

/** What a guardian is: a decision for each AOS hook. May be async (call a model, a policy service). */
export type GuardianFunction = (envelope: Envelope) => SuccessResult | Promise<SuccessResult>;

/** The subset of a pino / console-style logger the service uses. */
export interface GuardianLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface DecisionEvent {
  readonly envelope: Envelope;
  readonly result: SuccessResult;
  /** Time the function took, in milliseconds. */
  readonly ms: number;
  /** The W3C traceparent the caller (the proxy's hook span) sent, so a decision can be joined to its trace. */
  readonly traceparent?: string;
}

export interface GuardianServiceOptions {
  /**
   * When set, every POST must carry `Authorization: Bearer <token>` (a2a-guard's GUARDIAN_TOKEN);
   * others get HTTP 401. `GET /healthz` stays open for probes.
   */
  readonly token?: string | undefined;
  /** Larger bodies are refused with -32600 (default 32 MiB: a2a-guard's 10 MiB limit plus the envelope). */
  readonly maxBodyBytes?: number | undefined;
  /** Reported by `ping` and `/healthz`. */
  readonly version?: string;
  readonly logger?: GuardianLogger;
  /** Called after every decision, e.g. to log it (method, decision, reason codes; keep content out of logs). */
  readonly onDecision?: (event: DecisionEvent) => void;
}

export interface ServeOptions extends GuardianServiceOptions {
  /** Default 7070. 0 picks a free port. */
  readonly port?: number | undefined;
  /** Default 0.0.0.0. `undefined` (an unset `process.env.HOST`) means the default too. */
  readonly host?: string | undefined;
  /** On SIGTERM / SIGINT: stop accepting, let busy connections finish (2 s at most), exit 0. Default true. */
  readonly exitOnSignal?: boolean;
}

export interface RunningGuardian {
  readonly server: Server;
  /** http://host:port (loopback when listening on all addresses). */
  readonly url: string;
  close(): Promise<void>;
}

export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
const STOP_GRACE_MS = 2_000;

/** JSON-RPC error codes (JSON-RPC 2.0, AOS spec 6.1). */
export const RpcErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  unauthorized: -32001,
} as const;

export interface RpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

export type RpcReply = { jsonrpc: '2.0'; id: JsonRpcId | null; result: unknown } | { jsonrpc: '2.0'; id: JsonRpcId | null; error: RpcError };

/** Start a guardian service and resolve once it listens. */
export async function serveGuardian(decide: GuardianFunction, options: ServeOptions = {}): Promise<RunningGuardian> {
  const server = createGuardianService(decide, options);
  const host = options.host ?? '0.0.0.0';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 7070, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const close = (): Promise<void> => stopServer(server);
  if (options.exitOnSignal !== false) exitOnSignals(server, options.logger);
  return { server, url: `http://${shownHost}:${port}`, close };
}

/** The HTTP server (not listening yet), for callers that manage listen/close themselves. */
export function createGuardianService(decide: GuardianFunction, options: GuardianServiceOptions = {}): Server {
  const server = createServer(guardianRequestListener(decide, options));
  // Outlive a2a-guard's pooled sockets (4 s idle), so a request never races an idle close.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 70_000;
  return server;
}

/** A node:http request listener (also usable as Express middleware at a route). */
export function guardianRequestListener(decide: GuardianFunction, options: GuardianServiceOptions = {}): RequestListener {
  const handleRpc = guardianRpcHandler(decide, options);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const version = options.version ?? 'unversioned';
  const authorized = options.token === undefined ? () => true : bearerCheck(options.token);
  return (req, res) => {
    if (req.method !== 'POST') {
      answerNonPost(req, res, version);
      return;
    }
    if (!authorized(req.headers.authorization)) {
      req.resume();
      res.setHeader('www-authenticate', 'Bearer');
      sendJson(res, errorReply(null, RpcErrorCode.unauthorized, 'Unauthorized'), { status: 401, close: true });
      return;
    }
    readBody(req, maxBodyBytes)
      .then(async (body) => {
        if (body === undefined) {
          sendJson(res, errorReply(null, RpcErrorCode.invalidRequest, `Request body exceeds ${maxBodyBytes} bytes`), { close: true });
          return;
        }
        const traceparent = req.headers.traceparent;
        sendJson(res, await handleRpc(body, typeof traceparent === 'string' ? traceparent : undefined));
      })
      .catch((err: unknown) => {
        options.logger?.warn({ err }, 'guardian: failed to read or answer a request');
        if (!res.headersSent) sendJson(res, errorReply(null, RpcErrorCode.internalError, 'Internal error'), { close: true });
      });
  };
}

/** The JSON-RPC layer on its own: raw body text (and the call's traceparent, if any) in, reply out. */
export function guardianRpcHandler(decide: GuardianFunction, options: GuardianServiceOptions = {}): (body: string, traceparent?: string) => Promise<RpcReply> {
  const { logger, onDecision } = options;
  const version = options.version ?? 'unversioned';
  return async (body, traceparent) => {
    const request = parseRequest(body);
    if ('error' in request) return request;
    const { id, method, value } = request;
    if (method === 'ping') return { jsonrpc: '2.0', id, result: { status: 'connected', version, timestamp: new Date().toISOString() } };
    if (operationForMethod(method) === undefined) return errorReply(id, RpcErrorCode.methodNotFound, `Method not found: ${method}`);

    const parsed = Envelope.safeParse(value);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
      return errorReply(id, RpcErrorCode.invalidParams, 'Invalid method parameters', { issues });
    }
    // Decide on the request as received: zod's parse drops unknown context keys (e.g. a full
    // Agent without `id` parses as a partial one), and a modify must echo the request intact.
    const envelope = value as Envelope;
    const started = process.hrtime.bigint();
    let result: SuccessResult;
    try {
      result = await decide(envelope);
    } catch (err) {
      logger?.error({ err, method }, 'guardian: the decision function failed');
      return errorReply(id, RpcErrorCode.internalError, 'Internal error');
    }
    const problem = answerProblem(result);
    if (problem !== undefined) {
      logger?.error({ method, problem }, 'guardian: the decision function returned an invalid AOS answer');
      return errorReply(id, RpcErrorCode.internalError, 'Internal error');
    }
    onDecision?.({ envelope, result, ms: Number(process.hrtime.bigint() - started) / 1e6, ...(traceparent === undefined ? {} : { traceparent }) });
    return { jsonrpc: '2.0', id, result };
  };
}

type ParsedRequest = { id: JsonRpcId; method: string; value: Record<string, unknown> } | Extract<RpcReply, { error: RpcError }>;

function parseRequest(body: string): ParsedRequest {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return errorReply(null, RpcErrorCode.parseError, 'Invalid JSON payload');
  }
  if (!isPlainObject(value)) return errorReply(null, RpcErrorCode.invalidRequest, 'Invalid JSON-RPC Request: expected an object');
  const id = validId(value['id']);
  const method = value['method'];
  if (value['jsonrpc'] !== '2.0' || typeof method !== 'string' || id === undefined) {
    return errorReply(id ?? null, RpcErrorCode.invalidRequest, 'Invalid JSON-RPC Request: needs jsonrpc "2.0", a string method and a string or integer id');
  }
  return { id, method, value };
}

/** Why an answer would be rejected by a2a-guard's schema check, or undefined when it is fine. */
function answerProblem(result: unknown): string | undefined {
  const parsed = SuccessResult.safeParse(result);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return issue === undefined ? 'not an AOS result' : `${issue.path.join('.') || 'result'}: ${issue.message}`;
  }
  if (parsed.data.decision === 'modify' && parsed.data.modifiedRequest === undefined) return 'modify without modifiedRequest (use modify(envelope, payload))';
  return undefined;
}

function bearerCheck(token: string): (header: string | undefined) => boolean {
  // Compare digests: equal length, constant time, no early exit on the first differing byte.
  const want = createHash('sha256').update(`Bearer ${token}`).digest();
  return (header) => header !== undefined && timingSafeEqual(createHash('sha256').update(header).digest(), want);
}

function validId(value: unknown): JsonRpcId | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  return undefined;
}

function errorReply(id: JsonRpcId | null, code: number, message: string, data?: unknown): Extract<RpcReply, { error: RpcError }> {
  const error: RpcError = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: '2.0', id, error };
}

/** The body as text, or undefined when it exceeds the limit (past it, nothing more is kept). */
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
    req.on('data', (chunk: Buffer) => {
      if (size > maxBytes) return;
      size += chunk.length;
      if (size > maxBytes) resolve(undefined);
      else chunks.push(chunk);
    });
    req.on('end', () => {
      // One decode of the whole body: a character split across chunks stays whole.
      if (size <= maxBytes) resolve(Buffer.concat(chunks, size).toString('utf8'));
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

/** GET /healthz for probes and container health checks; every other non-POST is 405. */
function answerNonPost(req: IncomingMessage, res: ServerResponse, version: string): void {
  req.resume();
  if (req.method === 'GET' && (req.url === '/healthz' || req.url?.startsWith('/healthz?') === true)) {
    sendJson(res, { status: 'ok', version });
    return;
  }
  res.setHeader('allow', 'POST');
  sendJson(res, errorReply(null, RpcErrorCode.invalidRequest, 'AOS requests are JSON-RPC over HTTP POST'), { status: 405 });
}

function stopServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    // Idle keep-alive sockets are closed by close(); busy ones get a short grace period.
    const grace = setTimeout(() => server.closeAllConnections(), STOP_GRACE_MS);
    grace.unref();
    server.close(() => {
      clearTimeout(grace);
      resolve();
    });
  });
}

function exitOnSignals(server: Server, logger: GuardianLogger | undefined): void {
  const stop = (signal: NodeJS.Signals): void => {
    logger?.info({ signal }, 'guardian stopping');
    void stopServer(server).then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // A service closed by its owner no longer holds the process's signals.
  server.once('close', () => {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  });
}
