/** Start a2a-guard in-process in front of a test agent, with a test guardian. */
import { startAgent, type TestAgent } from './agent';
import { startGuardian, type TestGuardian } from './guardian';
import { configFrom, type Config } from '../../src/config/config';
import type { Logger } from 'pino';
import { createLogger } from '../../src/runtime/log';
import { startProxy, type ProxyInstance, type StartOptions } from '../../src/server';
import type { Guardian } from '../../src/aos/guardian';

/** Start options besides the configuration (a push resolver, say). */
export type TestProxyOptions = Partial<Pick<StartOptions, 'pushResolve' | 'pushRetryBaseMs'>>;

export async function startTestProxy(
  env: Record<string, string | undefined>,
  guardian?: Guardian,
  logger?: Logger,
  more: TestProxyOptions = {},
): Promise<ProxyInstance & { config: Config }> {
  const config = configFrom({ PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', PUSH_RELAY_PORT: '0', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...env });
  const proxy = await startProxy({ config, logger: logger ?? createLogger(config.logLevel), ...(guardian === undefined ? {} : { guardian }), ...more });
  return { ...proxy, config };
}

export type TestProxy = Awaited<ReturnType<typeof startTestProxy>>;

/** The agent, guardian and proxies of one test file, started once and reset before each test. */
export interface Stack {
  readonly agent: TestAgent;
  readonly guardian: TestGuardian;
  /** A proxy in front of the stack's agent, asking the stack's guardian (env may override both); closed after the file. */
  proxy(env?: Record<string, string | undefined>, more?: TestProxyOptions): Promise<TestProxy>;
}

/**
 * Register the shared hooks: start a real SDK agent and a scriptable guardian before the file, give
 * every test a fresh guardian script and empty records, and close everything after the file.
 */
export function useStack(agentOptions?: Parameters<typeof startAgent>[0]): Stack {
  let agent: TestAgent | undefined;
  let guardian: TestGuardian | undefined;
  const proxies: TestProxy[] = [];
  const must = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`useStack: ${what} is not started yet (use it inside a hook or test)`);
    return v;
  };
  beforeAll(async () => {
    agent = await startAgent(agentOptions);
    guardian = await startGuardian();
  });
  afterAll(async () => {
    for (const p of proxies.splice(0)) await p.close();
    await agent?.close();
    await guardian?.close();
  });
  beforeEach(() => {
    guardian?.reset();
    guardian?.clear();
    agent?.clear();
  });
  return {
    get agent() {
      return must(agent, 'the agent');
    },
    get guardian() {
      return must(guardian, 'the guardian');
    },
    async proxy(env = {}, more = {}) {
      const p = await startTestProxy(
        { UPSTREAM_URL: must(agent, 'the agent').origin, GUARDIAN_URL: must(guardian, 'the guardian').url, ...env },
        undefined,
        undefined,
        more,
      );
      proxies.push(p);
      return p;
    },
  };
}

/** A counter's value for one label value (0 when absent). */
export async function counted(proxy: TestProxy, metric: string, label: string): Promise<number> {
  const text = await proxy.metrics.registry.getSingleMetricAsString(metric);
  const m = new RegExp(`^${metric}\\{[^}]*="${label}"[^}]*\\} (\\d+)`, 'm').exec(text);
  return m === null ? 0 : Number(m[1]);
}
