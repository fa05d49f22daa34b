/**
 * Task ownership reads the answer the caller reads. Ownership binds the tasks and contexts
 * an answer names to the caller before the answer leaves; an answer the proxy cannot read binds
 * nothing. If the caller (or any laxer reader) can still read it, the context it names is nobody's,
 * and another caller naming it first claims it and joins the conversation.
 *
 * A real SDK agent behind a front that reshapes caller A's `message/send` answer, generated over:
 * the binding (JSON-RPC, REST), the label (the agent's own, text/event-stream in three spellings,
 * text/plain, none) and the body (as is, a byte order mark, a NaN or a comment a lax JSON reader
 * accepts, the answer as an SSE event). ROLE=server with verified identities, response inspection
 * off, FAIL_MODE=closed.
 *
 * Oracle at the agent's request handler: whenever A's bytes name the context the agent made, B's
 * message naming that context never reaches the handler. Control (not vacuous): A's own follow-up
 * on its task does reach it in the cases where the answer was read.
 * ANSWER_READ_CASES (default 60) sets the cases; ANSWER_READ_SEED replays.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { closeServer } from '../../helpers/net';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(180_000);

const CASES = Number(process.env.ANSWER_READ_CASES ?? 60);
const SEED = process.env.ANSWER_READ_SEED === undefined ? undefined : Number(process.env.ANSWER_READ_SEED);

const rec = handlerRecorder();
const s = useStack({ wrapRequestHandler: rec.wrap });

type Label = 'agent' | 'sse' | 'sseCharset' | 'sseUpper' | 'textPlain' | 'none';
type Body = 'asis' | 'bom' | 'nan' | 'comment' | 'sseEvent';
interface Case {
  readonly binding: 'jsonrpc' | 'rest';
  readonly label: Label;
  readonly body: Body;
}

const LABELS: Record<Exclude<Label, 'agent' | 'none'>, string> = {
  sse: 'text/event-stream',
  sseCharset: 'text/event-stream; charset=utf-8',
  sseUpper: 'Text/Event-Stream',
  textPlain: 'text/plain',
};

let ids: TestIdentities;
let proxy: TestProxy;
let front: http.Server;
/** The case that reshapes the next POST answer (A's message), then nothing. */
let reshapeNext: Case | undefined;
/** The agent's own answer to the last reshaped call. */
let agentText = '';

function reshape(text: string, c: Case): string {
  switch (c.body) {
    case 'asis':
      return text;
    case 'bom':
      return `\uFEFF${text}`;
    case 'nan':
      return text.replace('{', '{"lax":NaN,');
    case 'comment':
      return `/* lax */${text}`;
    case 'sseEvent':
      return `data: ${text}\n\n`;
  }
}

beforeAll(async () => {
  front = http.createServer((req, res) => {
    const up = http.request(`${s.agent.origin}${req.url ?? '/'}`, { method: req.method, headers: req.headers }, (ur) => {
      const c = req.method === 'POST' ? reshapeNext : undefined;
      if (c === undefined) {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        return void ur.pipe(res);
      }
      reshapeNext = undefined;
      const parts: Buffer[] = [];
      ur.on('data', (d: Buffer) => parts.push(d));
      ur.on('end', () => {
        agentText = Buffer.concat(parts).toString('utf8');
        const out = Buffer.from(reshape(agentText, c), 'utf8');
        const headers = { ...ur.headers };
        delete headers['content-length'];
        delete headers['transfer-encoding'];
        if (c.label === 'none') delete headers['content-type'];
        else if (c.label !== 'agent') headers['content-type'] = LABELS[c.label];
        res.writeHead(ur.statusCode ?? 502, { ...headers, 'content-length': out.length });
        res.end(out);
      });
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  ids = await startIdentities();
  proxy = await s.proxy({
    ROLE: 'server',
    UPSTREAM_URL: `http://127.0.0.1:${(front.address() as AddressInfo).port}`,
    FAIL_MODE: 'closed',
    INSPECT_RESPONSES: 'false',
    ...ids.env,
  });
});

afterAll(async () => {
  await ids?.close();
  await closeServer(front);
});

const v1 = { 'a2a-version': '1.0' };

/** Answers as the agent wrote them, run before the generated ones: the oracle is never vacuous. */
const VALID: readonly Case[] = [
  { binding: 'jsonrpc', label: 'agent', body: 'asis' },
  { binding: 'rest', label: 'agent', body: 'asis' },
];

/** A call as `who`; the body text the caller got (whatever its status). */
async function post(who: Caller, binding: Case['binding'], method: 'SendMessage' | 'GetTask', params: Record<string, unknown>): Promise<string> {
  const headers = { 'content-type': 'application/json', ...v1, ...ids.headersAs(who) };
  const signal = AbortSignal.timeout(10_000);
  if (binding === 'jsonrpc') {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    return fetch(`${proxy.url}/a2a/jsonrpc`, { method: 'POST', headers, body, signal }).then((r) => r.text());
  }
  if (method === 'GetTask') return fetch(`${proxy.url}/a2a/rest/tasks/${encodeURIComponent(String(params.id))}`, { headers, signal }).then((r) => r.text());
  return fetch(`${proxy.url}/a2a/rest/message:send`, { method: 'POST', headers, body: JSON.stringify(params), signal }).then((r) => r.text());
}

const message = (n: number, extra: Record<string, unknown> = {}) => ({
  message: { messageId: `m-${n}`, role: 'ROLE_USER', parts: [{ text: 'hello' }], ...extra },
});

test("a context named in an answer A can read is A's: B naming it never reaches the agent; A's follow-up does", async () => {
  let n = 0;
  let followedUp = 0;
  let read = 0;
  let readValid = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        binding: fc.constantFrom<Case['binding']>('jsonrpc', 'rest'),
        label: fc.constantFrom<Label>('agent', 'agent', 'sse', 'sseCharset', 'sseUpper', 'textPlain', 'none'),
        body: fc.constantFrom<Body>('asis', 'asis', 'bom', 'nan', 'comment', 'sseEvent'),
      }),
      async (c) => {
        n++;
        reshapeNext = c;
        agentText = '';
        const got = await post('A', c.binding, 'SendMessage', message(n));
        const task = /"id":"([0-9a-f-]{36})"/.exec(agentText)?.[1];
        const context = /"contextId":"([0-9a-f-]{36})"/.exec(agentText)?.[1];
        expect({ case: c, madeTask: task !== undefined && context !== undefined }).toEqual({ case: c, madeTask: true });
        if (!got.includes(context as string)) return;
        read++;
        if (n <= VALID.length) readValid++;
        rec.clear();
        await post('B', c.binding, 'SendMessage', message(n, { contextId: context }));
        const joined = rec.calls.filter((x) => JSON.stringify(x.params).includes(context as string));
        expect({ case: c, joined: joined.map((x) => x.method) }).toEqual({ case: c, joined: [] });
        rec.clear();
        await post('A', c.binding, 'GetTask', { id: task });
        if (rec.calls.some((x) => x.method === 'getTask' && JSON.stringify(x.params).includes(task as string))) followedUp++;
      },
    ),
    { numRuns: CASES, examples: VALID.map((c) => [c] as [Case]), ...(SEED === undefined ? {} : { seed: SEED }) },
  );
  // Not vacuous: the answers as the agent wrote them were read, and the ones read were bound to A.
  expect(readValid).toBe(VALID.length);
  expect(followedUp).toBe(read);
});
