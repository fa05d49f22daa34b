/**
 * `npm run guardian`: the reference guardian as a standalone AOS service.
 *   GUARDIAN_PORT (7070), GUARDIAN_HOST (0.0.0.0), POLICY_FILE (config/policy.json, against the
 *   working directory), LOG_LEVEL (info).
 * A bad policy or variable prints one line per problem on stderr and exits with code 2.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import pino from 'pino';
import { loadPolicy, PolicyError, type Policy } from './policy';
import { createGuardianServer } from './server';

export interface GuardianConfig {
  readonly port: number;
  readonly host: string;
  readonly policyFile: string;
  readonly logLevel: string;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
export const EXIT_CONFIG_ERROR = 2;

/** Read the guardian's variables; `problems` lists one line per bad variable. */
export function readGuardianConfig(
  env: NodeJS.ProcessEnv,
  cwd: string = process.cwd(),
): { config: GuardianConfig; problems: string[] } {
  const problems: string[] = [];
  const portText = env['GUARDIAN_PORT'] ?? '7070';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) problems.push(`GUARDIAN_PORT: expected an integer 0-65535, got "${portText}"`);
  const logLevel = (env['LOG_LEVEL'] ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL: expected one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const host = env['GUARDIAN_HOST'] ?? '0.0.0.0';
  if (host.trim() === '') problems.push('GUARDIAN_HOST: must not be empty');
  const policyFile = resolve(cwd, env['POLICY_FILE'] ?? 'config/policy.json');
  return { config: { port, host, policyFile, logLevel }, problems };
}

/** Start the guardian; resolves once it listens. Exits the process on bad configuration. */
export async function main(env: NodeJS.ProcessEnv = process.env): Promise<Server> {
  const { config, problems } = readGuardianConfig(env);
  if (problems.length > 0) failConfig(problems);

  const policy = loadPolicyOrExit(config.policyFile);
  const logger = pino({ level: config.logLevel, base: { service: 'a2a-guard-guardian' } });
  const server = createGuardianServer({ policy, logger });
  await listen(server, config.port, config.host);
  const address = server.address() as AddressInfo;
  logger.info({ host: address.address, port: address.port, policyFile: config.policyFile }, 'guardian listening');
  stopOnSignals(server, logger);
  return server;
}

function loadPolicyOrExit(policyFile: string): Policy {
  try {
    return loadPolicy(policyFile);
  } catch (err) {
    if (err instanceof PolicyError) failConfig(err.problems.map((p) => `${policyFile}: ${p}`));
    throw err;
  }
}

function failConfig(problems: readonly string[]): never {
  for (const problem of problems) process.stderr.write(`guardian: ${problem}\n`);
  process.exit(EXIT_CONFIG_ERROR);
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolvePromise();
    });
  });
}

function stopOnSignals(server: Server, logger: pino.Logger): void {
  const stop = (signal: NodeJS.Signals): void => {
    logger.info({ signal }, 'guardian stopping');
    // Idle keep-alive sockets are closed by close(); busy ones get a short grace period.
    const grace = setTimeout(() => server.closeAllConnections(), 2_000).unref();
    server.close(() => {
      clearTimeout(grace);
      process.exit(0);
    });
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`guardian: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
