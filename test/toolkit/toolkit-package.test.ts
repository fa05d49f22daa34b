/**
 * @a2a-guard/toolkit as a guardian author gets it: `npm pack`, installed without the network into an
 * empty project made by `tsc --init` (strict, exact optional properties, an ES module package); the
 * guardian of its README compiles there and runs, and a real HTTP client calls it: ping, allow, deny,
 * modify, the bearer token; SIGTERM stops it with exit 0. Every entry point resolves, types and code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile, GUARDIAN_TS, installOffline, npmPack, packInstalled, ROOT, run, staleOutput, TSC, type Packed } from '../helpers/pack';

const TOOLKIT = join(ROOT, 'packages', 'toolkit');

/** Must not compile: a decision AOS does not have. */
const WRONG_TS = `import { serveGuardian } from '@a2a-guard/toolkit';
serveGuardian(() => ({ decision: 'maybe', message: 'hmm' }));
`;

/** The package.json `exports` of the toolkit. */
function toolkitExports(): Record<string, string | { types: string; default: string }> {
  return (JSON.parse(readFileSync(join(TOOLKIT, 'package.json'), 'utf8')) as { exports: Record<string, string | { types: string; default: string }> }).exports;
}

/** Every code entry point imported by a typed consumer, and each JSON Schema loaded: types and code resolve. */
function entriesTs(): string {
  const code = Object.entries(toolkitExports()).filter(([, t]) => typeof t !== 'string');
  const lines = code.map(([sub], i) => `import * as m${i} from '@a2a-guard/toolkit${sub.slice(1)}';`);
  lines.push("import { createRequire } from 'node:module';");
  lines.push(`const modules: Record<string, object> = { ${code.map(([sub], i) => `${JSON.stringify(sub)}: m${i}`).join(', ')} };`);
  lines.push(
    "const schemas = ['envelope', 'answer'].map((s) => createRequire(import.meta.url)(`@a2a-guard/toolkit/${s}.schema.json`) as { $schema?: string });",
  );
  lines.push(
    "console.log(JSON.stringify({ empty: Object.entries(modules).filter(([, m]) => Object.keys(m).filter((k) => k !== 'default').length === 0).map(([s]) => s), schemas: schemas.map((s) => s.$schema) }));",
  );
  return `${lines.join('\n')}\n`;
}

let dir: string;
let project: string;
let packed: Packed;
let guardian: ChildProcess | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'a2a-guard-toolkit-'));
  // npm test builds before jest; run alone, build the toolkit only when a source is newer than its output.
  if (staleOutput(join(TOOLKIT, 'src'), join(TOOLKIT, 'dist'))) await run(process.execPath, [TSC, '-p', join(TOOLKIT, 'tsconfig.json')], { cwd: ROOT });
  packed = await npmPack(dir, ['-w', '@a2a-guard/toolkit']);
  const deps = await Promise.all(['zod', '@types/node', 'undici-types'].map((name) => packInstalled(dir, name)));

  project = join(dir, 'my-guardian');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'my-guardian', version: '1.0.0', private: true, type: 'module' }));
  await run(process.execPath, [TSC, '--init'], { cwd: project });
  await installOffline(project, [packed.tarball, ...deps.map((d) => d.tarball)]);
  writeFileSync(join(project, 'guardian.ts'), GUARDIAN_TS);
  writeFileSync(join(project, 'entries.ts'), entriesTs());
}, 240_000);

