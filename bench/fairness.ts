/**
 * `npm run bench:fairness`: can one caller hurt another through what every caller shares?
 *
 * Real parts on 127.0.0.1: the Cake Baker (a real @a2a-js/sdk agent), an HTTP guardian that allows
 * everything (and is slow to judge what says "judge me slowly", as an LLM guardian is on large
 * input) in a process of its own, and a2a-guard (ROLE=server, IDENTITY_POLICY=required) in its own process. Two verified
 * callers, each with its own assertion key: the victim, a real SDK client making ordinary
 * `sendMessage` calls one after the other, and the attacker, working one resource at a time:
 *
 *   declared-lengths  40 connections announce 9 MiB bodies and send nothing (half without credentials)
 *   body-share        12 connections send 9 MiB bodies at ~64 KiB/s
 *   calls-in-flight   400 concurrent slow tasks (a wedding cake each)
 *   guardian-share    200 concurrent calls slow to judge, GUARDIAN_CALL_CONNECTIONS=32
 *   rate              as many calls as it can, RATE_LIMIT_PER_SECOND=40 (the victim paced at one call per 50 ms, within it)
 *   guardian-work     9 MiB `1 1 1 ...` messages (BENCH_WORK_MIB) to the embedded reference guardian, back to back
 *
 * For each, in BENCH_ROUNDS rounds (default 3; each: the victim alone, then the attack started afresh, its first burst
 * included, and the victim again): the victim's success rate and p99 latency alone and while the attacker works, over
 * the calls of all rounds, and their ratio (the goal: every victim call succeeds, p99 within 2x; a p99 of one round's
 * 200 calls is its second-worst call, and moves a lot between runs), each round's ratio, the attacker's outcomes, and
 * the worst event-loop delay of the proxy's process (its nodejs_eventloop_lag_max_seconds while the
 * victim runs). The victim's calls alternate between the proxy and the agent straight, so the agent's figures (the
 * control: what the agent and the machine cost the victim) cover the same moments of the attack, its first burst
 * included. The attacker runs in a process of its own (this file, forked), so its work does not
 * queue in front of the victim's client; the victim runs in a process of its own too, so the agent's work
 * (this process) does not queue in front of its client either.
 * All share the machine's cores with the proxy. The attacker's process runs at the lowest priority
 * (BENCH_ATTACKER_NICE, default 19): it stands for a caller on another machine, so the CPU it spends on
 * its own side (signing assertions, building 9 MiB messages) does not count as harm the proxy let it
 * do; BENCH_ATTACKER_NICE=0 shares the cores equally. Options (env): BENCH_VICTIM_CALLS (per round, default 200), BENCH_WORK_MIB (default 9),
 * BENCH_ONLY (comma-separated scenario names), BENCH_PROXY_NODE_ARGS (e.g. `--cpu-prof`, for the proxy's process),
 * BENCH_PROXY_ENV (a JSON object of variables set on the proxy in every scenario, e.g. `{"MAX_CALLS_PER_CALLER":"64"}`),
 * BENCH_PROXY_STDOUT=1 (the proxy's standard output, where V8 writes `--trace-gc`),
 * BENCH_SLOWEST=1 (the victim's four slowest calls, and when each started in its run). Each row is followed by
 * the proxy's CPU time and the credentials it checked while the attacker worked (counted, not timed: a run whose
 * attacker got little CPU at its nice level shows it here, in fewer checks).
 */
import { setMaxListeners } from 'node:events';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { generateAssertionKey } from '../src/identity/keygen';
import { parseSigningKey } from '../src/identity/keys';
import { AssertionSigner, ASSERTION_HEADER } from '../src/identity/assertion';
import { startCakeBaker, type CakeBaker } from '../src/demo/cake-baker';
import { sdkClient, type Message } from '../src/demo/sdk';

const num = (name: string, def: number): number => (process.env[name] ? Number(process.env[name]) : def);
const VICTIM_CALLS = num('BENCH_VICTIM_CALLS', 200);
const ROUNDS = num('BENCH_ROUNDS', 3);
const WORK_MIB = num('BENCH_WORK_MIB', 9);
const ATTACKER_NICE = num('BENCH_ATTACKER_NICE', 19);
const ONLY = process.env['BENCH_ONLY']
  ?.split(',')
  .map((s) => s.trim())
  .filter((s) => s !== '');
