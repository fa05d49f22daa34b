/**
 * `npm run bench:stall`: the worst event-loop stall one hostile request causes in a real proxy process
 * (`node dist/a2a-guard.js`, the embedded guardian: GUARDIAN_URL unset, config/policy.json), per shape,
 * at the default limits (issue 31).
 *
 *   1. stall: each shape is posted (from a child process) BENCH_ROUNDS times; the proxy's own event-loop
 *      delay (perf_hooks, max) and the longest gaps of a 1 ms timer, measured in the proxy process by a
 *      preloaded probe (bench/stall-probe.ts); min and median over the rounds, and the load average;
 *   2. where: one more call per shape with the probe's CPU profile of the main thread (100 µs samples): the
 *      longest busy stretches (no idle sample; tasks that follow each other at once, as the turns of one large
 *      call do, count as one stretch), each with the project functions its time went to; and the samples within
 *      the longest gap of the probe's 1 ms timer in that call (the one task that held the loop longest).
 *
 * The upstream (a minimal JSON-RPC answerer) runs in this process. Options (env): BENCH_ROUNDS (5),
 * BENCH_ONLY (comma-separated shape numbers), BENCH_PROFILE (1: the profile pass; 0 to skip), BENCH_PROXY_NODE_ARGS
 * (node flags for the proxy, space-separated: `--trace-gc`), BENCH_PROXY_STDOUT (1: the proxy's log lines shown),
 * BENCH_GUARDIAN (`remote`: the reference guardian standalone, `node dist/src/guardian/main.js` in a process of its
 * own with the same policy, behind GUARDIAN_URL; the proxy then reads its answers, a 9 MiB modify among them).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import zlib from 'node:zlib';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const MAIN = path.join(ROOT, 'dist', 'a2a-guard.js');
const PROBE = path.join(__dirname, 'stall-probe.js');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ONLY = process.env.BENCH_ONLY?.split(',').map(Number);
const PROFILE = process.env.BENCH_PROFILE !== '0';
const REMOTE = process.env.BENCH_GUARDIAN === 'remote';
const GUARDIAN_MAIN = path.join(ROOT, 'dist', 'src', 'guardian', 'main.js');
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-bench-stall-'));
const MiB = 1024 * 1024;
const SIZE = 9 * MiB;

const rpc = (params: unknown) => ({ jsonrpc: '2.0', id: 7, method: 'message/send', params });
const message = (parts: unknown[]) => rpc({ message: { kind: 'message', messageId: 'm', role: 'user', parts } });
const fill = (unit: string, bytes = SIZE) => unit.repeat(Math.floor(bytes / unit.length));
const nest = (depth: number, leaf: unknown): unknown => (depth === 0 ? leaf : [nest(depth - 1, leaf)]);
/** Elements, and objects of members (a member counts twice: name and value), that fit the default bounds with the call's own members. */
const AT_BOUND = 99_950;
const WIDE = 9_990;
const wide = (objects: number, name: (i: number) => string) =>
  Array.from({ length: objects }, (_, o) => Object.fromEntries(Array.from({ length: WIDE }, (_, i) => [name(o * WIDE + i), 1])));

