/**
 * `npm run guardian`: the reference guardian as a standalone AOS service.
 *   GUARDIAN_PORT (7070), GUARDIAN_HOST (0.0.0.0), POLICY_FILE (config/policy.json, against the
 *   working directory), GUARDIAN_TOKEN (unset: no token required), LOG_LEVEL (info).
 * Each may also be given as A2A_GUARD_<NAME>, which wins (src/env.ts): a Kubernetes Service named
 * `guardian` injects GUARDIAN_PORT=tcp://... into every pod that has service links on.
 * A bad policy or variable prints one line per problem on stderr and exits with code 2.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import pino from 'pino';
import { lookupEnv, serviceLinkHint } from '../env';
import { loadPolicy, PolicyError, type Policy } from './policy';
import { serveGuardian } from '../aos/serve';
import { referenceGuardian } from './server';

export interface GuardianConfig {
  readonly port: number;
  readonly host: string;
  readonly policyFile: string;
  readonly logLevel: string;
  /** When set, every AOS request must carry `Authorization: Bearer <token>` (the proxies' GUARDIAN_TOKEN). */
  readonly token?: string | undefined;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
export const EXIT_CONFIG_ERROR = 2;

/** Read the guardian's variables; `problems` lists one line per bad variable. */
export function readGuardianConfig(
  env: NodeJS.ProcessEnv,
  cwd: string = process.cwd(),
): { config: GuardianConfig; problems: string[] } {
  const problems: string[] = [];
  const portVar = lookupEnv(env, 'GUARDIAN_PORT');
  const portText = portVar?.value ?? '7070';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) {
    problems.push(`${portVar?.from ?? 'GUARDIAN_PORT'}: expected an integer 0-65535, got "${portText}"${serviceLinkHint(portVar, 'GUARDIAN_PORT')}`);
  }
  const levelVar = lookupEnv(env, 'LOG_LEVEL');
  const logLevel = (levelVar?.value ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`${levelVar?.from ?? 'LOG_LEVEL'}: expected one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  // An empty value counts as unset everywhere else; a blank host is still a mistake worth naming.
  const hostVar = lookupEnv(env, 'GUARDIAN_HOST');
  const host = hostVar?.value ?? '0.0.0.0';
  if (host.trim() === '') problems.push(`${hostVar?.from ?? 'GUARDIAN_HOST'}: must not be empty`);
  const policyFile = resolve(cwd, lookupEnv(env, 'POLICY_FILE')?.value ?? 'config/policy.json');
  const token = lookupEnv(env, 'GUARDIAN_TOKEN')?.value;
  return { config: { port, host, policyFile, logLevel, token }, problems };
}

/** Start the guardian; resolves once it listens. Exits the process on bad configuration. */
export async function main(env: NodeJS.ProcessEnv = process.env): Promise<Server> {
  const { config, problems } = readGuardianConfig(env);
  if (problems.length > 0) failConfig(problems);

  const policy = loadPolicyOrExit(config.policyFile);
  const logger = pino({ level: config.logLevel, base: { service: 'a2a-guard-guardian' } });
  const { decide, service } = referenceGuardian({ policy, logger, token: config.token });
  // The toolkit's helper: listen, and on SIGTERM / SIGINT close (2 s grace for busy sockets) and exit 0.
  const { server } = await serveGuardian(decide, { ...service, port: config.port, host: config.host });
  const address = server.address() as AddressInfo;
  logger.info({ host: address.address, port: address.port, policyFile: config.policyFile, tokenRequired: config.token !== undefined }, 'guardian listening');
  if (config.token === undefined) logger.warn('GUARDIAN_TOKEN is unset: any client that reaches this port can ask for decisions');
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

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`guardian: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
