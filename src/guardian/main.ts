#!/usr/bin/env node
/**
 * `a2a-guard-guardian` / `npm run guardian`: the reference guardian as a standalone AOS service.
 * Flags: --help, --version, --check. SIGHUP (and, with POLICY_WATCH, a change of the file) reloads
 * the policy: an invalid new policy keeps the old one and logs one line per problem.
 *   GUARDIAN_PORT (7070), GUARDIAN_HOST (0.0.0.0), POLICY_FILE (against the working directory;
 *   default: the package's config/policy.json), GUARDIAN_TOKEN (unset: no token required), LOG_LEVEL (info).
 * Each may also be given as A2A_GUARD_<NAME>, which wins (src/core/env.ts): a Kubernetes Service named
 * `guardian` injects GUARDIAN_PORT=tcp://... into every pod that has service links on.
 * A bad policy or variable prints one line per problem on stderr and exits with code 2.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import pino from 'pino';
import { LINE_FORMAT } from '../runtime/log';
import { lookupEnv, serviceLinkHint } from '../core/env';
import { PolicyError } from './policy';
import { ReloadablePolicy, type ReloadResult } from './reload';
import { parseBasicArgs, variableLines } from '../core/command-line';
import { serveGuardian } from '../aos/serve';
import { referenceGuardian, GUARDIAN_VERSION } from './server';
import { DEFAULT_POLICY_FILE } from '../runtime/version';

export interface GuardianConfig {
  readonly port: number;
  readonly host: string;
  readonly policyFile: string;
  readonly logLevel: string;
  readonly policyWatch?: boolean;
  /** When set, every AOS request must carry `Authorization: Bearer <token>` (the proxies' GUARDIAN_TOKEN). */
  readonly token?: string | undefined;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
export const EXIT_CONFIG_ERROR = 2;

/** Read the guardian's variables; `problems` lists one line per bad variable. */
export function readGuardianConfig(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): { config: GuardianConfig; problems: string[] } {
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
  const given = lookupEnv(env, 'POLICY_FILE')?.value;
  const policyFile = given === undefined ? DEFAULT_POLICY_FILE : resolve(cwd, given);
  const token = lookupEnv(env, 'GUARDIAN_TOKEN')?.value;
  const watchText = (lookupEnv(env, 'POLICY_WATCH')?.value ?? 'true').toLowerCase();
  if (!['true', 'false', '1', '0', 'yes', 'no'].includes(watchText)) problems.push(`POLICY_WATCH: expected true or false, got "${watchText}"`);
  return { config: { port, host, policyFile, logLevel, token, policyWatch: ['true', '1', 'yes'].includes(watchText) }, problems };
}

/** Start the guardian; resolves once it listens. Exits the process on bad configuration. */
/** The guardian's variables: the one place their defaults and meanings are written for --help. */
export const GUARDIAN_VARIABLES = [
  { name: 'GUARDIAN_PORT', default: '7070', description: 'port the guardian listens on', secret: false },
  { name: 'GUARDIAN_HOST', default: '0.0.0.0', description: 'listen address', secret: false },
  {
    name: 'POLICY_FILE',
    default: 'unset',
    description: "the policy (against the working directory); unset: the package's demo policy, config/policy.json",
    secret: false,
  },
  { name: 'POLICY_WATCH', default: 'true', description: 'reload the policy when the file changes (SIGHUP reloads it too)', secret: false },
  { name: 'GUARDIAN_TOKEN', default: 'unset', description: 'when set, every AOS request must carry Authorization: Bearer <token>; never logged', secret: true },
  { name: 'LOG_LEVEL', default: 'info', description: `pino level: ${LOG_LEVELS.join(', ')}`, secret: false },
] as const;

