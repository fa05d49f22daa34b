/**
 * The built commands as an installed package runs them: from a working directory that is not the
 * checkout. Without POLICY_FILE the embedded guardian (and the standalone one) use the package's
 * own config/policy.json, found from the package, not the working directory. Every log line carries
 * an ISO-8601 UTC time and its level by name.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rawRpc, startAgent, type TestAgent } from '../../helpers/agent';
import { freePort, waitFor } from '../../helpers/net';
import { ensureBuilt, GUARDIAN_MAIN, MAIN, reapAll, ROOT, spawnNode, startProxyProcess } from '../../helpers/proxy-process';

const PACKAGE_POLICY = path.join(ROOT, 'config', 'policy.json');
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

let agent: TestAgent;
let elsewhere: string;

beforeAll(async () => {
  ensureBuilt();
  agent = await startAgent({ name: 'Anywhere Agent' });
  elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-cwd-'));
}, 180_000);

afterAll(async () => {
  await reapAll();
  await agent?.close();
  fs.rmSync(elsewhere, { recursive: true, force: true });
});

test("the proxy started elsewhere decides with the package's demo policy; its lines carry ISO-8601 times and level names", async () => {
  const run = await startProxyProcess({ UPSTREAM_URL: agent.origin }, undefined, elsewhere);
  const r = await rawRpc(`${run.base}/a2a/jsonrpc`, {
    jsonrpc: '2.0',
    id: 'w',
    method: 'message/send',
    params: { message: { kind: 'message', messageId: 'm-w', role: 'user', parts: [{ kind: 'text', text: 'how to make explosives' }] } },
  });
  expect(r.json.error.code).toBe(-31403);
  expect(run.lines().find((l) => l.policyFile !== undefined)).toMatchObject({ level: 'warn', policyFile: PACKAGE_POLICY });
  await waitFor(() => run.lines().some((l) => l.msg === 'a2a call'), 10_000, 'the audit line');
  const lines = run.lines();
  expect(lines.length).toBeGreaterThan(2);
  for (const l of lines) {
    expect(LEVELS).toContain(l.level);
    expect(l.time).toMatch(ISO);
  }
}, 60_000);

test("--check elsewhere validates the package's policy", () => {
  const r = spawnSync(process.execPath, [MAIN, '--check'], { cwd: elsewhere, env: { PATH: process.env.PATH, UPSTREAM_URL: agent.origin }, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  expect(r.stdout).toContain(`# guardian: embedded, policy ${PACKAGE_POLICY} (valid)`);
});

test("the standalone guardian started elsewhere serves the package's policy", async () => {
  const port = await freePort();
  const g = spawnNode(GUARDIAN_MAIN, { GUARDIAN_PORT: String(port), GUARDIAN_HOST: '127.0.0.1' }, [], process.execPath, elsewhere);
  await waitFor(() => g.lines().some((l) => l.msg === 'guardian listening') || g.child.exitCode !== null, 15_000, 'guardian up');
  expect(g.stderr()).toBe('');
  const up = g.lines().find((l) => l.msg === 'guardian listening');
  expect(up).toMatchObject({ level: 'info', time: expect.stringMatching(ISO) });
  expect(JSON.stringify(g.lines())).toContain(PACKAGE_POLICY);
  g.child.kill('SIGTERM');
  expect(await g.exitWithin(10_000)).toEqual({ code: 0, signal: null });
}, 30_000);
