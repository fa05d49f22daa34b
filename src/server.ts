/**
 * Wires one proxy instance: guardian client, agent cards, identities, upstream pool, HTTP server.
 * `startProxy` is what main.ts and the tests call.
 */
import http from 'node:http';
import type https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from './config';
import { FastCounter, Metrics } from './admin/metrics';
import { CardCache } from './a2a/card';
import { CardJudge, type CardServing } from './proxy/card-judge';
import { CardSigning } from './identity/card-signing';
import { encodePath } from './a2a/target';
import { HttpGuardian, type Guardian } from './aos/guardian';
import { Identities } from './aos/identity';
import { createUpstream } from './proxy/http/forward';
import { proxyOwned } from './proxy/headers';
import { createProxyHandler } from './proxy/http/pipeline';
import { BodyBudget } from './proxy/budget';
import { createFairTurns } from './proxy/fair';
import { callerKey, createCallerLimits } from './proxy/callers';
import { ownerKey } from './ownership/principal';
import { refuseUpgrade, relayUpgrade, upgradeRoutes, upgradeTarget, type UpgradeOutcome } from './proxy/http/upgrade';
import type { Duplex } from 'node:stream';
import { Gate } from './aos/gate';
import { createAgent } from './undici-pool';
import { WatchedFile } from './files';
import { createLogger } from './log';
import { setupIdentity } from './identity/setup';
import { describeConnectError, listenerTls, outboundTls } from './tls';
import { TaskOwnership } from './proxy/ownership';
import { createOwnerStore } from './ownership/create';
import { RedisOwnerStore } from './ownership/redis';
import { ReplayCache, SharedReplayGuard } from './identity/replay';
import { spent } from './identity/caller';
import { createTracer, type Tracer } from './observe/tracing';
import type { AuditRecord } from './observe/audit';
import type { ChainLink } from './observe/decision-log';
import { VERSION } from './version';
import { createHookRunner } from './proxy/hooks';
import type { GrpcListener } from './proxy/grpc/server';
import { grpcPublicAddress } from './a2a/bindings/grpc/card';
import { startPushRelay } from './proxy/push/start';
import type { Resolver } from './proxy/push/deliver';

export interface ProxyInstance {
  readonly server: http.Server;
  readonly url: string;
  readonly metrics: Metrics;
  readonly guardian: Guardian;
  readonly upstreamCard: CardCache;
  readonly tracer: Tracer;
  /** host:port of the gRPC listener, when GRPC_PORT is set. */
  readonly grpcAddress: string | undefined;
  /** Where the agent delivers push notifications (PUSH_DELIVERIES=relay), else undefined. */
  readonly pushRelayUrl: string | undefined;
  /** When GRPC_PORT is set: the agent's gRPC endpoint answers an HTTP/2 PING within `timeoutMs`. */
  readonly probeGrpcUpstream: ((timeoutMs: number) => Promise<boolean>) | undefined;
  /**
   * Graceful stop: report not ready at once; keep accepting for `acceptForMs` (load balancers
   * still route here until they see it); then refuse new connections, let in-flight calls finish,
   * and end open streams with an error event by `timeoutMs`.
   */
  drain(timeoutMs: number, acceptForMs?: number): Promise<void>;
  readonly draining: () => boolean;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly config: Config;
  readonly logger: Logger;
  /** Guardian to use instead of the one the config names (the embedded policy engine, tests). */
  readonly guardian?: Guardian;
  readonly processMetrics?: boolean;
  /** Tracer to use instead of the one the config names (OTEL_* variables). */
  readonly tracer?: Tracer;
  /** Receives every finished call's audit record (the decision log). */
  readonly decisionLog?: (record: AuditRecord) => ChainLink;
  /** Resolves webhook hosts at push delivery time (tests; default: the system resolver). */
  readonly pushResolve?: Resolver;
  /** First push retry delay in ms (tests). */
  readonly pushRetryBaseMs?: number;
}

/**
 * The HTTP guardian the config names: TLS towards it (GUARDIAN_CA_FILE, ...), its bearer token from
 * GUARDIAN_TOKEN or GUARDIAN_TOKEN_FILE (re-read when it changes: projected tokens rotate).
 * Throws StartupError for unreadable files.
 */
