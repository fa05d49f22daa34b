/** Start a2a-guard in-process in front of a test agent, with a test guardian. */
import { configFrom, type Config } from '../../src/config';
import { createLogger } from '../../src/log';
import { startProxy, type ProxyInstance } from '../../src/server';
import type { Guardian } from '../../src/aos/guardian';

export async function startTestProxy(env: Record<string, string | undefined>, guardian?: Guardian): Promise<ProxyInstance & { config: Config }> {
  const config = configFrom({ PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...env });
  const proxy = await startProxy({ config, logger: createLogger(config.logLevel), ...(guardian === undefined ? {} : { guardian }) });
  return { ...proxy, config };
}
