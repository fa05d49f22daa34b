/**
 * The command line of `a2a-guard` (and, through the same helpers, `a2a-guard-guardian`): flags are
 * few, every setting is an environment variable. The variable list of --help and the effective
 * configuration of --check come from the zod schema in config.ts, so neither is written twice.
 */
import { describeVariables, maskValue, schemaInput, type VariableInfo } from './config';
import { parseHead, type ChainLink } from './observe/decision-log';
import type { ConfigFile } from './config-file';

export type Command =
  | { readonly kind: 'run'; readonly config?: string }
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  /** `probe`: also try the guardian, the agent's card and the task store. */
  | { readonly kind: 'check'; readonly config?: string; readonly probe?: true }
  | { readonly kind: 'verifyLog'; readonly file: string; readonly head?: ChainLink }
  | { readonly kind: 'error'; readonly message: string };

/** argv without node and the script; `allowVerifyLog`: the proxy's own flags (--verify-log, --config, --probe). */
export function parseArgs(argv: readonly string[], allowVerifyLog = true): Command {
  // --config FILE may stand anywhere before or after running/--check.
  let config: string | undefined;
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (!allowVerifyLog || a !== '--config') {
      args.push(a);
      continue;
    }
    const file = argv[i + 1];
    if (file === undefined || file === '' || file.startsWith('-')) return { kind: 'error', message: '--config takes a file name (YAML or JSON)' };
    if (config !== undefined) return { kind: 'error', message: '--config is given twice' };
    config = file;
    i++;
  }
  const withFile = <C extends Command>(c: C): Command => {
    if (config === undefined) return c;
    return c.kind === 'run' || c.kind === 'check' ? { ...c, config } : { kind: 'error', message: '--config goes with running the proxy or --check' };
  };
  if (args.length === 0) return withFile({ kind: 'run' });
  const [flag, ...rest] = args;
  const alone = (c: Command): Command => (rest.length === 0 ? c : { kind: 'error', message: `${flag} takes no arguments (got ${rest.join(' ')})` });
  switch (flag) {
    case '-h':
    case '--help':
      return alone({ kind: 'help' });
    case '-v':
    case '--version':
      return alone({ kind: 'version' });
    case '--check':
      if (allowVerifyLog && rest.length === 1 && rest[0] === '--probe') return withFile({ kind: 'check', probe: true });
      return withFile(alone({ kind: 'check' }));
    case '--probe':
      if (allowVerifyLog) return { kind: 'error', message: '--probe goes with --check (a2a-guard --check --probe)' };
      break;
    case '--verify-log':
      if (!allowVerifyLog) break;
      if (config !== undefined) return { kind: 'error', message: '--config goes with running the proxy or --check' };
      if (rest.length === 3 && rest[1] === '--head') {
        const head = parseHead(rest[2] as string);
        if (head === undefined) return { kind: 'error', message: '--head takes SEQ:HASH (an audit line\'s decisionSeq and decisionHash)' };
        if (rest[0] !== '') return { kind: 'verifyLog', file: rest[0] as string, head };
      }
      if (rest.length !== 1 || rest[0] === '') return { kind: 'error', message: '--verify-log takes one file name (and optionally --head SEQ:HASH)' };
      return { kind: 'verifyLog', file: rest[0] as string };
    default:
      break;
  }
  return { kind: 'error', message: `unknown argument: ${flag ?? ''} (try --help)` };
}

/** Variables as aligned text lines: name, default, meaning. */
export function variableLines(vars: readonly VariableInfo[]): string[] {
  const width = Math.max(...vars.map((v) => v.name.length));
  const dwidth = Math.min(24, Math.max(...vars.map((v) => v.default.length)));
  return vars.map((v) => `  ${v.name.padEnd(width)}  ${v.default.padEnd(dwidth)}  ${v.description}`);
}

export function proxyHelp(version: string): string {
  return [
    `a2a-guard ${version}: transparent A2A proxy enforcing the OWASP Agent Observability Standard through a guardian agent`,
    '',
    'Usage: a2a-guard [--config FILE] [--check [--probe]] | --help | --version | --verify-log FILE [--head SEQ:HASH]',
    '',
    '  (no argument)       run the proxy, configured by the environment variables below',
    '  --config FILE       also read the variables from FILE (YAML or JSON, NAME: value; a variable set in the',
    '                      environment wins); its JSON Schema is config/config.schema.json in the package',
    '  --check             validate the configuration (and the embedded guardian\'s policy), print the effective',
    '                      configuration with secrets masked, exit 0 (valid) or 2 (invalid)',
    '  --check --probe     also try the guardian (AOS ping), the agent\'s card and the task store (Redis PING),',
    '                      one line each; exit 1 when one of them does not answer',
    '  --verify-log FILE   check the hash chain of a DECISION_LOG_FILE (keyed with DECISION_LOG_KEY_FILE when set);',
    '                      exit 0 (intact) or 1 (names the first broken record); --head SEQ:HASH (an audit line\'s',
    '                      decisionSeq and decisionHash) also checks that the file still holds that record',
    '  --version           print the version',
    '  --help              this text',
    '',
    'Signals: SIGTERM drains (SHUTDOWN_DELAY_MS, then DRAIN_TIMEOUT_MS); SIGINT drains without the delay;',
    '         SIGHUP reloads the embedded guardian\'s policy.',
    '',
    'Environment variables (name, default, meaning); each may also be given as A2A_GUARD_<NAME>, which wins:',
    ...variableLines(describeVariables()),
    '',
  ].join('\n');
}

/** `NAME=value` for every variable: the value in force, secrets masked; `# default` marks unset ones, `# FILE` those from --config. */
export function effectiveConfiguration(env: NodeJS.ProcessEnv, file?: ConfigFile): string[] {
  const given = schemaInput(env);
  const fromFile = file === undefined ? {} : schemaInput({}, file);
  return describeVariables().map((v) => {
    const raw = given[v.name];
    if (raw !== undefined) return `${v.name}=${maskValue(v.name, raw)}`;
    const inFile = fromFile[v.name];
    if (inFile !== undefined && file !== undefined) return `${v.name}=${maskValue(v.name, inFile)}  # ${file.file}`;
    return `${v.name}=${v.default === 'unset' ? '' : v.default}  # ${v.default === 'unset' ? 'unset' : 'default'}`;
  });
}
