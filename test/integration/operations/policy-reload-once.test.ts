/**
 * A bad edit of POLICY_FILE is reported once per change of the file (POLICY_WATCH): another file
 * changing in the same directory (a log file next to it) retries nothing, and
 * a2a_guard_policy_reloads_total{result="failed"} counts changes of the policy, not events of its directory.
 * The real proxy process (dist/a2a-guard.js) with the embedded guardian, in front of a real SDK agent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rawRpc, startAgent, type TestAgent } from '../../helpers/agent';
import { sleep, waitFor } from '../../helpers/net';
import { ensureBuilt, reapAll, sample, scrape, startProxyProcess, type ProxyRun } from '../../helpers/proxy-process';

const FAILED = 'policy reload failed; the previous policy stays in force';
const policy = (word: string) => JSON.stringify({ deny: [{ id: word, reasonCode: 'WORD', message: `No ${word}.`, patterns: [`\\b${word}\\b`] }] });
const send = (id: string, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
});

let agent: TestAgent;
let dir: string;

beforeAll(async () => {
  ensureBuilt();
  agent = await startAgent({ name: 'Reload Agent' });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-reload-'));
}, 180_000);

afterAll(async () => {
  await reapAll();
  await agent?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Append to a log file beside the policy, each write its own burst of directory events (past the 200 ms debounce). */
async function neighbourWrites(log: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    fs.appendFileSync(log, `line ${i}\n`);
    await sleep(300);
  }
}

const failedLines = (run: ProxyRun) => run.lines().filter((l) => l.msg === FAILED);

test('an invalid policy, then a log file beside it changing: one report per change of the policy, the counter counts changes', async () => {
  const file = path.join(dir, 'policy.json');
  const log = path.join(dir, 'app.log');
  fs.writeFileSync(file, policy('alpha'));
  const run = await startProxyProcess({ UPSTREAM_URL: agent.origin, POLICY_FILE: file });
  const url = `${run.base}/a2a/jsonrpc`;

  fs.writeFileSync(file, '{"deny": [');
  await waitFor(() => failedLines(run).length >= 1, 10_000, 'the bad edit reported');
  await neighbourWrites(log, 8);
  expect(failedLines(run)).toHaveLength(1);
  expect(sample(await scrape(run), 'a2a_guard_policy_reloads_total', { result: 'failed' })).toBe(1);
  // The previous policy stays in force.
  expect((await rawRpc(url, send('a', 'say alpha'))).json.error.code).toBe(-31403);

  // Another bad edit is another change: reported once more.
  fs.writeFileSync(file, '{"deny": [{"id": "x"}]');
  await waitFor(() => failedLines(run).length >= 2, 10_000, 'the second bad edit reported');
  await neighbourWrites(log, 4);
  expect(failedLines(run)).toHaveLength(2);

  // A good edit is taken; the neighbour's writes after it reload nothing.
  fs.writeFileSync(file, policy('beta'));
  await waitFor(() => run.lines().some((l) => l.msg === 'policy reloaded'), 10_000, 'the good edit reloaded');
  await neighbourWrites(log, 4);
  expect(run.lines().filter((l) => l.msg === 'policy reloaded')).toHaveLength(1);
  expect(failedLines(run)).toHaveLength(2);
  const m = await scrape(run);
  expect(sample(m, 'a2a_guard_policy_reloads_total', { result: 'failed' })).toBe(2);
  expect(sample(m, 'a2a_guard_policy_reloads_total', { result: 'ok' })).toBe(1);
  expect((await rawRpc(url, send('b', 'say beta'))).json.error.code).toBe(-31403);
}, 60_000);
