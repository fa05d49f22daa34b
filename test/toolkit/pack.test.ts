/**
 * The published package, as a guardian author gets it: `npm pack`, then a fresh consumer project
 * in a temp dir installs the tarball (its dependencies come from the npm cache / registry),
 * type-checks a ~20-line guardian written against the public API (and fails a wrong one), runs it,
 * and a real HTTP client calls it: ping, allow, deny, modify; SIGTERM stops it with exit code 0.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..');
const run = promisify(execFile);
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** The TypeScript guardian of the README and docs/guides/writing-a-guardian.md, verbatim. */
export const GUARDIAN_TS = `import { acceptsModify, allow, deny, modify, serveGuardian, type Envelope, type SuccessResult } from 'a2a-guard';

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

/** Must not compile: a decision AOS does not have. */
const WRONG_TS = `import { serveGuardian } from 'a2a-guard';
serveGuardian(() => ({ decision: 'maybe', message: 'hmm' }));
`;

/** The ESM view of the CommonJS package: named exports and the schemas subpath. */
const ESM_CHECK = `import { serveGuardian, Envelope, HttpGuardian, buildEnvelope } from 'a2a-guard';
import { SuccessResult } from 'a2a-guard/schemas';
import { createEngine, parsePolicy } from 'a2a-guard/reference-guardian';
const ok = [serveGuardian, HttpGuardian, buildEnvelope, createEngine, parsePolicy].every((f) => typeof f === 'function')
  && typeof Envelope.safeParse === 'function' && SuccessResult.safeParse({ decision: 'allow', message: 'x' }).success;
console.log(ok ? 'esm ok' : 'esm broken');
`;

function distIsStale(): boolean {
  const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
  return walk(join(ROOT, 'src')).filter((f) => f.endsWith('.ts')).some((f) => {
    const out = join(ROOT, 'dist', relative(ROOT, f)).replace(/\.ts$/, '.js');
    return !existsSync(out) || statSync(out).mtimeMs < statSync(f).mtimeMs;
  });
}

let dir: string;
let tarball: string;
let files: string[];
let guardian: ChildProcess | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'a2a-guard-pack-'));
  // npm test builds before jest; run alone, build only when a source is newer than its output.
  if (distIsStale()) await run(process.execPath, [TSC, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT });
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: ROOT });
  const info = (JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>)[0];
  if (info === undefined) throw new Error('npm pack printed nothing');
  tarball = join(dir, info.filename);
  files = info.files.map((f) => f.path).sort();

  const consumer = join(dir, 'consumer');
  execFileSync('mkdir', ['-p', join(consumer, 'src')]);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'my-guardian', version: '1.0.0', private: true }));
  writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'Node16', moduleResolution: 'Node16', strict: true, skipLibCheck: true, outDir: 'dist', rootDir: 'src',
      // The consumer's own @types/node would come from the registry; the repository's is the same package.
      typeRoots: [join(ROOT, 'node_modules', '@types')], types: ['node'],
    },
    include: ['src'],
  }));
  writeFileSync(join(consumer, 'src', 'guardian.ts'), GUARDIAN_TS);
  writeFileSync(join(consumer, 'src', 'wrong.ts'), WRONG_TS);
  writeFileSync(join(consumer, 'esm-check.mjs'), ESM_CHECK);
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball], { cwd: consumer });

  // A second project as `tsc --init` makes it (strict, exactOptionalPropertyTypes, nodenext, verbatimModuleSyntax),
  // an ES module package using the installed toolkit and @types/node.
  const initProject = join(dir, 'init');
  execFileSync('mkdir', ['-p', join(initProject, 'node_modules', '@types')]);
  writeFileSync(join(initProject, 'package.json'), JSON.stringify({ name: 'my-guardian', version: '1.0.0', private: true, type: 'module' }));
  await run(process.execPath, [TSC, '--init'], { cwd: initProject });
  symlinkSync(join(consumer, 'node_modules', 'a2a-guard'), join(initProject, 'node_modules', 'a2a-guard'));
  symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), join(initProject, 'node_modules', '@types', 'node'));
  writeFileSync(join(initProject, 'guardian.ts'), GUARDIAN_TS);
}, 180_000);

afterAll(() => {
  guardian?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('npm pack', () => {
  test('ships the compiled code, its declarations and the documents; no sources, tests, bench, demo, maps or deploy files', () => {
    for (const f of ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'SECURITY.md', 'config/policy.json', 'config/config.schema.json', 'dist/src/index.js', 'dist/src/index.d.ts',
      'dist/src/aos/serve.js', 'dist/src/aos/schemas.d.ts', 'dist/src/guardian/index.js', 'dist/src/main.js']) expect(files).toContain(f);
    const unwanted = files.filter((f) => /^(src|test|bench|deploy|scripts|docs|dist\/bench|dist\/scripts|dist\/test|dist\/src\/demo)\/|\.map$|\.ts$(?<!\.d\.ts)|tsbuildinfo/.test(f));
    expect(unwanted).toEqual([]);
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/Apache License\s+Version 2\.0, January 2004/);
  });

  test('the README and the guardian guide show this test\'s guardian verbatim', () => {
    for (const doc of ['README.md', 'docs/guides/writing-a-guardian.md']) expect([doc, readFileSync(join(ROOT, doc), 'utf8')]).toEqual([doc, expect.stringContaining(`\`\`\`ts\n${GUARDIAN_TS}\`\`\``)]);
  });

  test('package.json: public, an exports map whose every target is in the tarball', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { private?: boolean; exports: Record<string, string | Record<string, string>>; license: string };
    expect(pkg.private).toBeUndefined();
    expect(pkg.license).toBe('Apache-2.0');
    const targets = Object.values(pkg.exports).flatMap((t) => (typeof t === 'string' ? [t] : Object.values(t)));
    for (const t of targets) expect(files).toContain(t.replace(/^\.\//, ''));
  });
});

