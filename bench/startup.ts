/**
 * Start-up phase: spawn to first served call, and idle RSS, of what `npm start` runs (`node
 * dist/a2a-guard.js`, the bundled proxy run with its code cache, with the admin server) against a bare node:http server
 * (bench/bare-server.ts), in interleaved rounds. The clock starts at spawn(); the load generator then tries the call every
 * millisecond on a fresh connection until it is answered: the bare server answers anything, the
 * proxy must answer a SendMessage with the agent's result (guardian and agent round trips included).
 * Idle RSS: /proc/<pid>/status VmRSS 2 s after that first call, and (last round) once settled,
 * SETTLED_MS after it: V8 gives back the young generation that module loading grew only after some
 * idle time (its memory reducer), so the 2 s figure is the one right after start and the settled one
 * what an idle sidecar holds. The settled sample runs while the next subjects start (the process is idle).
 * With BENCH_COMPARE (another checkout, built), what its `npm start` runs is one more subject (GUARDIAN_URL), in the same rounds.
 */
import http from 'node:http';
import path from 'node:path';
import { UNARY_BODY, UNARY_HEADERS, RPC_PATH } from './clients';
import { freePort, median, procCpuMs, procRss, progress, rotated, sleep, spawnNode, startCommand, type Pinning } from './lib';

export type StartupSubject = 'bare node:http' | 'a2a-guard (GUARDIAN_URL)' | 'a2a-guard (embedded guardian)' | 'a2a-guard@compare (GUARDIAN_URL)';
export const STARTUP_SUBJECTS: readonly StartupSubject[] = ['bare node:http', 'a2a-guard (GUARDIAN_URL)', 'a2a-guard (embedded guardian)'];
export const startupSubjects = (compare: string | undefined): readonly StartupSubject[] =>
  compare === undefined ? STARTUP_SUBJECTS : [...STARTUP_SUBJECTS, 'a2a-guard@compare (GUARDIAN_URL)'];

/** How long after the first served call the settled RSS is read. */
export const SETTLED_MS = 15_000;

export interface StartupResult {
  readonly ms: number[];
  readonly rss: number[];
  /** CPU time the process used up to its first served call: what start-up costs, whatever else the machine runs. */
  readonly cpu: number[];
  readonly settled: number[];
  readonly failures: string[];
}

function tryCall(port: number, a2a: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    const body = a2a ? UNARY_BODY : '';
    const req = http.request(
      { host: '127.0.0.1', port, path: RPC_PATH, method: 'POST', agent: false, headers: { ...UNARY_HEADERS, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(res.statusCode === 200 && (!a2a || text.includes('"result"'))));
        res.on('error', () => resolve(false));
      },
    );
    req.on('error', () => resolve(false));
    req.end(body);
  });
}

async function once(
  subject: StartupSubject,
  agentUrl: string,
  guardianUrl: string,
  cores: string | undefined,
  settle: boolean,
  compare: string | undefined,
): Promise<{ ms: number; cpu: number; rss: number; settled: Promise<number> | undefined }> {
  const port = await freePort();
  const adminPort = await freePort();
  const bare = subject === 'bare node:http';
  const start = startCommand(subject === 'a2a-guard@compare (GUARDIAN_URL)' ? compare : undefined);
  const script = bare ? path.join(__dirname, 'bare-server.js') : start.script;
  const childEnv: Record<string, string | undefined> = bare
    ? { PORT: String(port), HOST: '127.0.0.1' }
    : {
        PORT: String(port),
        HOST: '127.0.0.1',
        ADMIN_PORT: String(adminPort),
        ADMIN_HOST: '127.0.0.1',
        UPSTREAM_URL: agentUrl,
        LOG_LEVEL: 'info',
        GUARDIAN_URL: subject === 'a2a-guard (embedded guardian)' ? undefined : guardianUrl,
        ROLE: 'server',
      };
  const t0 = process.hrtime.bigint();
  const proc = spawnNode(script, childEnv, cores, bare ? [] : start.nodeArgs, 'plain');
  let stderr = '';
  proc.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-2000)));
  let exited = false;
  const gone = new Promise<void>((r) =>
    proc.once('exit', () => {
      exited = true;
      r();
    }),
  );
  const stop = async () => {
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(t);
  };
  let settled: Promise<number> | undefined;
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (await tryCall(port, !bare)) break;
      if (exited) throw new Error(`${subject} exited before serving: ${stderr}`);
      if (Date.now() > deadline) throw new Error(`${subject} served nothing within 30 s: ${stderr}`);
      await sleep(1);
    }
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const cpu = procCpuMs(proc.pid);
    await sleep(2000);
    const rss = procRss(proc.pid);
    if (settle) {
      settled = sleep(SETTLED_MS - 2000)
        .then(() => procRss(proc.pid))
        .finally(stop);
    }
    return { ms, cpu, rss, settled };
  } finally {
    if (settled === undefined) await stop();
  }
}

export async function startupPhase(
  rounds: number,
  agentUrl: string,
  guardianUrl: string,
  pin: Pinning,
  compare: string | undefined,
): Promise<Map<StartupSubject, StartupResult>> {
  const subjects = startupSubjects(compare);
  const out = new Map<StartupSubject, StartupResult>(subjects.map((s) => [s, { ms: [], rss: [], cpu: [], settled: [], failures: [] }]));
  const settling: Promise<void>[] = [];
  progress(`phase: start-up (${rounds} rounds)`);
  for (let r = 0; r < rounds; r++) {
    for (const s of rotated(subjects, r)) {
      const row = out.get(s) as StartupResult;
      try {
        const x = await once(s, agentUrl, guardianUrl, pin.proxy, r === rounds - 1, compare);
        row.ms.push(x.ms);
        row.rss.push(x.rss);
        row.cpu.push(x.cpu);
        if (x.settled !== undefined)
          settling.push(
            x.settled.then(
              (v) => void row.settled.push(v),
              (err: unknown) => void row.failures.push(String(err)),
            ),
          );
      } catch (err) {
        row.failures.push((err as Error).message.slice(0, 300));
      }
    }
  }
  await Promise.all(settling);
  return out;
}

export const startupMedian = (r: StartupResult | undefined, k: 'ms' | 'cpu' | 'rss' | 'settled'): number => (r === undefined ? NaN : median(r[k]));
