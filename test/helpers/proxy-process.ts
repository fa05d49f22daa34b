/**
 * The proxy (or the reference guardian) as an operator runs it: `node dist/a2a-guard.js` (what
 * `npm start` and the image run: src/main.ts bundled, see scripts/bundle.ts) in a child process,
 * configured only by environment variables, its stdout JSON lines collected. Builds dist/ once when
 * missing (other tests run dist/src/main.js, the same program file by file). Every child is reaped
 * by `reapAll()` (call it in afterAll/afterEach).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freePort, unrefSleep, waitFor } from './net';
import { reap } from './process';

export const ROOT = path.resolve(__dirname, '../..');
export const MAIN = path.join(ROOT, 'dist/a2a-guard.js');
export const GUARDIAN_MAIN = path.join(ROOT, 'dist/src/guardian/main.js');
/** src/main.ts compiled file by file (the bundle's source, as `node dist/src/main.js` runs it). */
export const MAIN_FILES = path.join(ROOT, 'dist/src/main.js');

const children = new Set<ChildProcess>();

export function ensureBuilt(): void {
  const outputs = [MAIN, path.join(ROOT, 'dist/src/observe/tracing.js'), path.join(ROOT, 'packages/toolkit/dist/index.js')];
  if (!outputs.every((f) => fs.existsSync(f))) {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  }
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ChildRun {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** stdout's JSON lines (pino), parsed. */
  lines(): Array<Record<string, any>>;
  readonly exited: Promise<Exit>;
  /** Wait for the exit, at most `ms` (a process still running is killed and reported). */
  exitWithin(ms: number): Promise<Exit>;
}

/** Spawn `script` with exactly `env` (plus PATH) and `args`, on `node` (default: the Node running the tests), in `cwd` (default: the checkout). */
export function spawnNode(
  script: string,
  env: Record<string, string>,
  args: readonly string[] = [],
  node: string = process.execPath,
  cwd: string = ROOT,
): ChildRun {
  const child = spawn(node, [script, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    lines: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, any>),
    exited,
    async exitWithin(ms) {
      const r = await Promise.race([exited, unrefSleep(ms).then(() => 'timeout' as const)]);
      if (r === 'timeout') {
        child.kill('SIGKILL');
        throw new Error(`process still running after ${ms} ms\nstdout: ${out}\nstderr: ${err}`);
      }
      return r;
    },
  };
}

export interface ProxyRun extends ChildRun {
  readonly base: string;
  readonly admin: string;
  readonly port: number;
}

export interface ProxyProcessOptions {
  /** Node binary (default: the Node running the tests). */
  readonly node?: string;
  /** Working directory (default: the checkout). */
  readonly cwd?: string;
  readonly args?: readonly string[];
  /** The program (default: the bundle, MAIN). */
  readonly script?: string;
}

/**
 * Start the proxy (on `node`, default the Node running the tests; in `cwd`, default the checkout; with `args`) and wait until its
 * admin server and its listener answer. The second argument may instead be the options.
 */
export async function startProxyProcess(
  env: Record<string, string>,
  node?: string | ProxyProcessOptions,
  cwd?: string,
  args: readonly string[] = [],
): Promise<ProxyRun> {
  const o: ProxyProcessOptions = typeof node === 'object' ? node : { node, cwd, args };
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePorts(env, o);
    } catch (err) {
      // A port free a moment ago may be taken by another test process before the proxy binds it: pick new ones.
      if (attempt >= 3 || !(err instanceof PortTaken)) throw err;
    }
  }
}

class PortTaken extends Error {}

async function startOnFreePorts(env: Record<string, string>, o: ProxyProcessOptions): Promise<ProxyRun> {
  const port = await freePort();
  const adminPort = await freePort();
  const run = spawnNode(
    o.script ?? MAIN,
    { PORT: String(port), HOST: '127.0.0.1', ADMIN_PORT: String(adminPort), ADMIN_HOST: '127.0.0.1', PUSH_RELAY_PORT: '0', LOG_LEVEL: 'info', ...env },
    o.args,
    o.node,
    o.cwd,
  );
  const proxy: ProxyRun = { ...run, base: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}`, port };
  await waitFor(
    async () => {
      if (run.child.exitCode !== null) {
        const output = `proxy exited early (${run.child.exitCode}): ${run.stdout()}${run.stderr()}`;
        const taken = env.PORT === undefined && env.ADMIN_PORT === undefined && output.includes('EADDRINUSE');
        throw taken ? new PortTaken(output) : new Error(output);
      }
      try {
        const h = await fetch(`${proxy.admin}/healthz`);
        await h.body?.cancel();
        return h.ok && run.lines().some((l) => l.msg === 'a2a-guard listening');
      } catch {
        return false;
      }
    },
    20_000,
    'proxy up',
  );
  return proxy;
}

export async function reapAll(): Promise<void> {
  await Promise.all([...children].map(reap));
  children.clear();
}

/** A sample of the Prometheus text: the sum of `name`'s samples whose labels include `labels`. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have[l[1]!] = l[2]!;
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

export async function scrape(run: { admin: string }): Promise<string> {
  const r = await fetch(`${run.admin}/metrics`);
  return r.text();
}

/** Try a fresh TCP connection to 127.0.0.1:port: 'refused' or 'accepted'. */
export function tryConnect(port: number): Promise<'refused' | 'accepted'> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve('accepted');
    });
    s.once('error', () => resolve('refused'));
  });
}
