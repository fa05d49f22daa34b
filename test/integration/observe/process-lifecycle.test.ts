/**
 * Operating the real processes (README "Observability" and "Signals"): `node dist/a2a-guard.js` and
 * `node dist/src/guardian/main.js` in front of a real SDK agent.
 *   - /readyz means "this replica can serve": 503 until the guardian has answered a ping once (a wrong
 *     GUARDIAN_URL is never ready, under either FAIL_MODE); later misses keep it 200 (the state in the
 *     body and in a2a_guard_guardian_up), 503 only when READINESS_REQUIRES asks;
 *   - SIGTERM: /readyz 503 at once, calls (also on new connections) still served during
 *     SHUTDOWN_DELAY_MS, then the listener closes, the in-flight call finishes, exit 0;
 *   - SIGHUP (and a change of the file) reloads the embedded guardian's policy while calls flow: no
 *     call fails, the new policy decides afterwards; an invalid policy keeps the old one, one line
 *     per problem; counted; the same for the standalone guardian;
 *   - a port in use: one clear stderr line, exit 2, the log lines before it flushed;
 *   - --help, --version, --check (secrets masked), --verify-log; `npm start` forwards SIGTERM;
 *   - with tracing off no OpenTelemetry module is loaded.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { rawRpc, startAgent, textOf, type TestAgent } from '../../helpers/agent';
import { deadGuardianUrl, startGuardian, type TestGuardian } from '../../helpers/guardian';
import { closeServer, freePort, listen, unrefSleep, waitFor } from '../../helpers/net';
import { reap } from '../../helpers/process';
import { ensureBuilt, GUARDIAN_MAIN, MAIN, reapAll, ROOT, sample, scrape, spawnNode, startProxyProcess, tryConnect } from '../../helpers/proxy-process';
import { describeVariables } from '../../../src/config/config';

let agent: TestAgent;
let guardian: TestGuardian;
let tmp: string;

beforeAll(async () => {
  ensureBuilt();
  agent = await startAgent({ name: 'Lifecycle Agent', slowMs: 7000, stepMs: 50 });
  guardian = await startGuardian();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-life-'));
}, 180_000);

afterEach(async () => {
  await reapAll();
  guardian.reset();
});

afterAll(async () => {
  await agent?.close();
  await guardian?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const send = (id: string, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] }, configuration: { blocking: true } },
});

async function readyz(admin: string): Promise<{ status: number; body: any }> {
  const r = await fetch(`${admin}/readyz`);
  return { status: r.status, body: await r.json() };
}

/** A fresh connection (no keep-alive), so "accepting" is what is tested. */
function postFresh(url: string, body: unknown): Promise<{ status: number; json: any; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text), connection: res.headers.connection }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