export function createGuardian(config: Config, logger?: Logger): Guardian {
  const url = config.guardianUrl;
  if (url === undefined) throw new Error('GUARDIAN_URL is not set and no embedded guardian was given');
  const log = logger ?? silentLogger();
  const tls = outboundTls(config.tls.guardian, 'GUARDIAN', config.identity.refreshMs, log);
  const tokenFile = config.guardianTokenFile === undefined
    ? undefined
    : WatchedFile.open(config.guardianTokenFile, { variable: 'GUARDIAN_TOKEN_FILE', intervalMs: config.identity.refreshMs, onProblem: (m) => log.warn(m) });
  const tokenOf = (f: WatchedFile) => f.text().trim() || undefined;
  let offToken: (() => void) | undefined;
  const guardian = new HttpGuardian({
    url,
    token: tokenFile === undefined ? config.guardianToken : tokenOf(tokenFile),
    timeoutMs: config.guardianTimeoutMs,
    callConnections: config.guardianCallConnections,
    streamConnections: config.guardianStreamConnections,
    ...(tls.connect === undefined ? {} : { connect: tls.connect }),
    logger: log,
    describeFailure: (err) => describeConnectError(err, 'GUARDIAN', url.protocol === 'https:'),
    onClose: () => {
      tls.close();
      offToken?.();
    },
  });
  if (tokenFile !== undefined) {
    if (tokenOf(tokenFile) === undefined) log.warn('GUARDIAN_TOKEN_FILE is empty: no token is sent until it has one');
    offToken = tokenFile.onChange(() => {
      guardian.setToken(tokenOf(tokenFile));
      log.info('GUARDIAN_TOKEN_FILE changed: the new token is used from the next guardian call');
    });
  }
  return guardian;
}

function silentLogger(): Logger {
  return createLogger('silent');
}

