/**
 * Task ownership through the pipelined stream relay: with
 * INSPECT_RESPONSES=true and STREAM_INSPECT_WINDOW=8, a real @a2a-js/sdk agent streams a task and
 * its artifacts to verified caller A while a real guardian answers out of order:
 *   - the caller gets every event once, in the agent's order;
 *   - each event is bound before it leaves: the moment A holds the first event (the task), A can read
 *     the task through the proxy (an unknown task would be "not found"), B cannot;
 *   - the guardian judged every event (the window pipelined them: decisions overlapped).
 */
import http from 'node:http';
import { makeClient, textOf, type TestAgent } from '../../helpers/agent';
import { isResponseEnvelope, type TestGuardian } from '../../helpers/guardian';
import { sleep } from '../../helpers/net';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';

const WINDOW = 8;
const stack = useStack({ name: 'Pipelined Ownership Agent', version: '1.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let ids: TestIdentities;
let proxy: TestProxy;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  void agent;
  ids = await startIdentities();
  proxy = await stack.proxy({ ROLE: 'server', INSPECT_RESPONSES: 'true', STREAM_INSPECT_WINDOW: String(WINDOW), FAIL_MODE: 'closed', ...ids.env });
});
afterAll(async () => {
  await ids?.close();
});

interface Received {
  readonly json: any;
  /** What A's GetTask through the proxy answered right when this event arrived (first event only). */
  readAtArrival?: Promise<string>;
}

/** A raw v1.0 JSON-RPC SendStreamingMessage as `who`; `onFirst` runs the moment the first event arrives. */
function stream(who: Caller, id: string, text: string, onFirst: (json: any) => Promise<string>): Promise<Received[]> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'SendStreamingMessage',
    params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } },
  });
  return new Promise((resolve, reject) => {
    const events: Received[] = [];
    const req = http.request(
      `${proxy.url}/a2a/jsonrpc`,
      {
        method: 'POST',
        agent: false,
        headers: {
          ...ids.headersAs(who),
          'content-type': 'application/json',
          accept: 'text/event-stream',
          'a2a-version': '1.0',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          buf += c;
          for (let at = buf.indexOf('\n\n'); at !== -1; at = buf.indexOf('\n\n')) {
            const data = buf
              .slice(0, at)
              .split('\n')
              .filter((l) => l.startsWith('data: '))
              .map((l) => l.slice(6))
              .join('\n');
            buf = buf.slice(at + 2);
            if (data === '') continue;
            const ev: Received = { json: JSON.parse(data) };
            if (events.length === 0) ev.readAtArrival = onFirst(ev.json);
            events.push(ev);
          }
        });
        res.on('end', () => resolve(events));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** GetTask through the proxy as `who`: "ok <state>" or the error message. */
async function getTaskAs(who: Caller, taskId: string): Promise<string> {
  const c = await makeClient(proxy.url, 'JSONRPC', '1.0', { fetchImpl: ids.fetchAs(who) });
  try {
    const t = (await c.getTask({ tenant: '', id: taskId, historyLength: undefined })) as { id: string };
    return `ok ${t.id}`;
  } catch (err) {
    return (err as Error).message;
  }
}

test('each event is bound before it leaves, in order, while the guardian answers out of order', async () => {
  let inFlight = 0;
  let maxInFlight = 0;
  guardian.script(async (env) => {
    if (!isResponseEnvelope(env)) return { decision: 'allow' };
    // The window bounds this stream's events; the GetTask answer checked meanwhile (below) is not one of them.
    if ((env.params.payload as { id?: unknown }).id !== 'own-pipe-1') return { decision: 'allow' };
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    // The first event (the task) is the slowest to be decided: later events are decided before it.
    const m = /^chunk (\d+)$/.exec(textOf(env.params.payload));
    await sleep(m === null ? 60 : Math.floor(Math.random() * 15));
    inFlight--;
    return { decision: 'allow' };
  });
  let taskId = '';
  const events = await stream('A', 'own-pipe-1', 'stream 30', (json) => {
    taskId = (json.result?.task?.id as string | undefined) ?? '';
    return getTaskAs('A', taskId);
  });
  expect(taskId).toMatch(/^[0-9a-f-]{36}$/);
  // In order, every event once: the task, 30 chunks, the final status.
  expect(events.map((e) => textOf(e.json))).toEqual(['', ...Array.from({ length: 30 }, (_, i) => `chunk ${i}`), '']);
  expect(events.every((e) => e.json.id === 'own-pipe-1' && e.json.error === undefined)).toBe(true);
  // Bound before it left: A could read the task the moment the first event arrived.
  expect(await events[0]!.readAtArrival).toBe(`ok ${taskId}`);
  // And it is A's: B is told the task does not exist.
  expect(await getTaskAs('B', taskId)).toBe(`Task not found: ${taskId}`);
  // The guardian judged every event, several at once, never more than the window.
  expect(
    guardian
      .calls()
      .filter(isResponseEnvelope)
      .filter((e) => (e.params.payload as { id?: unknown }).id === 'own-pipe-1').length,
  ).toBe(32);
  expect(maxInFlight).toBeGreaterThan(1);
  expect(maxInFlight).toBeLessThanOrEqual(WINDOW);
});