describe('readiness means "this replica can serve"', () => {
  test.each([
    ['closed', 'nothing listening', async () => deadGuardianUrl()],
    ['open', 'nothing listening', async () => deadGuardianUrl()],
    ['closed', 'the agent itself (not a guardian)', async () => agent.origin],
  ])(
    'FAIL_MODE=%s, GUARDIAN_URL at %s: never ready (the guardian never answered), reported down in the body and the metrics',
    async (failMode, _what, url) => {
      const run = await startProxyProcess({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: await url(), FAIL_MODE: failMode });
      const r = await readyz(run.admin);
      expect(r).toEqual({
        status: 503,
        body: {
          ready: false,
          listening: true,
          configured: true,
          draining: false,
          guardian: { up: false, required: false, checkedAt: expect.any(String), answered: false, breaker: expect.any(String), failMode },
          upstream: { up: true, required: false, checkedAt: expect.any(String) },
        },
      });
      const m = await scrape(run);
      expect(sample(m, 'a2a_guard_guardian_up')).toBe(0);
      expect(sample(m, 'a2a_guard_upstream_up')).toBe(1);
      expect(sample(m, 'a2a_guard_ready')).toBe(0);
      // One warn line for the state change, not one per probe.
      await readyz(run.admin);
      expect(run.lines().filter((l) => l.msg === 'guardian did not answer ping')).toHaveLength(1);
    },
    30_000,
  );

  test('a guardian that answered once and then misses pings: still ready (no READINESS_REQUIRES), reported down', async () => {
    const run = await startProxyProcess({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url });
    expect(await readyz(run.admin)).toMatchObject({ status: 200, body: { ready: true, guardian: { up: true, answered: true } } });
    guardian.scriptPing(() => ({ fault: 'http500' }));
    expect(await readyz(run.admin)).toMatchObject({ status: 200, body: { ready: true, guardian: { up: false, answered: true } } });
  }, 30_000);

  test('READINESS_REQUIRES=guardian,upstream: 503 while the guardian is down, 200 once it answers', async () => {
    guardian.scriptPing(() => ({ fault: 'http500' }));
    const run = await startProxyProcess({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, READINESS_REQUIRES: 'guardian,upstream' });
    const down = await readyz(run.admin);
    expect(down).toMatchObject({ status: 503, body: { ready: false, guardian: { up: false, required: true }, upstream: { up: true, required: true } } });
    expect(sample(await scrape(run), 'a2a_guard_ready')).toBe(0);
    guardian.reset();
    expect(await readyz(run.admin)).toMatchObject({ status: 200, body: { ready: true, guardian: { up: true } } });
  }, 30_000);
  test("READINESS_REQUIRES=upstream with GRPC_PORT: 503 while the agent's gRPC endpoint does not answer (its card does), 200 once it does", async () => {
    // The same agent's card, and a gRPC endpoint where nothing listens.
    const dead = await startProxyProcess({
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      READINESS_REQUIRES: 'upstream',
      GRPC_PORT: '0',
      GRPC_UPSTREAM_URL: `http://127.0.0.1:${await freePort()}`,
    });
    const down = await readyz(dead.admin);
    expect(down).toMatchObject({ status: 503, body: { ready: false, upstream: { up: false, required: true, card: true, grpc: false } } });
    expect(sample(await scrape(dead), 'a2a_guard_upstream_up')).toBe(0);
    expect(sample(await scrape(dead), 'a2a_guard_ready')).toBe(0);
    expect(dead.lines().filter((l) => l.msg === 'upstream agent unreachable (card or gRPC endpoint)')).toMatchObject([{ card: true, grpc: false }]);
    // A real SDK agent serving gRPC: ready.
    const grpcAgent = await startAgent({ name: 'Readiness gRPC Agent', grpc: true });
    try {
      const live = await startProxyProcess({ UPSTREAM_URL: grpcAgent.origin, GUARDIAN_URL: guardian.url, READINESS_REQUIRES: 'upstream', GRPC_PORT: '0' });
      expect(await readyz(live.admin)).toMatchObject({ status: 200, body: { ready: true, upstream: { up: true, required: true, card: true, grpc: true } } });
      expect(sample(await scrape(live), 'a2a_guard_upstream_up')).toBe(1);
    } finally {
      await reapAll();
      await grpcAgent.close();
    }
  }, 60_000);
});