const SHAPES: ReadonlyArray<[string, () => unknown]> = [
  ['"1 1 1 ..." text, 9 MiB', () => message([{ kind: 'text', text: fill('1 ') }])],
  ['text nested 55 arrays deep, 9 MiB', () => message([{ kind: 'text', text: nest(55, fill('1 ')) }])],
  [
    `${AT_BOUND} small strings in an array, 9 MiB`,
    () => message([{ kind: 'data', data: { rows: Array.from({ length: AT_BOUND }, (_, i) => `${i} ${fill('1 ', 90)}`) } }]),
  ],
  [`5 objects of ${WIDE} members, every name distinct`, () => message([{ kind: 'data', data: { rows: wide(5, (i) => `k${i}`) } }])],
  [`5 objects of ${WIDE} data keys that all mask (modify)`, () => message([{ kind: 'data', data: { rows: wide(5, (i) => `a${i}@x.io`) } }])],
  [
    'one object of 49,950 members (over the default bound: refused)',
    () => message([{ kind: 'data', data: Object.fromEntries(Array.from({ length: 49_950 }, (_, i) => [`k${i}`, i])) }]),
  ],
  ['e-mail addresses, 9 MiB text (all masked: modify)', () => message([{ kind: 'text', text: fill('a@b.co ') }])],
  [
    '"1 1 1 ..." text, 9 MiB, not canonical (a space after each colon)',
    () => JSON.stringify(message([{ kind: 'text', text: fill('1 ') }])).replaceAll('":', '": '),
  ],
  ['"1 1 1 ..." text, 9 MiB, then " x" (not JSON: refused)', () => `${JSON.stringify(message([{ kind: 'text', text: fill('1 ') }]))} x`],
  ['a 300 KiB key over 9 MiB of "1 1 1 ..."', () => message([{ kind: 'data', data: { [fill('k', 300 * 1024)]: fill('1 ') } }])],
  // Bytes: sent gzip-encoded, as they are.
  ['9 MiB of spaces, gzip (9 KiB on the wire)', () => zlib.gzipSync(Buffer.alloc(9 * MiB, 0x20))],
  ['9 MiB of spaces, then a small call, gzip', () => zlib.gzipSync(Buffer.from(`${fill(' ')}${JSON.stringify(message([{ kind: 'text', text: 'hi' }]))}`))],
  [
    `${AT_BOUND} small strings with an e-mail address each (all masked: modify)`,
    () => message([{ kind: 'data', data: { rows: Array.from({ length: AT_BOUND }, (_, i) => `${i} a@b.co ${fill('1 ', 80)}`) } }]),
  ],
];

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** The reference guardian standalone (BENCH_GUARDIAN=remote), answering once it listens. */
async function startGuardian(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const env = { PATH: process.env.PATH ?? '', GUARDIAN_PORT: String(port), GUARDIAN_HOST: '127.0.0.1', LOG_LEVEL: 'warn', POLICY_WATCH: 'false' };
  const child = spawn(process.execPath, [GUARDIAN_MAIN], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}/`;
  for (let i = 0; ; i++) {
    if ((await post(url, Buffer.from('{}')).catch(() => 0)) !== 0) break;
    if (i > 200) throw new Error('guardian did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, url };
}

/** The proxy as `npm start` runs it, with the probe preloaded; `flags`: more node flags; `guardianUrl`: a remote guardian. */
async function startProxy(
  upstream: string,
  flags: string[],
  guardianUrl?: string,
): Promise<{ child: ChildProcess; url: string; ask(t: string, extra?: object): Promise<any> }> {
  const port = await freePort();
  const env = {
    ...(guardianUrl === undefined ? {} : { GUARDIAN_URL: guardianUrl }),
    PATH: process.env.PATH ?? '',
    UPSTREAM_URL: upstream,
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    PUSH_RELAY_PORT: '0',
    LOG_LEVEL: process.env.BENCH_PROXY_STDOUT === '1' ? 'info' : 'warn',
    GUARDIAN_TIMEOUT_MS: '600000',
    BODY_TIMEOUT_MS: '600000',
  };
  const stdout = process.env.BENCH_PROXY_STDOUT === '1' ? 'inherit' : 'ignore';
  const child = spawn(process.execPath, [...flags, '--require', PROBE, MAIN], { cwd: ROOT, env, stdio: ['ignore', stdout, 'inherit', 'ipc'] });
  const ask = (t: string, extra: object = {}) =>
    new Promise<any>((resolve) => {
      const on = (m: { t: string }) => {
        if (m.t === (t === 'read' ? 'stall' : t)) {
          child.off('message', on);
          resolve(m);
        }
      };
      child.on('message', on);
      child.send({ t, ...extra });
    });
  const url = `http://127.0.0.1:${port}/`;
  for (let i = 0; ; i++) {
    if ((await post(url, Buffer.from('{}')).catch(() => 0)) !== 0) break;
    if (i > 200) throw new Error('proxy did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, url, ask };
}

function post(url: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Posts a file from a child process (its writes are not this process's); its status and the JSON-RPC error code, if any. */
function postFromChild(url: string, file: string): Promise<string> {
  const code = `const http = require('node:http'); const body = require('node:fs').readFileSync(process.argv[2]);
const coding = process.argv[2].endsWith('.gz') ? { 'content-encoding': 'gzip' } : {};
http.request(process.argv[1], { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': body.length, ...coding } }, (res) => {
  let t = ''; res.on('data', (d) => (t += d)); res.on('end', () => { let c = ''; try { c = JSON.parse(t).error?.code ?? ''; } catch {} console.log(res.statusCode + (c === '' ? '' : ' ' + c)); }); }).end(body);`;
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['-e', code, url, file], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', () => resolve(out.trim()));
  });
}

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/**
 * The longest stretches of a profile without an idle sample (one task, or tasks run back to back), each
 * with the functions its samples were in, named by the nearest project function on the stack (`self` when
 * the sample was in it) and the innermost frame.
 */
export function longTasks(file: string, top = 3, minMs = 10): string[] {
  const { p, where, byId } = readProfile(file);
  const tasks: Array<{ ms: number; by: Map<string, number> }> = [];
  let cur: { ms: number; by: Map<string, number> } | undefined;
  for (let i = 0; i < p.samples.length; i++) {
    const n = byId.get(p.samples[i]!)!;
    const dt = (p.timeDeltas[i + 1] ?? 0) / 1000;
    if (n.callFrame.functionName === '(idle)') {
      if (cur !== undefined) tasks.push(cur);
      cur = undefined;
      continue;
    }
    cur ??= { ms: 0, by: new Map() };
    cur.ms += dt;
    const w = where(n.id);
    cur.by.set(w, (cur.by.get(w) ?? 0) + dt);
  }
  if (cur !== undefined) tasks.push(cur);
  return tasks
    .filter((t) => t.ms >= minMs)
    .sort((a, b) => b.ms - a.ms)
    .slice(0, top)
    .map((t) => `${t.ms.toFixed(0)} ms: ${byFunction(t.by)}`);
}

/** The samples of a profile between two times (µs of its clock): ms by nearest project function. */
export function samplesIn(file: string, startUs: number, endUs: number): string {
  const { p, where } = readProfile(file);
  const by = new Map<string, number>();
  let at = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    at += p.timeDeltas[i] ?? 0;
    if (at < startUs || at > endUs) continue;
    const w = where(p.samples[i]!);
    by.set(w, (by.get(w) ?? 0) + (p.timeDeltas[i + 1] ?? 0) / 1000);
  }
  return byFunction(by);
}

const byFunction = (by: Map<string, number>): string =>
  [...by]
    .sort((a, b) => b[1] - a[1])
    .filter(([, ms]) => ms >= 1)
    .slice(0, 6)
    .map(([w, ms]) => `${w} ${ms.toFixed(0)}`)
    .join('; ');

function readProfile(file: string) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const own = (n: Node) => n.callFrame.url.includes('a2a-guard') || n.callFrame.url.includes('/src/') || n.callFrame.url.includes('/packages/');
  const name = (n: Node) => `${n.callFrame.functionName || '(anonymous)'}${n.callFrame.url === '' ? '' : `:${n.callFrame.lineNumber + 1}`}`;
  const where = (id: number): string => {
    const leaf = byId.get(id)!;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = byId.get(at)!;
      if (own(n)) return at === id ? name(n) : `${name(n)} > ${leaf.callFrame.functionName || leaf.callFrame.url.split('/').pop() || '(native)'}`;
    }
    return leaf.callFrame.functionName || '(native)';
  };
  return { p, where, byId };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const f1 = (x: number) => x.toFixed(1);

