/**
 * `npm run bench:guardian`: what hostile content costs the reference guardian (issue 31, bounded guardian work).
 *
 *   1. the engine's CPU on one hostile 9 MiB message/send per shape (digit runs, separators, a text
 *      nested 55 arrays deep, many small strings, data keys that all mask to one name, all masked),
 *      with config/policy.json;
 *   2. the embedded guardian alone, as the proxy calls it (the envelope's bytes beside it): the worst
 *      event-loop stall (perf_hooks' event-loop delay, max) while it judges one hostile envelope, and the
 *      latency of small decisions asked meanwhile; with the worker (the default) and with every envelope
 *      judged in place (what it was);
 *   3. end to end, the proxy with the embedded guardian, one hostile call and a small caller meanwhile;
 *      and the same proxy with a remote guardian (another process) that answers allow at once: the
 *      proxy's own work on the body (reading, parsing, forwarding), which no guardian choice changes;
 *   4. CPU per small call with the embedded guardian, judged in place and on the worker (the hop's cost).
 *
 * A minimal upstream that answers JSON-RPC runs in this process; the callers run in child processes
 * (their writes and reads are not the proxy's). Options (env): BENCH_MIB (9), BENCH_CALLS (2000), BENCH_ROUNDS (3: the stall is the median of the rounds' maxima).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { configFrom } from '../src/config/config';
import { createLogger } from '../src/runtime/log';
import { startProxy, type ProxyInstance } from '../src/server';
import { embeddedGuardian, type EmbeddedOptions } from '../src/guardian/embedded';
import { createEngine } from '../src/guardian/engine';
import { loadPolicy } from '../src/guardian/policy';
import { buildEnvelope, envelopeBytes, envelopeJson } from '../src/aos/envelope';
import type { A2AContext, JsonObject } from '../src/aos/schemas';

const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_MIB ?? 9) * MiB;
const CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POLICY = path.join(__dirname, '..', '..', 'config', 'policy.json');
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-bench-guardian-'));

const message = (parts: unknown[]): JsonObject => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: 'm', role: 'user', parts } },
});
const fill = (unit: string, bytes = SIZE) => unit.repeat(Math.floor(bytes / unit.length));
const nest = (depth: number, leaf: unknown): unknown => (depth === 0 ? leaf : [nest(depth - 1, leaf)]);

const CASES: ReadonlyArray<[string, () => JsonObject]> = [
  ['"1 1 1 ..." text', () => message([{ kind: 'text', text: fill('1 ') }])],
  ['"1-1-1 ..." text', () => message([{ kind: 'text', text: fill('1-') }])],
  ['digits only', () => message([{ kind: 'text', text: fill('4') }])],
  ['text nested 55 arrays deep', () => message([{ kind: 'text', text: nest(55, fill('1 ')) }])],
  ['many small strings in a text', () => message([{ kind: 'text', text: Array.from({ length: Math.floor(SIZE / 6) }, () => '1 1') }])],
  [
    'data keys that mask to one name',
    () => message([{ kind: 'data', data: Object.fromEntries(Array.from({ length: Math.floor(SIZE / 20) }, (_, i) => [`a${i}@x.io`, 1])) }]),
  ],
  ['e-mail addresses (all masked)', () => message([{ kind: 'text', text: fill('a@b.co ') }])],
];

const CONTEXT = {
  from: { role: 'client', agent: { name: 'caller', url: 'http://caller' } },
  to: { role: 'server', agent: { name: 'agent', url: 'http://agent', version: '1', instructions: 'x', provider: { name: 'p', url: 'http://p' } } },
} as unknown as A2AContext;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const f1 = (x: number) => x.toFixed(1);

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A child process running `code` with `args`: its first line of output, all of it, and a way to tell it to stop (stdin closes). */
function child(code: string, args: string[]): { first: Promise<string>; done: Promise<string>; stop(): void } {
  const proc = spawn(process.execPath, ['-e', code, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let gotFirst: (line: string) => void = () => undefined;
  const first = new Promise<string>((resolve) => (gotFirst = resolve));
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString('utf8');
    if (out.includes('\n')) gotFirst(out.slice(0, out.indexOf('\n')));
  });
  return { first, done: new Promise((resolve) => proc.on('exit', () => resolve(out))), stop: () => proc.stdin.end() };
}

/** Posts a file's bytes once; prints the status. */
const POST_ONCE = `
const http = require('node:http'); const body = require('node:fs').readFileSync(process.argv[2]);
http.request(process.argv[1], { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
  res.resume(); res.on('end', () => console.log(res.statusCode)); }).end(body);`;

