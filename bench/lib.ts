/**
 * Shared machinery of `npm run bench`: child processes with their own CPU/RSS over IPC, pinning,
 * statistics and table formatting. The phases (run.ts, startup.ts, concurrent.ts, memory.ts) use it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { ReadyMessage, StatsReply, StatsRequest } from './ipc';

export const env = process.env;
export const argv = process.argv.slice(2);
export const num = (name: string, def: number): number => (env[name] !== undefined && env[name] !== '' ? Number(env[name]) : def);
/** The repository root (dist/bench/.. /..). */
export const ROOT = path.resolve(__dirname, '..', '..');

/* ---- child processes ---- */

/** What `npm start` runs (package.json `scripts.start`, `exec node [node options] FILE`): the start-up phase measures that. */
export function startCommand(root = ROOT): { readonly script: string; readonly nodeArgs: string[] } {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const words = (pkg.scripts['start'] ?? '').split(/\s+/).filter((w) => w !== '' && w !== 'exec');
  const script = words.pop();
  if (words[0] !== 'node' || script === undefined) throw new Error(`npm start is not "exec node [options] FILE": ${pkg.scripts['start']}`);
  return { script: path.join(root, script), nodeArgs: words.slice(1) };
}

export interface Child {
  readonly name: string;
  readonly url: string;
  readonly proc: ChildProcess;
  stats(): Promise<StatsReply>;
  stop(): Promise<void>;
}

export const live = new Set<ChildProcess>();
let stopping = false;

export function killAll(signal: NodeJS.Signals = 'SIGTERM'): void {
  for (const p of live) {
    try {
      p.kill(signal);
    } catch {
      /* already gone */
    }
  }
}
process.on('exit', () => killAll('SIGKILL'));
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    stopping = true;
    process.stderr.write(`\nbench: ${sig}, stopping children\n`);
    killAll('SIGTERM');
    setTimeout(() => process.exit(130), 300).unref();
  });
}

/** `node [nodeArgs] script`, under `taskset -c cores` when given. */
export function spawnNode(
  script: string,
  extraEnv: Record<string, string | undefined>,
  cores: string | undefined,
  nodeArgs: string[] = [],
  stdio: 'ipc' | 'plain' = 'ipc',
): ChildProcess {
  const args = [...nodeArgs, script];
  const e = { ...env, ...extraEnv };
  for (const k of Object.keys(e)) if (e[k] === undefined) delete e[k];
  const io = stdio === 'ipc' ? (['ignore', 'ignore', 'pipe', 'ipc'] as const) : (['ignore', 'ignore', 'pipe'] as const);
  const proc =
    cores === undefined
      ? spawn(process.execPath, args, { env: e, stdio: [...io], cwd: ROOT })
      : spawn('taskset', ['-c', cores, process.execPath, ...args], { env: e, stdio: [...io], cwd: ROOT });
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  return proc;
}

export function startChild(name: string, file: string, extraEnv: Record<string, string>, cores: string | undefined, nodeArgs: string[] = []): Promise<Child> {
  const proc = spawnNode(path.isAbsolute(file) ? file : path.join(__dirname, file), extraEnv, cores, nodeArgs);
  let stderr = '';
  proc.stderr?.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString('utf8')).slice(-4000);
  });
  let exited = false;
  let expectedExit = false;
  const exitWaiters: Array<() => void> = [];
  proc.once('exit', (code, sig) => {
    exited = true;
    for (const w of exitWaiters.splice(0)) w();
    if (!expectedExit && !stopping) process.stderr.write(`bench: ${name} exited unexpectedly (${code ?? sig})\n${stderr}\n`);
  });
  let seq = 0;
  const pending = new Map<number, (s: StatsReply) => void>();
  return new Promise<Child>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 30 s\n${stderr}`)), 30_000);
    proc.once('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? sig}) before it was ready\n${stderr}`));
    });
    proc.on('message', (m: ReadyMessage | StatsReply) => {
      if (m.t === 'stats') {
        pending.get(m.seq)?.(m);
        pending.delete(m.seq);
        return;
      }
      clearTimeout(timer);
      resolve({
        name,
        url: m.url,
        proc,
        stats: () =>
          new Promise<StatsReply>((res, rej) => {
            if (exited) return rej(new Error(`${name} is not running\n${stderr}`));
            const s = ++seq;
            const t = setTimeout(() => rej(new Error(`${name} did not answer a stats request`)), 30_000);
            pending.set(s, (r) => {
              clearTimeout(t);
              res(r);
            });
            const req: StatsRequest = { t: 'stats', seq: s };
            proc.send(req);
          }),
        stop: () =>
          new Promise<void>((res) => {
            expectedExit = true;
            if (exited) return res();
            exitWaiters.push(res);
            proc.kill('SIGTERM');
            setTimeout(() => {
              if (!exited) proc.kill('SIGKILL');
            }, 10_000).unref();
          }),
      });
    });
  });
}

/* ---- machine facts and pinning ---- */

