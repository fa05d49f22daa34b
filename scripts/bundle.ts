/**
 * `npm run build`, second step: dist/a2a-guard.js, the proxy (src/main.ts) in one file, which
 * `npm start`, the image and the bench run. dist/src/main.js stays the same program, file by file.
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
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';

/** The repository: this file runs as dist/scripts/bundle.js (or scripts/bundle.ts under jest). */
const ROOT = basename(dirname(__dirname)) === 'dist' ? join(__dirname, '..', '..') : join(__dirname, '..');
export const BUNDLE = join(ROOT, 'dist', 'a2a-guard.js');

/** Dependencies the proxy loads at start with the default configuration: bundled. */
const LOADED_AT_START = new Set(['pino', 'prom-client', '@opentelemetry/api', 'undici', 'zod', 'ipaddr.js']);

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
    plugins: [undiciOnDemand],
    legalComments: 'none',
    metafile: true,
    write: false,
    logLevel: 'warning',
  });
  const output = Object.values(result.metafile.outputs)[0];
  const bundled = Object.entries(output?.inputs ?? {}).filter(([, i]) => i.bytesInOutput > 0).map(([f]) => f);
  // `import { z } from 'zod'` defeats tree shaking (all of zod, its 60 locales too, ~800 kB); `import * as z` keeps ~200 kB.
  const locales = bundled.filter((f) => /node_modules\/zod\/v4\/locales\/(?!en\.js|index\.js)/.test(f));
  if (locales.length > 0) throw new Error(`zod is bundled whole (${locales.length} locales): import it as \`import * as z from 'zod'\``);
  const out = result.outputFiles?.[0];
  if (out === undefined) throw new Error('esbuild wrote nothing');
  writeFileSync(BUNDLE, `#!/usr/bin/env node\n${asciiOnly(out.text.replace(/^#!.*\n/, ''))}`, { mode: 0o755 });
}

if (require.main === module) {
  bundle().catch((err: unknown) => {
    process.stderr.write(`bundle: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
