/**
 * A guardian's answer that arrived within GUARDIAN_TIMEOUT_MS is its answer, even when the proxy's event loop was
 * held past the deadline by other work (a turn of another caller's large body runs in setImmediate, after the loop
 * polled): the loop's timers run before it polls again, so the deadline fires with the answer waiting in the socket.
 * Under FAIL_MODE=open a deny taken for "no answer" would forward the call. The guardian runs in a process of its own
 * (its answer reaches the socket while the proxy's loop is held); the proxy and a real SDK agent run in-process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { useStack } from '../../helpers/proxy-harness';
import { postsTo, rawRpc } from '../../helpers/agent';
import { reap } from '../../helpers/process';

const stack = useStack();

/** Denies every call ANSWER_MS after its request arrived; pings at once. */
const ANSWER_MS = 900;
const GUARDIAN = `
const http = require('node:http');
const s = http.createServer((req, res) => {
  const c = [];
  req.on('data', (d) => c.push(d));
  req.on('end', () => {
    const env = JSON.parse(Buffer.concat(c).toString());
    const ping = env.method === 'ping';
    const result = ping ? { status: 'connected' } : { decision: 'deny', message: 'denied in time' };
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: env.id, result }));
    }, ping ? 0 : ${ANSWER_MS});
  });
});
s.listen(0, '127.0.0.1', () => console.log(s.address().port));
`;

let guardian: ChildProcess;
let guardianUrl: string;
beforeAll(async () => {
  guardian = spawn(process.execPath, ['-e', GUARDIAN], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((r) => guardian.stdout?.once('data', (d: Buffer) => r(d.toString().trim())));
  guardianUrl = `http://127.0.0.1:${port}`;
});
afterAll(() => reap(guardian));

/** Hold the event loop for `ms` in a task that runs after it polled (as a turn does). */
const holdAfterPoll = (ms: number) =>
  setImmediate(() => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  });

test('a deny that arrived within the time budget is enforced when the loop was held past the deadline (FAIL_MODE=open)', async () => {
  const p = await stack.proxy({ GUARDIAN_URL: guardianUrl, FAIL_MODE: 'open', GUARDIAN_TIMEOUT_MS: '1000' });
  await p.upstreamCard.ready();
  // From before the guardian's answer until past the deadline.
  const hold = setTimeout(() => holdAfterPoll(500), ANSWER_MS - 150);
  try {
    const r = await rawRpc(
      `${p.url}/a2a/jsonrpc`,
      {
        jsonrpc: '2.0',
        id: 9,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm-9', role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
      },
      { 'a2a-version': '0.3' },
    );
    expect(r.text).toContain('denied in time');
    expect(postsTo(stack.agent)).toHaveLength(0);
  } finally {
    clearTimeout(hold);
  }
});
