/**
 * Summarise a V8 `.cpuprofile` (written by `node --cpu-prof`): top functions by self time, self time
 * by file / package, and inclusive time of the project's own functions.
 *
 *   node dist/bench/profile.js <file.cpuprofile> [topN]
 *
 * run.ts calls `summarizeProfile` when BENCH_PROFILE=1.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SourceMap } from 'node:module';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
  readonly columnNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: number[];
}
interface CpuProfile {
  readonly nodes: ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: number[];
  readonly timeDeltas: number[];
}

const ROOT = path.resolve(__dirname, '..', '..');

function shortUrl(url: string): string {
  let u = url.replace(/^file:\/\//, '');
  if (u.startsWith(ROOT + '/')) u = u.slice(ROOT.length + 1);
  return u;
}

/** Where a frame's code lives: a project file, an npm package, node core, or V8/native. */
function area(url: string): string {
  const u = shortUrl(url);
  if (u === '') return '(native / V8)';
  if (u.startsWith('node:')) return 'node core (' + u.replace(/^node:(internal\/)?/, '').split('/')[0] + ')';
  const nm = u.lastIndexOf('node_modules/');
  if (nm !== -1) {
    const rest = u.slice(nm + 'node_modules/'.length).split('/');
    return 'npm ' + (rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? '?'));
  }
  return u.replace(/^dist\//, '').replace(/\.js$/, '.ts');
}

const maps = new Map<string, SourceMap | null>();

/** dist/...js:line -> the TypeScript source and line, through the compiler's source map. */
function original(file: string, line: number, column: number): string | undefined {
  let sm = maps.get(file);
  if (sm === undefined) {
    try {
      sm = new SourceMap(JSON.parse(fs.readFileSync(`${file}.map`, 'utf8')));
    } catch {
      sm = null;
    }
    maps.set(file, sm);
  }
  const e = sm?.findEntry(line, column) as { originalSource?: string; originalLine?: number } | undefined;
  if (e?.originalSource === undefined || e.originalLine === undefined) return undefined;
  return `${path.relative(ROOT, path.resolve(path.dirname(file), e.originalSource))}:${e.originalLine + 1}`;
}

function label(f: CallFrame): string {
  const name = f.functionName === '' ? '(anonymous)' : f.functionName;
  const u = shortUrl(f.url);
  if (u === '') return name;
  if (u.startsWith('dist/')) {
    const o = original(path.join(ROOT, u), f.lineNumber, f.columnNumber);
    if (o !== undefined) return `${name}  ${o}`;
  }
  return `${name}  ${u}:${f.lineNumber + 1}`;
}

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

export interface ProfileSummary {
  readonly text: string;
  readonly busyMs: number;
}

/**
 * `window` (µs of CLOCK_MONOTONIC, the clock of process.hrtime and of V8's profile timestamps on
 * Linux) keeps only the samples taken while the measured load ran: start-up and warm-up are left out.
 */
export function summarizeProfile(file: string, topN = 25, window?: { fromUs: number; toUs: number }, requests?: number): ProfileSummary {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  let inWindow = 0;
  if (window !== undefined) {
    let t = prof.startTime;
    for (let i = 0; i < prof.samples.length; i++) {
      t += prof.timeDeltas[i] ?? 0;
      if (t >= window.fromUs && t <= window.toUs) inWindow++;
    }
    // Clocks that do not line up (not Linux): fall back to the whole profile.
    if (inWindow === 0) window = undefined;
  }
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of prof.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const areas = new Map<string, number>();
  let idle = 0;
  let gc = 0;
  let program = 0;
  let total = 0;
  let t = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i] ?? 0;
    if (window !== undefined && (t < window.fromUs || t > window.toUs)) continue;
    const id = prof.samples[i] as number;
    const dt = (prof.timeDeltas[i + 1] ?? 0) / 1000; // ms; delta i+1 is the time spent in sample i
    const node = byId.get(id);
    if (node === undefined) continue;
    total += dt;
    const fn = node.callFrame.functionName;
    if (fn === '(idle)') {
      idle += dt;
      continue;
    }
    if (fn === '(garbage collector)') gc += dt;
    if (fn === '(program)') program += dt;
    const key = label(node.callFrame);
    self.set(key, (self.get(key) ?? 0) + dt);
    const a = SPECIAL.has(fn) ? fn : area(node.callFrame.url);
    areas.set(a, (areas.get(a) ?? 0) + dt);
    // Inclusive time of project functions: each distinct frame on the stack once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)?.callFrame;
      if (f === undefined) break;
      if (!/^dist\/(src|bench)\//.test(shortUrl(f.url))) continue;
      const k = label(f);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + dt);
    }
  }
  const busy = total - idle;
  const pct = (v: number) => `${((100 * v) / busy).toFixed(1).padStart(5)} %`;
  const ms = (v: number) => (requests === undefined ? `${v.toFixed(1).padStart(8)} ms` : `${((v * 1000) / requests).toFixed(1).padStart(7)} µs/req`);
  const sorted = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1]);
  const lines: string[] = [];
  lines.push(
    `profile ${path.basename(file)}${window === undefined ? ' (whole process)' : ' (measured load only)'}: ${(total / 1000).toFixed(2)} s sampled, ${(busy / 1000).toFixed(2)} s busy ` +
      `(GC ${pct(gc).trim()}, "(program)" = native/unattributed ${pct(program).trim()}); percentages are of busy time`,
  );
  lines.push('', `top ${topN} functions by self time:`);
  for (const [k, v] of sorted(self).slice(0, topN)) lines.push(`${ms(v)} ${pct(v)}  ${k}`);
  lines.push('', 'self time by file / package:');
  for (const [k, v] of sorted(areas).slice(0, topN)) lines.push(`${ms(v)} ${pct(v)}  ${k}`);
  lines.push('', 'inclusive time of project functions (src/, bench/):');
  for (const [k, v] of sorted(incl).slice(0, topN)) lines.push(`${ms(v)} ${pct(v)}  ${k}`);
  return { text: lines.join('\n'), busyMs: busy };
}

if (require.main === module) {
  const file = process.argv[2];
  if (file === undefined) {
    process.stderr.write('usage: node dist/bench/profile.js <file.cpuprofile> [topN]\n');
    process.exit(2);
  }
  process.stdout.write(summarizeProfile(file, Number(process.argv[3] ?? 25)).text + '\n');
}
