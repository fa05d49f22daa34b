/**
 * The minimal baseline proxy of the bench: what any guardian-consulting A2A proxy has to do, and
 * nothing more, written the ordinary way with undici (the client a2a-guard uses too): node:http
 * server, buffer the request body, parse it (to learn the JSON-RPC method), one keep-alive POST of
 * an AOS-shaped envelope to the guardian (`pool.request`, answer read with `body.json()`), check its
 * id and `allow`, then forward the original bytes over a keep-alive pool (`pool.request`) and pipe
 * the answer back (SSE included). No validation, no identities, no metrics, no logging, no response
 * inspection. Env: PORT (default 0), UPSTREAM_URL, GUARDIAN_URL. Run by bench/run.ts as a child.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { fail, serveIpc } from './ipc';

const upstream = new URL(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:1');
const guardian = new URL(process.env.GUARDIAN_URL ?? 'http://127.0.0.1:1');
const upPool = new Pool(upstream.origin, { pipelining: 1, keepAliveTimeout: 4000, headersTimeout: 0, bodyTimeout: 0 });
const gPool = new Pool(guardian.origin, { connections: 512, pipelining: 1, keepAliveTimeout: 4000 });
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length']);
const GUARDIAN_HEADERS = { 'content-type': 'application/json' };

function copyHeaders(h: http.IncomingHttpHeaders | Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const k in h) {
    const v = h[k];
    if (v !== undefined && !HOP.has(k)) out[k] = v;
  }
  return out;
}

function answer(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

interface GuardianReply {
  id?: unknown;
  result?: { decision?: unknown };
}

/** One POST to the guardian; the parsed answer, or undefined on any failure. */
async function askGuardian(envelope: string): Promise<GuardianReply | undefined> {
  try {
    const r = await gPool.request({ path: guardian.pathname, method: 'POST', headers: GUARDIAN_HEADERS, body: envelope });
    return (await r.body.json()) as GuardianReply;
  } catch {
    return undefined;
  }
}

async function forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): Promise<void> {
  const headers = copyHeaders(req.headers);
  headers['content-length'] = String(body.length);
  try {
    const up = await upPool.request({ path: req.url ?? '/', method: (req.method ?? 'GET') as 'POST', headers, body: body.length > 0 ? body : null });
    // The caller left: drop the answer (destroying the body emits an abort error; unhandled, it would end the process).
    if (res.destroyed) return void up.body.on('error', () => undefined).destroy();
    res.writeHead(up.statusCode, copyHeaders(up.headers));
    if (String(up.headers['content-type']).startsWith('text/event-stream')) res.flushHeaders();
    res.once('close', () => {
      if (!res.writableFinished) up.body.destroy();
    });
    up.body.on('error', () => res.destroy());
    up.body.pipe(res);
  } catch {
    if (res.headersSent) res.destroy();
    else answer(res, 502, '{"error":"upstream unavailable"}');
  }
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): Promise<void> {
  let rpc: { id?: unknown; method?: unknown } | undefined;
  try {
    rpc = req.method === 'POST' && body.length > 0 ? JSON.parse(body.toString('utf8')) : undefined;
  } catch {
    rpc = undefined;
  }
  if (rpc === undefined || typeof rpc.method !== 'string') return forward(req, res, body);
  const id = randomUUID();
  const reply = await askGuardian(JSON.stringify({ jsonrpc: '2.0', id, method: rpc.method, params: { payload: rpc } }));
  if (res.destroyed) return;
  if (reply?.id === id && reply.result?.decision === 'allow') return forward(req, res, body);
  answer(res, 200, JSON.stringify({ jsonrpc: '2.0', id: rpc.id ?? null, error: { code: -31403, message: 'blocked' } }));
}

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  // A caller that leaves mid-body makes the request emit 'error': unheard, it would end the process.
  req.on('error', () => res.destroy());
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void handle(req, res, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
  });
});

server.on('error', (e) => fail('baseline-proxy', e));
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  serveIpc(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