function help(): string {
  return [
    `a2a-guard-guardian ${GUARDIAN_VERSION}: the reference AOS guardian (JSON-RPC over HTTP POST, any path)`,
    '',
    'Usage: a2a-guard-guardian [--help | --version | --check]',
    '',
    '  (no argument)  run the guardian',
    '  --check        validate the variables and the policy, print the effective configuration, exit 0 (valid) or 2',
    '  --version      print the version',
    '',
    'Signals: SIGTERM/SIGINT stop (in-flight answers finish); SIGHUP reloads the policy.',
    'Each variable may also be given as A2A_GUARD_<NAME>, which wins.',
    '',
    'Environment variables (name, default, meaning):',
    ...variableLines(GUARDIAN_VARIABLES),
    '',
  ].join('\n');
}

/** Start the guardian; resolves once it listens. Exits the process on bad configuration. */
export async function main(env: NodeJS.ProcessEnv = process.env, argv: readonly string[] = []): Promise<Server> {
  const cmd = parseBasicArgs(argv);
  if (cmd.kind === 'error') failConfig([cmd.message]);
  if (cmd.kind === 'help') {
    process.stdout.write(help());
    return process.exit(0);
  }
  if (cmd.kind === 'version') {
    process.stdout.write(`a2a-guard-guardian ${GUARDIAN_VERSION}\n`);
    return process.exit(0);
  }
  const { config, problems } = readGuardianConfig(env);
  if (problems.length > 0) failConfig(problems);

  const logger = pino({ level: config.logLevel, base: { service: 'a2a-guard-guardian' }, ...LINE_FORMAT });
  const policy = loadPolicyOrExit(config.policyFile, (r, reason) => {
    if (r.ok) logger.info({ policyFile: config.policyFile, reason, sha256: r.sha256, changed: r.changed }, 'policy reloaded');
    else
      for (const problem of r.problems)
        logger.error({ policyFile: config.policyFile, reason, problem }, 'policy reload failed; the previous policy stays in force');
  });
  if (cmd.kind === 'check') {
    process.stdout.write(
      [
        `# a2a-guard-guardian ${GUARDIAN_VERSION}: configuration and policy are valid (sha256 ${policy.sha256})`,
        `GUARDIAN_PORT=${config.port}`,
        `GUARDIAN_HOST=${config.host}`,
        `POLICY_FILE=${config.policyFile}`,
        `POLICY_WATCH=${config.policyWatch !== false}`,
        `GUARDIAN_TOKEN=${config.token === undefined ? '' : '***'}`,
        `LOG_LEVEL=${config.logLevel}`,
        '',
      ].join('\n'),
    );
    return process.exit(0);
  }
  const { decide, service } = referenceGuardian({ engine: policy, logger, token: config.token });
  // The toolkit's helper: listen, and on SIGTERM / SIGINT close (2 s grace for busy sockets) and exit 0.
  let server: Server;
  try {
    ({ server } = await serveGuardian(decide, { ...service, port: config.port, host: config.host }));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    failConfig([`cannot listen on ${config.host}:${config.port}: ${(err as Error).message}${code === 'EADDRINUSE' ? ' (address already in use)' : ''}`]);
  }
  const address = server.address() as AddressInfo;
  logger.info(
    {
      host: address.address,
      port: address.port,
      policyFile: config.policyFile,
      sha256: policy.sha256,
      watch: config.policyWatch !== false,
      tokenRequired: config.token !== undefined,
    },
    'guardian listening',
  );
  if (config.token === undefined) logger.warn('GUARDIAN_TOKEN is unset: any client that reaches this port can ask for decisions');
  if (config.policyWatch !== false) policy.watch();
  const reload = (): void => void policy.reload('SIGHUP');
  process.on('SIGHUP', reload);
  server.once('close', () => {
    process.off('SIGHUP', reload);
    policy.unwatch();
  });
  return server;
}

function loadPolicyOrExit(policyFile: string, onReload: (r: ReloadResult, reason: string) => void): ReloadablePolicy {
  try {
    return new ReloadablePolicy(policyFile, { onReload });
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
  main(process.env, process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`guardian: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
