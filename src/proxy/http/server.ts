/**
 * The HTTP listener (node:http, or node:https with TLS_* files): its connections, the request handler
 * (pipeline.ts) behind a per-connection count, HTTP upgrades (upgrade.ts), bytes that do not parse,
 * a graceful drain. src/server.ts wires it with the rest of a proxy instance.
 */
import http from 'node:http';
import type https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from '../../config/config';
import type { Metrics } from '../../admin/metrics';
import type { CardCache } from '../../a2a/card';
import { spent, type CallerIdentifier } from '../../identity/caller';
import { listenerTls } from '../../credentials/tls';
import { forwardRequestHeaders } from '../headers';
import { admittedKey } from '../admit';
import type { CallerLimits } from '../callers';
import { connectionId, shareConnections, type Connections } from '../connections';
import type { ProxyHandler } from './pipeline';
import { refuseUpgrade, relayUpgrade, upgradeRoutes, upgradeTarget, type UpgradeOutcome } from './upgrade';

export interface HttpListenerOptions {
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly handler: ProxyHandler;
  readonly upstreamCard: CardCache;
  readonly identify: CallerIdentifier;
  /** Each caller's share of calls in flight: an open upgraded connection is one. */
  readonly callerLimits?: CallerLimits | undefined;
  /** The connections of both listeners, within MAX_CONNECTIONS (proxy/connections.ts). */
  readonly connections: Connections;
}

export interface HttpListener {
  readonly server: http.Server;
  readonly url: string;
  /** Stop accepting and let in-flight requests finish; at `timeoutMs`, `endStreams`, then cut what is left. */
  drain(timeoutMs: number, endStreams: () => void): Promise<void>;
  close(): Promise<void>;
}

/**
 * Per connection: its calls in flight, its latest request, whether later bytes did not parse or the caller closed its
 * side in the middle of a request (clientError below), and one 'close' listener all its responses share.
 */
interface Connection {
  /** connections.ts's name for it. */
  readonly id: string;
  calls: number;
  last: http.IncomingMessage | undefined;
  bad: boolean;
  cut: boolean;
  readonly ended: () => void;
}

/** No whole request of the connection is in flight: at most the one the caller cut (answers keep their order, so it is the latest). */
const onlyCut = (c: Connection): boolean => c.calls === (c.last !== undefined && !c.last.complete ? 1 : 0);

export async function startHttpListener(opts: HttpListenerOptions): Promise<HttpListener> {
  const { config, logger } = opts;
  const tls = listenerTls(config.tls.listener, config.identity.refreshMs, logger);
  const serverOptions = { keepAliveTimeout: 65_000, requestTimeout: 0, headersTimeout: 30_000 };
  const connections = new WeakMap<Socket, Connection>();
  const counted = countedHandler(opts.handler, connections, opts.connections);
  // node:https is loaded only with a TLS listener.
  const server: http.Server =
    tls === undefined
      ? http.createServer(serverOptions, counted)
      : (require('node:https') as typeof https).createServer({ ...tls.options, ...serverOptions }, counted);
  if (tls !== undefined) {
    tls.watch(server as https.Server, logger);
    // A failed handshake never reaches the handler: say why here (no client certificate, an untrusted one, plain HTTP...).
    server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      logger.info({ remote: socket.remoteAddress, code: err.code ?? 'error', cause: err.message }, 'TLS handshake with a caller failed');
    });
  }
  const sockets = new Set<Socket>();
  shareConnections(server, opts.connections, opts.metrics, config.perCaller.ipv6Prefix);
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.on('upgrade', upgradeListener(opts));
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    const conn = connections.get(socket as Socket);
    // The caller closed its side in the middle of a request: that request never completes. Its call ends (its bytes
    // leave the budget) once the whole requests before it on the connection are answered, not at BODY_TIMEOUT_MS.
    if (err.code === 'HPE_INVALID_EOF_STATE') {
      if (conn === undefined || onlyCut(conn)) return void socket.destroy();
      return void (conn.cut = true);
    }
    // Bytes that do not parse after a request on the same connection (a body sent without a length, a pipelined
    // request that is not HTTP): that request is still being judged. A 400 now would reach the caller as the answer
    // to it while the agent acts on it; answers keep their order: its answer first, then the 400 and the close.
    if (conn !== undefined && conn.calls > 0) return void (conn.bad = true);
    badRequest(socket);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => resolve());
    });
  } catch (err) {
    tls?.close();
    throw err;
  }
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    server,
    url: `${tls === undefined ? 'http' : 'https'}://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`,
    drain: (timeoutMs, endStreams) =>
      new Promise<void>((resolve) => {
        const deadline = setTimeout(() => {
          endStreams();
          // Give the error events a moment to leave, then cut what is left.
          setTimeout(() => {
            server.closeAllConnections();
            resolve();
          }, 100).unref();
        }, timeoutMs);
        deadline.unref();
        server.close(() => {
          clearTimeout(deadline);
          resolve();
        });
        server.closeIdleConnections();
      }),
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      tls?.close();
    },
  };
}

/**
 * The handler behind a count of each connection's calls in flight. 'close' comes once per response (node
 * guards it), so `on` serves: a closure and `once`'s wrapper per call cost ~1,400 instructions more (callgrind).
 */