afterAll(() => {
  guardian?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('npm pack of @a2a-guard/toolkit', () => {
  test('ships the compiled code, its declarations, the JSON Schemas, README and LICENSE; nothing else', () => {
    const modules = readdirSync(join(TOOLKIT, 'src'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.replace(/\.ts$/, ''))
      .sort();
    const expected = [
      'LICENSE',
      'README.md',
      'package.json',
      'schemas/answer.schema.json',
      'schemas/envelope.schema.json',
      ...modules.flatMap((m) => [`dist/${m}.d.ts`, `dist/${m}.js`]),
    ].sort();
    expect(packed.files).toEqual(expected);
    expect(readFileSync(join(TOOLKIT, 'LICENSE'), 'utf8')).toBe(readFileSync(join(ROOT, 'LICENSE'), 'utf8'));
  });

  test('package.json: public, zod its only dependency, every exports target in the tarball', () => {
    const pkg = JSON.parse(readFileSync(join(TOOLKIT, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect([pkg['private'], pkg['license'], pkg['dependencies'], pkg['devDependencies'], pkg['peerDependencies']]).toEqual([
      undefined,
      'Apache-2.0',
      { zod: expect.any(String) },
      undefined,
      undefined,
    ]);
    const targets = Object.values(toolkitExports()).flatMap((t) => (typeof t === 'string' ? [t] : Object.values(t)));
    for (const t of targets) expect(packed.files).toContain(t.replace(/^\.\//, ''));
  });

  test('installed into an empty project (with @types/node), it brings zod and nothing else', () => {
    const installed = readdirSync(join(project, 'node_modules'), { withFileTypes: true }).flatMap((e) =>
      e.name.startsWith('@') ? readdirSync(join(project, 'node_modules', e.name)).map((n) => `${e.name}/${n}`) : [e.name],
    );
    expect(installed.filter((n) => !n.startsWith('.')).sort()).toEqual(['@a2a-guard/toolkit', '@types/node', 'undici-types', 'zod']);
  });

  test("the READMEs and the guardian guide show this test's guardian verbatim", () => {
    for (const doc of ['packages/toolkit/README.md', 'README.md', 'docs/guides/writing-a-guardian.md']) {
      expect([doc, readFileSync(join(ROOT, doc), 'utf8')]).toEqual([doc, expect.stringContaining(`\`\`\`ts\n${GUARDIAN_TS}\`\`\``)]);
    }
  });
});

describe('a guardian written against the installed toolkit', () => {
  test('compiles under the configuration `tsc --init` writes (strict, exact optional properties), as an ES module; a decision AOS does not have does not', async () => {
    const tsconfig = readFileSync(join(project, 'tsconfig.json'), 'utf8');
    expect([tsconfig.includes('"strict": true'), tsconfig.includes('"exactOptionalPropertyTypes": true')]).toEqual([true, true]);
    expect(await compile(project)).toBe('no errors');
    writeFileSync(join(project, 'wrong.ts'), WRONG_TS);
    const out = await compile(project, ['--noEmit']);
    rmSync(join(project, 'wrong.ts'));
    const errors = out.split('\n').filter((l) => /error TS\d+/.test(l));
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect(errors.filter((l) => !l.startsWith('wrong.ts'))).toEqual([]);
    expect(out).toMatch(/"maybe"/);
  }, 90_000);

  test('every entry point resolves: its declarations (compiled above) and its code; the JSON Schemas load', async () => {
    const { stdout } = await run(process.execPath, ['entries.js'], { cwd: project });
    expect(JSON.parse(stdout)).toEqual({
      empty: [],
      schemas: ['https://json-schema.org/draft/2020-12/schema', 'https://json-schema.org/draft/2020-12/schema'],
    });
  });

  test('runs, and answers ping, allow, deny and modify over HTTP with the token; SIGTERM stops it with exit 0', async () => {
    guardian = spawn(process.execPath, ['guardian.js'], {
      cwd: project,
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
        jsonrpc: '2.0',
        id: `e-${method}-${text.length}`,
        method,
        params: {
          payload: { jsonrpc: '2.0', id: 1, method, params: { message: { role: 'user', messageId: 'm', parts: [{ kind: 'text', text }] } } },
          context: {
            from: { agent: { url: 'https://a.example', name: 'A', version: '1' }, role: 'client' },
            to: { agent: { url: 'https://b.example', name: 'B', version: '1' }, role: 'server' },
          },
        },
      };
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer pack-test' },
        body: JSON.stringify(body),
      });
      return (await res.json()) as { id: string; result: { decision: string; reasonCode?: string[]; modifiedRequest?: { params: { payload: unknown } } } };
    };
    const ping = await fetch(url, {
      method: 'POST',
      headers: { authorization: 'Bearer pack-test' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'ping', params: {} }),
    });
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
