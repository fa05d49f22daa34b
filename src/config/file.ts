/**
 * `--config FILE`: the variables of src/config/config.ts as one YAML or JSON mapping (JSON is YAML), with the
 * variables' names and rules; a variable set in the environment wins over the file. Values may be
 * strings, numbers, booleans or lists (joined with commas, as the variables write them); an empty
 * value counts as unset, as an empty variable does. Unknown names are errors, with the variables'
 * "did you mean". The parser is loaded only when a file is given.
 */
import fs from 'node:fs';
import type * as YAML from 'yaml';
import { ENV_PREFIX } from '../core/env';

export interface ConfigFile {
  readonly file: string;
  /** Each variable the file sets, as the text its rule reads. */
  readonly values: Readonly<Record<string, string>>;
}

type Scalar = string | number | boolean;
const isScalar = (v: unknown): v is Scalar => typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

/**
 * The file's values, or one problem per bad entry (each naming the file). `suggest` gives the
 * variables' typo lines for names that are not ours ("NAME: unknown variable; did you mean X?").
 */
export function readConfigFile(
  file: string,
  known: readonly string[],
  suggest: (names: Record<string, string>) => string[],
): { ok: true; config: ConfigFile } | { ok: false; problems: string[] } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    return { ok: false, problems: [`--config ${file}: cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`] };
  }
  const yaml = require('yaml') as typeof YAML;
  // YAML 1.2 core schema: yes/no/on/off stay text; duplicate keys are errors, so no key means two things.
  const doc = yaml.parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) return { ok: false, problems: doc.errors.map((e) => `${file}: not valid YAML or JSON: ${e.message.split('\n')[0] ?? ''}`) };
  const data: unknown = doc.toJS({ maxAliasCount: 100 });
  if (data === null || data === undefined) return { ok: true, config: { file, values: {} } };
  if (typeof data !== 'object' || Array.isArray(data)) return { ok: false, problems: [`${file}: must be a mapping of variable names to values (NAME: value)`] };

  const knownSet = new Set(known);
  const problems: string[] = [];
  const values: Record<string, string> = {};
  const unknown: Record<string, string> = {};
  for (const [name, value] of Object.entries(data as Record<string, unknown>)) {
    if (!knownSet.has(name)) {
      if (name.startsWith(ENV_PREFIX) && knownSet.has(name.slice(ENV_PREFIX.length)))
        problems.push(`${file}: ${name}: write it as ${name.slice(ENV_PREFIX.length)} (the ${ENV_PREFIX} prefix is for the environment)`);
      else unknown[name] = '';
      continue;
    }
    if (value === null || value === '') continue;
    if (isScalar(value)) values[name] = String(value);
    else if (Array.isArray(value) && value.every(isScalar)) {
      if (value.length > 0) values[name] = value.map(String).join(',');
    } else problems.push(`${file}: ${name}: must be a string, number, boolean or list of them`);
  }
  const typos = suggest(unknown);
  const typoNames = new Set(typos.map((t) => t.slice(0, t.indexOf(':'))));
  for (const t of typos) problems.push(`${file}: ${t}`);
  for (const name of Object.keys(unknown)) if (!typoNames.has(name)) problems.push(`${file}: ${name}: unknown variable (a2a-guard --help lists the names)`);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, config: { file, values } };
}