const MiB = 1024 * 1024;
/** BENCH_PROXY_ENV: variables (a JSON object) set on the proxy in every scenario, over the scenario's own. */
const PROXY_ENV = JSON.parse(process.env['BENCH_PROXY_ENV'] ?? '{}') as Record<string, string>;

interface Caller {
  readonly id: string;
  readonly signer: AssertionSigner;
}

async function caller(id: string): Promise<{ caller: Caller; jwk: object; privateJwk: string }> {
  const { privateJwk, publicJwks } = await generateAssertionKey(`${id}-key`, 'ES256', [id]);
  return { caller: await callerFromKey(id, JSON.stringify(privateJwk)), jwk: publicJwks.keys[0] as object, privateJwk: JSON.stringify(privateJwk) };
}

async function callerFromKey(id: string, privateJwk: string): Promise<Caller> {
  return { id, signer: AssertionSigner.fromKey(await parseSigningKey(privateJwk), 30) };
}

/**
 * Allow-all guardian over HTTP (bench/guardian-child.ts), in a process of its own as a guardian service runs: the
 * agent's work for the attacker's tasks does not queue in front of the victim's envelopes. What asks to be judged
 * slowly waits `slowMs`.
 */
async function startGuardian(slowMs: number): Promise<{ url: string; close(): Promise<void> }> {
  // Loaded here: lib.ts handles signals for the children it starts, and the victim's and attacker's processes (this
  // file) have none.
  const { startChild } = require('./lib') as typeof import('./lib');
  const child = await startChild('guardian', 'guardian-child.js', { PORT: '0', SLOW_TEXT: 'judge me slowly', SLOW_MS: String(slowMs) }, undefined);
  return { url: child.url, close: () => child.stop() };
}

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

const message = (text: string): Message =>
  ({
    messageId: `m-${Math.random()}`,
    role: 1,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    contextId: '',
    taskId: '',
    referenceTaskIds: [],
    extensions: [],
    metadata: undefined,
  }) as unknown as Message;

interface Stack {
  readonly url: string;
  readonly admin: string;
  readonly audience: string;
  close(): Promise<void>;
}
/** Percentile of sorted numbers. */
const pct = (xs: number[], p: number): number => (xs.length === 0 ? NaN : (xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] as number));

interface VictimRun {
  readonly ok: number;
  readonly failed: number;
  /** Every call's latency, sorted (ms). */
  readonly times: number[];
  readonly errors: string[];
  /** The slowest calls: latency and when each started (ms into the run). */
  readonly slowest: string;
}

/** Runs of one kind (alone, attacked; through the proxy or straight) over the rounds, pooled. */
class Pooled {
  readonly runs: VictimRun[] = [];
  add(run: VictimRun): VictimRun {
    this.runs.push(run);
    return run;
  }
  get ok(): number {
    return this.runs.reduce((n, r) => n + r.ok, 0);
  }
  get calls(): number {
    return this.runs.reduce((n, r) => n + r.ok + r.failed, 0);
  }
  pct(p: number): number {
    return pct(
      this.runs.flatMap((r) => r.times).sort((a, b) => a - b),
      p,
    );
  }
}

/** A real SDK client (JSON-RPC) for `stack`, signing a fresh assertion for each call. */
async function victimClient(stack: Stack, victim: Caller): Promise<{ sendMessage(params: never): Promise<unknown> }> {
  const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver } = sdkClient;
  const fetchImpl = (async (input: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    headers.set(
      ASSERTION_HEADER,
      await victim.signer.sign({ id: victim.id, name: victim.id, url: `https://${victim.id}.example`, version: '1' }, stack.audience),
    );
    return fetch(input, { ...init, headers });
  }) as typeof fetch;
  const resolver = new DefaultAgentCardResolver({ fetchImpl });
  const card = await resolver.resolve(stack.url);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: resolver,
      preferredTransports: ['JSONRPC'],
      transports: [new sdkClient.JsonRpcTransportFactory({ fetchImpl })],
    }),
  );
  return factory.createFromAgentCard(card);
}

/**
 * The victim: one call after the other, alternating between the stacks (the proxy, and the agent straight), so each
 * target's figures are measured over the same stretch of the attack: the agent's direct figures are the control for
 * what the agent and the machine cost the victim at that moment.
 */
