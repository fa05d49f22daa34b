/**
 * Wires one proxy instance: guardian client, agent cards, identities, upstream pool, HTTP server.
 * `startProxy` is what main.ts and the tests call.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from './config/config';
import { FastCounter, Metrics } from './admin/metrics';
import { CardCache } from './a2a/card';
import { CardJudge, type CardServing } from './proxy/card-judge';
import { CardSigning } from './identity/card-signing';
import { encodePath } from './a2a/target';
import { HttpGuardian, type Guardian } from './aos/guardian';
import { Identities } from './aos/identity';
import { createUpstream } from './proxy/http/forward';
import { createProxyHandler } from './proxy/http/pipeline';
import { BodyBudget } from './proxy/budget';
import { createFairTurns } from './proxy/fair';
import { createConnections, withinDescriptors } from './proxy/connections';
import { createCallerLimits } from './proxy/callers';
import { startHttpListener } from './proxy/http/server';
import { Gate } from './aos/gate';
import { createAgent } from './net/undici-pool';
import { WatchedFile } from './credentials/files';
import { createLogger } from './runtime/log';
import { setupIdentity } from './identity/setup';
import { describeConnectError, outboundTls } from './credentials/tls';
import { TaskOwnership } from './proxy/ownership';
import { createOwnerStore } from './ownership/create';
import { RedisOwnerStore } from './ownership/redis';
import { ReplayCache, SharedReplayGuard } from './identity/replay';
import { createTracer, type Tracer } from './observe/tracing';
import type { AuditRecord } from './observe/audit';
import type { ChainLink } from './observe/decision-log';
import { VERSION } from './runtime/version';
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
  const tokenFile =
    config.guardianTokenFile === undefined
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

/** a2a_guard_caller_identities_total, counted by the identity checks. */
function identityOutcomesCounter(metrics: Metrics): FastCounter {
  return new FastCounter(
    'a2a_guard_caller_identities_total',
    'Callers by how their identity was established (assertion, mtls, oidc, local, unverified, claimed, refused)',
    ['outcome'],
    metrics.registry,
  );
}

