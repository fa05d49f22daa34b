/**
 * HTTP/2 towards the agent's gRPC endpoint, per service version (v1.0 and v0.3 may be served at
 * different endpoints; mostly they are one): one session per endpoint, reopened when it closes,
 * dropped when no version's target names it any more (a new card). h2c for http://, TLS for https://
 * with the UPSTREAM_* TLS files (read when a session opens, so a rotated file is used by the next session).
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { Duplex } from 'node:stream';
import type { OutboundTls } from '../../config/config';
import type { GrpcVersion } from '../../a2a/bindings/grpc/card';

const VERSIONS: readonly GrpcVersion[] = ['1.0', '0.3'];

export interface GrpcUpstream {
  /** The current target of a service version, or undefined when none is known (no variable, no gRPC interface in the card). */
  target(version: GrpcVersion): URL | undefined;
  /** Open a stream to the agent's endpoint for the call's service version; throws when no target is known. */
  request(headers: http2.OutgoingHttpHeaders, version: GrpcVersion): http2.ClientHttp2Stream;
  /**
   * Reachable: the session to every current target (opened if need be, and kept for calls) connects and
   * answers a PING within `timeoutMs`. False when no target is known.
   */
  probe(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** The client certificate and CA files, read at each new connection (renewed files take effect). */
function material(tls: OutboundTls) {
  return {
    ...(tls.caFile === undefined ? {} : { ca: fs.readFileSync(tls.caFile) }),
    ...(tls.certFile === undefined ? {} : { cert: fs.readFileSync(tls.certFile) }),
    ...(tls.keyFile === undefined ? {} : { key: fs.readFileSync(tls.keyFile) }),
  };
}

/** The connection, with Nagle off: small gRPC frames must leave at once, not wait for the peer's delayed ACK. */
function connection(url: URL, tls: OutboundTls): Duplex {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const secure = url.protocol === 'https:';
  const port = Number(url.port || (secure ? 443 : 80));
  if (!secure) return net.connect({ host, port, noDelay: true });
  const servername = tls.serverName ?? (net.isIP(host) === 0 ? host : undefined);
  const socket = tlsConnect({ host, port, ALPNProtocols: ['h2'], ...material(tls), ...(servername === undefined ? {} : { servername }) });
  socket.setNoDelay(true);
  return socket;
}

/** Whether the session answers a PING within `timeoutMs` (sent once it is connected). */
function pingSession(s: http2.ClientHttp2Session, timeoutMs: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const done = (up: boolean) => {
      clearTimeout(timer);
      s.off('error', down);
      s.off('close', down);
      s.off('connect', ping);
      resolve(up);
    };
    const down = () => done(false);
    const ping = () => {
      try {
        if (!s.ping((err) => done(err === null))) done(false);
      } catch {
        done(false); // the session went away in between
      }
    };
    const timer = setTimeout(down, timeoutMs);
    timer.unref();
    s.once('error', down);
    s.once('close', down);
    // A PING sent while the session connects is cancelled: send it once connected.
    if (s.connecting) s.once('connect', ping);
    else ping();
  });
}

export function createGrpcUpstream(target: (version: GrpcVersion) => URL | undefined, tls: OutboundTls): GrpcUpstream {
  /** Open sessions by origin. */
  const sessions = new Map<string, http2.ClientHttp2Session>();

  function open(url: URL): http2.ClientHttp2Session {
    const s = http2.connect(url.origin, { createConnection: () => connection(url, tls) });
    const forget = () => {
      if (sessions.get(url.origin) === s) sessions.delete(url.origin);
    };
    s.on('error', forget);
    s.on('close', forget);
    s.on('goaway', forget);
    // Idle sessions must not keep the process alive.
    s.unref();
    return s;
  }

  /** The session to `url`: the open one, or a new one when it closed (sessions to endpoints no target names are closed then). */
  function current(url: URL): http2.ClientHttp2Session {
    const open_ = sessions.get(url.origin);
    if (open_ !== undefined && !open_.closed && !open_.destroyed) return open_;
    const named = new Set(VERSIONS.map((v) => target(v)?.origin));
    for (const [origin, s] of sessions) {
      if (!named.has(origin)) {
        sessions.delete(origin);
        s.close();
      }
    }
    const s = open(url);
    sessions.set(url.origin, s);
    return s;
  }

  function probeOne(url: URL, timeoutMs: number): Promise<boolean> {
    let s: http2.ClientHttp2Session;
    try {
      s = current(url);
    } catch {
      return Promise.resolve(false); // unreadable UPSTREAM_* TLS files
    }
    return pingSession(s, timeoutMs);
  }

  return {
    target,
    request(headers, version) {
      const url = target(version);
      if (url === undefined)
        throw new Error(
          'no gRPC endpoint of the agent is known (GRPC_UPSTREAM_URL, or a GRPC interface in its card; a remote card, ROLE=client, only at UPSTREAM_URL itself)',
        );
      return current(url).request({ ...headers, ':scheme': url.protocol.slice(0, -1), ':authority': url.host });
    },
    async probe(timeoutMs) {
      const urls = [
        ...new Map(
          VERSIONS.map((v) => target(v))
            .filter((u): u is URL => u !== undefined)
            .map((u) => [u.origin, u]),
        ).values(),
      ];
      if (urls.length === 0) return false;
      return (await Promise.all(urls.map((u) => probeOne(u, timeoutMs)))).every((up) => up);
    },
    close: () =>
      Promise.all(
        [...sessions.values()].map(
          (s) =>
            new Promise<void>((resolve) => {
              if (s.closed) return resolve();
              s.close(() => resolve());
              setTimeout(() => {
                s.destroy();
                resolve();
              }, 1000).unref();
            }),
        ),
      ).then(() => sessions.clear()),
  };
}
