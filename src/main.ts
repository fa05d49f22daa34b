/**
 * `npm start`: configuration from the environment, the proxy, the admin server, signals.
 * A bad configuration prints one line per problem and exits 2.
 */
import type { AddressInfo } from 'node:net';
import { loadConfig } from './config';
import { createLogger, stdoutDestination } from './log';
import { startProxy, createGuardian } from './server';
import { createAdminServer } from './admin/server';
import type { Guardian } from './aos/guardian';
import { embeddedGuardian } from './guardian/embedded';
import { StartupError } from './files';

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const loaded = loadConfig(env);
  if (!loaded.ok) {
    for (const p of loaded.problems) process.stderr.write(`a2a-guard: configuration error: ${p}\n`);
    process.exit(2);
  }
  const config = loaded.config;
  const logDestination = stdoutDestination();
  const logger = createLogger(config.logLevel, logDestination);

  let guardian: Guardian;
  try {
    guardian = config.guardianUrl === undefined ? embeddedGuardian(config.policyFile) : createGuardian(config, logger);
  } catch (err) {
    process.stderr.write(`a2a-guard: configuration error: ${(err as Error).message}\n`);
    process.exit(2);
  }
  if (config.guardianUrl === undefined) logger.warn({ policyFile: config.policyFile }, 'GUARDIAN_URL is unset: the embedded reference guardian decides with POLICY_FILE (a demo policy unless you wrote one)');
  if (config.passthroughPaths.some((p) => p.length === 0)) logger.warn('PASSTHROUGH_PATHS contains "/": every request that is not A2A is forwarded to the agent unjudged');
  if (config.nonA2A === 'forward') logger.warn('NON_A2A=forward: requests that are not A2A are forwarded to the agent unjudged; list the routes your agent serves in PASSTHROUGH_PATHS instead');
  if (config.cardSignatures === 'keep') logger.warn('CARD_SIGNATURES=keep: rewritten agent cards keep signatures that no longer verify (the URLs changed)');
  else logger.info('CARD_SIGNATURES=strip: agent card signatures are removed, because rewriting the card URLs invalidates them');
  if (config.failMode === 'open') logger.warn('FAIL_MODE=open: calls are forwarded unchecked when the guardian gives no valid answer');
  if (config.shadowMode) logger.warn('SHADOW_MODE=true: guardian decisions are logged and counted, never enforced');

  let proxy: Awaited<ReturnType<typeof startProxy>>;
  try {
    proxy = await startProxy({ config, logger, guardian, processMetrics: true });
  } catch (err) {
    // Unreadable key, certificate or token files are configuration problems, not crashes.
    if (!(err instanceof StartupError)) throw err;
    process.stderr.write(`a2a-guard: configuration error: ${err.message}\n`);
    logDestination.flushSync();
    process.exit(2);
  }
  proxy.metrics.countLogDrops(() => logDestination.dropped);
  logger.info({ url: proxy.url, upstream: config.upstreamUrl.origin, guardian: guardian.describe, role: config.role, failMode: config.failMode }, 'a2a-guard listening');

  void guardian.ping().then((ok) => (ok ? logger.info('guardian answered ping') : logger.warn('guardian did not answer ping')));
  const pinger = setInterval(() => {
    void guardian.ping().then((ok) => {
      if (!ok) logger.warn('guardian did not answer ping');
    });
  }, 30_000);
  pinger.unref();

  const admin = createAdminServer(proxy.metrics, {
    guardianReady: () => guardian.ping(2000),
    upstreamReady: () => proxy.upstreamCard.probe(),
    accepting: () => !proxy.draining(),
  });
  admin.listen(config.adminPort, config.adminHost, () => {
    logger.info({ port: (admin.address() as AddressInfo).port }, 'admin server listening (/healthz, /readyz, /metrics)');
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, drainMs: config.drainTimeoutMs }, 'draining: new connections refused, in-flight calls finish');
    void proxy.drain(config.drainTimeoutMs).then(() => {
      admin.close();
      guardian.close();
      logger.info('stopped');
      logDestination.flushSync();
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`a2a-guard: fatal: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
