/**
 * The running build's version, read once from the package.json that ships with it (found by walking
 * up from this file: dist/src/ in a build, src/ under ts-jest).
 */
import fs from 'node:fs';
import path from 'node:path';

function readVersion(): string {
  let dir = __dirname;
  for (let i = 0; i < 4; i++) {
    const file = path.join(dir, 'package.json');
    try {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'a2a-guard' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      /* not here: one level up */
    }
    dir = path.dirname(dir);
  }
  return 'unknown';
}

export const VERSION = readVersion();