export async function startProxy(opts: StartOptions): Promise<ProxyInstance> {
  const { logger } = opts;
  const config = withinDescriptors(opts.config, logger); // Every pool within the file descriptors (main.ts may have fitted it: then as is).
  const metrics = new Metrics(opts.processMetrics ?? false, VERSION);
  const guardian = opts.guardian ?? createGuardian(config, logger);
  if (guardian.breakerState !== undefined) metrics.watchBreaker(() => (guardian.breakerState as () => 'closed' | 'open' | 'half_open')());
  // Stream events go to the guardian at most one per stream-budget connection; the others wait in this line.
  const streamLine = new Gate(config.guardianStreamConnections);
  const tracer = opts.tracer ?? createTracer(config.otel, { version: VERSION, onExportFailure: () => metrics.traceExportFailures.inc() });
  const { upstreamTls, cardDispatcher, upstreamCard, identities } = agentCards(config, logger);
  // As many connections to the agent as from callers (one for each call), idle ones of every caller included.
  const upstream = createUpstream(config.upstreamUrl, upstreamTls.connect, config.maxConnections, (n) =>
    metrics.callerLimited.inc({ resource: 'agent_connections' }, n),
  );
  const identityOutcomes = identityOutcomesCounter(metrics);
  const store = config.ownership.enabled ? await createOwnerStore(config.ownership, logger, (n) => metrics.ownershipEvictions.inc(n)) : undefined;
  // With TASK_STORE_URL, assertion ids are kept in the same Redis: one use across every replica.
  const replay = store instanceof RedisOwnerStore ? sharedReplay(store, config, logger) : undefined;
  let identity: Awaited<ReturnType<typeof setupIdentity>>;
  let cardSigning: CardSigning | undefined;
  try {
    identity = await setupIdentity(
      config,
      () => identities.observed('client'),
      logger,
      (outcome) => identityOutcomes.inc(outcome),
      replay,
    );
    cardSigning = await CardSigning.open({ ...config.cardSigning, require: config.cardSignatures === 'require', refreshMs: config.identity.refreshMs, logger });
  } catch (err) {
    await store?.close();
    throw err;
  }
  const streams = new Set<() => void>();
  const draining = { now: false };
  const bodyBudget = new BodyBudget(config.maxInflightBodyBytes, config.perCaller.inflightBodyBytes, () => metrics.callerLimited.inc({ resource: 'bytes' }));
  metrics.watchBodyBudget(() => bodyBudget.inFlight);
  const callerLimits = await createCallerLimits(config, logger, metrics);
  // Calls waiting for a connection: in the callers' round-robin (callers.ts) and in the guardian client's pools.
  const callsQueued = (): number => (callerLimits?.guardianWaiting ?? 0) + (guardian.queued?.().call ?? 0);
  metrics.watchGuardianQueue(() => ({ call: callsQueued(), stream: streamLine.waiting + (guardian.queued?.().stream ?? 0) }));
  const cardJudge = config.inspectCards ? new CardJudge({ config, guardian, identities, logger, metrics, callerLimits }) : undefined;
  const fair = createFairTurns(config, guardian);
  const ownership = store === undefined ? undefined : taskOwnership(store, config, logger, metrics);
  const push =
    config.push.relay && config.role !== 'client'
      ? await startPushRelay(
          {
            config,
            logger,
            metrics,
            tracer,
            owners: store,
            decisionLog: opts.decisionLog,
            resolve: opts.pushResolve,
            retryBaseMs: opts.pushRetryBaseMs,
            runHooks: createHookRunner({ config, guardian, identities, logger, metrics, callerLimits, fair }),
          },
          store,
        )
      : undefined;
  // What both listeners share: the gRPC one (when configured) judges with the same hooks, identity and ownership.
  const shared = {
    config,
    logger,
    metrics,
    identities,
    ...identity,
    ownership,
    tracer,
    decisionLog: opts.decisionLog,
    upstreamCard,
    bodyBudget,
    streamLine,
    callerLimits,
    push,
    fair,
    connections: createConnections(config, logger, metrics),
  };
  let grpc: GrpcListener | undefined;
  // The HTTP listener's server, once it listens: gRPC card answers name its port.
  let httpServer: http.Server | undefined;
  let effective = config;
  if (config.grpc !== undefined) {
    // Required here only: @grpc/grpc-js and the SDK's generated code load when gRPC is configured.
    const { startGrpcListener } = require('./proxy/grpc/server') as typeof import('./proxy/grpc/server');
    const runHooks = createHookRunner({ config, guardian, identities, logger, metrics, callerLimits, fair });
    const cardRewrite = (authority: string | undefined) => grpcCardRewrite(effective, authority, () => httpServer, cardSigning, cardJudge);
    grpc = await startGrpcListener({ ...shared, runHooks, cardRewrite }, logger);
    // Cards served over HTTP name the port the gRPC listener got (GRPC_PORT=0 picks one).
    effective = { ...config, grpc: { ...config.grpc, port: grpc.port } };
  }
  const handler = createProxyHandler({ ...shared, config: effective, guardian, upstream, streams, draining: () => draining.now, cardSigning, cardJudge });

  // Learn identities while the listener opens: the first hooks wait for them (at most 3 s), the listener does not.
  identities.warmUp(3000);
  const listener = await startHttpListener({ ...shared, handler, identify: identity.identify }).catch(async (err: unknown) => {
    // The gRPC listener is up already: a port the HTTP listener cannot bind must not leave it running.
    await grpc?.close();
    await push?.close();
    throw err;
  });
  httpServer = listener.server;
  return proxyInstance({
    listener,
    grpc,
    push,
    metrics,
    guardian,
    upstreamCard,
    tracer,
    upstream,
    upstreamTls,
    cardDispatcher,
    store,
    callerLimits,
    streams,
    draining,
  });
}

/** The agent cards the proxy reads (the upstream agent's, and under ROLE=client the observed agent's) and the identities named by them. */
function agentCards(config: Config, logger: Logger) {
  const upstreamTls = outboundTls(config.tls.upstream, 'UPSTREAM', config.identity.refreshMs, logger);
  // The card fetch uses the same TLS settings as the calls it describes.
  const cardDispatcher = upstreamTls.connect === undefined ? undefined : createAgent({ connect: upstreamTls.connect });
  // An agent whose card is only at a CARD_PATHS path (VoltAgent's /.well-known/{agentId}/agent-card.json) is read there.
  const upstreamCard = new CardCache({
    base: config.upstreamUrl,
    ttlMs: config.cardTtlMs,
    logger,
    what: 'upstream',
    paths: config.cardPaths.map((p) => encodePath(p)),
    ...(cardDispatcher === undefined ? {} : { dispatcher: cardDispatcher }),
  });
  const observedCard =
    config.observedAgentCardUrl === undefined || config.role === 'server'
      ? undefined
      : new CardCache({ base: config.observedAgentCardUrl, ttlMs: config.cardTtlMs, logger, what: 'observed client' });
  const identities = new Identities({ overrides: config.observedAgent, role: config.role, upstreamCard, upstreamUrl: config.upstreamUrl, observedCard });
  return { upstreamTls, cardDispatcher, upstreamCard, identities };
}

