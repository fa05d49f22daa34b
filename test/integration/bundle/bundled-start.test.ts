/**
 * dist/a2a-guard.js, what `npm start` and the image run (scripts/bundle.ts): the bundled proxy
 * (dist/a2a-guard.bundle.js) run with its V8 code cache (src/launch.ts):
 *   - what the default configuration loads at start is inside it: serving a call reads nothing from
 *     node_modules but undici's HTTP parser (WebAssembly, loaded at the first connection);
 *   - nor node modules only unused parts of its packages need (HTTP/2, HTTPS, TLS, worker threads,
 *     os: scripts/bundle.ts LAZY), nor those only compressed bodies or file reloads need (zlib, fs/promises);
 *   - V8 accepts the code cache the build made;
 *   - packages a configuration loads on demand stay outside and are still found there (tracing on);
 *   - its source is ASCII, so V8 holds it as one byte per character.
 * The observe-lifecycle and observe-tracing tests run the bundle too (test/helpers/proxy-process.ts).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rawRpc, startAgent, textOf, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { freePort, waitFor } from '../../helpers/net';
import { reap } from '../../helpers/process';
import { ensureBuilt, MAIN, ROOT } from '../../helpers/proxy-process';

jest.setTimeout(60_000);

let agent: TestAgent;
let guardian: TestGuardian;
let tmp: string;

beforeAll(async () => {
  ensureBuilt();
  agent = await startAgent({ name: 'Bundle Agent' });
  guardian = await startGuardian();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-bundle-'));
}, 180_000);

afterAll(async () => {
  await agent?.close();
  await guardian?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Run the bundle with a preload that writes the files node loaded (require.cache) when the process exits; one call, then SIGTERM. */
async function loadedFiles(env: Record<string, string>): Promise<{ files: string[]; builtins: string[]; answer: string }> {
  const list = path.join(tmp, `loaded-${Date.now()}.json`);
  const preload = path.join(tmp, 'preload.js');
  fs.writeFileSync(
    preload,
    `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(list)}, JSON.stringify([Object.keys(require.cache), process.moduleLoadList])));\n`,
  );
  const port = await freePort();
  const child = spawn(process.execPath, ['-r', preload, MAIN], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_PORT: String(await freePort()),
      ADMIN_HOST: '127.0.0.1',
      SHUTDOWN_DELAY_MS: '0',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  try {
    let answer = '';
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`the bundle exited (${child.exitCode}): ${out}`);
        try {
          const r = await rawRpc(`http://127.0.0.1:${port}/a2a/jsonrpc`, {
            jsonrpc: '2.0',
            id: 'b1',
            method: 'message/send',
            params: {
              message: { kind: 'message', messageId: 'mb1', role: 'user', parts: [{ kind: 'text', text: 'hello bundle' }] },
              configuration: { blocking: true },
            },
          });
          answer = textOf(r.json);
          return r.status === 200;
        } catch {
          return false;
        }
      },
      20_000,
      'the bundled proxy answers',
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const [files, loaded] = JSON.parse(fs.readFileSync(list, 'utf8')) as [string[], string[]];
    return { files, builtins: loaded.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice('NativeModule '.length)), answer };
  } finally {
    await reap(child);
  }
}

const fromNodeModules = (files: string[]): string[] =>
  files.filter((f) => f.includes(`${path.sep}node_modules${path.sep}`)).map((f) => f.slice(f.lastIndexOf(`node_modules${path.sep}`) + 'node_modules/'.length));

test("the default configuration serves a call with everything it loads inside the bundle (but undici's WebAssembly parser)", async () => {
  const { files, builtins, answer } = await loadedFiles({});
  expect(answer).toContain('hello bundle');
  expect(files).toContain(MAIN);
  expect(builtins).toEqual(expect.arrayContaining(['http', 'crypto']));
  expect(builtins.filter((m) => ['http2', 'https', 'tls', 'worker_threads', 'os', 'zlib', 'fs/promises'].includes(m))).toEqual([]);
  expect(fromNodeModules(files).every((f) => /^undici\/lib\/llhttp\/llhttp(_simd)?-wasm\.js$/.test(f))).toBe(true);
  expect(fromNodeModules(files).length).toBeGreaterThan(0);
});

test('packages loaded on demand are required from node_modules when the configuration uses them (tracing on)', async () => {
  const { files } = await loadedFiles({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
  const packages = new Set(
    fromNodeModules(files).map((f) =>
      f
        .split('/')
        .slice(0, f.startsWith('@') ? 2 : 1)
        .join('/'),
    ),
  );
  expect([...packages]).toEqual(expect.arrayContaining(['@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-proto']));
});

test('V8 accepts the code cache the build made (a node without options, as npm start runs it)', () => {
  const r = spawnSync(process.execPath, ['-e', `process.stdout.write(String(require(${JSON.stringify(MAIN)}).compileBundle(true).cachedDataRejected))`], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  expect(r.stdout).toBe('false');
});

test('the bundle is ASCII (V8 keeps a source with any other character as two bytes per character)', () => {
  const bytes = fs.readFileSync(path.join(ROOT, 'dist/a2a-guard.bundle.js'));
  expect(bytes.findIndex((b) => b > 0x7f)).toBe(-1);
});
