/**
 * HTTP upgrades (WebSocket) with ALLOW_WEBSOCKETS=true: forwarded uninspected, so only where the operator
 * named (UPGRADE_PATHS) and never to anything the pipeline's own classifier reads as an A2A call or a card.
 * Only a `101 Switching Protocols` answer reaches the caller: an agent without an upgrade handler serves the
 * request as an ordinary GET, and that answer (a task, a task list, an extended card) was never judged.
 */
import http from 'node:http';
import type https from 'node:https';
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { classify, type ClassifyOptions } from '../../a2a/classify';

export type UpgradeOutcome = 'forwarded' | 'refused_path' | 'refused_identity' | 'refused_limit' | 'not_switched' | 'failed';

/** The classifier options of an upgrade: the upgrade prefixes stand where PASSTHROUGH_PATHS stand for requests. */
export function upgradeRoutes(upgradePaths: readonly (readonly string[])[]): (base: ClassifyOptions) => ClassifyOptions {
  let for_: ClassifyOptions | undefined;
  let derived: ClassifyOptions | undefined;
  return (base) => {
    if (base !== for_ || derived === undefined) {
      for_ = base;
      derived = Object.freeze({ ...base, passthrough: upgradePaths, forwardNonA2A: false });
    }
    return derived;
  };
}

/**
 * The canonical target an upgrade may go to, or why not: a bodiless GET (a WebSocket handshake) that the
 * classifier reads as a listed non-A2A route. A2A routes, JSON-RPC endpoints and card paths never read so.
 */
export function upgradeTarget(req: http.IncomingMessage, opts: ClassifyOptions): { ok: true; target: string } | { ok: false; why: string } {
  if ((req.method ?? '').toUpperCase() !== 'GET') return { ok: false, why: 'only a GET (WebSocket handshake) is upgraded' };
  // Another protocol (h2c above all) would turn the connection into one that reaches every route of the agent.
  if (!isWebSocket(req.headers.upgrade)) return { ok: false, why: 'only a WebSocket upgrade (Upgrade: websocket) is forwarded' };
  const length = req.headers['content-length'];
  if (req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0'))
    return { ok: false, why: 'an upgrade request carries no body' };
  const c = classify({ verb: 'GET', path: req.url ?? '/', headers: req.headers, body: null }, opts);
  if (c.kind === 'other' && c.why === 'passthrough') return { ok: true, target: c.target };
  if (c.kind === 'a2a' || c.kind === 'card') return { ok: false, why: 'an A2A route or agent card is never upgraded' };
  return { ok: false, why: 'not below an UPGRADE_PATHS prefix' };
}

/** The Upgrade header names exactly one protocol, WebSocket. */
const isWebSocket = (v: string | undefined): boolean => v !== undefined && v.trim().toLowerCase() === 'websocket';

/** A refusal on the raw socket, closing it. */
export function refuseUpgrade(socket: Duplex, status: 403 | 401 | 429 | 502 | 503, message: string, extra = ''): void {
  const reason = { 401: 'Unauthorized', 403: 'Forbidden', 429: 'Too Many Requests', 502: 'Bad Gateway', 503: 'Service Unavailable' }[status];
  const body = `${message}\n`;
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\n${extra}content-type: text/plain; charset=utf-8\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  } else socket.destroy();
}

const NOT_FORWARDED = new Set(['host', 'content-length', 'transfer-encoding', 'keep-alive', 'proxy-connection', 'te', 'trailer']);

/**
 * Sends the handshake to the agent and splices the two sockets on a 101; any other answer is read and
 * dropped, and the caller gets a 502 that says so. `done` reports the outcome once.
 */
export function relayUpgrade(
  socket: Duplex,
  head: Buffer,
  upstream: URL,
  target: string,
  headers: http.OutgoingHttpHeaders,
  done: (outcome: UpgradeOutcome, status?: number) => void,
): void {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !NOT_FORWARDED.has(k)) out[k] = v;
  out.host = upstream.host;
  // Hop-by-hop, so dropped with the rest by the header rules: this hop's own, and only the protocol checked.
  out.connection = 'Upgrade';
  out.upgrade = 'websocket';
  const basePath = upstream.pathname.replace(/\/+$/, '');
  // node:https (and tls) load only for an https agent: the default start loads neither.
  const lib: typeof http | typeof https = upstream.protocol === 'https:' ? (require('node:https') as typeof https) : http;
  const up = lib.request({
    hostname: upstream.hostname.replace(/^\[|\]$/g, ''),
    port: upstream.port || undefined,
    method: 'GET',
    path: basePath + target,
    headers: out,
  });
  let settled = false;
  const settle = (outcome: UpgradeOutcome, status?: number): boolean => {
    if (settled) return false;
    settled = true;
    done(outcome, status);
    return true;
  };
  socket.on('error', () => up.destroy());
  socket.once('close', () => {
    if (settle('failed')) up.destroy();
  });
  up.on('error', () => {
    if (settle('failed')) refuseUpgrade(socket, 502, 'the agent could not be reached for the upgrade');
  });
  up.on('response', (res) => {
    // Not switched: the answer is the agent's reply to a plain GET, never judged. Read and dropped.
    res.resume();
    res.on('error', () => undefined);
    if (settle('not_switched', res.statusCode)) refuseUpgrade(socket, 502, 'the agent did not switch protocols; its answer to an upgrade is not relayed');
  });
  up.on('upgrade', (res, upSocket: Socket, upHead: Buffer) => {
    // Switched to something other than what was asked for and checked: not relayed.
    if (!isWebSocket(res.headers.upgrade)) {
      upSocket.destroy();
      if (settle('not_switched', res.statusCode)) refuseUpgrade(socket, 502, 'the agent switched to another protocol than WebSocket; not relayed');
      return;
    }
    if (!settle('forwarded', 101)) return void upSocket.destroy();
    const lines = ['HTTP/1.1 101 Switching Protocols'];
    for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (upHead.length > 0) socket.write(upHead);
    if (head.length > 0) upSocket.write(head);
    upSocket.on('error', () => socket.destroy());
    socket.on('error', () => upSocket.destroy());
    upSocket.once('close', () => socket.destroy());
    socket.once('close', () => upSocket.destroy());
    upSocket.pipe(socket);
    socket.pipe(upSocket);
  });
  up.end();
}