describe('a guardian written against the installed package', () => {
  const consumer = (): string => join(dir, 'consumer');

  test('type-checks and compiles; a decision AOS does not have does not', async () => {
    // One compiler run for both files: the errors must all be in wrong.ts, and guardian.ts compiles.
    const out = await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: consumer() }).then(() => 'no errors', (err: { stdout?: string }) => String(err.stdout));
    const errors = out.split('\n').filter((l) => /error TS\d+/.test(l));
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect(errors.filter((l) => !l.startsWith('src/wrong.ts'))).toEqual([]);
    expect(out).toMatch(/"maybe"/);
    expect(readFileSync(join(consumer(), 'dist', 'guardian.js'), 'utf8')).toMatch(/serveGuardian/);
  }, 60_000);

  test('compiles under the configuration `tsc --init` writes (strict, exact optional properties), as an ES module', async () => {
    const out = await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: join(dir, 'init') }).then(() => 'no errors', (err: { stdout?: string }) => String(err.stdout));
    expect(out).toBe('no errors');
    expect(readFileSync(join(dir, 'init', 'tsconfig.json'), 'utf8')).toMatch(/"exactOptionalPropertyTypes": true/);
  }, 60_000);

  test('loads as ESM too (named exports, the schemas and reference-guardian entries)', async () => {
    const { stdout } = await run(process.execPath, ['esm-check.mjs'], { cwd: consumer() });
    expect(stdout.trim()).toBe('esm ok');
  });

  test('runs, and answers ping, allow, deny and modify over HTTP with the token; SIGTERM stops it with exit 0', async () => {
    guardian = spawn(process.execPath, ['dist/guardian.js'], {
      cwd: consumer(),
      env: { PATH: process.env['PATH'], PORT: '0', HOST: '127.0.0.1', GUARDIAN_TOKEN: 'pack-test' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const child = guardian;
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /guardian listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1] as string);
      });
      child.once('exit', (code) => reject(new Error(`guardian exited (${String(code)}) before listening: ${out}`)));
    });
    const call = async (method: string, text: string) => {
      const body = {
        jsonrpc: '2.0', id: `e-${method}-${text.length}`, method,
        params: {
          payload: { jsonrpc: '2.0', id: 1, method, params: { message: { role: 'user', messageId: 'm', parts: [{ kind: 'text', text }] } } },
          context: { from: { agent: { url: 'https://a.example', name: 'A', version: '1' }, role: 'client' }, to: { agent: { url: 'https://b.example', name: 'B', version: '1' }, role: 'server' } },
        },
      };
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer pack-test' }, body: JSON.stringify(body) });
      return (await res.json()) as { id: string; result: { decision: string; reasonCode?: string[]; modifiedRequest?: { params: { payload: unknown } } } };
    };
    const ping = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer pack-test' }, body: JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'ping', params: {} }) });
    expect(await ping.json()).toMatchObject({ id: 'p', result: { status: 'connected' } });
    expect((await call('message/send', 'how to prepare a cheese cake?')).result).toEqual({ decision: 'allow', message: 'Fine.', reasonCode: ['ALLOWED'] });
    expect((await call('message/send', 'how to create a molotov cocktail?')).result).toMatchObject({ decision: 'deny', reasonCode: ['WEAPONS'] });
    const masked = await call('message/send', 'write to jane@example.com');
    expect(masked.result.decision).toBe('modify');
    expect(JSON.stringify(masked.result.modifiedRequest?.params.payload)).toContain('write to [EMAIL]');
    // tasks/cancel accepts no modify: the example allows it rather than answer what a2a-guard would refuse.
    expect((await call('tasks/cancel', 'jane@example.com')).result.decision).toBe('allow');
    const noToken = await fetch(url, { method: 'POST', body: '{}' });
    expect(noToken.status).toBe(401);

    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    guardian = undefined;
  }, 30_000);
});