export async function startProxy(opts: StartOptions): Promise<ProxyInstance> {
  const { config, logger } = opts;
  const metrics = new Metrics(opts.processMetrics ?? false, VERSION);
  const guardian = opts.guardian ?? createGuardian(config, logger);
  if (guardian.breakerState !== undefined) metrics.watchBreaker(() => (guardian.breakerState as () => 'closed' | 'open' | 'half_open')());
  // Stream events go to the guardian at most one per stream-budget connection; the others wait in this line.
  const streamLine = new Gate(config.guardianStreamConnections);
  metrics.watchGuardianQueue(() => ({ call: guardian.queued?.().call ?? 0, stream: streamLine.waiting + (guardian.queued?.().stream ?? 0) }));
  const tracer = opts.tracer ?? createTracer(config.otel, { version: VERSION, onExportFailure: () => metrics.traceExportFailures.inc() });
  const upstreamTls = outboundTls(config.tls.upstream, 'UPSTREAM', config.identity.refreshMs, logger);
  // The card fetch uses the same TLS settings as the calls it describes.
  const cardDispatcher = upstreamTls.connect === undefined ? undefined : createAgent({ connect: upstreamTls.connect });
  // An agent whose card is only at a CARD_PATHS path (VoltAgent's /.well-known/{agentId}/agent-card.json) is read there.
  const upstreamCard = new CardCache({ base: config.upstreamUrl, ttlMs: config.cardTtlMs, logger, what: 'upstream', paths: config.cardPaths.map((p) => encodePath(p)), ...(cardDispatcher === undefined ? {} : { dispatcher: cardDispatcher }) });
  const observedCard = config.observedAgentCardUrl === undefined || config.role === 'server'
    ? undefined
    : new CardCache({ base: config.observedAgentCardUrl, ttlMs: config.cardTtlMs, logger, what: 'observed client' });
  const identities = new Identities({ overrides: config.observedAgent, role: config.role, upstreamCard, upstreamUrl: config.upstreamUrl, observedCard });
  const upstream = createUpstream(config.upstreamUrl, upstreamTls.connect);
  const identityOutcomes = new FastCounter('a2a_guard_caller_identities_total', 'Callers by how their identity was established (assertion, mtls, oidc, local, unverified, claimed, refused)', ['outcome'], metrics.registry);
  const store = config.ownership.enabled ? await createOwnerStore(config.ownership, logger, (n) => metrics.ownershipEvictions.inc(n)) : undefined;
  // With TASK_STORE_URL, assertion ids are kept in the same Redis: one use across every replica.
  const replay = store instanceof RedisOwnerStore
    ? new SharedReplayGuard({ add: (kid, jti, exp, share) => store.recordAssertion(kid, jti, exp, share), seen: (kid, jti) => store.assertionSeen(kid, jti) }, new ReplayCache(), config.failMode, logger)
    : undefined;
  let identity: Awaited<ReturnType<typeof setupIdentity>>;
  let cardSigning: CardSigning | undefined;
  try {
    identity = await setupIdentity(config, () => identities.observed('client'), logger, (outcome) => identityOutcomes.inc(outcome), replay);
    cardSigning = await CardSigning.open({ ...config.cardSigning, require: config.cardSignatures === 'require', refreshMs: config.identity.refreshMs, logger });
  } catch (err) {
    await store?.close();
    throw err;
  }
  const streams = new Set<() => void>();
  let draining = false;
  const bodyBudget = new BodyBudget(config.maxInflightBodyBytes, config.perCaller.inflightBodyBytes);
  metrics.watchBodyBudget(() => bodyBudget.inFlight);
  const callerLimits = await createCallerLimits(config, logger, metrics);
  const cardJudge = config.inspectCards ? new CardJudge({ config, guardian, identities, logger, metrics, callerLimits }) : undefined;
  const fair = createFairTurns(config);
  const ownership = store === undefined ? undefined : new TaskOwnership({ store, failMode: config.failMode, logger, metrics, maxPerCaller: config.ownership.maxPerCaller, ttlSeconds: config.ownership.ttlSeconds });
  const push = config.push.relay && config.role !== 'client'
    ? await startPushRelay({ config, logger, metrics, tracer, owners: store, decisionLog: opts.decisionLog, resolve: opts.pushResolve, retryBaseMs: opts.pushRetryBaseMs, runHooks: createHookRunner({ config, guardian, identities, logger, metrics, callerLimits }) }, store)
    : undefined;
  // The gRPC binding, when configured: its own HTTP/2 listener on the same hooks, identity and ownership.
  let grpc: GrpcListener | undefined;
  let effective = config;
  if (config.grpc !== undefined) {
    // Required here only: @grpc/grpc-js and the SDK's generated code load when gRPC is configured.
    const { startGrpcListener } = require('./proxy/grpc/server') as typeof import('./proxy/grpc/server');
    const listener = await startGrpcListener({
      config, logger, metrics, identities, ...identity, ownership, tracer, decisionLog: opts.decisionLog, upstreamCard, bodyBudget, streamLine, callerLimits, push,
      runHooks: createHookRunner({ config, guardian, identities, logger, metrics, callerLimits }),
      cardRewrite: (authority: string | undefined) => grpcCardRewrite(effective, authority, () => server, cardSigning, cardJudge),
    }, logger);
    grpc = listener;
    // Cards served over HTTP name the port the gRPC listener got (GRPC_PORT=0 picks one).
    effective = { ...config, grpc: { ...config.grpc, port: listener.port } };
  }
  const handler = createProxyHandler({ config: effective, guardian, identities, upstream, logger, metrics, streams, draining: () => draining, bodyBudget, callerLimits, fair, upstreamCard, cardSigning, cardJudge, ...identity, ownership, tracer, decisionLog: opts.decisionLog, streamLine, push });

  const tls = listenerTls(config.tls.listener, config.identity.refreshMs, logger);
  const serverOptions = { keepAliveTimeout: 65_000, requestTimeout: 0, headersTimeout: 30_000 };
  // Per connection: its calls in flight, whether later bytes did not parse (clientError below), and
  // one 'close' listener all its responses share. 'close' comes once per response (node guards it),
  // so `on` serves: a closure and `once`'s wrapper per call cost ~1,400 instructions more (callgrind).
  interface Connection { calls: number; bad: boolean; readonly ended: () => void }
  const connections = new WeakMap<Socket, Connection>();
  const counted: http.RequestListener = (req, res) => {
    const socket = req.socket;
    let conn = connections.get(socket);
    if (conn === undefined) {
      const c: Connection = {
        calls: 0, bad: false,
        ended: () => {
          if (--c.calls === 0 && c.bad) badRequest(socket);
        },
      };
      connections.set(socket, (conn = c));
    }
    conn.calls++;
    res.on('close', conn.ended);
    return handler(req, res);
  };
  const badRequest = (socket: Duplex): void => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  };
  // node:https is loaded only with a TLS listener.
  const server: http.Server = tls === undefined ? http.createServer(serverOptions, counted) : (require('node:https') as typeof https).createServer({ ...tls.options, ...serverOptions }, counted);
  if (tls !== undefined) {
    tls.watch(server as https.Server, logger);
    // A failed handshake never reaches the handler: say why here (no client certificate, an untrusted one, plain HTTP...).
    server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      logger.info({ remote: socket.remoteAddress, code: err.code ?? 'error', cause: err.message }, 'TLS handshake with a caller failed');
    });
  }
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  const upgradeOptions = upgradeRoutes(config.upgradePaths);
  server.on('upgrade', (req, socket, head) => {
    const refused = (outcome: UpgradeOutcome, status: 401 | 403 | 429, why: string, extra?: string) => {
      metrics.upgrades.inc({ outcome });
      logger.warn({ path: req.url?.slice(0, 256), reason: why }, 'refused an HTTP upgrade');
      refuseUpgrade(socket, status, why, extra);
    };
    // WebSocket upgrades carry traffic the guardian never sees: only where the operator listed them.
    if (!config.allowWebSockets) return refused('refused_path', 403, 'HTTP upgrades are refused (ALLOW_WEBSOCKETS=false)');
    // The card names the agent's A2A endpoints: an upgrade waits for it briefly, as a call does (without it,
    // REST-shaped paths are refused; and whatever the path, only a 101 ever reaches the caller).
    const cardRead = upstreamCard.current() === undefined ? upstreamCard.pending(2000) : Promise.resolve();
    void cardRead.then(() => {
      const where = upgradeTarget(req, upgradeOptions(handler.classifyOptions()));
      if (!where.ok) return refused('refused_path', 403, where.why);
      // Uninspected, but not unidentified: IDENTITY_POLICY and bad credentials apply as to any call.
      // A forwarded route: the caller's one-use credentials (an assertion) are used up.
      return identity.identify(req.headers, req.socket).then(spent).then(async (who) => {
        if (!who.ok) return refused('refused_identity', 401, who.message, 'www-authenticate: Bearer realm="a2a-guard"\r\n');
        // An open upgraded connection is one of its caller's calls in flight, as a stream is.
        const admitted = callerLimits === undefined ? undefined : await callerLimits.admit(callerKey(ownerKey(who.identity), req.socket.remoteAddress));
        if (admitted !== undefined && !admitted.ok) return refused('refused_limit', 429, admitted.error.message, `retry-after: ${admitted.error.metadata.retryAfterSeconds ?? '1'}\r\n`);
        if (admitted !== undefined) {
          if (socket.destroyed) return admitted.leave();
          socket.once('close', () => admitted.leave());
        }
        logger.warn({ path: where.target.slice(0, 256) }, 'forwarding an HTTP upgrade uninspected (ALLOW_WEBSOCKETS=true)');
        // As for every forwarded request: the proxy's own headers, in any spelling, and the reasoning header never go on.
        const headers = { ...req.headers };
        for (const h of Object.keys(headers)) if (proxyOwned(h, config.reasoningHeader)) delete headers[h];
        relayUpgrade(socket, head, config.upstreamUrl, where.target, headers, (outcome, status) => {
          metrics.upgrades.inc({ outcome });
          if (outcome === 'not_switched') logger.warn({ path: where.target.slice(0, 256), status }, 'the agent answered an upgrade without switching protocols: answer dropped');
        });
      });
    }).catch((err: unknown) => {
      logger.error({ err }, 'internal error while handling an upgrade');
      socket.destroy();
    });
  });
  server.on('clientError', (_err, socket) => {
    // Bytes that do not parse after a request on the same connection (a body sent without a length, a pipelined
    // request that is not HTTP): that request is still being judged. A 400 now would reach the caller as the answer
    // to it while the agent acts on it; answers keep their order: its answer first, then the 400 and the close.
    const conn = connections.get(socket as Socket);
    if (conn !== undefined && conn.calls > 0) return void (conn.bad = true);
    badRequest(socket);
  });

  // Learn identities while the listener opens: the first hooks wait for them (at most 3 s), the listener does not.
  identities.warmUp(3000);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  }).catch(async (err: unknown) => {
    // The gRPC listener is up already: a port the HTTP listener cannot bind must not leave it running.
    await grpc?.close();
    await push?.close();
    throw err;
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    server,
    grpcAddress: grpc?.address,
    pushRelayUrl: push?.url,
    probeGrpcUpstream: grpc?.probeUpstream,
    url: `${tls === undefined ? 'http' : 'https'}://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`,
    metrics,
    guardian,
    upstreamCard,
    tracer,
    draining: () => draining,
    drain: async (timeoutMs: number, acceptForMs = 0) => {
      draining = true;
      if (acceptForMs > 0) await new Promise((r) => setTimeout(r, acceptForMs));
      const grpcClosed = grpc?.close(timeoutMs);
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
      await grpcClosed;
    },
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      await grpc?.close();
      await push?.close();
      guardian.close();
      await upstream.close();
      upstreamTls.close();
      tls?.close();
      await cardDispatcher?.close();
      await store?.close();
      await callerLimits?.close();
      await tracer.shutdown();
    },
  };
}

/**
 * Card rewrite for gRPC GetExtendedAgentCard answers: HTTP URLs name PUBLIC_URL, else the host the
 * caller used with the HTTP listener's port; gRPC interfaces name the gRPC address.
 */
function grpcCardRewrite(config: Config, authority: string | undefined, server: () => http.Server, signing: CardSigning | undefined, judge: CardJudge | undefined): CardServing {
  let host = '127.0.0.1';
  try {
    if (authority !== undefined) host = new URL(`http://${authority}`).hostname;
  } catch {
    // keep the loopback default
  }
  const tls = config.tls.listener !== undefined;
  const port = (server().address() as AddressInfo | null)?.port ?? config.port;
  const publicBase = config.publicUrl ?? new URL(`${tls ? 'https' : 'http'}://${host}:${port}/`);
  return { publicBase, upstreamBase: config.upstreamUrl, signatures: config.cardSignatures, signing, judge, grpcAddress: grpcPublicAddress(config.grpc, config.publicUrl?.hostname ?? host) };
}
