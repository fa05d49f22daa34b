/**
 * The packages as their users get them: `npm pack` of the repository's packages, installed into an
 * empty project in a temp dir without the network (the toolkit's only dependency and @types/node are
 * packed from this checkout's node_modules), and the TypeScript compiler run there.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';

/** The TypeScript guardian of the toolkit's README, the repository's README and docs/guides/writing-a-guardian.md, verbatim. */
export const GUARDIAN_TS = `import { acceptsModify, allow, deny, modify, serveGuardian, type Envelope, type SuccessResult } from '@a2a-guard/toolkit';

const WEAPONS = /\\b(molotov|explosives?)\\b/i;
const EMAIL = /[\\w.+-]+@[\\w-]+(\\.[\\w-]+)+/g;

/** Deny weapons, mask e-mail addresses where the operation allows a modify, allow the rest. */
export function decide(envelope: Envelope): SuccessResult {
  const text = JSON.stringify(envelope.params.payload);
  if (WEAPONS.test(text)) return deny('No weapons.', { reasonCode: ['WEAPONS'] });
  const masked = text.replace(EMAIL, '[EMAIL]');
  if (masked !== text && acceptsModify(envelope.method)) {
    return modify(envelope, JSON.parse(masked), 'E-mail addresses masked.', { reasonCode: ['EMAIL_MASKED'] });
  }
  return allow('Fine.', { reasonCode: ['ALLOWED'] });
}

serveGuardian(decide, { port: Number(process.env.PORT ?? 7070), host: process.env.HOST, token: process.env.GUARDIAN_TOKEN })
  .then(({ url }) => console.log(\`guardian listening on \${url}\`));
`;

export const ROOT = join(__dirname, '..', '..');
export const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
export const run = promisify(execFile);

export interface Packed {
  readonly tarball: string;
  /** The paths in the tarball, sorted. */
  readonly files: readonly string[];
}

/** `npm pack` of `what` (a folder, or `-w <workspace>` args) into `dest`. */
export async function npmPack(dest: string, what: readonly string[]): Promise<Packed> {
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dest, ...what], { cwd: ROOT });
  const info = (JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>)[0];
  if (info === undefined) throw new Error(`npm pack ${what.join(' ')} printed nothing`);
  return { tarball: join(dest, info.filename), files: info.files.map((f) => f.path).sort() };
}

/** An installed package of this checkout packed again, so a consumer can install it offline. */
export function packInstalled(dest: string, name: string): Promise<Packed> {
  return npmPack(dest, [join(ROOT, 'node_modules', name)]);
}

/** `npm install` of tarballs (and nothing from the registry) into `project`. */
export async function installOffline(project: string, tarballs: readonly string[]): Promise<void> {
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs], { cwd: project });
}

/** The compiler's errors in `project` (tsc -p tsconfig.json), or 'no errors'. */
export function compile(project: string, extra: readonly string[] = []): Promise<string> {
  return run(process.execPath, [TSC, '-p', 'tsconfig.json', ...extra], { cwd: project }).then(
    () => 'no errors',
    (err: { stdout?: string }) => String(err.stdout),
  );
}

/** Whether a .ts file below `srcDir` is newer than its compiled .js below `outDir` (or has none). */
export function staleOutput(srcDir: string, outDir: string): boolean {
  const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
  return walk(srcDir)
    .filter((f) => f.endsWith('.ts'))
    .some((f) => {
      const out = join(outDir, relative(srcDir, f)).replace(/\.ts$/, '.js');
      return !existsSync(out) || statSync(out).mtimeMs < statSync(f).mtimeMs;
    });
}
