#!/usr/bin/env node
/**
 * `a2a-guard` / `npm start`: configuration from the environment, the proxy, the admin server, signals.
 *   --help, --version, --check, --verify-log FILE: see src/cli/cli.ts.
 * A bad configuration (or a port that cannot be bound) prints one line per problem and exits 2.
 * SIGTERM: not ready at once, keep accepting for SHUTDOWN_DELAY_MS, then drain by the deadline.
 * SIGINT: the same without the delay (a second SIGINT/SIGTERM exits at once).
 * SIGHUP (and a change of POLICY_FILE): reload the embedded guardian's policy.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { loadConfig, misspelledVariables, variableNames, type Config } from './config/config';
import { readConfigFile, type ConfigFile } from './config/file';
import { createLogger, stdoutDestination, type Logger, type LogSink } from './runtime/log';
import { startProxy, createGuardian, type ProxyInstance } from './server';
import { createAdminServer } from './admin/server';
import { Health } from './admin/health';
import type { Guardian } from './aos/guardian';
import type { EmbeddedGuardian } from './guardian/embedded';
import type { PolicyError } from './guardian/policy';
import type { ReloadResult } from './guardian/reload';
import { effectiveConfiguration, parseArgs, proxyHelp } from './cli/cli';
import { VERSION } from './runtime/version';
import { DecisionLog, verifyDecisionLog, type ChainLink } from './observe/decision-log';
import type { Metrics } from './admin/metrics';
import { StartupError } from './credentials/files';
import { lateParserTierUp } from './net/undici-pool';
import { noPretenuring } from './runtime/heap';
import { descriptorsLine, withinDescriptors } from './proxy/connections';

export const EXIT_CONFIG = 2;

/** How long a SIGTERM keeps accepting, and the drain deadline after it (pure; see README "Signals"). */
export function shutdownPlan(
  config: Pick<Config, 'shutdownDelayMs' | 'drainTimeoutMs' | 'terminationGraceMs'>,
  signal: string,
): { delayMs: number; drainMs: number } {
  const delay = signal === 'SIGTERM' ? config.shutdownDelayMs : 0;
  if (config.terminationGraceMs === undefined) return { delayMs: delay, drainMs: config.drainTimeoutMs };
  // Leave a second for flushing logs and spans before the kubelet's SIGKILL.
  const budget = Math.max(0, config.terminationGraceMs - 1000);
  const delayMs = Math.min(delay, budget);
  return { delayMs, drainMs: budget - delayMs };
}

/** Listen errors an operator can fix (a port in use, a privileged port, an address not on this host). */
function listenProblem(err: unknown, where: string): string | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  const why: Record<string, string> = {
    EADDRINUSE: 'address already in use',
    EACCES: 'permission denied',
    EADDRNOTAVAIL: 'address not available on this host',
  };
  return code !== undefined && why[code] !== undefined ? `cannot listen on ${where}: ${why[code]} (${code})` : undefined;
}

function fail(lines: readonly string[], sink?: LogSink): never {
  sink?.flushSync();
  for (const l of lines) process.stderr.write(`a2a-guard: ${l}\n`);
  process.exit(EXIT_CONFIG);
}

