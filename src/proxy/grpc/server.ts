/**
 * The inbound gRPC adapter: an HTTP/2 listener (h2c, or TLS with the HTTP listener's TLS_* files)
 * on GRPC_PORT whose every stream is one call of proxy/grpc/call.ts, forwarded to the agent's gRPC
 * endpoint. Loaded only when GRPC_PORT is set.
 */
import http2 from 'node:http2';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../../config/config';
import type { CardCache } from '../../a2a/card';
import { grpcCodecs } from '../../a2a/bindings/grpc/codec';
import { grpcTargetFromCard } from '../../a2a/bindings/grpc/card';
import { listenerTls } from '../../credentials/tls';
import { createGrpcHandler, type GrpcDeps } from './call';
import { createGrpcUpstream } from './upstream';
import { connectionId, shareConnections, type Connections } from '../connections';

export interface GrpcListener {
  /** host:port the listener is bound to. */
  readonly address: string;
  readonly port: number;
  /** The agent's gRPC endpoint answers (an HTTP/2 PING within `timeoutMs`); false when none is known. */
  probeUpstream(timeoutMs: number): Promise<boolean>;
  /** Stop accepting; in-flight calls may finish until `timeoutMs`, then every session is destroyed. */
  close(timeoutMs?: number): Promise<void>;
}

export type GrpcListenerDeps = Omit<GrpcDeps, 'upstream' | 'streams'> & { readonly upstreamCard: CardCache; readonly connections: Connections };

export async function startGrpcListener(deps: GrpcListenerDeps, logger: Logger): Promise<GrpcListener> {
  const config: Config = deps.config;
  const grpc = config.grpc;
  if (grpc === undefined) throw new Error('GRPC_PORT is not set');
  // Load the generated code now: a broken install fails at start, not at the first call.
  grpcCodecs();
  const fixed = grpc.upstreamUrl;
  // ROLE=client's upstream is a remote agent: its card may only name UPSTREAM_URL's own host and port for gRPC.
  const remoteCard = config.role !== 'server';
  const upstream = createGrpcUpstream(
    (version) => fixed ?? grpcTargetFromCard(deps.upstreamCard.current(), config.upstreamUrl, remoteCard, version),
    config.tls.upstream,
  );
  const streams = new Set<() => void>();
  const handler = createGrpcHandler({ ...deps, upstream, streams });
  const tls = listenerTls(config.tls.listener, config.identity.refreshMs, logger);
  // Bounded per connection: header lists, concurrent calls (each may hold a message up to MAX_BODY_BYTES, within MAX_INFLIGHT_BODY_BYTES).
  const settings = { maxHeaderListSize: 64 * 1024, maxConcurrentStreams: 1000 };
  const server =
    tls === undefined
      ? http2.createServer({ settings, maxSessionMemory: 16 })
      : http2.createSecureServer({ ...tls.options, settings, maxSessionMemory: 16, allowHTTP1: false });
  if (tls !== undefined) tls.watch(server as unknown as HttpsServer, logger);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
    s.on('error', () => undefined);
  });
  shareConnections(server, deps.connections, deps.metrics, deps.config.perCaller.ipv6Prefix);
  server.on('connection', (socket: Socket) => socket.setNoDelay(true));
  // A session with a call in flight is not idle (connections.ts): each stream is a call on its connection.
  server.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    const id = connectionId(stream.session?.socket ?? {});
    deps.connections.callStarted(id);
    stream.once('close', () => deps.connections.callEnded(id));
    handler(stream, headers);
  });
  // An HTTP/1 request or a broken preface never reaches the handler; nothing to relay.
  server.on('sessionError', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(grpc.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address === '0.0.0.0' ? '127.0.0.1' : addr.address;
  if (upstream.target('1.0') === undefined)
    logger.warn(
      `GRPC_PORT is set but no gRPC endpoint of the agent is known yet (GRPC_UPSTREAM_URL, or a GRPC interface in its card${remoteCard ? " on UPSTREAM_URL's host" : ''}): calls get UNAVAILABLE until one is`,
    );
  logger.info({ port: addr.port, tls: tls !== undefined }, 'gRPC listener started');
  return {
    address: `${host}:${addr.port}`,
    port: addr.port,
    probeUpstream: (timeoutMs) => upstream.probe(timeoutMs),
    close: (timeoutMs = 0) =>
      new Promise<void>((resolve) => {
        let done = false;
        const end = () => {
          if (done) return;
          done = true;
          for (const s of sessions) s.destroy();
          tls?.close();
          void upstream.close().then(() => resolve());
        };
        // GOAWAY: no new calls; calls in flight may finish by the deadline, then open streams end with UNAVAILABLE.
        for (const s of sessions) s.close();
        server.close(() => end());
        setTimeout(() => {
          for (const terminate of [...streams]) terminate();
          setTimeout(end, 100).unref();
        }, timeoutMs).unref();
      }),
  };
}