export interface Pinning {
  readonly load?: string;
  readonly proxy?: string;
  readonly agent?: string;
  readonly guardian?: string;
  /** Every core, for phases that let all processes share the machine. */
  readonly all?: string;
  readonly text: string;
}

export function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1]) return m[1].trim();
  } catch {
    /* not Linux */
  }
  return os.cpus()[0]?.model ?? 'unknown';
}

/** Which code was measured (read-only git queries). */
export function codeVersion(): string {
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  if (head.status !== 0) return 'unknown (no git)';
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' });
  const n = dirty.stdout.split('\n').filter((l) => l.trim() !== '').length;
  return `${head.stdout.trim()}${n > 0 ? ` + ${n} uncommitted change(s) under src/` : ''}`;
}

export function nproc(): number {
  const r = spawnSync('nproc', [], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : os.availableParallelism();
}

export function choosePinning(cores: number): Pinning {
  if (env.BENCH_PIN === '0') return { text: 'none (BENCH_PIN=0)' };
  if (cores < 2) return { text: 'none (1 core: load generator and servers share it; numbers flatter nobody but are noisy)' };
  if (spawnSync('taskset', ['-V']).status !== 0) return { text: 'none (taskset not found; install util-linux)' };
  // Pin every thread of this process (the load generator) to core 0.
  const self = spawnSync('taskset', ['-a', '-cp', '0', String(process.pid)], { encoding: 'utf8' });
  if (self.status !== 0) return { text: `none (taskset failed: ${self.stderr.trim()})` };
  const all = `0-${cores - 1}`;
  if (cores >= 4) {
    return { load: '0', proxy: '1', agent: '2', guardian: '3', all, text: 'taskset: load generator core 0, proxy core 1, agent core 2, guardian core 3' };
  }
  const rest = cores === 2 ? '1' : `1-${cores - 1}`;
  return {
    load: '0',
    proxy: rest,
    agent: rest,
    guardian: rest,
    all,
    text: `taskset: load generator on core 0; agent, guardian and proxy share core(s) ${rest}`,
  };
}

/** Move a running process (all its threads) to other cores; false when pinning is off. */
export function setCores(pid: number | undefined, cores: string | undefined): boolean {
  if (pid === undefined || cores === undefined) return false;
  return spawnSync('taskset', ['-a', '-cp', cores, String(pid)], { stdio: 'ignore' }).status === 0;
}

/** Resident set size of any process, from /proc (bytes; NaN where /proc is missing). */
export function procRss(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1] === undefined ? NaN : Number(m[1]) * 1024;
  } catch {
    return NaN;
  }
}

/** CPU time (user + system) a process has used so far, in ms (/proc/<pid>/stat; clock ticks of 10 ms). */
export function procCpuMs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm)": state is the first, utime the 12th, stime the 13th.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
const CLOCK_TICKS = (() => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : 100;
})();

/** A port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/* ---- statistics ---- */

export function sortedCopy(xs: ArrayLike<number>): Float64Array {
  return Float64Array.from(xs).sort();
}
/** Nearest-rank percentile of a sorted array. */
export function pct(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}
export function median(xs: readonly number[]): number {
  return pct(sortedCopy(xs), 0.5);
}
export function concat(arrs: readonly Float64Array[]): Float64Array {
  const out = new Float64Array(arrs.reduce((s, a) => s + a.length, 0));
  let o = 0;
  for (const a of arrs) {
    out.set(a, o);
    o += a.length;
  }
  return out.sort();
}

export function rotated<T>(xs: readonly T[], r: number): T[] {
  const k = r % xs.length;
  return [...xs.slice(k), ...xs.slice(0, k)];
}

/* ---- formatting ---- */

export const f = (v: number, d = 2): string => (Number.isFinite(v) ? v.toFixed(d) : '—');
export const fx = (v: number): string => (Number.isFinite(v) ? `${v.toFixed(2)}x` : '—');
export const sign = (v: number, d = 3): string => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${v.toFixed(d)}` : '—');
/** A signed value with a unit, or a bare dash when it was not measured. */
export const signU = (v: number, unit: string, d = 3): string => (Number.isFinite(v) ? `${sign(v, d)} ${unit}` : '—');
export const mb = (b: number): string => (Number.isFinite(b) ? `${(b / 1048576).toFixed(1)} MB` : '—');
export function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(w[i] ?? 0) : c.padStart(w[i] ?? 0))).join(' | ')} |`;
  return [line(head), `|${w.map((x, i) => (i === 0 ? '-'.repeat(x + 2) : `${'-'.repeat(x + 1)}:`)).join('|')}|`, ...rows.map(line)].join('\n');
}
export const log = (s = ''): void => void process.stdout.write(s + '\n');
export const progress = (s: string): void => void process.stderr.write(s + '\n');
export const verdict = (v: number, ok: boolean): string => (Number.isNaN(v) ? 'not run' : ok ? 'PASS' : 'MISS');
