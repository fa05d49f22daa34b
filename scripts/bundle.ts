/**
 * `npm run build`, second step: dist/a2a-guard.bundle.js, the proxy (src/main.ts) in one file; its
 * V8 code cache dist/a2a-guard.bundle.cache (made by running the bundle with --check); and
 * dist/a2a-guard.js (src/launch.ts), which runs the bundle with that cache: what `npm start`, the
 * image and the bench run. dist/src/main.js stays the same program, file by file.
 *
 * Why: node's CommonJS loader resolves, stats and reads every module it loads (~290 files for a
 * start), and that cost more than running them; one file also lets esbuild drop the parts of zod the
 * code does not use (~800 -> ~200 kB). Measured on the bench machine (2 shared cores, node 20,
 * medians of 5 interleaved rounds): CPU used up to the first served call 640 -> 370 ms (a bare
 * node:http server: 130 ms).
 *
 * What stays outside (required from node_modules when a configuration uses it, as before): the
 * packages the proxy loads only on demand (gRPC, OpenTelemetry's SDK, jose, ioredis, the A2A SDK,
 * http-proxy-3, ...), and undici's lazily loaded parts (its HTTP parser's WebAssembly: one of two
 * builds is loaded at the first connection; FormData bodies). Everything the default configuration
 * loads at start is inside.
 *
 *   node dist/scripts/bundle.js   (after tsc; needs the devDependency esbuild)
 */
import { build, type Plugin } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';

/** The repository: this file runs as dist/scripts/bundle.js (or scripts/bundle.ts under jest). */
const ROOT = basename(dirname(__dirname)) === 'dist' ? join(__dirname, '..', '..') : join(__dirname, '..');
/** The loader (src/launch.ts), the bundle and its code cache: launch.ts names the other two by the same names. */
export const LAUNCH = join(ROOT, 'dist', 'a2a-guard.js');
export const BUNDLE = join(ROOT, 'dist', 'a2a-guard.bundle.js');
const CODE_CACHE = join(ROOT, 'dist', 'a2a-guard.bundle.cache');

/**
 * Dependencies the proxy loads at start with the default configuration: bundled. The toolkit (a
 * workspace package) is bundled from its TypeScript through tsconfig.json's `paths`, as the proxy's
 * own code is, so that its `import * as z` lets esbuild drop the parts of zod it does not use.
 */
const LOADED_AT_START = new Set(['@a2a-guard/toolkit', 'pino', 'prom-client', '@opentelemetry/api', 'undici', 'zod', 'ipaddr.js']);

/** undici files it requires only when needed: kept out of the bundle, loaded from node_modules then. */
const UNDICI_ON_DEMAND = /^lib\/(llhttp\/llhttp(_simd)?-wasm\.js|web\/fetch\/body\.js)$/;

const undiciOnDemand: Plugin = {
  name: 'undici-on-demand',
  setup(b) {
    b.onResolve({ filter: /llhttp|web\/fetch\/body/ }, (args) => {
      const inUndici = /[\\/]node_modules[\\/]undici[\\/]/.exec(args.importer);
      if (inUndici === null) return undefined;
      const undici = args.importer.slice(0, inUndici.index + inUndici[0].length);
      const rel = relative(undici, join(args.resolveDir, args.path)).split(sep).join('/');
      return UNDICI_ON_DEMAND.test(rel) ? { path: `undici/${rel}`, external: true } : undefined;
    });
  },
};

/**
 * Requires of bundled packages that the proxy never calls at start, made lazy (their modules run on
 * first use): each pulls in node modules a bare server never loads. The build fails when a package
 * no longer has the line, so an upgrade cannot silently undo it.
 */
const LAZY: readonly { readonly file: string; readonly line: string; readonly lazy: string }[] = [
  // undici's HTTP/2 client (only with allowH2, which the proxy does not set): node:http2, ~9 ms.
  {
    file: 'undici/lib/dispatcher/client.js',
    line: "const connectH2 = require('./client-h2.js')",
    lazy: "const connectH2 = (client, socket) => require('./client-h2.js')(client, socket)",
  },
  // prom-client's Pushgateway (unused): node:https, node:tls, node:zlib, ~6 ms.
  {
    file: 'prom-client/index.js',
    line: "exports.Pushgateway = require('./lib/pushgateway');",
    lazy: "Object.defineProperty(exports, 'Pushgateway', { enumerable: true, get: () => require('./lib/pushgateway') });",
  },
  // pino's worker-thread transports (the proxy writes to stdout itself): thread-stream, node:module.
  { file: 'pino/lib/tools.js', line: "const transport = require('./transport')", lazy: "const transport = (opts) => require('./transport')(opts)" },
  {
    file: 'pino/pino.js',
    line: "module.exports.transport = require('./lib/transport')",
    lazy: "Object.defineProperty(module.exports, 'transport', { enumerable: true, get: () => require('./lib/transport') })",
  },
  // pino asks worker_threads whether it runs on the main thread only when it makes its own
  // destination (the proxy passes one): node:worker_threads, ~1.5 ms.
  {
    file: 'pino/lib/tools.js',
    line: "const { isMainThread } = require('worker_threads')",
    lazy: "const isMainThread = () => require('worker_threads').isMainThread",
  },
  { file: 'pino/lib/tools.js', line: 'if (!opts.sync && isMainThread) {', lazy: 'if (!opts.sync && isMainThread()) {' },
  // pino's default `base` names the host, and every logger the proxy makes has its own base: node:os
  // (~0.5-4 ms) only when a logger without one reads it.
  { file: 'pino/pino.js', line: "const os = require('node:os')", lazy: '' },
  { file: 'pino/pino.js', line: 'const hostname = os.hostname()', lazy: '' },
  { file: 'pino/pino.js', line: '  base: { pid, hostname },', lazy: "  base: { pid, get hostname () { return require('node:os').hostname() } }," },
];

