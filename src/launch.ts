#!/usr/bin/env node
/**
 * dist/a2a-guard.js, what `npm start` and the image run (scripts/bundle.ts builds it from this file):
 * runs the bundled proxy, dist/a2a-guard.bundle.js, with the V8 code cache the build made beside it
 * (dist/a2a-guard.bundle.cache: the bytecode of the functions a start runs, from a `--check` run).
 * V8 then deserialises that code instead of parsing and compiling it: A/B in one `npm run bench`
 * (2026-11-29, docs/performance.md), CPU to the first served call 340 ms with it, 370 ms without (8 %). A cache that
 * is missing, or made by another node or with other V8 flags, is ignored by V8: the bundle is then
 * compiled as usual.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

export const BUNDLE = path.join(__dirname, 'a2a-guard.bundle.js');
export const CODE_CACHE = path.join(__dirname, 'a2a-guard.bundle.cache');

/** The bundle compiled as node compiles a CommonJS file (the same wrapper), with the code cache when there is one. */
export function compileBundle(cache: boolean): vm.Script {
  let cachedData: Buffer | undefined;
  try {
    cachedData = cache ? fs.readFileSync(CODE_CACHE) : undefined;
  } catch {
    cachedData = undefined;
  }
  // The build wrote the bundle already inside that wrapper: no second 1.2 MB copy of the source to build here.
  return new vm.Script(fs.readFileSync(BUNDLE, 'latin1'), { filename: BUNDLE, ...(cachedData === undefined ? {} : { cachedData }) });
}

/**
 * Run it as if node had loaded it as the main module: `require.main === module` (src/main.ts starts
 * the proxy then), and its requires resolve from its own directory (packages left out of it, in node_modules).
 */
export function runBundle(script: vm.Script): void {
  const run = script.runInThisContext() as (exports: object, req: NodeJS.Require, mod: NodeJS.Module, filename: string, dirname: string) => void;
  run(module.exports, createRequire(BUNDLE), module, BUNDLE, path.dirname(BUNDLE));
}

if (require.main === module) runBundle(compileBundle(true));
