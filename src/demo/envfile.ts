/**
 * The `config/*.env` files (docker-compose `env_file`): `KEY=VALUE` per line, `#` comments and
 * blank lines ignored, no quoting (podman and docker both pass the rest of the line as the value).
 * The in-process demo reads the same files the containers use, so both run one configuration.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`not a KEY=VALUE line: ${JSON.stringify(raw)}`);
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

export function readEnvFile(path: string): Record<string, string> {
  return parseEnvFile(readFileSync(path, 'utf8'));
}

/**
 * The project root: the nearest directory above `from` holding package.json and config/.
 * Works from src/demo (ts-jest), dist/src/demo (node) and /app/dist/src/demo (container).
 */
export function projectRoot(from: string = __dirname): string {
  let dir = resolve(from);
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'config'))) return dir;
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}
