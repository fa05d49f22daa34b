/**
 * What both programs (`a2a-guard` and `a2a-guard-guardian`) share on their command line: the
 * flags every one of them takes, and the aligned variable list of --help. Settings themselves are
 * environment variables, read by each program's own configuration.
 */

export type BasicCommand =
  | { readonly kind: 'run' }
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | { readonly kind: 'check' }
  | { readonly kind: 'error'; readonly message: string };

/** argv without node and the script: no argument (run), --help, --version or --check, each alone. */
export function parseBasicArgs(argv: readonly string[]): BasicCommand {
  if (argv.length === 0) return { kind: 'run' };
  const [flag, ...rest] = argv;
  const alone = (c: BasicCommand): BasicCommand => (rest.length === 0 ? c : { kind: 'error', message: `${flag} takes no arguments (got ${rest.join(' ')})` });
  switch (flag) {
    case '-h':
    case '--help':
      return alone({ kind: 'help' });
    case '-v':
    case '--version':
      return alone({ kind: 'version' });
    case '--check':
      return alone({ kind: 'check' });
    default:
      return { kind: 'error', message: `unknown argument: ${flag ?? ''} (try --help)` };
  }
}

export interface VariableLine {
  readonly name: string;
  /** The default as text, 'required', or 'unset'. */
  readonly default: string;
  readonly description: string;
}

/** Variables as aligned text lines: name, default, meaning. */
export function variableLines(vars: readonly VariableLine[]): string[] {
  const width = Math.max(...vars.map((v) => v.name.length));
  const dwidth = Math.min(24, Math.max(...vars.map((v) => v.default.length)));
  return vars.map((v) => `  ${v.name.padEnd(width)}  ${v.default.padEnd(dwidth)}  ${v.description}`);
}