const lazyRequires: Plugin = {
  name: 'lazy-requires',
  setup(b) {
    for (const file of new Set(LAZY.map((l) => l.file))) {
      b.onLoad({ filter: new RegExp(`[\\\\/]node_modules[\\\\/]${file.replace(/[.]/g, '\\.').replace(/\//g, '[\\\\/]')}$`) }, async (args) => {
        let text = await readFile(args.path, 'utf8');
        for (const { line, lazy } of LAZY.filter((l) => l.file === file)) {
          if (!text.includes(line)) throw new Error(`${file} no longer has \`${line}\` (scripts/bundle.ts LAZY)`);
          text = text.replace(line, lazy);
        }
        return { contents: text, loader: 'js' };
      });
    }
  },
};

/**
 * undici and sonic-boom call node:assert as `assert(value, message)` only; loading it at start
 * costs ~5 ms, mostly because its error class looks at process.stderr's colours, which opens
 * stderr. Their `assert` is this function, which loads node:assert only when an assertion fails.
 */
const lazyAssert: Plugin = {
  name: 'lazy-assert',
  setup(b) {
    b.onResolve({ filter: /^(node:)?assert$/ }, (args) =>
      /[\\/]node_modules[\\/](undici|sonic-boom|thread-stream)[\\/]/.test(args.importer) ? { path: 'assert', namespace: 'lazy-assert' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-assert' }, () => ({
      contents: "module.exports = function assert(value, message) { if (!value) require('node:assert')(value, message); };",
      loader: 'js',
    }));
  },
};

/** esbuild writes ASCII code but keeps comments as they are: one non-ASCII character makes V8 hold the whole source as UTF-16 (twice the memory). */
function asciiOnly(text: string): string {
  return text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export async function bundle(): Promise<void> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const external = Object.keys(pkg.dependencies).filter((d) => !LOADED_AT_START.has(d));
  const result = await build({
    entryPoints: [join(ROOT, 'src', 'main.ts')],
    outfile: BUNDLE,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external,
    plugins: [undiciOnDemand, lazyRequires, lazyAssert],
    legalComments: 'none',
    metafile: true,
    write: false,
    logLevel: 'warning',
  });
  const output = Object.values(result.metafile.outputs)[0];
  const bundled = Object.entries(output?.inputs ?? {})
    .filter(([, i]) => i.bytesInOutput > 0)
    .map(([f]) => f);
  // `import { z } from 'zod'` defeats tree shaking (all of zod, its 60 locales too, ~800 kB); `import * as z` keeps ~200 kB.
  const locales = bundled.filter((f) => /node_modules\/zod\/v4\/locales\/(?!en\.js|index\.js)/.test(f));
  if (locales.length > 0) throw new Error(`zod is bundled whole (${locales.length} locales): import it as \`import * as z from 'zod'\``);
  const out = result.outputFiles?.[0];
  if (out === undefined) throw new Error('esbuild wrote nothing');
  // Written inside the wrapper node puts a CommonJS file in (launch.ts compiles it as it is; the
  // wrapping there cost one more copy of the 1.2 MB source in memory until a full GC). No #! line:
  // inside a function it is a syntax error.
  writeFileSync(BUNDLE, `(function (exports, require, module, __filename, __dirname) { ${asciiOnly(out.text.replace(/^#!.*\n/, ''))}\n})`);
  await build({
    entryPoints: [join(ROOT, 'src', 'launch.ts')],
    outfile: LAUNCH,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    logLevel: 'warning',
  });
  writeFileSync(LAUNCH, readFileSync(LAUNCH), { mode: 0o755 });
  writeCodeCache();
}

/**
 * The code cache: the bundle run with --check (configuration parsed, nothing started) in a child
 * node with no options (V8 refuses a cache made under other flags), which writes the bytecode of
 * every function that ran as it exits. Run without GUARDIAN_URL, so that --check also validates the
 * embedded guardian's policy and the cache holds that start's code too (+135 KB of cache; start-up
 * bench, 7 rounds: embedded guardian 317 -> 281 ms to the first call, GUARDIAN_URL 275 -> 271 ms);
 * with GUARDIAN_URL where the default policy file is not there.
 */
function writeCodeCache(): void {
  rmSync(CODE_CACHE, { force: true });
  const guardian = existsSync(join(ROOT, 'config', 'policy.json')) ? '' : ", GUARDIAN_URL: 'http://127.0.0.1:9'";
  const writer = `const launch = require(${JSON.stringify(LAUNCH)});
const script = launch.compileBundle(false);
process.on('exit', () => require('node:fs').writeFileSync(launch.CODE_CACHE, script.createCachedData()));
// Not the main module here: the bundle only defines main() (and replaces the loader's exports with its own).
launch.runBundle(script);
require(${JSON.stringify(LAUNCH)}).main({ UPSTREAM_URL: 'http://127.0.0.1:9'${guardian} }, ['--check']);`;
  const r = spawnSync(process.execPath, ['-e', writer], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the code cache run failed (${r.status ?? r.signal}): ${r.stderr}`);
}

if (require.main === module) {
  bundle().catch((err: unknown) => {
    process.stderr.write(`bundle: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