function countedHandler(handler: ProxyHandler, connections: WeakMap<Socket, Connection>, shares: Connections): http.RequestListener {
  return (req, res) => {
    const socket = req.socket;
    let conn = connections.get(socket);
    if (conn === undefined) {
      const c: Connection = {
        id: connectionId(socket),
        calls: 0,
        last: undefined,
        bad: false,
        cut: false,
        ended: () => {
          --c.calls;
          shares.callEnded(c.id);
          if (c.cut && onlyCut(c)) socket.destroy();
          else if (c.calls === 0 && c.bad) badRequest(socket);
        },
      };
      connections.set(socket, (conn = c));
    }
    conn.calls++;
    shares.callStarted(conn.id);
    conn.last = req;
    res.on('close', conn.ended);
    return handler(req, res);
  };
}

function badRequest(socket: Duplex): void {
  if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
  else socket.destroy();
}

/** HTTP upgrades: refused, or (ALLOW_WEBSOCKETS=true, on an A2A route) forwarded uninspected to an identified caller. */
function upgradeListener(opts: HttpListenerOptions): (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void {
  const { config, logger, metrics, upstreamCard, handler } = opts;
  const upgradeOptions = upgradeRoutes(config.upgradePaths);
  const namedUpgradeOptions = upgradeRoutes(config.upgradePaths.filter((prefix) => prefix.length > 0));
  return (req, socket, head) => {
    // An upgrade carries its call until it is refused or, once switched, until the connection closes: never idle
    // meanwhile. A refused one is idle, however long its caller keeps it open.
    const id = connectionId(req.socket);
    opts.connections.callStarted(id);
    let ended = false;
    const endCall = () => {
      if (!ended) opts.connections.callEnded(id);
      ended = true;
    };
    const refused = (outcome: UpgradeOutcome, status: 401 | 403 | 429 | 503, why: string, extra?: string) => {
      endCall();
      metrics.upgrades.inc({ outcome });
      logger.warn({ path: req.url?.slice(0, 256), reason: why }, 'refused an HTTP upgrade');
      refuseUpgrade(socket, status, why, extra);
    };
    // WebSocket upgrades carry traffic the guardian never sees: only where the operator listed them.
    if (!config.allowWebSockets) return refused('refused_path', 403, 'HTTP upgrades are refused (ALLOW_WEBSOCKETS=false)');
    // The card names the agent's A2A endpoints: an upgrade waits for it briefly, as a call does, and is refused without it.
    const cardRead = upstreamCard.current() === undefined ? upstreamCard.pending(2000) : Promise.resolve();
    void cardRead
      .then(() => {
        // Without the card the agent's JSON-RPC endpoint (any path) is not known: `/` ("every path that is not A2A")
        // would take it, so only the prefixes named below `/` are forwarded until the card is known.
        const cardless = upstreamCard.current() === undefined;
        const where = upgradeTarget(req, (cardless ? namedUpgradeOptions : upgradeOptions)(handler.classifyOptions()));
        if (!where.ok && cardless && upgradeTarget(req, upgradeOptions(handler.classifyOptions())).ok) {
          return refused('refused_path', 503, 'the agent card is not known yet: upgrades below / wait for it', 'retry-after: 5\r\n');
        }
        if (!where.ok) return refused('refused_path', 403, where.why);
        // Uninspected, but not unidentified: IDENTITY_POLICY and bad credentials apply as to any call.
        // A forwarded route: the caller's one-use credentials (an assertion) are used up.
        return opts
          .identify(req.headers, req.socket as Socket)
          .then(spent)
          .then(async (who) => {
            if (!who.ok) return refused('refused_identity', 401, who.message, 'www-authenticate: Bearer realm="a2a-guard"\r\n');
            // An open upgraded connection is one of its caller's calls in flight, as a stream is.
            const limits = opts.callerLimits;
            const admitted = limits === undefined ? undefined : await limits.admit(admittedKey(who, req.socket.remoteAddress, config.perCaller.ipv6Prefix));
            if (admitted !== undefined && !admitted.ok)
              return refused('refused_limit', 429, admitted.error.message, `retry-after: ${admitted.error.metadata.retryAfterSeconds ?? '1'}\r\n`);
            if (admitted !== undefined) {
              if (socket.destroyed) return admitted.leave();
              socket.once('close', () => admitted.leave());
            }
            logger.warn({ path: where.target.slice(0, 256) }, 'forwarding an HTTP upgrade uninspected (ALLOW_WEBSOCKETS=true)');
            // The rules of every forwarded request: hop-by-hop headers and those Connection names dropped, the proxy's
            // own and the reasoning header never on, the caller's address appended to X-Forwarded-For.
            const headers = forwardRequestHeaders(req.headers, {
              role: config.role,
              reasoningHeader: config.reasoningHeader,
              announce: undefined,
              unchecked: false,
              bodyLength: null,
              upstreamHost: config.upstreamUrl.host,
              remoteAddress: req.socket.remoteAddress,
              encrypted: 'encrypted' in req.socket,
            });
            relayUpgrade(socket, head, config.upstreamUrl, where.target, headers, (outcome, status) => {
              metrics.upgrades.inc({ outcome });
              if (outcome !== 'forwarded') endCall();
              if (outcome === 'not_switched')
                logger.warn({ path: where.target.slice(0, 256), status }, 'the agent answered an upgrade without switching protocols: answer dropped');
            });
          });
      })
      .catch((err: unknown) => {
        logger.error({ err }, 'internal error while handling an upgrade');
        socket.destroy();
      });
  };
}
