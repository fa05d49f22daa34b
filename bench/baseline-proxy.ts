/**
 * The minimal baseline proxy of the bench: what any guardian-consulting A2A proxy has to do, and
 * nothing more. node:http only: buffer the request body, parse it (to learn the JSON-RPC method),
 * one keep-alive POST of an AOS-shaped envelope to the guardian, parse the answer, and on `allow`
 * forward the original bytes over a keep-alive pool and pipe the answer back (SSE included).
 * No validation, no identities, no metrics, no logging, no response inspection.
 * Env: PORT (default 0), UPSTREAM_URL, GUARDIAN_URL. Run by bench/run.ts as a child process.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { fail, serveIpc } from './ipc';

const upstream = new URL(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:1');
const guardian = new URL(process.env.GUARDIAN_URL ?? 'http://127.0.0.1:1');
const upAgent = new http.Agent({ keepAlive: true, maxFreeSockets: 256, scheduling: 'lifo' });
const gAgent = new http.Agent({ keepAlive: true, maxFreeSockets: 256, scheduling: 'lifo' });
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function copyHeaders(h: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const k in h) if (!HOP.has(k)) out[k] = h[k];
  return out;
}

function answer(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** One POST to the guardian; calls back with the parsed answer (or undefined on any failure). */
function askGuardian(envelope: string, cb: (reply: { id?: unknown; result?: { decision?: unknown } } | undefined) => void): void {
  const req = http.request({ hostname: guardian.hostname, port: guardian.port, path: guardian.pathname, method: 'POST', agent: gAgent,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(envelope) } }, (res) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      try {
        cb(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        cb(undefined);
      }
    });
  });
  req.on('error', () => cb(undefined));
  req.end(envelope);
}

function forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): void {
  const headers = copyHeaders(req.headers);
  headers.host = upstream.host;
  headers['content-length'] = body.length;
  const up = http.request({ hostname: upstream.hostname, port: upstream.port, path: req.url, method: req.method, agent: upAgent, headers }, (upRes) => {
    res.writeHead(upRes.statusCode ?? 502, copyHeaders(upRes.headers));
    if (String(upRes.headers['content-type']).startsWith('text/event-stream')) res.flushHeaders();
    upRes.pipe(res);
  });
  up.on('error', () => (res.headersSent ? res.destroy() : answer(res, 502, '{"error":"upstream unavailable"}')));
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  up.end(body);
}

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    let rpc: { id?: unknown; method?: unknown } | undefined;
    try {
      rpc = req.method === 'POST' && body.length > 0 ? JSON.parse(body.toString('utf8')) : undefined;
    } catch {
      rpc = undefined;
    }
    if (rpc === undefined || typeof rpc.method !== 'string') return forward(req, res, body);
    const id = randomUUID();
    const envelope = JSON.stringify({ jsonrpc: '2.0', id, method: rpc.method, params: { payload: rpc } });
    askGuardian(envelope, (reply) => {
      if (res.destroyed) return;
      if (reply?.id === id && reply.result?.decision === 'allow') return forward(req, res, body);
      answer(res, 200, JSON.stringify({ jsonrpc: '2.0', id: rpc.id ?? null, error: { code: -31403, message: 'blocked' } }));
    });
  });
});

server.on('error', (e) => fail('baseline-proxy', e));
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  serveIpc(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