/** Posts a small call, again and again 5 ms apart until stdin closes; prints the latencies (ms). */
const SMALL_CALLER = `
const http = require('node:http'); const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: 's', role: 'user', parts: [{ kind: 'text', text: 'hello, write to a@b.co' }] } } });
let stop = false; process.stdin.on('end', () => (stop = true)); process.stdin.resume();
const one = () => new Promise((resolve) => { const t = performance.now();
  http.request(process.argv[1], { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => { res.resume(); res.on('end', () => resolve(performance.now() - t)); }).end(body); });
(async () => { const ms = []; while (!stop) { ms.push(await one()); await new Promise((r) => setTimeout(r, 5)); } console.log(JSON.stringify(ms)); process.exit(0); })();`;

/** An AOS guardian that answers allow at once (the proxy's own work, without a guardian's). */
const INSTANT_GUARDIAN = `
const http = require('node:http');
const server = http.createServer((req, res) => { const chunks = []; req.on('data', (c) => chunks.push(c)); req.on('end', () => {
  const env = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const result = env.method === 'ping' ? { status: 'connected' } : { decision: 'allow', message: 'ok' };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: env.id, result })); }); });
server.listen(0, '127.0.0.1', () => console.log('http://127.0.0.1:' + server.address().port)); process.stdin.on('end', () => process.exit(0)); process.stdin.resume();`;

function engineCpu(): void {
  const engine = createEngine(loadPolicy(POLICY));
  console.log(`## 1. engine CPU, one ${SIZE / MiB} MiB message/send (config/policy.json)`);
  for (const [name, make] of CASES) {
    const envelope = buildEnvelope({ method: 'message/send', payload: make(), context: CONTEXT });
    const before = process.cpuUsage();
    const result = engine.decide(envelope);
    const used = process.cpuUsage(before);
    console.log(`  ${name}: ${((used.user + used.system) / 1000).toFixed(0)} ms CPU (${result.decision})`);
  }
}

/** The embedded guardian alone: stall while it judges one envelope, latency of small decisions meanwhile. */
async function guardianAlone(): Promise<void> {
  const small = buildEnvelope({ method: 'message/send', payload: message([{ kind: 'text', text: 'hello, write to a@b.co' }]), context: CONTEXT });
  const smallBody = envelopeJson(small, JSON.stringify(small.params.payload), JSON.stringify(CONTEXT));
  for (const [label, opts] of [
    ['with the worker (the default)', {}],
    ['every envelope judged in place', { inlineMaxChars: Infinity }],
  ] as const) {
    console.log(`## 2. the embedded guardian alone, ${label}: one hostile envelope, small decisions asked every ms meanwhile (median of ${ROUNDS} rounds)`);
    const guardian = embeddedGuardian(POLICY, { timeoutMs: 600_000, ...opts });
    // The worker starts on the first large envelope: start it before measuring.
    const warm = buildEnvelope({ method: 'message/send', payload: message([{ kind: 'text', text: fill('x', 200_000) }]), context: CONTEXT });
    await guardian.decide(warm, envelopeJson(warm, JSON.stringify(warm.params.payload), JSON.stringify(CONTEXT)));
    const idle: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      h.disable();
      idle.push(h.max / 1e6);
    }
    console.log(`  nothing to judge (this machine's own jitter): stall max ${f1(median(idle))} ms [rounds: ${idle.map(f1).join(', ')}]`);
    for (const [name, make] of CASES) {
      const payload = make();
      const envelope = buildEnvelope({ method: 'message/send', payload, context: CONTEXT });
      const body = envelopeBytes(envelope, Buffer.from(JSON.stringify(payload), 'utf8'), JSON.stringify(CONTEXT));
      const stalls: number[] = [];
      const worst: number[] = [];
      let decision = '';
      for (let r = 0; r < ROUNDS; r++) {
        const h = monitorEventLoopDelay({ resolution: 1 });
        const latencies: number[] = [];
        let done = false;
        h.enable();
        // A first turn, so the histogram has a start to measure a stall from.
        await new Promise((resolve) => setTimeout(resolve, 20));
        const big = guardian.decide(envelope, body).then((o) => ((done = true), o));
        while (!done) {
          const t = performance.now();
          await guardian.decide(small, smallBody);
          latencies.push(performance.now() - t);
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
        const outcome = await big;
        // The answer's own turn (a masked payload is copied back to this thread) is measured too.
        await new Promise((resolve) => setTimeout(resolve, 50));
        h.disable();
        decision = outcome.ok ? outcome.result.decision : `no answer (${outcome.kind})`;
        stalls.push(h.max / 1e6);
        worst.push(Math.max(...latencies));
      }
      console.log(
        `  ${name} (${(body.length / MiB).toFixed(1)} MiB): stall max ${f1(median(stalls))} ms [rounds: ${stalls.map(f1).join(', ')}]; slowest small decision ${f1(median(worst))} ms (${decision})`,
      );
    }
    guardian.close();
  }
}