function taskOwnership(store: NonNullable<Awaited<ReturnType<typeof createOwnerStore>>>, config: Config, logger: Logger, metrics: Metrics): TaskOwnership {
  const { maxPerCaller, ttlSeconds } = config.ownership;
  return new TaskOwnership({ store, failMode: config.failMode, logger, metrics, maxPerCaller, ttlSeconds });
}

/** With TASK_STORE_URL, assertion ids are kept in the same Redis: one use across every replica. */
function sharedReplay(store: RedisOwnerStore, config: Config, logger: Logger): SharedReplayGuard {
  return new SharedReplayGuard(
    { add: (kid, jti, exp, share) => store.recordAssertion(kid, jti, exp, share), seen: (kid, jti) => store.assertionSeen(kid, jti) },
    new ReplayCache(),
    config.failMode,
    logger,
  );
}

/** What a started proxy holds, to drain and close in order. */
interface Running {
  readonly listener: Awaited<ReturnType<typeof startHttpListener>>;
  readonly grpc: GrpcListener | undefined;
  readonly push: Awaited<ReturnType<typeof startPushRelay>> | undefined;
  readonly metrics: Metrics;
  readonly guardian: Guardian;
  readonly upstreamCard: CardCache;
  readonly tracer: Tracer;
  readonly upstream: ReturnType<typeof createUpstream>;
  readonly upstreamTls: ReturnType<typeof outboundTls>;
  readonly cardDispatcher: ReturnType<typeof createAgent> | undefined;
  readonly store: Awaited<ReturnType<typeof createOwnerStore>> | undefined;
  readonly callerLimits: Awaited<ReturnType<typeof createCallerLimits>>;
  readonly streams: Set<() => void>;
  readonly draining: { now: boolean };
}

function proxyInstance(r: Running): ProxyInstance {
  const { listener, grpc, push, guardian, tracer, streams, draining } = r;
  return {
    server: listener.server,
    grpcAddress: grpc?.address,
    pushRelayUrl: push?.url,
    probeGrpcUpstream: grpc?.probeUpstream,
    url: listener.url,
    metrics: r.metrics,
    guardian,
    upstreamCard: r.upstreamCard,
    tracer,
    draining: () => draining.now,
    drain: async (timeoutMs: number, acceptForMs = 0) => {
      draining.now = true;
      if (acceptForMs > 0) await new Promise((res) => setTimeout(res, acceptForMs));
      const grpcClosed = grpc?.close(timeoutMs);
      await listener.drain(timeoutMs, () => {
        for (const end of [...streams]) end();
      });
      await grpcClosed;
    },
    close: async () => {
      await listener.close();
      await grpc?.close();
      await push?.close();
      guardian.close();
      await r.upstream.close();
      r.upstreamTls.close();
      await r.cardDispatcher?.close();
      await r.store?.close();
      await r.callerLimits?.close();
      await tracer.shutdown();
    },
  };
}

/**
 * Card rewrite for gRPC GetExtendedAgentCard answers: HTTP URLs name PUBLIC_URL, else the host the
 * caller used with the HTTP listener's port; gRPC interfaces name the gRPC address.
 */
function grpcCardRewrite(
  config: Config,
  authority: string | undefined,
  server: () => http.Server | undefined,
  signing: CardSigning | undefined,
  judge: CardJudge | undefined,
): CardServing {
  let host = '127.0.0.1';
  try {
    if (authority !== undefined) host = new URL(`http://${authority}`).hostname;
  } catch {
    // keep the loopback default
  }
  const tls = config.tls.listener !== undefined;
  const port = (server()?.address() as AddressInfo | null | undefined)?.port ?? config.port;
  const publicBase = config.publicUrl ?? new URL(`${tls ? 'https' : 'http'}://${host}:${port}/`);
  return {
    publicBase,
    upstreamBase: config.upstreamUrl,
    signatures: config.cardSignatures,
    signing,
    judge,
    grpcAddress: grpcPublicAddress(config.grpc, config.publicUrl?.hostname ?? host),
  };
}
