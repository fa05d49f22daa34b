/**
 * Phase 5 of `npm run bench` (--profile): V8 and perf profiles of a2a-guard and of the baseline.
 */
import { spawn, spawnSync } from 'node:child_process';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { loadRound } from './clients';
import { live, progress, setCores, sleep, startChild, type Child, type Pinning } from './lib';
import { summarizeProfile } from './profile';

/**
 * Profiles of a2a-guard and of the baseline under the same unary load, in separate processes so the
 * measured rows stay unprofiled:
 *   - V8 `--cpu-prof` (function-level JS attribution; V8 samples wall-clock time, so time the
 *     process spent preempted lands on whatever native frame was on the stack, mostly `writev`);
 *   - when `perf` works (Linux, root or perf_event_paranoid <= 1): `perf record -e cpu-clock` of the
 *     process with `--perf-basic-prof`, i.e. on-CPU time only, kernel included.
 */
export async function runProfiles(
  agent: Child,
  guardian: Child,
  pin: Pinning,
  proxyEnv: (inspect: boolean) => Record<string, string>,
  PROFILE_REQUESTS: number,
  CONNECTIONS: number,
): Promise<string[]> {
  const agentUrl = agent.url;
  const guardianUrl = guardian.url;
  const profiles: string[] = [];
  // Give the profiled proxy a core of its own: agent and guardian join the load generator. Otherwise
  // the wall-clock V8 profile books the time the proxy spends preempted by them on `writev`.
  const repin = pin.load !== undefined && pin.proxy === pin.agent;
  if (repin) {
    setCores(agent.proc.pid, pin.load);
    setCores(guardian.proc.pid, pin.load);
    profiles.push(`profiles: the profiled proxy runs alone on core(s) ${pin.proxy}; agent, guardian and load generator share core ${pin.load}`);
  }
  try {
    await profileRuns(agentUrl, guardianUrl, pin, proxyEnv, profiles, PROFILE_REQUESTS, CONNECTIONS);
  } finally {
    if (repin) {
      setCores(agent.proc.pid, pin.agent);
      setCores(guardian.proc.pid, pin.guardian);
    }
  }
  return profiles;
}

async function profileRuns(
  agentUrl: string,
  guardianUrl: string,
  pin: Pinning,
  proxyEnv: (inspect: boolean) => Record<string, string>,
  profiles: string[],
  PROFILE_REQUESTS: number,
  CONNECTIONS: number,
): Promise<void> {
  const dir = path.join(os.tmpdir(), `a2a-guard-bench-profiles-${process.pid}`);
  fs.mkdirSync(dir, { recursive: true });
  const subjects = [
    ['a2a-guard', 'proxy-child.js', proxyEnv(false)],
    ['baseline', 'baseline-proxy.js', { PORT: '0', UPSTREAM_URL: agentUrl, GUARDIAN_URL: guardianUrl }],
  ] as const;
  for (const [name, file, e] of subjects) {
    progress(`profiling ${name} (--cpu-prof) over ${PROFILE_REQUESTS} requests`);
    const profName = `${name}.cpuprofile`;
    const c = await startChild(`${name} (profiled)`, file, e, pin.proxy, [
      '--cpu-prof',
      '--cpu-prof-dir',
      dir,
      '--cpu-prof-name',
      profName,
      '--cpu-prof-interval',
      '100',
    ]);
    await loadRound(c.url, 2000, CONNECTIONS);
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    const r = await loadRound(c.url, PROFILE_REQUESTS, CONNECTIONS);
    const toUs = Number(process.hrtime.bigint() / 1000n);
    await c.stop();
    const sum = summarizeProfile(path.join(dir, profName), 30, { fromUs, toUs }, r.n);
    profiles.push(
      `## --cpu-prof of ${name}: ${r.n} unary requests (${CONNECTIONS} connections) after 2000 warm-up; ` +
        `${((sum.busyMs * 1000) / r.n).toFixed(1)} µs sampled busy time per request (wall-clock sampling: includes time preempted)\n` +
        `file: ${path.join(dir, profName)}\n\n${sum.text}`,
    );
  }
  if (spawnSync('perf', ['--version']).status !== 0) {
    profiles.push('## perf: not available (install linux-perf for an on-CPU profile)');
    return;
  }
  for (const [name, file, e] of subjects) {
    progress(`profiling ${name} (perf, on-CPU) over ${PROFILE_REQUESTS} requests`);
    const c = await startChild(`${name} (perf)`, file, e, pin.proxy, ['--perf-basic-prof-only-functions']);
    await loadRound(c.url, 2000, CONNECTIONS);
    const data = path.join(dir, `${name}.perf.data`);
    const rec = spawn(
      'perf',
      [...(process.env.BENCH_PERF_G === '1' ? ['record', '-g'] : ['record']), '-e', 'cpu-clock', '-F', '4999', '-p', String(c.proc.pid), '-o', data],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    live.add(rec);
    let recErr = '';
    rec.stderr?.on('data', (b: Buffer) => (recErr += b.toString('utf8')));
    const recDone = new Promise<void>((res) => rec.once('exit', () => res()));
    await sleep(500);
    const cpu0 = await c.stats();
    const r = await loadRound(c.url, PROFILE_REQUESTS, CONNECTIONS);
    const cpu1 = await c.stats();
    rec.kill('SIGINT');
    await recDone;
    live.delete(rec);
    await c.stop();
    const cpuUs = cpu1.user + cpu1.system - cpu0.user - cpu0.system;
    const mapFile = path.join(os.tmpdir(), `perf-${c.proc.pid}.map`);
    const report = (sort: string, limit: string) =>
      spawnSync('perf', ['report', '-i', data, '--stdio', '--no-children', '--sort', sort, '--percent-limit', limit], {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      })
        .stdout.split('\n')
        .filter((l) => l.trim() !== '' && !l.startsWith('#'))
        .map((l) =>
          l
            .replace(/\s+$/, '')
            .replace(/\/work\/main\/(dist\/)?/g, '')
            .replace(/^(\s*[\d.]+%)\s+/, '$1  '),
        )
        .slice(0, 40)
        .join('\n');
    // node --perf-basic-prof leaves /tmp/perf-<pid>.map behind; keep it with the data (perf report needs it back in /tmp).
    let mapNote = '';
    try {
      fs.renameSync(mapFile, path.join(dir, path.basename(mapFile)));
      mapNote = ` (JIT symbols: ${path.join(dir, path.basename(mapFile))}; copy to ${os.tmpdir()} for perf report)`;
    } catch {
      /* no map written */
    }
    profiles.push(
      `## perf (on-CPU, kernel included) of ${name}: ${r.n} unary requests; process.cpuUsage ${(cpuUs / r.n).toFixed(1)} µs/request ` +
        `(user ${((cpu1.user - cpu0.user) / r.n).toFixed(1)}, system ${((cpu1.system - cpu0.system) / r.n).toFixed(1)})\nfile: ${data}${mapNote}\n\n` +
        `by shared object:\n${report('dso', '0.5')}\n\ntop symbols (self):\n${report('sym', '0.4')}` +
        (recErr.includes('rror') ? `\nperf said: ${recErr.trim()}` : ''),
    );
  }
}