async function victimRun(stacks: readonly Stack[], victim: Caller, calls: number, paceMs = 0): Promise<VictimRun[]> {
  const clients = await Promise.all(stacks.map((s) => victimClient(s, victim)));
  const runs = clients.map(() => ({ times: [] as number[], starts: [] as number[], errors: [] as string[], ok: 0 }));
  const runStart = performance.now();
  for (let i = 0; i < calls; i++) {
    for (const [k, client] of clients.entries()) {
      const r = runs[k] as (typeof runs)[number];
      const t0 = performance.now();
      r.starts.push(t0 - runStart);
      try {
        await client.sendMessage({
          tenant: '',
          message: message(`how to prepare a cheese cake? (${i})`),
          configuration: undefined,
          metadata: undefined,
        } as never);
        r.ok++;
      } catch (err) {
        if (r.errors.length < 3) r.errors.push((err as Error).message.slice(0, 160));
      }
      r.times.push(performance.now() - t0);
      if (paceMs > 0) await new Promise((res) => setTimeout(res, paceMs));
    }
  }
  return runs.map(({ times, starts, errors, ok }) => {
    const slowest = times
      .map((t, i) => [t, starts[i] as number] as const)
      .sort((a, b) => b[0] - a[0])
      .slice(0, 4)
      .map(([t, at]) => `${t.toFixed(0)} ms at ${at.toFixed(0)} ms`)
      .join(', ');
    times.sort((a, b) => a - b);
    return { ok, failed: calls - ok, times, errors, slowest };
  });
}

interface VictimJob {
  readonly stacks: readonly Stack[];
  readonly calls: number;
  readonly paceMs: number | undefined;
}

/** The victim's own process: runs the jobs it is sent, one at a time, and sends back each run's figures. */
async function victimMain(): Promise<void> {
  const victim = await callerFromKey('victim-agent', process.env['BENCH_KEY'] as string);
  process.on('message', (job: VictimJob) => {
    void victimRun(job.stacks, victim, job.calls, job.paceMs).then((runs) => process.send?.(runs));
  });
  process.send?.('started');
}

/** Fork the victim's process (at the bench's own priority); resolves to a function that runs a job there. */
async function forkVictim(privateJwk: string): Promise<{ run(job: VictimJob): Promise<VictimRun[]>; close(): void }> {
  const child: ChildProcess = fork(__filename, [], {
    env: { ...process.env, BENCH_VICTIM: '1', BENCH_KEY: privateJwk },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the victim exited (${code})`)));
  });
  return {
    run: (job) =>
      new Promise((resolve) => {
        child.once('message', (runs) => resolve(runs as VictimRun[]));
        child.send(job);
      }),
    close: () => void child.kill(),
  };
}

/** Raw HTTP from the attacker: headers (with a fresh assertion when `signed`), then `body` as `write` paces it. */
function rawPost(stack: Stack, attacker: Caller | undefined, announced: number, write: (s: net.Socket) => void): Promise<net.Socket> {
  const u = new URL(stack.url);
  return (async () => {
    const assertion =
      attacker === undefined
        ? undefined
        : await attacker.signer.sign({ id: attacker.id, name: attacker.id, url: `https://${attacker.id}.example`, version: '1' }, stack.audience);
    return new Promise<net.Socket>((resolve) => {
      const s = net.connect(Number(u.port), u.hostname, () => {
        s.write(
          `POST /a2a/jsonrpc HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: ${announced}\r\n${assertion === undefined ? '' : `${ASSERTION_HEADER}: ${assertion}\r\n`}\r\n`,
        );
        write(s);
        resolve(s);
      });
      s.on('error', () => undefined);
      s.on('data', () => undefined);
    });
  })();
}

/** A JSON-RPC SendMessage from the attacker through undici's fetch; resolves to the HTTP status and JSON-RPC code. */
async function attackerCall(stack: Stack, attacker: Caller, text: string, signal?: AbortSignal): Promise<string> {
  const assertion = await attacker.signer.sign({ id: attacker.id, name: attacker.id, url: `https://${attacker.id}.example`, version: '1' }, stack.audience);
  try {
    const r = await fetch(`${stack.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', [ASSERTION_HEADER]: assertion },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message: { messageId: `a-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] } },
      }),
      ...(signal === undefined ? {} : { signal }),
    });
    const body = await r.text();
    const code = /"code":(-?\d+)/.exec(body)?.[1];
    return code === undefined ? `${r.status}` : `${r.status} ${code}`;
  } catch (err) {
    return (err as Error).name === 'AbortError' ? 'aborted' : 'error';
  }
}