async function main(): Promise<void> {
  const upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = '{"jsonrpc":"2.0","id":7,"result":{"kind":"message","messageId":"a","role":"agent","parts":[]}}';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const shapes = SHAPES.map((s, i) => [i + 1, ...s] as const).filter(([i]) => ONLY === undefined || ONLY.includes(i));
  const files = shapes.map(([i, , make]) => {
    const made = make();
    const file = path.join(TMP, `shape-${i}.json${Buffer.isBuffer(made) ? '.gz' : ''}`);
    // A shape given as text is sent as it is (a serialization other than JSON.stringify's).
    fs.writeFileSync(file, typeof made === 'string' || Buffer.isBuffer(made) ? made : JSON.stringify(made));
    return file;
  });

  console.log(
    `## 1. worst event-loop stall of the proxy per hostile request (${REMOTE ? 'remote reference guardian' : 'embedded guardian'}), ${ROUNDS} rounds; load ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  const guardian = REMOTE ? await startGuardian() : undefined;
  const proxy = await startProxy(upstreamUrl, (process.env.BENCH_PROXY_NODE_ARGS ?? '').split(' ').filter(Boolean), guardian?.url);
  const warm = path.join(TMP, 'warm.json');
  fs.writeFileSync(warm, JSON.stringify(message([{ kind: 'text', text: fill('x', 200_000) }])));
  for (let i = 0; i < 3; i++) await postFromChild(proxy.url, warm);
  const idle: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    await proxy.ask('reset');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    idle.push((await proxy.ask('read')).maxMs);
  }
  console.log(`  idle (this machine's jitter): min ${f1(Math.min(...idle))} ms, median ${f1(median(idle))} ms`);
  for (const [k, [i, label]] of shapes.entries()) {
    const stalls: number[] = [];
    let status = '';
    for (let r = 0; r < ROUNDS; r++) {
      await proxy.ask('reset');
      status = await postFromChild(proxy.url, files[k]!);
      // The answer's own turns (a modify's payload back from the worker) come before the caller's answer; a little slack.
      await new Promise((resolve) => setTimeout(resolve, 50));
      stalls.push((await proxy.ask('read')).maxMs);
    }
    const size = (fs.statSync(files[k]!).size / MiB).toFixed(1);
    console.log(
      `  ${i}. ${label} (${size} MiB, answer ${status}): stall min ${f1(Math.min(...stalls))} ms, median ${f1(median(stalls))} ms [${stalls.map(f1).join(', ')}]`,
    );
  }
  if (PROFILE) {
    console.log("## 2. the longest busy stretches of the proxy's main thread per shape (CPU profile, 100 µs samples; ms by nearest project function)");
    for (const [k, [i, label]] of shapes.entries()) {
      const file = path.join(TMP, `shape-${i}.cpuprofile`);
      await proxy.ask('reset');
      await proxy.ask('profile', { file });
      await postFromChild(proxy.url, files[k]!);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await proxy.ask('profiled');
      const { worst } = (await proxy.ask('read')) as { worst?: { ms: number; startUs: number; endUs: number } };
      console.log(`  ${i}. ${label}`);
      for (const line of longTasks(file)) console.log(`     ${line}`);
      if (worst !== undefined) console.log(`     the longest gap of the 1 ms timer, ${worst.ms.toFixed(0)} ms: ${samplesIn(file, worst.startUs, worst.endUs)}`);
    }
  }
  proxy.child.kill('SIGINT');
  await new Promise((r) => proxy.child.once('exit', r));
  if (guardian !== undefined) {
    guardian.child.kill('SIGINT');
    await new Promise((r) => guardian.child.once('exit', r));
  }
  upstream.close();
  fs.rmSync(TMP, { recursive: true, force: true });
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