test('SIGTERM: not ready at once; calls on new connections are served during SHUTDOWN_DELAY_MS; then the listener closes, the in-flight call finishes, exit 0', async () => {
  const run = await startProxyProcess({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, SHUTDOWN_DELAY_MS: '4000', DRAIN_TIMEOUT_MS: '12000' });
  agent.clear();
  let slowDone = false;
  const slow = rawRpc(`${run.base}/a2a/jsonrpc`, send('slow-1', 'slow')).finally(() => (slowDone = true));
  await waitFor(() => agent.received.some((r) => r.bodyText.includes('"slow"')), 10_000, 'the slow call reached the agent');

  const signalled = Date.now();
  run.child.kill('SIGTERM');
  await waitFor(async () => (await readyz(run.admin)).status === 503, 5_000, 'readyz 503');
  expect((await readyz(run.admin)).body).toMatchObject({ ready: false, draining: true });
  // Still accepting: a call on a brand-new connection is served, told to close its connection. (The delay is
  // long enough for a busy machine; if this call came after it, it would be refused, not slow.)
  const during = await postFresh(`${run.base}/a2a/jsonrpc`, send('during', 'hello'));
  expect(during.status).toBe(200);
  expect(textOf(during.json)).toBe('echo: hello');
  expect(during.connection).toBe('close');
  // After the delay the listener is closed while the slow call still runs.
  await waitFor(async () => (await tryConnect(run.port)) === 'refused', 10_000, 'new connections refused');
  expect(Date.now() - signalled).toBeGreaterThanOrEqual(3900);
  expect(slowDone).toBe(false);
  const r = await slow;
  expect(textOf(r.json)).toBe('echo: slow');
  expect(await run.exitWithin(20_000)).toEqual({ code: 0, signal: null });
  const lines = run.lines();
  expect(lines.find((l) => l.signal === 'SIGTERM')).toMatchObject({ acceptMs: 4000, drainMs: 12000 });
  expect(
    lines
      .filter((l) => l.msg === 'a2a call')
      .map((l) => l.a2aId)
      .sort(),
  ).toEqual(['during', 'slow-1']);
  expect(lines[lines.length - 1]?.msg).toBe('stopped');
}, 60_000);