interface Scenario {
  readonly name: string;
  readonly env?: Record<string, string>;
  /** Use the embedded reference guardian instead of the HTTP one. */
  readonly embedded?: boolean;
  /** The victim waits this long between its calls (to stay within a limit the attacker crosses). */
  readonly victimPaceMs?: number;
  /** Start the attack; resolves to a function that stops it and says what the attacker got. */
  attack(stack: Stack, attacker: Caller): Promise<() => Promise<Record<string, number>>>;
}

const tally = (xs: string[]): Record<string, number> => xs.reduce<Record<string, number>>((m, x) => ((m[x] = (m[x] ?? 0) + 1), m), {});

/** `n` attacker calls at once, again and again until stopped. */
function flood(stack: Stack, attacker: Caller, n: number, text: () => string): () => Promise<Record<string, number>> {
  let stopped = false;
  const ac = new AbortController();
  // Every call of the flood listens on the one signal.
  setMaxListeners(0, ac.signal);
  const outcomes: string[] = [];
  const loops = Array.from({ length: n }, async () => {
    while (!stopped) outcomes.push(await attackerCall(stack, attacker, text(), ac.signal));
  });
  return async () => {
    stopped = true;
    ac.abort();
    await Promise.allSettled(loops);
    return tally(outcomes);
  };
}

const SCENARIOS: Scenario[] = [
  {
    name: 'declared-lengths',
    async attack(stack, attacker) {
      const sockets = await Promise.all(Array.from({ length: 40 }, (_v, i) => rawPost(stack, i % 2 === 0 ? attacker : undefined, 9 * MiB, () => undefined)));
      return async () => {
        for (const s of sockets) s.destroy();
        return { connections: sockets.length };
      };
    },
  },
  {
    name: 'body-share',
    async attack(stack, attacker) {
      const timers: NodeJS.Timeout[] = [];
      const sockets = await Promise.all(
        Array.from({ length: 12 }, () =>
          rawPost(stack, attacker, 9 * MiB, (s) => {
            timers.push(setInterval(() => s.write(Buffer.alloc(64 * 1024, 0x20)), 1000));
          }),
        ),
      );
      return async () => {
        for (const t of timers) clearInterval(t);
        for (const s of sockets) s.destroy();
        return { connections: sockets.length };
      };
    },
  },
  {
    name: 'calls-in-flight',
    async attack(stack, attacker) {
      return flood(stack, attacker, 400, () => 'Please bake a three-tier wedding cake for Saturday.');
    },
  },
  {
    name: 'guardian-share',
    env: { GUARDIAN_CALL_CONNECTIONS: '32', GUARDIAN_TIMEOUT_MS: '30000' },
    async attack(stack, attacker) {
      return flood(stack, attacker, 200, () => 'judge me slowly: a large document');
    },
  },
  {
    name: 'rate',
    env: { RATE_LIMIT_PER_SECOND: '40', RATE_LIMIT_BURST: '40' },
    victimPaceMs: 50,
    async attack(stack, attacker) {
      return flood(stack, attacker, 16, () => 'hello');
    },
  },
  {
    name: 'guardian-work',
    embedded: true,
    async attack(stack, attacker) {
      const big = '1 '.repeat(Math.floor((WORK_MIB / 2) * MiB));
      return flood(stack, attacker, 2, () => big);
    },
  },
];

/** The attacker's own process: start the scenario's attack, stop it when told, report what it got. */
async function attackerMain(name: string): Promise<void> {
  const scenario = SCENARIOS.find((x) => x.name === name);
  if (scenario === undefined) throw new Error(`no scenario ${name}`);
  const stack = JSON.parse(process.env['BENCH_STACK'] as string) as Stack;
  const attacker = await callerFromKey('attacker-agent', process.env['BENCH_KEY'] as string);
  const stop = await scenario.attack(stack, attacker);
  process.once('message', () => {
    void stop().then((got) => process.send?.(got, () => process.exit(0)));
  });
  process.send?.('started');
}