export async function main(env: NodeJS.ProcessEnv = process.env, argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const cmd = parseArgs(argv);
  switch (cmd.kind) {
    case 'error':
      return fail([cmd.message]);
    case 'help':
      process.stdout.write(proxyHelp(VERSION));
      return process.exit(0);
    case 'version':
      process.stdout.write(`a2a-guard ${VERSION}\n`);
      return process.exit(0);
    case 'verifyLog':
      return verifyLog(cmd.file, cmd.head);
    default:
      break;
  }

  let file: ConfigFile | undefined;
  if (cmd.config !== undefined) {
    const read = readConfigFile(cmd.config, variableNames(), (names) => misspelledVariables(names, variableNames()));
    if (!read.ok) fail(read.problems.map((p) => `configuration error: ${p}`));
    file = read.config;
  }
  const loaded = loadConfig(env, file);
  if (!loaded.ok) fail(loaded.problems.map((p) => `configuration error: ${p}`));
  let config = loaded.config;

  if (cmd.kind === 'check') return check(config, env, file, cmd.probe === true);

  lateParserTierUp();
  noPretenuring();
  const logDestination = stdoutDestination();
  const logger = createLogger(config.logLevel, logDestination);
  // Every pool of connections within the file descriptors, the guardian's too (made below).
  config = withinDescriptors(config, logger);
  // Set once the proxy (and its metrics) exist; reloads before that cannot happen.
  let metrics: Metrics | undefined;
  const onReload = (r: ReloadResult, reason: string) => reportReload(logger, config.policyFile, r, reason, metrics);

  let guardian: Guardian;
  let embedded: EmbeddedGuardian | undefined;
  try {
    if (config.guardianUrl === undefined)
      guardian = embedded = loadEmbeddedGuardian(config.policyFile, { logger, events: { onReload }, timeoutMs: config.guardianTimeoutMs });
    else guardian = createGuardian(config, logger);
  } catch (err) {
    fail(
      isPolicyError(err) ? err.problems.map((p) => `configuration error: ${config.policyFile}: ${p}`) : [`configuration error: ${(err as Error).message}`],
      logDestination,
    );
  }
  warnAboutSettings(config, logger, embedded);

  const decisionLog =
    config.decisionLogFile === undefined ? undefined : new DecisionLog(config.decisionLogFile, readLogKey(config.decisionLogKeyFile, logDestination));
  const proxy = await startProxyOrFail(config, logger, guardian, decisionLog, logDestination);
  metrics = proxy.metrics;
  proxy.metrics.countLogDrops(() => logDestination.dropped);
  logger.info(
    {
      url: proxy.url,
      upstream: config.upstreamUrl.origin,
      guardian: guardian.describe,
      role: config.role,
      failMode: config.failMode,
      tracing: config.otel === undefined ? 'off' : config.otel.tracesUrl,
      version: VERSION,
      pid: process.pid,
    },
    'a2a-guard listening',
  );

  const health = watchHealth(config, logger, guardian, proxy);
  void guardian.ping().then((ok) => health.noteGuardian(ok));
  const pinger = setInterval(() => {
    void health.check();
  }, 30_000);
  pinger.unref();

  const admin = createAdminServer(proxy.metrics, health);
  admin.once('error', (err) => {
    fail([listenProblem(err, `${config.adminHost}:${config.adminPort} (ADMIN_PORT)`) ?? `admin server: ${(err as Error).message}`], logDestination);
  });
  admin.listen(config.adminPort, config.adminHost, () => {
    logger.info({ port: (admin.address() as AddressInfo).port }, 'admin server listening (/healthz, /readyz, /metrics)');
  });

  const shutdown = shutdownOnce(config, logger, logDestination, async (plan) => {
    await proxy.drain(plan.drainMs, plan.delayMs);
    clearInterval(pinger);
    admin.close();
    guardian.close();
    await Promise.all([proxy.tracer.shutdown(2000), decisionLog?.close()]);
  });
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGHUP', () => {
    if (embedded === undefined) logger.info('SIGHUP: nothing to reload here (GUARDIAN_URL is set: the guardian reloads its own policy)');
    else embedded.policy.reload('SIGHUP');
  });
}

/** Settings that weaken or change what is judged, said once at start. */
function warnAboutSettings(config: Config, logger: Logger, embedded: EmbeddedGuardian | undefined): void {
  if (embedded !== undefined) {
    logger.warn(
      { policyFile: config.policyFile, sha256: embedded.policy.sha256, watch: config.policyWatch },
      'GUARDIAN_URL is unset: the embedded reference guardian decides with POLICY_FILE (a demo policy unless you wrote one)',
    );
    if (config.policyWatch) embedded.policy.watch();
  }
  if (config.passthroughPaths.some((p) => p.length === 0))
    logger.warn('PASSTHROUGH_PATHS contains "/": every request that is not A2A is forwarded to the agent unjudged');
  if (config.nonA2A === 'forward')
    logger.warn(
      'NON_A2A=forward: requests that are not A2A are forwarded to the agent unjudged; list the routes your agent serves in PASSTHROUGH_PATHS instead',
    );
  if (config.cardSigning.keyFile !== undefined) {
    if (config.cardSignatures === 'keep')
      logger.warn("CARD_SIGNATURES=keep has no effect with CARD_SIGNING_KEY_FILE: served cards carry the proxy's signature only");
  } else if (config.cardSignatures === 'keep')
    logger.warn('CARD_SIGNATURES=keep: rewritten agent cards keep signatures that no longer verify (the URLs changed)');
  else
    logger.info(
      `CARD_SIGNATURES=${config.cardSignatures}: agent card signatures are removed, because rewriting the card URLs invalidates them (CARD_SIGNING_KEY_FILE signs them anew)`,
    );
  if (config.failMode === 'open') logger.warn('FAIL_MODE=open: calls are forwarded unchecked when the guardian gives no valid answer');
  if (config.shadowMode) logger.warn('SHADOW_MODE=true: guardian decisions are logged and counted, never enforced');
  if (config.grpc !== undefined && config.grpc.upstreamUrl === undefined && config.role !== 'server') {
    logger.warn(
      { upstream: config.upstreamUrl.origin },
      'GRPC_PORT without GRPC_UPSTREAM_URL: gRPC calls go only to a GRPC interface the remote card names at UPSTREAM_URL itself (set GRPC_UPSTREAM_URL when the remote serves gRPC on another port)',
    );
  }
}

