/**
 * A deliberately small proxy for checking the differential test's own oracles, not a product:
 *
 * - `positive`: the positive model for JSON-RPC only. A request is forwarded only when the proxy can
 *   read it with certainty (POST to the JSON-RPC path, one `Content-Type: application/json` in UTF-8,
 *   no content coding, no Connection token but keep-alive/close, no method override, at most one
 *   A2A-Version of 1.0 or 0.3, a strict UTF-8 JSON object without a BOM, an exact A2A method of that
 *   version, no field the agent could read under two spellings). The guardian sees the parsed call;
 *   on allow, the agent receives a request built from it. Plain card reads are relayed. Everything
 *   else, REST included, is refused in the caller's binding.
 * - `relay`: forwards every request byte for byte without asking anyone: the oracles must catch it.
 *
 * With `positive` the oracles must report nothing; with `relay` they must report bypasses. That is
 * what keeps the differential test honest: its failures are the proxy's, and it can fail.
 */
import http from 'node:http';
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { V03_METHODS, V1_METHODS } from './a2a-facts';
import { closeServer, listen } from './net';

export type ReferenceMode = 'positive' | 'relay';

export interface ReferenceProxy {
  readonly url: string;
  close(): Promise<void>;
}

const CARD_PATHS = new Set(['/.well-known/agent-card.json', '/.well-known/agent.json']);
const OVERRIDES = ['x-http-method-override', 'x-http-method', 'x-method-override'];

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

function errorInfo(reason: string): Obj {
  return { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-guard', metadata: {} };
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A refusal in the caller's binding: REST (google.rpc.Status, `status` 400 or 404) or JSON-RPC (`code`). */
function refuse(res: http.ServerResponse, rest: boolean, message: string, id: unknown = null, code = -31400, status = 400): void {
  if (rest)
    sendJson(res, status, {
      error: { code: status, status: status === 404 ? 'NOT_FOUND' : 'INVALID_ARGUMENT', message, details: [errorInfo('REQUEST_REJECTED')] },
    });
  else sendJson(res, 200, { jsonrpc: '2.0', id, error: { code, message, data: [errorInfo('REQUEST_REJECTED')] } });
}

/** The SDK's REST routes as Express matches them (case-insensitive, optional trailing slash, v1 routes with an optional tenant). */
const SEG = '[^/]+';
const V1_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ['POST', 'message:send'],
  ['POST', 'message:stream'],
  ['GET', `tasks/${SEG}`],
  ['GET', 'tasks'],
  ['POST', `tasks/${SEG}:cancel`],
  ['GET|POST', `tasks/${SEG}:subscribe`],
  ['POST', `tasks/${SEG}/pushNotificationConfigs`],
  ['GET', `tasks/${SEG}/pushNotificationConfigs`],
  ['GET|DELETE', `tasks/${SEG}/pushNotificationConfigs/${SEG}`],
  ['GET', 'extendedAgentCard'],
];
const ROUTES = [
  ...V1_ROUTES.map(([v, r]) => [v, new RegExp(`^(/${SEG})?/${r}/?$`, 'i')] as const),
  ...[...V1_ROUTES.filter(([, r]) => r !== 'extendedAgentCard' && r !== 'tasks'), ['GET', 'card'] as const].map(
    ([v, r]) => [v, new RegExp(`^/v1/${r}/?$`, 'i')] as const,
  ),
];
function isRoute(verb: string, path: string): boolean {
  const v = verb === 'HEAD' ? 'GET' : verb;
  return ROUTES.some(([verbs, re]) => verbs.split('|').includes(v) && re.test(path));
}

/** Every value of a header, from the raw lines (names compared without case). */
function values(req: http.IncomingMessage, name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) if ((req.rawHeaders[i] as string).toLowerCase() === name) out.push(req.rawHeaders[i + 1] as string);
  return out;
}