describe('policy reload', () => {
  const policy = (word: string) => JSON.stringify({ deny: [{ id: word, reasonCode: 'WORD', message: `No ${word}.`, patterns: [`\\b${word}\\b`] }] });

  /** Calls in a loop until stopped; every answer must be an echo or a -31403, nothing else. */
  function traffic(url: string, words: string[]): { count: () => number; stop: () => Promise<Array<{ word: string; code: number | 'ok' }>> } {
    let running = true;
    const seen: Array<{ word: string; code: number | 'ok' }> = [];
    const loop = (async () => {
      for (let i = 0; running; i++) {
        const word = words[i % words.length] as string;
        const r = await rawRpc(url, send(`t-${i}`, `say ${word}`));
        seen.push({ word, code: r.json?.result !== undefined ? 'ok' : r.json?.error?.code });
      }
    })();
    return {
      count: () => seen.length,
      stop: async () => {
        running = false;
        await loop;
        return seen;
      },
    };
  }

  test('embedded guardian: SIGHUP with a valid policy swaps it while calls flow; an invalid one keeps it, one line per problem; counted', async () => {
    const file = path.join(tmp, 'hup-policy.json');
    fs.writeFileSync(file, policy('alpha'));
    const run = await startProxyProcess({ UPSTREAM_URL: agent.origin, POLICY_FILE: file, POLICY_WATCH: 'false' });
    const url = `${run.base}/a2a/jsonrpc`;
    expect((await rawRpc(url, send('a', 'say alpha'))).json.error.code).toBe(-31403);

    const flow = traffic(url, ['alpha', 'beta']);
    await waitFor(() => flow.count() >= 4, 10_000, 'calls flowing');
    fs.writeFileSync(file, policy('beta'));
    run.child.kill('SIGHUP');
    await waitFor(() => run.lines().some((l) => l.msg === 'policy reloaded'), 10_000, 'policy reloaded');
    const atReload = flow.count();
    await waitFor(() => flow.count() >= atReload + 4, 10_000, 'calls after the reload');
    const seen = await flow.stop();
    // Every call got a decision, before and after the swap.
    expect(seen.every((s) => s.code === 'ok' || s.code === -31403)).toBe(true);
    expect(run.lines().find((l) => l.msg === 'policy reloaded')).toMatchObject({
      reason: 'SIGHUP',
      changed: true,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect((await rawRpc(url, send('b', 'say alpha'))).json.result).toBeDefined();
    expect((await rawRpc(url, send('c', 'say beta'))).json.error.code).toBe(-31403);

    // Two problems in one file: two lines; beta stays denied.
    fs.writeFileSync(
      file,
      JSON.stringify({
        deny: [
          { id: 'x', message: 'm', patterns: ['('] },
          { id: 'y', message: 'm', patterns: ['['] },
        ],
      }),
    );
    run.child.kill('SIGHUP');
    await waitFor(
      () => run.lines().filter((l) => l.msg === 'policy reload failed; the previous policy stays in force').length >= 2,
      10_000,
      'two problem lines',
    );
    const failed = run.lines().filter((l) => l.msg === 'policy reload failed; the previous policy stays in force');
    expect(failed).toHaveLength(2);
    expect(failed.map((l) => l.problem)).toEqual([
      expect.stringMatching(/^deny\[0\]\.patterns\[0\]: invalid regular expression/),
      expect.stringMatching(/^deny\[1\]\.patterns\[0\]/),
    ]);
    expect(failed[0]?.level).toBe('error');
    expect((await rawRpc(url, send('d', 'say beta'))).json.error.code).toBe(-31403);
    const m = await scrape(run);
    expect(sample(m, 'a2a_guard_policy_reloads_total', { result: 'ok' })).toBe(1);
    expect(sample(m, 'a2a_guard_policy_reloads_total', { result: 'failed' })).toBe(1);
  }, 60_000);

  test('embedded guardian: a change of the policy file is picked up by itself (POLICY_WATCH, the default), also when the file is replaced', async () => {
    const file = path.join(tmp, 'watched-policy.json');
    fs.writeFileSync(file, policy('gamma'));
    const run = await startProxyProcess({ UPSTREAM_URL: agent.origin, POLICY_FILE: file });
    const url = `${run.base}/a2a/jsonrpc`;
    expect((await rawRpc(url, send('g', 'say gamma'))).json.error.code).toBe(-31403);
    // Replace the file as editors and ConfigMap updates do: write elsewhere, rename over it.
    fs.writeFileSync(`${file}.new`, policy('delta'));
    fs.renameSync(`${file}.new`, file);
    await waitFor(() => run.lines().some((l) => l.msg === 'policy reloaded' && l.reason === 'file change'), 10_000, 'reload on file change');
    expect((await rawRpc(url, send('h', 'say gamma'))).json.result).toBeDefined();
    expect((await rawRpc(url, send('i', 'say delta'))).json.error.code).toBe(-31403);
  }, 30_000);

  test('standalone guardian: SIGHUP reloads, an invalid policy is refused line by line', async () => {
    const file = path.join(tmp, 'standalone-policy.json');
    fs.writeFileSync(file, policy('alpha'));
    const port = await freePort();
    const g = spawnNode(GUARDIAN_MAIN, { GUARDIAN_PORT: String(port), GUARDIAN_HOST: '127.0.0.1', POLICY_FILE: file, POLICY_WATCH: 'false' });
    await waitFor(() => g.lines().some((l) => l.msg === 'guardian listening'), 15_000, 'guardian up');
    // The guardian decides what a proxy in front of the agent asks it.
    const run = await startProxyProcess({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: `http://127.0.0.1:${port}` });
    const url = `${run.base}/a2a/jsonrpc`;
    expect((await rawRpc(url, send('a', 'say alpha'))).json.error.code).toBe(-31403);
    fs.writeFileSync(file, policy('beta'));
    g.child.kill('SIGHUP');
    await waitFor(() => g.lines().some((l) => l.msg === 'policy reloaded'), 10_000, 'reloaded');
    expect((await rawRpc(url, send('b', 'say alpha'))).json.result).toBeDefined();
    fs.writeFileSync(file, '{"deny": [{"id": "x"}]');
    g.child.kill('SIGHUP');
    await waitFor(() => g.lines().some((l) => l.msg === 'policy reload failed; the previous policy stays in force'), 10_000, 'refused');
    expect(g.lines().filter((l) => l.msg === 'policy reload failed; the previous policy stays in force')).toEqual([
      expect.objectContaining({ problem: expect.stringMatching(/^not valid JSON/) }),
    ]);
    expect((await rawRpc(url, send('c', 'say beta'))).json.error.code).toBe(-31403);
    g.child.kill('SIGTERM');
    expect(await g.exitWithin(10_000)).toEqual({ code: 0, signal: null });
  }, 60_000);
});

describe('listen errors', () => {
  let blocker: http.Server;
  let busy: number;
  beforeAll(async () => {
    blocker = http.createServer();
    busy = Number(new URL(await listen(blocker)).port);
  });
  afterAll(() => closeServer(blocker));

  test('the proxy port in use: one clear line, exit 2, the log lines before it flushed', async () => {
    const run = spawnNode(MAIN, {
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      PORT: String(busy),
      HOST: '127.0.0.1',
      ADMIN_PORT: String(await freePort()),
      ADMIN_HOST: '127.0.0.1',
    });
    expect(await run.exitWithin(15_000)).toEqual({ code: 2, signal: null });
    expect(run.stderr()).toBe(`a2a-guard: cannot listen on 127.0.0.1:${busy} (PORT): address already in use (EADDRINUSE)\n`);
    expect(run.lines().some((l) => typeof l.msg === 'string' && l.msg.startsWith('CARD_SIGNATURES=strip'))).toBe(true);
  }, 30_000);

  test('the push relay port in use: one clear line naming PUSH_RELAY_PORT, exit 2', async () => {
    const run = spawnNode(MAIN, {
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      ADMIN_PORT: String(await freePort()),
      ADMIN_HOST: '127.0.0.1',
      INSPECT_RESPONSES: 'true',
      PUSH_RELAY_PORT: String(busy),
    });
    expect(await run.exitWithin(15_000)).toEqual({ code: 2, signal: null });
    expect(run.stderr()).toBe(`a2a-guard: cannot listen on 127.0.0.1:${busy} (PUSH_RELAY_PORT): address already in use (EADDRINUSE)\n`);
  }, 30_000);

  test('the admin port in use: one clear line naming ADMIN_PORT, exit 2', async () => {
    const run = spawnNode(MAIN, {
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      ADMIN_PORT: String(busy),
      ADMIN_HOST: '127.0.0.1',
    });
    expect(await run.exitWithin(15_000)).toEqual({ code: 2, signal: null });
    expect(run.stderr()).toBe(`a2a-guard: cannot listen on 127.0.0.1:${busy} (ADMIN_PORT): address already in use (EADDRINUSE)\n`);
    expect(run.lines().some((l) => l.msg === 'a2a-guard listening')).toBe(true);
  }, 30_000);

  test('the guardian port in use: one clear line, exit 2', async () => {
    const g = spawnNode(GUARDIAN_MAIN, { GUARDIAN_PORT: String(busy), GUARDIAN_HOST: '127.0.0.1' });
    expect(await g.exitWithin(15_000)).toEqual({ code: 2, signal: null });
    expect(g.stderr()).toMatch(new RegExp(`^guardian: cannot listen on 127.0.0.1:${busy}: .*address already in use\\)\\n$`));
  }, 30_000);
});

describe('command line', () => {
  const node = (script: string, args: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [script, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, encoding: 'utf8' });
  const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

  test('--help lists every variable of the schema with its default; --version prints the package version', () => {
    const help = node(MAIN, ['--help']);
    expect(help.status).toBe(0);
    for (const v of describeVariables())
      expect(help.stdout).toMatch(new RegExp(`^  ${v.name} +${v.default.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} +\\S`, 'm'));
    expect(help.stdout).toContain('SHUTDOWN_DELAY_MS');
    expect(help.stdout).toMatch(/^ {2}UPSTREAM_URL +required/m);
    expect(node(MAIN, ['--version']).stdout).toBe(`a2a-guard ${version}\n`);
    const g = node(GUARDIAN_MAIN, ['--help']);
    expect(g.status).toBe(0);
    expect(g.stdout).toMatch(/^ {2}GUARDIAN_PORT +7070 /m);
    expect(node(GUARDIAN_MAIN, ['--version']).stdout).toMatch(/^a2a-guard-guardian \S+\n$/);
  });

  test('--check: the effective configuration with secrets masked, exit 0; an invalid variable or policy: exit 2', () => {
    const ok = node(MAIN, ['--check'], {
      UPSTREAM_URL: 'http://agent.internal:9000',
      GUARDIAN_URL: 'https://user:hunter2@guardian.internal/aos',
      GUARDIAN_TOKEN: 'tok-SECRET-1',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key=SECRET-2',
      ROLE: 'client',
    });
    expect(ok.status).toBe(0);
    expect(ok.stdout).not.toMatch(/SECRET|hunter2/);
    expect(ok.stdout).toContain('GUARDIAN_TOKEN=***\n');
    expect(ok.stdout).toContain('OTEL_EXPORTER_OTLP_HEADERS=***\n');
    expect(ok.stdout).toContain('GUARDIAN_URL=https://user:***@guardian.internal/aos\n');
    expect(ok.stdout).toContain('ROLE=client\n');
    expect(ok.stdout).toContain('FAIL_MODE=closed  # default\n');
    expect(ok.stdout).toContain('# tracing: on, http/protobuf to http://collector:4318/v1/traces');
    expect(ok.stdout.split('\n').filter((l) => /^[A-Z0-9_]+=/.test(l))).toHaveLength(describeVariables().length);

    const bad = node(MAIN, ['--check'], { UPSTREAM_URL: 'nope', READINESS_REQUIRES: 'guardian,moon' });
    expect(bad.status).toBe(2);
    expect(bad.stderr.split('\n').filter((l) => l !== '')).toEqual([
      expect.stringMatching(/^a2a-guard: configuration error: UPSTREAM_URL="nope": /),
      expect.stringMatching(/^a2a-guard: configuration error: READINESS_REQUIRES="guardian,moon": /),
    ]);
    const policyFile = path.join(tmp, 'bad-check.json');
    fs.writeFileSync(policyFile, '{"deny": 3}');
    const badPolicy = node(MAIN, ['--check'], { UPSTREAM_URL: 'http://a:1', POLICY_FILE: policyFile });
    expect(badPolicy.status).toBe(2);
    expect(badPolicy.stderr).toContain(`configuration error: ${policyFile}: deny`);
    expect(node(MAIN, ['--frobnicate']).status).toBe(2);
    const g = node(GUARDIAN_MAIN, ['--check'], { POLICY_FILE: policyFile });
    expect(g.status).toBe(2);
    expect(node(GUARDIAN_MAIN, ['--check']).stdout).toMatch(/configuration and policy are valid/);
  });

  test('--verify-log: exit 0 for an intact chain, 1 naming the first broken record', () => {
    const file = path.join(tmp, 'cli-decisions.log');
    execFileSync(process.execPath, [
      '-e',
      `const { DecisionLog } = require(${JSON.stringify(path.join(ROOT, 'dist/src/observe/decision-log.js'))});
      const l = new DecisionLog(${JSON.stringify(file)}); for (let i = 0; i < 3; i++) l.append({ outcome: 'forwarded', a2aId: i }); l.close();`,
    ]);
    const ok = node(MAIN, ['--verify-log', file]);
    expect({ status: ok.status, out: ok.stdout }).toEqual({ status: 0, out: `${file}: intact, 3 records\n` });
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('"a2aId":1', '"a2aId":7'));
    const broken = node(MAIN, ['--verify-log', file]);
    expect(broken.status).toBe(1);
    expect(broken.stdout).toMatch(/broken at line 2 \(seq 2\): hash does not match/);
  });

  test('--verify-log with DECISION_LOG_KEY_FILE (HMAC chain) and --head SEQ:HASH (a cut tail is found)', () => {
    const file = path.join(tmp, 'cli-keyed.log');
    const keyFile = path.join(tmp, 'cli-log.key');
    fs.writeFileSync(keyFile, Buffer.alloc(32, 3));
    const heads = execFileSync(
      process.execPath,
      [
        '-e',
        `const { DecisionLog } = require(${JSON.stringify(path.join(ROOT, 'dist/src/observe/decision-log.js'))});
      const l = new DecisionLog(${JSON.stringify(file)}, require('fs').readFileSync(${JSON.stringify(keyFile)})); const h = [];
      for (let i = 0; i < 3; i++) h.push(l.append({ outcome: 'forwarded', a2aId: i })); l.close(() => {}); process.stdout.write(JSON.stringify(h));`,
      ],
      { encoding: 'utf8' },
    );
    const head = (JSON.parse(heads) as Array<{ seq: number; hash: string }>)[2] as { seq: number; hash: string };
    const keyed = { DECISION_LOG_KEY_FILE: keyFile };
    expect(node(MAIN, ['--verify-log', file, '--head', `${head.seq}:${head.hash}`], keyed)).toMatchObject({
      status: 0,
      stdout: `${file}: intact, 3 records\n`,
    });
    // Without the key the HMACs do not verify; with a short key the command refuses to run.
    expect(node(MAIN, ['--verify-log', file]).status).toBe(1);
    fs.writeFileSync(path.join(tmp, 'short.key'), 'short');
    expect(node(MAIN, ['--verify-log', file], { DECISION_LOG_KEY_FILE: path.join(tmp, 'short.key') })).toMatchObject({
      status: 2,
      stderr: expect.stringMatching(/at least 32/),
    });
    // Cut the last record off: an intact chain, but not the record the last audit line named.
    fs.writeFileSync(file, `${fs.readFileSync(file, 'utf8').trim().split('\n').slice(0, 2).join('\n')}\n`);
    const cut = node(MAIN, ['--verify-log', file, '--head', `${head.seq}:${head.hash}`], keyed);
    expect(cut.status).toBe(1);
    expect(cut.stdout).toMatch(/cut off/);
    expect(node(MAIN, ['--verify-log', file, '--head', 'nonsense']).status).toBe(2);
  });

  test('tracing off: the proxy loads none of the OpenTelemetry SDK, exporter or resources', () => {
    const script = `const { startProxy } = require('./dist/src/server'); const { configFrom } = require('./dist/src/config/config'); const { createLogger } = require('./dist/src/runtime/log');
      const config = configFrom({ UPSTREAM_URL: 'http://127.0.0.1:9', GUARDIAN_URL: 'http://127.0.0.1:9', PORT: '0', HOST: '127.0.0.1', CARD_TTL_MS: '0' });
      startProxy({ config, logger: createLogger('silent') }).then(async (p) => {
        // @opentelemetry/api itself comes with prom-client (exemplars); the SDK and the exporter must not load.
        const loaded = Object.keys(require.cache).filter((m) => m.includes('@opentelemetry/') && !m.includes('@opentelemetry/api/')).length;
        await p.close(); console.log(JSON.stringify({ loaded })); process.exit(0);
      });`;
    const r = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    expect(JSON.parse(r.stdout.trim().split('\n').pop() as string)).toEqual({ loaded: 0 });
    const on = spawnSync(process.execPath, ['-e', script.replace("CARD_TTL_MS: '0'", "CARD_TTL_MS: '0', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9'")], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });
    expect((JSON.parse(on.stdout.trim().split('\n').pop() as string) as { loaded: number }).loaded).toBeGreaterThan(0);
  }, 30_000);

  test('`npm start` forwards SIGTERM: the proxy drains and exits, nothing is left running', async () => {
    const port = await freePort();
    const npm = spawn('npm', ['start', '--silent', '--ignore-scripts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? os.tmpdir(),
        UPSTREAM_URL: agent.origin,
        GUARDIAN_URL: guardian.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        ADMIN_PORT: String(await freePort()),
        ADMIN_HOST: '127.0.0.1',
        SHUTDOWN_DELAY_MS: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    npm.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
    try {
      await waitFor(() => out.includes('"a2a-guard listening"'), 30_000, 'proxy up under npm');
      const pid = (JSON.parse(out.split('\n').find((l) => l.includes('"a2a-guard listening"')) as string) as { pid: number }).pid;
      const npmExit = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
      npm.kill('SIGTERM');
      await Promise.race([npmExit, unrefSleep(15_000)]);
      await waitFor(
        () => {
          try {
            process.kill(pid, 0);
            return false;
          } catch {
            return true;
          }
        },
        15_000,
        'the proxy process is gone',
      );
      expect(out).toContain('"msg":"stopped"');
      expect(await tryConnect(port)).toBe('refused');
    } finally {
      await reap(npm);
    }
  }, 60_000);
});