/** The proxy end to end: one hostile call from another process, a small caller (another process) meanwhile. */
async function endToEnd(upstreamUrl: string): Promise<void> {
  const instant = child(INSTANT_GUARDIAN, []);
  const instantUrl = await instant.first;
  const setups: ReadonlyArray<[string, Record<string, string>, EmbeddedOptions | undefined]> = [
    ['embedded guardian (the default: large envelopes on the worker)', {}, {}],
    ['embedded guardian, every envelope judged in place', {}, { inlineMaxChars: Infinity }],
    ["remote guardian answering allow at once (the proxy's own work)", { GUARDIAN_URL: instantUrl }, undefined],
  ];
  for (const [label, env, opts] of setups) {
    console.log(`## 3. end to end, ${label}: one hostile call, a small caller meanwhile (median of ${ROUNDS} rounds)`);
    const config = configFrom({ UPSTREAM_URL: upstreamUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', GUARDIAN_TIMEOUT_MS: '600000', ...env });
    const proxy: ProxyInstance = await startProxy({
      config,
      logger: createLogger('silent'),
      ...(opts === undefined ? {} : { guardian: embeddedGuardian(POLICY, { timeoutMs: 600_000, ...opts }) }),
    });
    const url = `${proxy.url}/a2a/jsonrpc`;
    const warm = path.join(TMP, 'warm.json');
    fs.writeFileSync(warm, JSON.stringify(message([{ kind: 'text', text: fill('x', 200_000) }])));
    await child(POST_ONCE, [url, warm]).done;
    for (const [name, make] of CASES) {
      const file = path.join(TMP, 'hostile.json');
      fs.writeFileSync(file, JSON.stringify(make()));
      const stalls: number[] = [];
      const worst: number[] = [];
      let status = '';
      for (let r = 0; r < ROUNDS; r++) {
        const caller = child(SMALL_CALLER, [url]);
        await new Promise((resolve) => setTimeout(resolve, 300));
        const h = monitorEventLoopDelay({ resolution: 1 });
        h.enable();
        status = (await child(POST_ONCE, [url, file]).done).trim();
        h.disable();
        caller.stop();
        const latencies = JSON.parse(await caller.done) as number[];
        stalls.push(h.max / 1e6);
        worst.push(Math.max(...latencies));
      }
      console.log(
        `  ${name} (${(fs.statSync(file).size / MiB).toFixed(1)} MiB): stall max ${f1(median(stalls))} ms [rounds: ${stalls.map(f1).join(', ')}]; slowest small call ${f1(median(worst))} ms (hostile call: ${status})`,
      );
    }
    await proxy.close();
  }
  instant.stop();
  await instant.done;
}

/** CPU per small call, judged in place and on the worker; the caller is another process, the upstream is in this one. */
async function cpuPerCall(upstreamUrl: string): Promise<void> {
  console.log(`## 4. CPU of this process (proxy, guardian, upstream) per small call, ${CALLS} calls one after another`);
  const LOOP = `
const http = require('node:http'); const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: 's', role: 'user', parts: [{ kind: 'text', text: 'hello, write to a@b.co' }] } } });
const one = () => new Promise((resolve) => http.request(process.argv[1], { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => { res.resume(); res.on('end', resolve); }).end(body));
(async () => { for (let i = 0; i < Number(process.argv[2]); i++) await one(); console.log('done'); process.exit(0); })();`;
  for (const [label, opts] of [
    ['judged in place (the default for small envelopes)', {}],
    ['judged on the worker', { inlineMaxChars: 0 }],
  ] as const) {
    const samples: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const config = configFrom({ UPSTREAM_URL: upstreamUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', GUARDIAN_TIMEOUT_MS: '60000' });
      const proxy = await startProxy({ config, logger: createLogger('silent'), guardian: embeddedGuardian(POLICY, { timeoutMs: 60_000, ...opts }) });
      const url = `${proxy.url}/a2a/jsonrpc`;
      await child(LOOP, [url, '300']).done;
      const before = process.cpuUsage();
      await child(LOOP, [url, String(CALLS)]).done;
      const used = process.cpuUsage(before);
      samples.push((used.user + used.system) / CALLS);
      await proxy.close();
    }
    console.log(`  ${label}: ${median(samples).toFixed(0)} µs per call [rounds: ${samples.map((x) => x.toFixed(0)).join(', ')}]`);
  }
}

async function main(): Promise<void> {
  engineCpu();
  await guardianAlone();
  const upstream = await listen((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = '{"jsonrpc":"2.0","id":1,"result":{"kind":"message","messageId":"a","role":"agent","parts":[]}}';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
    });
  });
  await endToEnd(upstream.url);
  await cpuPerCall(upstream.url);
  upstream.server.close();
  fs.rmSync(TMP, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