/** A field under both its camelCase and snake_case names anywhere in the value: two readings. */
function twinSpelling(v: unknown): string | undefined {
  if (Array.isArray(v)) return v.map(twinSpelling).find((x) => x !== undefined);
  if (!isObj(v)) return undefined;
  for (const k of Object.keys(v)) {
    const snake = k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    if (snake !== k && snake in v) return k;
  }
  return Object.values(v)
    .map(twinSpelling)
    .find((x) => x !== undefined);
}

/** Why a JSON-RPC call cannot be read with certainty (and the standard code, where there is one), or undefined. */
function unreadable(req: http.IncomingMessage, body: Buffer): { why: string; code?: number } | undefined {
  const types = values(req, 'content-type');
  if (types.length === 1 && (types[0] as string).split(';')[0]?.trim().toLowerCase() !== 'application/json')
    return { why: 'Content-Type not supported', code: -32005 };
  if (types.length !== 1 || !/^application\/json\s*(;\s*charset="?utf-8"?\s*)?$/i.test(types[0] as string))
    return { why: 'Content-Type must be application/json (UTF-8)' };
  if (values(req, 'content-encoding').length > 0) return { why: 'no content coding' };
  const te = values(req, 'transfer-encoding');
  if (te.length > 1 || (te.length === 1 && te[0] !== 'chunked')) return { why: 'only chunked transfer coding' };
  const conn = values(req, 'connection')
    .flatMap((v) => v.split(','))
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t !== '');
  if (conn.some((t) => t !== 'keep-alive' && t !== 'close')) return { why: 'Connection may not name other headers' };
  if (OVERRIDES.some((h) => values(req, h).length > 0)) return { why: 'no method override' };
  const versions = values(req, 'a2a-version');
  if (versions.length > 1 || (versions.length === 1 && versions[0] !== '1.0' && versions[0] !== '0.3')) return { why: 'A2A-Version must be 1.0 or 0.3, once' };
  if (!isUtf8(body) || body[0] === 0xef) return { why: 'body must be UTF-8 without a BOM' };
  return undefined;
}