/** The proxy's listeners; unreadable credential files and ports that cannot be bound exit 2 naming the variable. */
async function startProxyOrFail(
  config: Config,
  logger: Logger,
  guardian: Guardian,
  decisionLog: DecisionLog | undefined,
  logDestination: LogSink,
): Promise<ProxyInstance> {
  try {
    return await startProxy({
      config,
      logger,
      guardian,
      processMetrics: true,
      ...(decisionLog === undefined ? {} : { decisionLog: (r) => decisionLog.append(r.fields) }),
    });
  } catch (err) {
    // Unreadable key, certificate or token files are configuration problems, not crashes.
    if (err instanceof StartupError) fail([`configuration error: ${err.message}`], logDestination);
    // Which listener: the error names its address and port (the push relay and gRPC listen on their own).
    const e = err as { address?: string; port?: number };
    const variable = e.port === config.push.port ? 'PUSH_RELAY_PORT' : e.port === config.grpc?.port ? 'GRPC_PORT' : 'PORT';
    const problem = listenProblem(err, e.port === undefined ? `${config.host}:${config.port}` : `${e.address ?? config.host}:${e.port} (${variable})`);
    if (problem !== undefined) fail([problem], logDestination);
    throw err;
  }
}

/** Readiness from the guardian's ping and the agent's card (and gRPC endpoint); changes are logged. */
function watchHealth(config: Config, logger: Logger, guardian: Guardian, proxy: ProxyInstance): Health {
  return new Health(
    {
      pingGuardian: (ms) => guardian.ping(ms),
      probeUpstream: () => proxy.upstreamCard.probe(),
      probeGrpcUpstream: proxy.probeGrpcUpstream,
      listening: () => proxy.server.listening,
      draining: () => proxy.draining(),
      breaker: () => guardian.breakerState?.() ?? 'closed',
    },
    { requires: config.readinessRequires, failMode: config.failMode },
    proxy.metrics,
    ({ what, up, parts }) => {
      if (what === 'guardian') {
        if (up) logger.info('guardian answered ping');
        else logger.warn({ failMode: config.failMode }, 'guardian did not answer ping');
      } else if (parts !== undefined) {
        // GRPC_PORT: the agent is its card and its gRPC endpoint.
        if (up) logger.info('upstream agent reachable (card and gRPC endpoint)');
        else logger.warn(parts, 'upstream agent unreachable (card or gRPC endpoint)');
      } else if (up) logger.info('upstream agent card reachable');
      else logger.warn('upstream agent card unreachable');
    },
  );
}

/** The signal handler: the first signal drains by the plan and exits 0; a second one exits 1 at once. */
function shutdownOnce(
  config: Config,
  logger: Logger,
  logDestination: LogSink,
  drain: (plan: { delayMs: number; drainMs: number }) => Promise<void>,
): (signal: string) => void {
  let stopping = false;
  return (signal) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal while draining: exiting now');
      logDestination.flushSync();
      process.exit(1);
    }
    stopping = true;
    const plan = shutdownPlan(config, signal);
    logger.info(
      { signal, acceptMs: plan.delayMs, drainMs: plan.drainMs },
      plan.delayMs > 0
        ? 'shutting down: not ready; still accepting until the delay ends, then draining'
        : 'draining: new connections refused, in-flight calls finish',
    );
    void drain(plan).then(() => {
      logger.info('stopped');
      logDestination.flushSync();
      process.exit(0);
    });
  };
}

