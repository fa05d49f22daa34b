/**
 * Wires one proxy instance: guardian client, agent cards, identities, upstream pool, HTTP server.
 * `startProxy` is what main.ts and the tests call.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from './config';
import { Metrics } from './admin/metrics';
import { CardCache } from './a2a/card';
import { HttpGuardian, type Guardian } from './aos/guardian';
import { Identities } from './aos/identity';
import { createUpstream } from './proxy/forward';
import { createProxyHandler } from './proxy/pipeline';
import { BodyBudget } from './proxy/body';
import { createProxyServer } from 'http-proxy-3';

export interface ProxyInstance {
  readonly server: http.Server;
  readonly url: string;
  readonly metrics: Metrics;
  readonly guardian: Guardian;
  readonly upstreamCard: CardCache;
  /** Graceful stop: refuse new connections, let in-flight calls finish, end open streams with an error event by the deadline. */
  drain(timeoutMs: number): Promise<void>;
  readonly draining: () => boolean;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly config: Config;
  readonly logger: Logger;
  /** Guardian to use instead of the one the config names (the embedded policy engine, tests). */
  readonly guardian?: Guardian;
  readonly processMetrics?: boolean;
}

export function createGuardian(config: Config): Guardian {
  if (config.guardianUrl === undefined) throw new Error('GUARDIAN_URL is not set and no embedded guardian was given');
  return new HttpGuardian({ url: config.guardianUrl, token: config.guardianToken, timeoutMs: config.guardianTimeoutMs });
}

export async function startProxy(opts: StartOptions): Promise<ProxyInstance> {
  const { config, logger } = opts;
  const metrics = new Metrics(opts.processMetrics ?? false);
  const guardian = opts.guardian ?? createGuardian(config);
  const upstreamCard = new CardCache({ base: config.upstreamUrl, ttlMs: config.cardTtlMs, logger, what: 'upstream' });
  const observedCard = config.observedAgentCardUrl === undefined || config.role === 'server'
    ? undefined
    : new CardCache({ base: config.observedAgentCardUrl, ttlMs: config.cardTtlMs, logger, what: 'observed client' });
  const identities = new Identities({ overrides: config.observedAgent, role: config.role, upstreamCard, observedCard });
  const upstream = createUpstream(config.upstreamUrl);
  const streams = new Set<() => void>();
  let draining = false;
  const bodyBudget = new BodyBudget(config.maxInflightBodyBytes);
  const handler = createProxyHandler({ config, guardian, identities, upstream, logger, metrics, streams, draining: () => draining, bodyBudget, upstreamCard });

  const server = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 0, headersTimeout: 30_000 }, handler);
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req, socket, head) => {
    if (!config.allowWebSockets) {
      // WebSocket upgrades would carry traffic the guardian never sees.
      logger.warn({ path: req.url }, 'refused an HTTP upgrade (ALLOW_WEBSOCKETS=false)');
      socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    logger.warn({ path: req.url }, 'forwarding an HTTP upgrade uninspected (ALLOW_WEBSOCKETS=true)');
    wsProxy().ws(req, socket, head);
  });
  let ws: ReturnType<typeof createProxyServer> | undefined;
  const wsProxy = () => {
    if (ws === undefined) {
      ws = createProxyServer({ target: config.upstreamUrl.href, changeOrigin: true });
      ws.on('error', (_err, _req, sock) => {
        if (sock !== undefined && 'destroy' in sock) sock.destroy();
      });
    }
    return ws;
  };
  server.on('clientError', (err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  });

  // Learn identities before the first call; traffic does not wait on a failing card.
  await Promise.race([Promise.all([upstreamCard.ready(), observedCard?.ready()]), new Promise((r) => setTimeout(r, 3000).unref())]);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    server,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`,
    metrics,
    guardian,
    upstreamCard,
    draining: () => draining,
    drain: async (timeoutMs: number) => {
      draining = true;
      await new Promise<void>((resolve) => {
        const deadline = setTimeout(() => {
          for (const end of [...streams]) end();
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
      });
    },
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      guardian.close();
      await upstream.close();
      ws?.close();
    },
  };
}
