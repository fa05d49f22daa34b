/**
 * Bench wrapper around the real product: `startProxy` with `configFrom(process.env)`, the product's
 * pino logger (LOG_LEVEL, default info) and log destination writing to stdout, which run.ts points at /dev/null (the
 * parent spawns this child with stdout 'ignore'), the process metrics `npm start` enables, the V8
 * settings main.ts makes (late tier-up of undici's HTTP parser, no pretenuring), and the bench IPC so run.ts can read this
 * process's own CPU time and RSS. The admin server (idle during the bench) and the 30 s guardian
 * ping of main.ts are left out.
 */
import { configFrom } from '../src/config/config';
import { createLogger, stdoutDestination } from '../src/runtime/log';
import { startProxy } from '../src/server';
import { lateParserTierUp } from '../src/net/undici-pool';
import { noPretenuring } from '../src/runtime/heap';
import { fail, serveIpc } from './ipc';

async function main(): Promise<void> {
  const config = configFrom(process.env);
  // As src/main.ts does.
  lateParserTierUp();
  noPretenuring();
  // The same log destination as `npm start` (src/main.ts): buffered, asynchronous stdout.
  const logger = createLogger(config.logLevel, stdoutDestination());
  const proxy = await startProxy({ config, logger, processMetrics: true });
  serveIpc(proxy.url);
}

main().catch((e: unknown) => fail('proxy-child', e));