/** The reference guardian's engine is loaded only when it is used (GUARDIAN_URL unset). */
function loadEmbeddedGuardian(...args: Parameters<typeof import('./guardian/embedded').embeddedGuardian>): EmbeddedGuardian {
  const { embeddedGuardian }: typeof import('./guardian/embedded') = require('./guardian/embedded');
  return embeddedGuardian(...args);
}

/** PolicyError without loading the policy module for a proxy that never uses it. */
function isPolicyError(err: unknown): err is PolicyError {
  return err instanceof Error && err.name === 'PolicyError' && Array.isArray((err as Partial<PolicyError>).problems);
}

function reportReload(logger: Logger, file: string, r: ReloadResult, reason: string, metrics: Metrics | undefined): void {
  metrics?.policyReloads.inc({ result: r.ok ? 'ok' : 'failed' });
  if (r.ok) {
    logger.info({ policyFile: file, reason, sha256: r.sha256, changed: r.changed }, 'policy reloaded');
    return;
  }
  for (const problem of r.problems) logger.error({ policyFile: file, reason, problem }, 'policy reload failed; the previous policy stays in force');
}

/**
 * --check: the configuration is valid (and the policy, when the embedded guardian is used); exit 0.
 * --probe: then the guardian, the agent's card and the task store are tried; exit 1 when one does not answer.
 */
async function check(config: Config, env: NodeJS.ProcessEnv, file: ConfigFile | undefined, probe: boolean): Promise<never> {
  if (config.guardianUrl === undefined) {
    try {
      loadEmbeddedGuardian(config.policyFile).close();
    } catch (err) {
      fail(
        isPolicyError(err) ? err.problems.map((p) => `configuration error: ${config.policyFile}: ${p}`) : [`configuration error: ${(err as Error).message}`],
      );
    }
  }
  const out = [
    `# a2a-guard ${VERSION}: configuration is valid`,
    `# guardian: ${config.guardianUrl === undefined ? `embedded, policy ${config.policyFile} (valid)` : config.guardianUrl.origin}`,
    `# tracing: ${config.otel === undefined ? 'off' : `on, ${config.otel.protocol} to ${config.otel.tracesUrl}`}`,
    descriptorsLine(config),
    ...(file === undefined ? [] : [`# config file: ${file.file} (variables set in the environment win)`]),
    ...effectiveConfiguration(env, file),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  if (!probe) return process.exit(0);
  const { probeDependencies }: typeof import('./cli/probe') = require('./cli/probe');
  const results = await probeDependencies(config);
  process.stdout.write(`${results.map((r) => `# probe ${r.what}: ${r.ok ? 'ok' : 'FAILED'}: ${r.detail}`).join('\n')}\n`);
  return process.exit(results.every((r) => r.ok) ? 0 : 1);
}

/** The decision log's HMAC key: the file's bytes, at least 32 (a short secret could be guessed offline). */
function readLogKey(file: string | undefined, dest?: Parameters<typeof fail>[1]): Buffer | undefined {
  if (file === undefined) return undefined;
  let key: Buffer;
  try {
    key = fs.readFileSync(file);
  } catch (err) {
    return fail([`configuration error: DECISION_LOG_KEY_FILE: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`], dest);
  }
  if (key.length < 32) return fail([`configuration error: DECISION_LOG_KEY_FILE: ${file} holds ${key.length} bytes; at least 32 are needed`], dest);
  return key;
}

/** --verify-log FILE [--head SEQ:HASH]: exit 0 when the chain is intact, 1 naming the first broken record. */
function verifyLog(file: string, head: ChainLink | undefined): never {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    return fail([`cannot read ${file}: ${(err as Error).message}`]);
  }
  // The key comes from the same variable the proxy reads (either spelling); nothing else is needed from the configuration.
  const keyFile = process.env.A2A_GUARD_DECISION_LOG_KEY_FILE ?? process.env.DECISION_LOG_KEY_FILE;
  const key = readLogKey(keyFile === '' ? undefined : keyFile);
  const r = verifyDecisionLog(text, { ...(key === undefined ? {} : { key }), ...(head === undefined ? {} : { head }) });
  if (r.ok) {
    process.stdout.write(`${file}: intact, ${r.records} records\n`);
    return process.exit(0);
  }
  process.stdout.write(
    `${file}: broken at line ${r.line}${r.seq === undefined ? '' : ` (seq ${r.seq})`}: ${r.reason}; ${r.records} records before it are intact\n`,
  );
  return process.exit(1);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`a2a-guard: fatal: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
