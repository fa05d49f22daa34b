/**
 * `--check --probe`: whether the dependencies a valid configuration names answer, one line each,
 * with the same clients (TLS files, token, timeouts) the proxy would use: the guardian (AOS ping),
 * the agent's card, the task store (Redis PING). Nothing is sent to the agent but the card request.
 */
import type { Config } from '../config/config';
import { CardCache } from '../a2a/card';
import { encodePath } from '../a2a/target';
import { createLogger } from '../runtime/log';
import { createGuardian } from '../server';
import { outboundTls } from '../credentials/tls';
import { createAgent } from '../net/undici-pool';
import { redactUrl, redisClient } from '../ownership/redis';

export interface ProbeResult {
  readonly what: 'guardian' | 'agent card' | 'task store';
  readonly ok: boolean;
  readonly detail: string;
}

const PROBE_MS = 5000;

export async function probeDependencies(config: Config): Promise<ProbeResult[]> {
  const logger = createLogger('silent');
  return Promise.all([probeGuardian(config, logger), probeCard(config, logger), probeStore(config)]);
}

async function probeGuardian(config: Config, logger: ReturnType<typeof createLogger>): Promise<ProbeResult> {
  if (config.guardianUrl === undefined) return { what: 'guardian', ok: true, detail: 'embedded (GUARDIAN_URL unset): nothing to reach' };
  const ms = Math.min(config.guardianTimeoutMs, PROBE_MS);
  const guardian = createGuardian(config, logger);
  try {
    const ok = await guardian.ping(ms);
    return {
      what: 'guardian',
      ok,
      detail: ok
        ? `${config.guardianUrl.href}: answered AOS ping`
        : `${config.guardianUrl.href}: no valid AOS ping answer within ${ms} ms (not reachable, not a guardian, a refused token or TLS settings)`,
    };
  } finally {
    guardian.close();
  }
}

async function probeCard(config: Config, logger: ReturnType<typeof createLogger>): Promise<ProbeResult> {
  const tls = outboundTls(config.tls.upstream, 'UPSTREAM', config.identity.refreshMs, logger);
  try {
    const card = new CardCache({
      base: config.upstreamUrl,
      ttlMs: 0,
      logger,
      what: 'upstream',
      timeoutMs: PROBE_MS,
      paths: config.cardPaths.map((p) => encodePath(p)),
      ...(tls.connect === undefined ? {} : { dispatcher: createAgent({ connect: tls.connect }) }),
    });
    const ok = await card.probe();
    return {
      what: 'agent card',
      ok,
      detail: ok ? `${config.upstreamUrl.origin}: card served` : `${config.upstreamUrl.origin}: no agent card within ${PROBE_MS} ms`,
    };
  } finally {
    tls.close();
  }
}

async function probeStore(config: Config): Promise<ProbeResult> {
  const url = config.ownership.storeUrl;
  if (url === undefined)
    return { what: 'task store', ok: true, detail: config.ownership.enabled ? 'in memory: nothing to reach' : 'not used (task ownership off)' };
  const client = redisClient(url, PROBE_MS);
  client.on('error', () => undefined);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no connection within ${PROBE_MS} ms`)), PROBE_MS);
      client.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    const pong = await client.ping();
    return { what: 'task store', ok: pong === 'PONG', detail: `${redactUrl(url)}: ${pong === 'PONG' ? 'answered PING' : `answered PING with ${pong}`}` };
  } catch (err) {
    return { what: 'task store', ok: false, detail: `${redactUrl(url)}: ${(err as Error).message}` };
  } finally {
    client.disconnect();
  }
}
