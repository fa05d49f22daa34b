/**
 * Phase `instructions` of `npm run bench` (not a default phase: ~10 min, ~15 with BENCH_COMPARE):
 * user-space instructions per unary call, counted by valgrind's callgrind, of the minimal undici
 * proxy and of a2a-guard (and a2a-guard@compare) under the same load. CPU time on a shared 2-core VM
 * moves by 2x from round to round; instruction counts do not depend on what else runs.
 *
 * Per subject, two runs under valgrind (every thread counted: the JIT compiler and GC helpers
 * too), each a fresh process: the warm-up alone (BENCH_CG_WARM calls), and the warm-up followed by
 * BENCH_CG_CALLS calls; (second total - first total) / BENCH_CG_CALLS is the cost per call once the
 * start, the warm-up and the exit are subtracted. The warm-up is long on purpose: V8 still optimises
 * a2a-guard's code through its first ~6,000 calls, and a short one counts compilation as per-call
 * work (1,500 calls: 1,035-1,308 k per call for the same code). Even so, the two processes of a pair do
 * not warm up alike (when V8 compiles, when GCs fall): repeat the phase before reading a difference
 * under ~25 %. That difference is a fixed amount per run, so 20,000 counted calls (not 4,000) spread it:
 * the same code, an hour apart, gave 0.84x the baseline with 4,000 (358 k against 428 k) and 1.06x with
 * 20,000 (393 k against 372 k), the figure the load phase shows on a quiet machine.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadRound, post, RPC_PATH, UNARY_BODY, UNARY_HEADERS } from './clients';
import { fx, progress, table, verdict } from './lib';

export interface InstructionsResult {
  readonly lines: string[];
  /** a2a-guard / baseline, NaN when not run. */
  readonly ratio: number;
}

interface Subject {
  readonly name: string;
  readonly script: string;
  readonly env: Record<string, string>;
}

/** Total instructions of one run: `calls` calls after `warm` calls, under callgrind, to the process's exit. */
async function countRun(s: Subject, warm: number, calls: number, connections: number, dir: string): Promise<number> {
  const out = path.join(dir, `callgrind.${s.name.replace(/[^a-z0-9]+/gi, '-')}.${warm}.${calls}.out`);
  const p = spawn('valgrind', ['--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${out}`, process.execPath, s.script], {
    env: { ...process.env, ...s.env },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    cwd: path.dirname(s.script),
  });
  let stderr = '';
  p.stderr?.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString('utf8')).slice(-3000);
  });
  const exited = new Promise<number | null>((resolve) => p.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    p.on('message', (m: { t?: string; url?: string }) => {
      if (m.t === 'ready' && m.url !== undefined) resolve(m.url);
    });
    void exited.then((code) => reject(new Error(`${s.name} under valgrind exited (${code}) before it was ready\n${stderr}`)));
  });
  // Under valgrind a call takes ~50x longer, and the first ones (cold code, on a busy machine) several seconds:
  // a few calls one by one first, and a generous timeout, so no call is abandoned (which would count other work).
  for (let i = 0; i < 20; i++) await post(url, UNARY_BODY, UNARY_HEADERS, false);
  const w = await loadRound(url, warm - 20, connections, UNARY_BODY, RPC_PATH, 300);
  const m = calls > 0 ? await loadRound(url, calls, connections, UNARY_BODY, RPC_PATH, 300) : { bad: 0 };
  p.kill('SIGTERM');
  await exited;
  if (w.bad + m.bad > 0) throw new Error(`${s.name} under valgrind: ${w.bad + m.bad} failed calls\n${stderr}`);
  const text = fs.readFileSync(out, 'utf8');
  fs.rmSync(out, { force: true });
  const total = /^(?:summary|totals):\s*(\d+)/m.exec(text)?.[1];
  if (total === undefined) throw new Error(`${s.name}: no instruction total in ${out}`);
  return Number(total);
}

export async function instructionsPhase(
  agentUrl: string,
  guardianUrl: string,
  proxyEnv: Record<string, string>,
  compare: string | undefined,
  opts: { readonly warm: number; readonly calls: number; readonly connections: number },
): Promise<InstructionsResult> {
  const lines = [
    `## user-space instructions per unary call (valgrind callgrind; warm-up ${opts.warm} calls subtracted, ${opts.calls} calls counted, ${opts.connections} connections)`,
    '',
  ];
  const probe = spawnSync('valgrind', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    lines.push('skipped: valgrind is not installed (apt-get install valgrind), so nothing was counted');
    return { lines, ratio: NaN };
  }
  const here = __dirname;
  const subjects: Subject[] = [
    { name: 'baseline', script: path.join(here, 'baseline-proxy.js'), env: { PORT: '0', UPSTREAM_URL: agentUrl, GUARDIAN_URL: guardianUrl } },
    { name: 'a2a-guard', script: path.join(here, 'proxy-child.js'), env: proxyEnv },
    ...(compare === undefined ? [] : [{ name: 'a2a-guard@compare', script: path.join(compare, 'dist/bench/proxy-child.js'), env: proxyEnv }]),
  ];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-callgrind-'));
  const perCall = new Map<string, number>();
  const totals = new Map<string, string>();
  try {
    for (const s of subjects) {
      progress(`instructions: ${s.name}, warm-up only (${probe.stdout.trim()})`);
      const a = await countRun(s, opts.warm, 0, opts.connections, dir);
      progress(`instructions: ${s.name}, warm-up + ${opts.calls} calls`);
      const b = await countRun(s, opts.warm, opts.calls, opts.connections, dir);
      perCall.set(s.name, (b - a) / opts.calls);
      totals.set(s.name, `${(a / 1e9).toFixed(2)} / ${(b / 1e9).toFixed(2)} G`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const base = perCall.get('baseline') as number;
  const k = (v: number) => `${Math.round(v / 1000).toLocaleString('en-US')} k`;
  lines.push(
    table(
      ['subject', 'instructions per call', 'vs baseline', 'totals: warm-up run / full run'],
      subjects.map((s) => {
        const v = perCall.get(s.name) as number;
        return [s.name, k(v), fx(v / base), totals.get(s.name) as string];
      }),
    ),
  );
  // Two processes do not warm up alike (when V8 compiles, when GCs fall): the same code has given figures ~25 % apart.
  lines.push(
    '',
    'one pair of runs per subject: differences under ~25 % between subjects are within run-to-run variation; repeat the phase before reading them',
  );
  const ratio = (perCall.get('a2a-guard') as number) / base;
  lines.push('', `target: a2a-guard <= 1.0x the minimal undici proxy: ${fx(ratio)} ${verdict(ratio, ratio <= 1.0)}`);
  return { lines, ratio };
}