/** Fork the attacker for `s`; resolves once it attacks, to a function that stops it and returns its tally. */
async function forkAttacker(s: Scenario, stack: Stack, privateJwk: string): Promise<() => Promise<Record<string, number>>> {
  const child: ChildProcess = fork(__filename, [], {
    env: {
      ...process.env,
      BENCH_ATTACKER: s.name,
      BENCH_STACK: JSON.stringify({ url: stack.url, admin: stack.admin, audience: stack.audience }),
      BENCH_KEY: privateJwk,
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  if (child.pid !== undefined) os.setPriority(child.pid, ATTACKER_NICE);
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the attacker exited (${code})`)));
  });
  return () =>
    new Promise((resolve) => {
      child.once('message', (got) => resolve(got as Record<string, number>));
      child.send('stop');
    });
}

async function main(): Promise<void> {
  const victim = await caller('victim-agent');
  const attacker = await caller('attacker-agent');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-fairness-'));
  const jwks = path.join(dir, 'trusted.jwks.json');
  fs.writeFileSync(jwks, JSON.stringify({ keys: [victim.jwk, attacker.jwk] }));
  // An agent that takes large messages: the attacker's 9 MiB calls reach it (the SDK's parser stops at 100 KB).
  const baker: CakeBaker = await startCakeBaker({ slowMs: 20_000, maxBodyBytes: 16 * MiB });
  const guardian = await startGuardian(2000);
  const policy = path.resolve(__dirname, '../../config/policy.json');
  const victimProcess = await forkVictim(victim.privateJwk);
  /** A stack as the victim's process needs it (no functions over IPC). */
  const plain = (st: Stack): Stack => ({ url: st.url, admin: st.admin, audience: st.audience, close: async () => undefined });

  /** The proxy as operators run it: its own process (dist/a2a-guard.js), configured by variables. */
  async function stackFor(s: Scenario): Promise<Stack> {
    const [port, adminPort] = [await freePort(), await freePort()];
    const audience = `http://127.0.0.1:${port}`;
    const nodeArgs = process.env['BENCH_PROXY_NODE_ARGS']?.split(' ').filter((a) => a !== '') ?? [];
    const child = spawn(process.execPath, [...nodeArgs, path.resolve(__dirname, '../a2a-guard.js')], {
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        PORT: String(port),
        HOST: '127.0.0.1',
        ADMIN_PORT: String(adminPort),
        ADMIN_HOST: '127.0.0.1',
        UPSTREAM_URL: baker.origin,
        LOG_LEVEL: 'error',
        ...(s.embedded === true ? { POLICY_FILE: policy } : { GUARDIAN_URL: guardian.url }),
        IDENTITY_POLICY: 'required',
        ASSERTION_TRUST_JWKS_FILE: jwks,
        ASSERTION_AUDIENCE: audience,
        ...s.env,
        ...PROXY_ENV,
      },
      stdio: ['ignore', process.env['BENCH_PROXY_STDOUT'] === '1' ? 'inherit' : 'ignore', 'inherit'],
    });
    const admin = `http://127.0.0.1:${adminPort}`;
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`the proxy exited (${child.exitCode})`);
      const up = await fetch(`${admin}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (i > 300) throw new Error('the proxy did not become ready');
      await new Promise((r) => setTimeout(r, 50));
    }
    return {
      url: audience,
      admin,
      audience,
      close: () =>
        new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    };
  }

  /** The proxy's worst event-loop delay since the last scrape (prom-client resets it at each). */
  const loopMaxMs = async (stack: Stack): Promise<number> => {
    const text = await (await fetch(`${stack.admin}/metrics`)).text();
    return Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1] ?? NaN) * 1000;
  };

  /** The proxy's CPU seconds so far, and the credentials it has checked (every outcome). */
  const proxyWork = async (stack: Stack): Promise<{ cpuS: number; checks: number }> => {
    const text = await (await fetch(`${stack.admin}/metrics`)).text();
    const checks = [...text.matchAll(/^a2a_guard_caller_identities_total\{[^}]*\} (\S+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    return { cpuS: Number(/^process_cpu_seconds_total (\S+)$/m.exec(text)?.[1] ?? NaN), checks };
  };

  const rows: string[] = [];
  console.log(
    `a2a-guard fairness: victim ${VICTIM_CALLS} sequential SDK sendMessage calls, alone and while the attacker works (node ${process.version}, ${os.cpus().length} cores, attacker at nice ${ATTACKER_NICE})`,
  );
  for (const s of SCENARIOS) {
    if (ONLY !== undefined && !ONLY.includes(s.name)) continue;
    const stack = await stackFor(s);
    try {
      const agentStraight: Stack = { ...stack, url: baker.origin };
      const victimRuns = (calls: number): Promise<VictimRun[]> =>
        victimProcess.run({ stacks: [plain(stack), plain(agentStraight)], calls, paceMs: s.victimPaceMs });
      await victimRuns(10);
      const [alone, directAlone, attacked, direct] = [new Pooled(), new Pooled(), new Pooled(), new Pooled()];
      const rounds: string[] = [];
      let stallMs = 0;
      const got: Record<string, number> = {};
      const before = await proxyWork(stack);
      for (let round = 0; round < ROUNDS; round++) {
        const [a, da] = (await victimRuns(VICTIM_CALLS)) as [VictimRun, VictimRun];
        const stop = await forkAttacker(s, stack, attacker.privateJwk);
        await new Promise((r) => setTimeout(r, 500));
        await loopMaxMs(stack);
        const [b, db] = (await victimRuns(VICTIM_CALLS)) as [VictimRun, VictimRun];
        stallMs = Math.max(stallMs, await loopMaxMs(stack));
        for (const [k, n] of Object.entries(await stop())) got[k] = (got[k] ?? 0) + n;
        // The proxy and the agent settle (the attacker's calls ended) before the next round's victim runs alone.
        await new Promise((r) => setTimeout(r, 1000));
        rounds.push(
          `${(pct(attacked.add(b).times, 99) / pct(alone.add(a).times, 99)).toFixed(2)}x (${(pct(direct.add(db).times, 99) / pct(directAlone.add(da).times, 99)).toFixed(2)}x)`,
        );
        if (process.env['BENCH_SLOWEST'] === '1') {
          console.log(`  round ${round + 1} slowest attacked: ${b.slowest}; alone: ${a.slowest}`);
          console.log(`  round ${round + 1} straight to the agent, slowest attacked: ${db.slowest}; alone: ${da.slowest}`);
        }
      }
      const after = await proxyWork(stack);
      const ratio = attacked.pct(99) / alone.pct(99);
      const row = `${s.name.padEnd(17)} victim ok ${attacked.ok}/${attacked.calls} (alone ${alone.ok}/${alone.calls})  p99 ${attacked.pct(99).toFixed(1)} ms vs ${alone.pct(99).toFixed(1)} ms alone = ${ratio.toFixed(2)}x  p50 ${attacked.pct(50).toFixed(1)} vs ${alone.pct(50).toFixed(1)} ms  the same victim straight to the agent, calls alternating: p99 ${direct.pct(99).toFixed(1)} ms vs ${directAlone.pct(99).toFixed(1)} ms alone = ${(direct.pct(99) / directAlone.pct(99)).toFixed(2)}x  worst loop stall ${stallMs.toFixed(1)} ms  attacker ${JSON.stringify(got)}`;
      console.log(row);
      console.log(`  each round, p99 attacked / alone through the proxy (straight to the agent): ${rounds.join(', ')}`);
      const errors = attacked.runs.flatMap((r) => r.errors).slice(0, 3);
      if (errors.length > 0) console.log(`  victim errors: ${errors.join(' | ')}`);
      console.log(
        `  the proxy over the ${ROUNDS} rounds: ${((after.cpuS - before.cpuS) * 1000).toFixed(0)} ms of CPU, ${after.checks - before.checks} credentials checked (the victim's: ${2 * ROUNDS * VICTIM_CALLS})`,
      );
      rows.push(row);
    } finally {
      await stack.close();
    }
  }
  victimProcess.close();
  await guardian.close();
  await baker.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

const role = process.env['BENCH_ATTACKER'];
const victimProcess = process.env['BENCH_VICTIM'] === '1';
(victimProcess ? victimMain() : role === undefined ? main() : attackerMain(role)).then(
  () => role === undefined && !victimProcess && process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
