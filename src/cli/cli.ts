/**
 * The command line of `a2a-guard` (the flags it shares with `a2a-guard-guardian` are in core/command-line.ts): flags are
 * few, every setting is an environment variable. The variable list of --help and the effective
 * configuration of --check come from the zod schema in config.ts, so neither is written twice.
 */
import { describeVariables, maskValue, schemaInput } from '../config/config';
import { parseHead, type ChainLink } from '../observe/decision-log';
import type { ConfigFile } from '../config/file';
import { parseBasicArgs, variableLines } from '../core/command-line';

export type Command =
  | { readonly kind: 'run'; readonly config?: string }
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  /** `probe`: also try the guardian, the agent's card and the task store. */
  | { readonly kind: 'check'; readonly config?: string; readonly probe?: true }
  | { readonly kind: 'verifyLog'; readonly file: string; readonly head?: ChainLink }
  | { readonly kind: 'error'; readonly message: string };

/** argv without node and the script: the shared flags, plus the proxy's own (--config, --check --probe, --verify-log). */
export function parseArgs(argv: readonly string[]): Command {
  // --config FILE may stand anywhere before or after running/--check.
  let config: string | undefined;
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a !== '--config') {
      args.push(a);
      continue;
    }
    const file = argv[i + 1];
    if (file === undefined || file === '' || file.startsWith('-')) return { kind: 'error', message: '--config takes a file name (YAML or JSON)' };
    if (config !== undefined) return { kind: 'error', message: '--config is given twice' };
    config = file;
    i++;
  }
  const withFile = (c: Command): Command => {
    if (config === undefined) return c;
    return c.kind === 'run' || c.kind === 'check' ? { ...c, config } : { kind: 'error', message: '--config goes with running the proxy or --check' };
  };
  const [flag, ...rest] = args;
  switch (flag) {
    case '--check':
      if (rest.length === 1 && rest[0] === '--probe') return withFile({ kind: 'check', probe: true });
      break;
    case '--probe':
      return { kind: 'error', message: '--probe goes with --check (a2a-guard --check --probe)' };
    case '--verify-log': {
      if (config !== undefined) return { kind: 'error', message: '--config goes with running the proxy or --check' };
      if (rest.length === 3 && rest[1] === '--head') {
        const head = parseHead(rest[2] as string);
        if (head === undefined) return { kind: 'error', message: "--head takes SEQ:HASH (an audit line's decisionSeq and decisionHash)" };
        if (rest[0] !== '') return { kind: 'verifyLog', file: rest[0] as string, head };
      }
      if (rest.length !== 1 || rest[0] === '') return { kind: 'error', message: '--verify-log takes one file name (and optionally --head SEQ:HASH)' };
      return { kind: 'verifyLog', file: rest[0] as string };
    }
    default:
      break;
  }
  return withFile(parseBasicArgs(args));
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
    "  --check             validate the configuration (and the embedded guardian's policy), print the effective",
    '                      configuration with secrets masked, exit 0 (valid) or 2 (invalid)',
    "  --check --probe     also try the guardian (AOS ping), the agent's card and the task store (Redis PING),",
    '                      one line each; exit 1 when one of them does not answer',
    '  --verify-log FILE   check the hash chain of a DECISION_LOG_FILE (keyed with DECISION_LOG_KEY_FILE when set);',
    "                      exit 0 (intact) or 1 (names the first broken record); --head SEQ:HASH (an audit line's",
    '                      decisionSeq and decisionHash) also checks that the file still holds that record',
    '  --version           print the version',
    '  --help              this text',
    '',
    'Signals: SIGTERM drains (SHUTDOWN_DELAY_MS, then DRAIN_TIMEOUT_MS); SIGINT drains without the delay;',
    "         SIGHUP reloads the embedded guardian's policy.",
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