export async function startReferenceProxy(opts: { upstream: string; guardianUrl: string; mode: ReferenceMode; jsonRpcPath?: string }): Promise<ReferenceProxy> {
  const upstream = new URL(opts.upstream);
  const rpcPath = opts.jsonRpcPath ?? '/a2a/jsonrpc';

  const forward = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    verb: string,
    path: string,
    headers: http.OutgoingHttpHeaders,
    body: Buffer | null,
  ): void => {
    const up = http.request({ host: upstream.hostname, port: upstream.port, method: verb, path, headers: { ...headers, host: upstream.host } }, (upRes) => {
      const h = { ...upRes.headers };
      delete h['connection'];
      delete h['keep-alive'];
      delete h['transfer-encoding'];
      res.writeHead(upRes.statusCode ?? 502, h);
      upRes.pipe(res);
    });
    up.on('error', () =>
      res.headersSent
        ? res.destroy()
        : sendJson(res, 502, { error: { code: 502, status: 'UNAVAILABLE', message: 'upstream', details: [errorInfo('UPSTREAM_UNAVAILABLE')] } }),
    );
    res.on('close', () => up.destroy());
    up.end(body ?? undefined);
  };

  const ask = async (payload: Obj): Promise<boolean> => {
    const method = String(payload['method']);
    const envelope = {
      jsonrpc: '2.0',
      id: randomUUID(),
      method,
      params: {
        payload,
        context: { from: { agent: { url: 'unknown', name: 'unknown', version: 'unknown' }, role: 'client' }, to: { agent: {}, role: 'server' } },
      },
    };
    const r = await fetch(opts.guardianUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(envelope) });
    const answer = (await r.json()) as { result?: { decision?: string } };
    return answer.result?.decision === 'allow';
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): Promise<void> => {
    const verb = req.method ?? 'GET';
    const target = req.url ?? '/';
    if (opts.mode === 'relay') {
      const headers: http.OutgoingHttpHeaders = {};
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const k = (req.rawHeaders[i] as string).toLowerCase();
        if (k === 'host' || k === 'connection' || k === 'transfer-encoding' || k === 'content-length') continue;
        const prev = headers[k];
        headers[k] =
          prev === undefined ? (req.rawHeaders[i + 1] as string) : [...(Array.isArray(prev) ? prev : [String(prev)]), req.rawHeaders[i + 1] as string];
      }
      headers['content-length'] = body.length;
      return forward(req, res, verb, target, headers, body);
    }
    const rest = target.startsWith('/a2a/rest/');
    const restPath = target.slice('/a2a/rest'.length).split('?')[0] ?? '';
    if ((verb === 'GET' || verb === 'HEAD') && CARD_PATHS.has(target) && body.length === 0) {
      const v = values(req, 'a2a-version');
      return forward(req, res, verb, target, v.length === 1 && /^[\d.]+$/.test(v[0] as string) ? { 'a2a-version': v[0] } : {}, null);
    }
    if (rest) return refuse(res, true, 'REST is not read by this proxy', null, 0, isRoute(verb, restPath) ? 400 : 404);
    if (verb !== 'POST' || target !== rpcPath) return refuse(res, false, 'not an A2A call this proxy can read');
    const bad = unreadable(req, body);
    if (bad !== undefined) return refuse(res, false, bad.why, null, bad.code);
    let call: unknown;
    const text = body.toString('utf8');
    try {
      // Like the SDK's strict body parser: a JSON-RPC body starts with { or [.
      if (!/^[ \t\r\n]*[{[]/.test(text)) throw new SyntaxError('not an object');
      call = JSON.parse(text);
    } catch {
      return refuse(res, false, 'not JSON', null, -32700);
    }
    if (!isObj(call)) return refuse(res, false, 'not a JSON-RPC request', null, -32600);
    const id = call['id'];
    const idOk = id === undefined || id === null || typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id) && Number.isSafeInteger(id));
    const safeId = idOk ? (id ?? null) : null;
    const version = values(req, 'a2a-version')[0] ?? '0.3';
    const method = call['method'];
    const known = typeof method === 'string' && (version === '1.0' ? V1_METHODS[method] : V03_METHODS[method]) !== undefined && method !== 'tasks/list';
    if (call['jsonrpc'] !== '2.0' || !idOk || typeof method !== 'string' || method === '')
      return refuse(res, false, 'invalid JSON-RPC request', safeId, -32600);
    if (!known) return refuse(res, false, 'not an A2A method of this version', safeId, -32601);
    const params = call['params'];
    if (params !== undefined && !isObj(params)) return refuse(res, false, 'params must be an object', safeId);
    const twin = twinSpelling(params);
    if (twin !== undefined) return refuse(res, false, `field ${twin} under two spellings`, safeId);
    if (version === '0.3' && isObj(params) && ('request' in params || (isObj(params['message']) && 'content' in params['message']) || 'name' in params)) {
      return refuse(res, false, 'fields of another binding', safeId);
    }
    if (!(await ask(call))) {
      return sendJson(res, 200, { jsonrpc: '2.0', id: safeId, error: { code: -31403, message: 'Blocked by guardian', data: [errorInfo('GUARDIAN_DENIED')] } });
    }
    const out = Buffer.from(JSON.stringify(call), 'utf8');
    const accept = values(req, 'accept');
    return forward(
      req,
      res,
      'POST',
      rpcPath,
      {
        'content-type': 'application/json',
        'content-length': out.length,
        ...(values(req, 'a2a-version').length === 1 ? { 'a2a-version': version } : {}),
        ...(accept.length === 1 ? { accept: accept[0] } : {}),
      },
      out,
    );
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks)).catch(() => {
        if (!res.headersSent) refuse(res, false, 'internal error');
        else res.destroy();
      });
    });
  });
  const url = await listen(server);
  return { url, close: () => closeServer(server) };
}
