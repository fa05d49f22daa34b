/**
 * Graceful shutdown of the real process (README "Admin endpoints and logs", DRAIN_TIMEOUT_MS):
 * `node dist/src/main.js` in front of a real SDK agent. On SIGTERM: /readyz turns 503, new
 * connections are refused, the in-flight unary call (a blocking "slow" task) finishes with the
 * agent's answer, the open stream ends with an `event: error` frame by DRAIN_TIMEOUT_MS (8 s here, well after the
 * 2.5 s slow call), and the
 * process exits 0.
 */
import http from 'node:http';
import { openSse, rawRpc, startAgent, textOf, type SseEvent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { waitFor } from '../../helpers/net';
import { ensureBuilt, MAIN_FILES, reapAll, startProxyProcess, tryConnect, type Exit, type ProxyRun } from '../../helpers/proxy-process';

let agent: TestAgent;
let guardian: TestGuardian;

beforeAll(async () => {
  ensureBuilt();
  agent = await startAgent({ name: 'Draining Agent', slowMs: 2500, stepMs: 50 });
  guardian = await startGuardian();
}, 180_000);

afterAll(async () => {
  await reapAll();
  await agent?.close();
  await guardian?.close();
});

interface Run extends ProxyRun {
  output: () => string;
}

async function startProcess(env: Record<string, string>): Promise<Run> {
  const run = await startProxyProcess({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ...env }, { script: MAIN_FILES });
  return { ...run, output: () => run.stdout() + run.stderr() };
}

const exitWithin = (run: Run, ms: number): Promise<Exit> => run.exitWithin(ms);

async function status(url: string): Promise<number> {
  try {
    const r = await fetch(url);
    await r.body?.cancel();
    return r.status;
  } catch {
    return 0;
  }
}

const send = (id: string | number, text: string, method = 'message/send') => ({
  jsonrpc: '2.0',
  id,
  method,
  params: {
    message: { kind: 'message', messageId: `m-${String(id)}`, role: 'user', parts: [{ kind: 'text', text }] },
    configuration: { blocking: true, acceptedOutputModes: ['text'] },
  },
});

test('SIGTERM: readyz 503, new connections refused, in-flight unary finishes, stream ends with event: error, exit 0', async () => {
  // SHUTDOWN_DELAY_MS=0: the listener closes at once (observe/process-lifecycle.test.ts covers the accept delay).
  const run = await startProcess({ DRAIN_TIMEOUT_MS: '8000', SHUTDOWN_DELAY_MS: '0' });
  expect(await status(`${run.admin}/readyz`)).toBe(200);

  // A stream in flight: the task waits until cancelled, so only the drain can end it.
  const stream = await openSse(`${run.base}/a2a/jsonrpc`, send(7, 'wait-for-cancel', 'message/stream'));
  expect(stream.status).toBe(200);
  const streamed: SseEvent[] = [];
  const first = await stream.events.next();
  if (!first.done) streamed.push(first.value);
  expect(streamed[0]?.json).toMatchObject({ id: 7, result: {} });
  const streamDone = (async () => {
    for await (const e of stream.events) streamed.push(e);
  })();

  // A blocking unary call in flight: the agent works on it for 2.5 s.
  agent.clear();
  let unaryDone = false;
  const unary = rawRpc(`${run.base}/a2a/jsonrpc`, send('slow-1', 'slow')).finally(() => (unaryDone = true));
  await waitFor(() => agent.received.some((r) => r.bodyText.includes('"slow"')), 10_000, 'slow call reached the agent');

  run.child.kill('SIGTERM');

  // Admin server reports not ready while draining.
  await waitFor(async () => (await status(`${run.admin}/readyz`)) === 503, 10_000, 'readyz 503');
  // New connections are refused while the slow call is still running.
  await waitFor(async () => (await tryConnect(run.port)) === 'refused', 10_000, 'new connections refused');
  expect(unaryDone).toBe(false);

  const res = await unary;
  expect(res.status).toBe(200);
  expect(res.json).toMatchObject({ jsonrpc: '2.0', id: 'slow-1', result: {} });
  expect(textOf(res.json)).toBe('echo: slow');

  await streamDone;
  const last = streamed[streamed.length - 1];
  expect(last?.event).toBe('error');
  expect(last?.json).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: expect.any(Number) } });
  // The drain ends the stream itself: -31502 with the shutdown message, not any other failure.
  expect(last?.json?.error).toMatchObject({ code: -31502, message: 'Proxy is shutting down' });

  const { code, signal } = await exitWithin(run, 20_000);
  expect({ code, signal }).toEqual({ code: 0, signal: null });
  // Log lines are batched per event-loop turn: the decision lines of the drained calls and the
  // last line before exit were flushed, not lost.
  const lines = run
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; method?: string });
  expect(lines.filter((l) => l.msg === 'a2a call').length).toBeGreaterThanOrEqual(2);
  expect(lines[lines.length - 1]?.msg).toBe('stopped');
}, 60_000);

test('SIGTERM with nothing in flight (only an idle keep-alive connection) exits 0 without waiting for DRAIN_TIMEOUT_MS', async () => {
  const run = await startProcess({ DRAIN_TIMEOUT_MS: '120000', SHUTDOWN_DELAY_MS: '0' });
  // Leave an idle keep-alive connection behind.
  const keepAlive = new http.Agent({ keepAlive: true });
  await new Promise<void>((resolve, reject) => {
    const body = JSON.stringify(send('ka', 'hello'));
    const req = http.request(
      `${run.base}/a2a/jsonrpc`,
      { method: 'POST', agent: keepAlive, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve());
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  run.child.kill('SIGTERM');
  try {
    const { code, signal } = await exitWithin(run, 20_000);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  } finally {
    keepAlive.destroy();
  }
}, 60_000);
