/**
 * The running build's version and the files that ship with it, read from the package.json found by
 * walking up from this file (dist/ for the bundle, dist/src/ in a build, src/ under ts-jest;
 * node_modules/a2a-guard/... when installed), never from the working directory.
 */
import fs from 'node:fs';
import path from 'node:path';

function findPackage(): { root: string; version: string } | undefined {
  let dir = __dirname;
  for (let i = 0; i < 4; i++) {
    const file = path.join(dir, 'package.json');
    try {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'a2a-guard' && typeof pkg.version === 'string') return { root: dir, version: pkg.version };
    } catch {
      /* not here: one level up */
    }
    dir = path.dirname(dir);
  }
  return undefined;
}

const found = findPackage();
export const VERSION = found?.version ?? 'unknown';

/**
 * The demo policy shipped in the package (config/policy.json): the embedded and the standalone
 * reference guardian's POLICY_FILE when none is given, whatever the working directory.
 */
export const DEFAULT_POLICY_FILE = path.join(found?.root ?? process.cwd(), 'config', 'policy.json');
