/**
 * The a2a-guard package (the proxy), as a user gets it: `npm pack`, then a fresh consumer project in a
 * temp dir installs the tarball with the toolkit's (the other dependencies come from the npm cache /
 * registry). Its files, and its old toolkit entry points (`a2a-guard`, `a2a-guard/schemas`), which
 * re-export @a2a-guard/toolkit: a guardian written against them still compiles and loads, as CommonJS
 * under a strict configuration and as an ES module.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile, GUARDIAN_TS, npmPack, ROOT, run, staleOutput, TSC, type Packed } from '../helpers/pack';

/** The README's guardian as it was written before the toolkit had its own package. */
const OLD_IMPORT_GUARDIAN_TS = GUARDIAN_TS.replace("from '@a2a-guard/toolkit';", "from 'a2a-guard';");

/** The ESM view of the CommonJS package: named exports and the schemas subpath. */
const ESM_CHECK = `import { serveGuardian, Envelope, HttpGuardian, buildEnvelope } from 'a2a-guard';
import { SuccessResult } from 'a2a-guard/schemas';
import { createEngine, parsePolicy } from 'a2a-guard/reference-guardian';
const ok = [serveGuardian, HttpGuardian, buildEnvelope, createEngine, parsePolicy].every((f) => typeof f === 'function')
  && typeof Envelope.safeParse === 'function' && SuccessResult.safeParse({ decision: 'allow', message: 'x' }).success;
console.log(ok ? 'esm ok' : 'esm broken');
`;

let dir: string;
let main: Packed;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'a2a-guard-pack-'));
  // npm test builds before jest; run alone, build only when a source is newer than its output.
  if (
    staleOutput(join(ROOT, 'src'), join(ROOT, 'dist', 'src')) ||
    staleOutput(join(ROOT, 'packages', 'toolkit', 'src'), join(ROOT, 'packages', 'toolkit', 'dist'))
  ) {
    await run(process.execPath, [TSC, '-p', join(ROOT, 'packages', 'toolkit', 'tsconfig.json')], { cwd: ROOT });
    await run(process.execPath, [TSC, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT });
  }
  main = await npmPack(dir, []);
  const toolkit = await npmPack(dir, ['-w', '@a2a-guard/toolkit']);

  const consumer = join(dir, 'consumer');
  execFileSync('mkdir', ['-p', join(consumer, 'src')]);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'my-guardian', version: '1.0.0', private: true }));
  writeFileSync(
    join(consumer, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'Node16',
        moduleResolution: 'Node16',
        strict: true,
        skipLibCheck: true,
        outDir: 'dist',
        rootDir: 'src',
        // The consumer's own @types/node would come from the registry; the repository's is the same package.
        typeRoots: [join(ROOT, 'node_modules', '@types')],
        types: ['node'],
      },
      include: ['src'],
    }),
  );
  writeFileSync(join(consumer, 'src', 'guardian.ts'), OLD_IMPORT_GUARDIAN_TS);
  writeFileSync(join(consumer, 'esm-check.mjs'), ESM_CHECK);
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', main.tarball, toolkit.tarball], { cwd: consumer });
}, 240_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('npm pack of a2a-guard', () => {
  test('ships the compiled code, its declarations and the documents; no sources, tests, bench, demo, maps or deploy files', () => {
    for (const f of [
      'package.json',
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
      'SECURITY.md',
      'config/policy.json',
      'config/config.schema.json',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/aos/serve.js',
      'dist/src/aos/schemas.d.ts',
      'dist/src/guardian/index.js',
      'dist/src/main.js',
    ])
      expect(main.files).toContain(f);
    const unwanted = main.files.filter((f) =>
      /^(src|test|bench|deploy|scripts|docs|packages|examples|dist\/bench|dist\/scripts|dist\/test|dist\/src\/demo)\/|\.map$|\.ts$(?<!\.d\.ts)|tsbuildinfo/.test(
        f,
      ),
    );
    expect(unwanted).toEqual([]);
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/Apache License\s+Version 2\.0, January 2004/);
  });

  test('package.json: public, the toolkit a dependency at its own version, an exports map whose every target is in the tarball', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      private?: boolean;
      exports: Record<string, string | Record<string, string>>;
      license: string;
      dependencies: Record<string, string>;
    };
    const toolkit = JSON.parse(readFileSync(join(ROOT, 'packages', 'toolkit', 'package.json'), 'utf8')) as { version: string };
    expect(pkg.private).toBeUndefined();
    expect(pkg.license).toBe('Apache-2.0');
    expect(pkg.dependencies['@a2a-guard/toolkit']).toBe(toolkit.version);
    const targets = Object.values(pkg.exports).flatMap((t) => (typeof t === 'string' ? [t] : Object.values(t)));
    for (const t of targets) expect(main.files).toContain(t.replace(/^\.\//, ''));
  });
});

describe('a guardian written against the old entry points', () => {
  test('type-checks and compiles (CommonJS, strict)', async () => {
    expect(await compile(join(dir, 'consumer'))).toBe('no errors');
    expect(readFileSync(join(dir, 'consumer', 'dist', 'guardian.js'), 'utf8')).toMatch(/require\("a2a-guard"\)/);
  }, 60_000);

  test('loads as ESM too (named exports, the schemas and reference-guardian entries)', async () => {
    const { stdout } = await run(process.execPath, ['esm-check.mjs'], { cwd: join(dir, 'consumer') });
    expect(stdout.trim()).toBe('esm ok');
  });
});
