/**
 * "the proxy reads the agent's answer one way, the caller reads it another way",
 * with answers read by operation, not label: labels, statuses, codings, cards (interface
 * lists under proto names), lax SSE readers, and what task ownership binds (`event: error` results,
 * answers about one task, members given twice or in another case). A scripted hostile agent on a raw TCP socket
 * (full control of status line, header lines, framing) behind a2a-guard. Each test FAILS when there
 * is a finding and passes when the proxy holds.
 *
 * Oracles: the bytes a raw caller gets (fetch-decoded and raw), a real @a2a-js/sdk client (what a
 * caller acts on), a lax SSE reader that splits lines the way Python's str.splitlines (httpx's
 * LineDecoder, hence httpx-sse) does, and, for task ownership, the agent's own record of whether B's
 * message naming A's context reached it.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import { collect, makeClient, sendReq } from '../../helpers/agent';
import { startGuardian, isResponseEnvelope, type TestGuardian } from '../../helpers/guardian';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';

import { answer, messageReaches, useHostileAgent } from '../../helpers/hostile-agent';
import { contextsIn, laxEvents } from '../../helpers/lax-readers';

jest.setTimeout(120_000);

/* ---------------------------------------------------------------------------------------------- */
/* The hostile agent                                                                              */
/* ---------------------------------------------------------------------------------------------- */

const hostile = useHostileAgent();

/* ---------------------------------------------------------------------------------------------- */
/* Calls                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

type Binding = 'jsonrpc' | 'rest';
interface Op {
  readonly name: string;
  readonly binding: Binding;
  readonly v03: boolean;
  readonly verb: 'GET' | 'POST';
  /** JSON-RPC method, or the REST path below /a2a/rest. */
  readonly target: string;
  readonly streaming: boolean;
  readonly card?: boolean;
}

const msgParams = (v03: boolean, extra: Record<string, unknown> = {}, rest = false) =>
  v03 && rest
    ? { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', content: [{ text: 'hi' }], ...extra } }
    : v03
      ? { message: { kind: 'message', messageId: `m-${Math.random()}`, role: 'user', parts: [{ kind: 'text', text: 'hi' }], ...extra } }
      : { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'hi' }], ...extra } };

function callOf(op: Op, extra: Record<string, unknown> = {}): { path: string; init: RequestInit } {
  const headers: Record<string, string> = { 'a2a-version': op.v03 ? '0.3' : '1.0', accept: op.streaming ? 'text/event-stream' : 'application/json' };
  const isMsg = /message/i.test(op.target);
  const params = isMsg ? msgParams(op.v03, extra, op.binding === 'rest') : op.card ? {} : { id: 't-1' };
  if (op.binding === 'jsonrpc') {
    headers['content-type'] = 'application/json';
    return { path: '/a2a/jsonrpc', init: { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: op.target, params }) } };
  }
  if (op.verb === 'GET') return { path: `/a2a/rest${op.target}`, init: { method: 'GET', headers } };
  headers['content-type'] = 'application/json';
  return { path: `/a2a/rest${op.target}`, init: { method: 'POST', headers, body: JSON.stringify(isMsg ? params : {}) } };
}

/** What a caller can read of the answer: fetch's decoded text and the raw body bytes (UTF-8 and Latin-1). */
async function callerGets(proxyUrl: string, op: Op, extraHeaders: Record<string, string> = {}): Promise<{ status: number; text: string; fetched: string }> {
  const { path, init } = callOf(op);
  const headers = { ...(init.headers as Record<string, string>), ...extraHeaders };
  let fetched = '';
  let status = 0;
  try {
    const r = await fetch(`${proxyUrl}${path}`, { ...init, headers, signal: AbortSignal.timeout(15_000) });
    status = r.status;
    fetched = await r.text();
  } catch (err) {
    fetched = `FETCH-ERROR ${(err as Error).message}`;
  }
  const raw = await new Promise<Buffer>((resolve) => {
    const u = new URL(`${proxyUrl}${path}`);
    const body = init.body === undefined ? undefined : Buffer.from(init.body as string);
    const req = http.request(
      u,
      { method: init.method, headers: { ...headers, 'accept-encoding': 'identity', ...(body === undefined ? {} : { 'content-length': String(body.length) }) } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('error', () => undefined);
        res.on('close', () => resolve(Buffer.concat(parts)));
      },
    );
    req.on('error', () => resolve(Buffer.alloc(0)));
    req.end(body);
  });
  return { status, fetched, text: `${fetched}\n${raw.toString('utf8')}\n${raw.toString('latin1')}` };
}

/* Answers in each binding's shape, carrying a marker word. */
function resultFor(op: Op, marker: string): unknown {
  if (op.card) return JSON.parse(hostile.cardText.replace('"name":"', `"name":"${marker} `)) as unknown;
  const msg1 = { messageId: marker, role: 'ROLE_AGENT', parts: [{ text: marker }] };
  const msg03 = { kind: 'message', messageId: marker, role: 'agent', parts: [{ kind: 'text', text: marker }] };
  if (op.binding === 'jsonrpc') return op.v03 ? msg03 : { message: msg1 };
  return op.v03 ? { msg: { messageId: marker, role: 'ROLE_AGENT', content: [{ text: marker }] } } : { message: msg1 };
}
function bodyFor(op: Op, id: unknown, marker: string): string {
  const result = resultFor(op, marker);
  return op.binding === 'jsonrpc' ? JSON.stringify({ jsonrpc: '2.0', id, result }) : JSON.stringify(result);
}

const UNARY_OPS: Op[] = [
  { name: 'SendMessage', binding: 'jsonrpc', v03: false, verb: 'POST', target: 'SendMessage', streaming: false },
  { name: 'message/send', binding: 'jsonrpc', v03: true, verb: 'POST', target: 'message/send', streaming: false },
  { name: 'GetTask', binding: 'jsonrpc', v03: false, verb: 'POST', target: 'GetTask', streaming: false },
  { name: 'tasks/get', binding: 'jsonrpc', v03: true, verb: 'POST', target: 'tasks/get', streaming: false },
  { name: 'REST /message:send', binding: 'rest', v03: false, verb: 'POST', target: '/message:send', streaming: false },
  { name: 'REST /v1/message:send', binding: 'rest', v03: true, verb: 'POST', target: '/v1/message:send', streaming: false },
  { name: 'REST GET /tasks/t-1', binding: 'rest', v03: false, verb: 'GET', target: '/tasks/t-1', streaming: false },
  { name: 'REST GET /v1/tasks/t-1', binding: 'rest', v03: true, verb: 'GET', target: '/v1/tasks/t-1', streaming: false },
];
const CARD_OPS: Op[] = [
  { name: 'GetExtendedAgentCard', binding: 'jsonrpc', v03: false, verb: 'POST', target: 'GetExtendedAgentCard', streaming: false, card: true },
  {
    name: 'agent/getAuthenticatedExtendedCard',
    binding: 'jsonrpc',
    v03: true,
    verb: 'POST',
    target: 'agent/getAuthenticatedExtendedCard',
    streaming: false,
    card: true,
  },
  { name: 'REST GET /extendedAgentCard', binding: 'rest', v03: false, verb: 'GET', target: '/extendedAgentCard', streaming: false, card: true },
  { name: 'REST GET /v1/card', binding: 'rest', v03: true, verb: 'GET', target: '/v1/card', streaming: false, card: true },
];
const STREAM_OPS: Op[] = [
  { name: 'SendStreamingMessage', binding: 'jsonrpc', v03: false, verb: 'POST', target: 'SendStreamingMessage', streaming: true },
  { name: 'message/stream', binding: 'jsonrpc', v03: true, verb: 'POST', target: 'message/stream', streaming: true },
  { name: 'SubscribeToTask', binding: 'jsonrpc', v03: false, verb: 'POST', target: 'SubscribeToTask', streaming: true },
  { name: 'tasks/resubscribe', binding: 'jsonrpc', v03: true, verb: 'POST', target: 'tasks/resubscribe', streaming: true },
  { name: 'REST /message:stream', binding: 'rest', v03: false, verb: 'POST', target: '/message:stream', streaming: true },
  { name: 'REST /v1/message:stream', binding: 'rest', v03: true, verb: 'POST', target: '/v1/message:stream', streaming: true },
  { name: 'REST GET /v1/tasks/t-1:subscribe', binding: 'rest', v03: true, verb: 'GET', target: '/v1/tasks/t-1:subscribe', streaming: true },
];

/** Content-Type header lines (each inner array is the lines the agent sends; [] = none). */
const SSE_LABELS: Record<string, readonly string[]> = {
  plain: ['text/event-stream'],
  charset: ['text/event-stream; charset=utf-8'],
  upper: ['TEXT/EVENT-STREAM'],
  spaced: ['   text/event-stream   '],
  semicolon: ['text/event-stream;'],
  params: ['text/event-stream;x="application/json"'],
  listed: ['text/event-stream, application/json'],
  listedJsonFirst: ['application/json, text/event-stream'],
  dupSseFirst: ['text/event-stream', 'application/json'],
  dupJsonFirst: ['application/json', 'text/event-stream'],
  tab: ['\ttext/event-stream'],
};

const guardians: TestGuardian[] = [];
const proxies: TestProxy[] = [];
afterAll(async () => {
  for (const p of proxies) await p.close();
  for (const g of guardians) await g.close();
});

async function inspectedProxy(mode: 'allow' | 'deny', env: Record<string, string> = {}): Promise<{ proxy: TestProxy; guardian: TestGuardian }> {
  const guardian = await startGuardian();
  guardians.push(guardian);
  if (mode === 'deny')
    guardian.script((e) => (isResponseEnvelope(e) ? { decision: 'deny', message: 'denied by probe' } : { decision: 'allow', message: 'ok' }));
  const proxy = await startTestProxy({
    ROLE: 'client',
    UPSTREAM_URL: hostile.origin,
    GUARDIAN_URL: guardian.url,
    INSPECT_RESPONSES: 'true',
    FAIL_MODE: 'closed',
    ...env,
  });
  proxies.push(proxy);
  return { proxy, guardian };
}

let seq = 0;
const mark = () => `MARKrt${++seq}x`;

/* ---------------------------------------------------------------------------------------------- */
/* 1. A and C re-checked                                                                           */
/* ---------------------------------------------------------------------------------------------- */

describe('A: a unary answer under every SSE-ish label, deny-all guardian: the caller reads no word of it', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    ({ proxy } = await inspectedProxy('deny'));
  });
  const cases: [string, string, Op][] = [];
  for (const op of UNARY_OPS) for (const label of Object.keys(SSE_LABELS)) cases.push([op.name, label, op]);
  test.each(cases)('%s labelled %s', async (_n, label, op) => {
    const m = mark();
    const lines = SSE_LABELS[label] as readonly string[];
    hostile.script = (r) =>
      answer(
        200,
        lines.map((v) => ['content-type', v] as const),
        bodyFor(op, r.id, m),
      );
    const got = await callerGets(proxy.url, op);
    expect({ leaked: got.text.includes(m) }).toEqual({ leaked: false });
  });
});

describe("control (not vacuous): allow-all, the agent's own label: the marker reaches the caller for every operation", () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    ({ proxy } = await inspectedProxy('allow'));
  });
  test.each([...UNARY_OPS, ...STREAM_OPS].map((op) => [op.name, op] as const))('%s', async (_n, op) => {
    const m = mark();
    hostile.script = (r) => {
      const ev = bodyFor({ ...op, streaming: false }, r.id, m);
      return op.streaming
        ? answer(200, [['content-type', 'text/event-stream']], `data: ${ev}\n\n`, 'chunked')
        : answer(200, [['content-type', 'application/json']], ev);
    };
    const got = await callerGets(proxy.url, op);
    expect({ reached: got.text.includes(m), text: got.text.slice(0, 300) }).toEqual({ reached: true, text: got.text.slice(0, 300) });
  });
});

describe('A: a unary answer whose body is an SSE event (any label), deny-all guardian', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    ({ proxy } = await inspectedProxy('deny'));
  });
  const labels: Record<string, readonly string[]> = { json: ['application/json'], none: [], sse: ['text/event-stream'], a2a: ['application/a2a+json'] };
  const cases: [string, string, Op][] = [];
  for (const op of UNARY_OPS) for (const label of Object.keys(labels)) cases.push([op.name, label, op]);
  test.each(cases)('%s labelled %s', async (_n, label, op) => {
    const m = mark();
    hostile.script = (r) =>
      answer(
        200,
        (labels[label] as readonly string[]).map((v) => ['content-type', v] as const),
        `data: ${bodyFor(op, r.id, m)}\n\n`,
      );
    const got = await callerGets(proxy.url, op);
    expect({ leaked: got.text.includes(m) }).toEqual({ leaked: false });
  });
});

describe("C: an extended-card result never reaches the caller with the agent's URLs", () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    ({ proxy } = await inspectedProxy('allow'));
  });
  const labels: Record<string, readonly string[]> = {
    ...SSE_LABELS,
    json: ['application/json'],
    none: [],
    textPlain: ['text/plain'],
    jsonDupSse: ['application/json', 'text/event-stream'],
  };
  const cases: [string, string, number, Op][] = [];
  for (const op of CARD_OPS) for (const label of Object.keys(labels)) for (const status of [200, 203]) cases.push([op.name, label, status, op]);
  test.each(cases)('%s labelled %s, HTTP %d', async (_n, label, status, op) => {
    hostile.script = (r) =>
      answer(
        status,
        (labels[label] as readonly string[]).map((v) => ['content-type', v] as const),
        bodyFor(op, r.id, mark()),
      );
    const got = await callerGets(proxy.url, op);
    expect({ agentUrlLeaked: got.text.includes(hostile.hostPort) }).toEqual({ agentUrlLeaked: false });
  });
  test.each(CARD_OPS.map((op) => [op.name, op] as const))('%s: the card as an SSE event body, and gzip / x-gzip / GZIP coded', async (_n, op) => {
    for (const variant of ['sseBody', 'gzip', 'x-gzip', 'GZIP', 'identity, gzip', 'dupIdentityGzip'] as const) {
      hostile.script = (r) => {
        const body = bodyFor(op, r.id, mark());
        if (variant === 'sseBody') return answer(200, [['content-type', 'application/json']], `data: ${body}\n\n`);
        const gz = zlib.gzipSync(body);
        const ce: [string, string][] =
          variant === 'dupIdentityGzip'
            ? [
                ['content-encoding', 'identity'],
                ['content-encoding', 'gzip'],
              ]
            : [['content-encoding', variant]];
        return answer(200, [['content-type', 'application/json'], ...ce], gz);
      };
      const got = await callerGets(proxy.url, op, { 'accept-encoding': 'gzip' });
      expect({ variant, agentUrlLeaked: got.text.includes(hostile.hostPort) }).toEqual({ variant, agentUrlLeaked: false });
    }
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* 2. The class: labels, statuses, codings on unary and streaming operations                       */
/* ---------------------------------------------------------------------------------------------- */

describe('streaming operations answered under a non-SSE (or doubled) label, deny-all guardian', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    ({ proxy } = await inspectedProxy('deny'));
  });
  const labels: Record<string, readonly string[]> = {
    json: ['application/json'],
    none: [],
    textPlain: ['text/plain'],
    dupJsonFirst: ['application/json', 'text/event-stream'],
    listedJsonFirst: ['application/json, text/event-stream'],
    dupSseFirst: ['text/event-stream', 'application/json'],
    upper: ['TEXT/EVENT-STREAM'],
    spaced: ['  text/event-stream'],
  };
  const cases: [string, string, string, Op][] = [];
  for (const op of STREAM_OPS) for (const label of Object.keys(labels)) for (const body of ['sse', 'json']) cases.push([op.name, label, body, op]);
  test.each(cases)('%s labelled %s, %s body', async (_n, label, body, op) => {
    const m = mark();
    hostile.script = (r) => {
      const ev = bodyFor({ ...op, streaming: false }, r.id, m);
      return answer(
        200,
        (labels[label] as readonly string[]).map((v) => ['content-type', v] as const),
        body === 'sse' ? `data: ${ev}\n\n` : ev,
        'chunked',
      );
    };
    const got = await callerGets(proxy.url, op);
    expect({ leaked: got.text.includes(m) }).toEqual({ leaked: false });
  });
});

describe('statuses and framing, deny-all guardian', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    ({ proxy } = await inspectedProxy('deny'));
  });
  const op = UNARY_OPS[0] as Op;
  const sop = STREAM_OPS[0] as Op;
  test.each([200, 201, 202, 203, 204, 205, 206, 226, 299, 304, 400, 404, 500, 599])('SendMessage answered HTTP %d with a JSON body', async (status) => {
    const m = mark();
    hostile.script = (r) => answer(status, [['content-type', 'application/json']], bodyFor(op, r.id, m));
    const got = await callerGets(proxy.url, op);
    expect({ status, leaked: got.text.includes(m) }).toEqual({ status, leaked: false });
  });
  test.each([200, 201, 206, 400, 500])('SendStreamingMessage answered HTTP %d with an SSE body', async (status) => {
    const m = mark();
    hostile.script = (r) => answer(status, [['content-type', 'text/event-stream']], `data: ${bodyFor(op, r.id, m)}\n\n`, 'chunked');
    const got = await callerGets(proxy.url, sop);
    expect({ status, leaked: got.text.includes(m) }).toEqual({ status, leaked: false });
  });
  test('1xx interim answers (103 with an SSE label, 100) before the final one', async () => {
    for (const final of ['application/json', 'text/event-stream']) {
      const m = mark();
      hostile.script = (r) =>
        Buffer.concat([
          Buffer.from('HTTP/1.1 103 Early Hints\r\ncontent-type: text/event-stream\r\nlink: </x>; rel=preload\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n', 'latin1'),
          answer(200, [['content-type', final]], bodyFor(op, r.id, m)),
        ]);
      const got = await callerGets(proxy.url, op);
      expect({ final, leaked: got.text.includes(m) }).toEqual({ final, leaked: false });
    }
  });
  test('unary answers framed by close (no length), by chunks with trailers', async () => {
    for (const framing of ['none', 'trailers'] as const) {
      const m = mark();
      hostile.script = (r) => {
        const body = bodyFor(op, r.id, m);
        if (framing === 'none') return answer(200, [['content-type', 'application/json']], body, 'none');
        const b = Buffer.from(body);
        return Buffer.concat([
          Buffer.from(
            'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntrailer: x-marker\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n',
            'latin1',
          ),
          Buffer.from(`${b.length.toString(16)}\r\n`),
          b,
          Buffer.from(`\r\n0\r\nx-marker: ${m}\r\ncontent-type: text/event-stream\r\n\r\n`),
        ]);
      };
      const got = await callerGets(proxy.url, op);
      expect({ framing, leaked: got.text.includes(m) }).toEqual({ framing, leaked: false });
    }
  });
});

describe('content codings on unary answers, deny-all guardian', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    ({ proxy } = await inspectedProxy('deny'));
  });
  const op = UNARY_OPS[0] as Op;
  const variants: Record<string, (b: Buffer) => { ce: readonly string[]; bytes: Buffer }> = {
    gzip: (b) => ({ ce: ['gzip'], bytes: zlib.gzipSync(b) }),
    xgzip: (b) => ({ ce: ['x-gzip'], bytes: zlib.gzipSync(b) }),
    upper: (b) => ({ ce: ['GZIP'], bytes: zlib.gzipSync(b) }),
    spaced: (b) => ({ ce: ['  gzip  '], bytes: zlib.gzipSync(b) }),
    identityGzip: (b) => ({ ce: ['identity, gzip'], bytes: zlib.gzipSync(b) }),
    gzipIdentity: (b) => ({ ce: ['gzip, identity'], bytes: zlib.gzipSync(b) }),
    dupLines: (b) => ({ ce: ['identity', 'gzip'], bytes: zlib.gzipSync(b) }),
    twiceListed: (b) => ({ ce: ['gzip, gzip'], bytes: zlib.gzipSync(zlib.gzipSync(b)) }),
    twiceLines: (b) => ({ ce: ['gzip', 'gzip'], bytes: zlib.gzipSync(zlib.gzipSync(b)) }),
    deflateRaw: (b) => ({ ce: ['deflate'], bytes: zlib.deflateRawSync(b) }),
    deflateZlib: (b) => ({ ce: ['deflate'], bytes: zlib.deflateSync(b) }),
    br: (b) => ({ ce: ['br'], bytes: zlib.brotliCompressSync(b) }),
    emptyItems: (b) => ({ ce: [', gzip ,'], bytes: zlib.gzipSync(b) }),
    gzipOnPlain: (b) => ({ ce: ['gzip'], bytes: b }),
    unknownOnPlain: (b) => ({ ce: ['zstd'], bytes: b }),
    compressLzw: (b) => ({ ce: ['compress'], bytes: b }),
  };
  test.each(Object.keys(variants))('SendMessage answered with content-encoding %s (JSON label and SSE label)', async (v) => {
    for (const label of ['application/json', 'text/event-stream']) {
      const m = mark();
      hostile.script = (r) => {
        const { ce, bytes } = (variants[v] as (b: Buffer) => { ce: readonly string[]; bytes: Buffer })(Buffer.from(bodyFor(op, r.id, m)));
        return answer(200, [['content-type', label], ...ce.map((c) => ['content-encoding', c] as const)], bytes);
      };
      const got = await callerGets(proxy.url, op, { 'accept-encoding': 'gzip, deflate, br' });
      expect({ v, label, leaked: got.text.includes(m) }).toEqual({ v, label, leaked: false });
    }
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* 3. Lax line readers inside event data                                                           */
/* ---------------------------------------------------------------------------------------------- */

const canon = (t: string): string | undefined => {
  try {
    return JSON.stringify(JSON.parse(t));
  } catch {
    return undefined;
  }
};

describe('lax SSE readers: U+2028 / U+2029 / NEL inside a JSON string of an event the guardian judged', () => {
  test.each(['\u2028', '\u2029', '\u0085'])(
    "allow-all: every event a splitlines reader parses from the caller's bytes is a payload the guardian approved (break %j)",
    async (brk) => {
      const { proxy, guardian } = await inspectedProxy('allow');
      const m = mark();
      const evil = JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        result: { message: { messageId: `${m}-evil`, role: 'ROLE_AGENT', parts: [{ text: `${m} unjudged instruction` }] } },
      });
      hostile.script = (r) => {
        const ev = {
          jsonrpc: '2.0',
          id: r.id,
          result: { message: { messageId: m, role: 'ROLE_AGENT', parts: [{ text: `harmless${brk}${brk}data: ${evil}${brk}${brk}` }] } },
        };
        return answer(200, [['content-type', 'text/event-stream']], `data: ${JSON.stringify(ev)}\n\n`, 'chunked');
      };
      guardian.clear();
      const got = await callerGets(proxy.url, STREAM_OPS[0] as Op);
      const approved = new Set(guardian.approved().map((t) => canon(t)));
      const unjudged = laxEvents(got.fetched)
        .map((d) => canon(d))
        .filter((c): c is string => c !== undefined && !approved.has(c));
      expect({ brk, unjudged }).toEqual({ brk, unjudged: [] });
    },
  );
});

/* ---------------------------------------------------------------------------------------------- */
/* 4. Task ownership                                                                               */
/* ---------------------------------------------------------------------------------------------- */

describe('task ownership reads what the caller reads', () => {
  let ids: TestIdentities;
  let ownOnly: TestProxy;
  let ownInspected: TestProxy;
  beforeAll(async () => {
    ids = await startIdentities();
    const g = await startGuardian();
    guardians.push(g);
    ownOnly = await startTestProxy({
      ROLE: 'server',
      UPSTREAM_URL: hostile.origin,
      GUARDIAN_URL: g.url,
      FAIL_MODE: 'closed',
      INSPECT_RESPONSES: 'false',
      ...ids.env,
    });
    ownInspected = await startTestProxy({
      ROLE: 'server',
      UPSTREAM_URL: hostile.origin,
      GUARDIAN_URL: g.url,
      FAIL_MODE: 'closed',
      INSPECT_RESPONSES: 'true',
      ...ids.env,
    });
    proxies.push(ownOnly, ownInspected);
  });
  afterAll(async () => {
    await ids?.close();
  });

  /** Does B's message naming `context` reach the agent (B joined A's conversation)? */
  const bJoins = (proxy: TestProxy, context: string): Promise<boolean> =>
    messageReaches(hostile, proxy.url, ids.headersAs('B' as Caller), msgParams(false, { contextId: context }), context);

  const modes = [
    ['ownership only', () => ownOnly],
    ['ownership + inspection', () => ownInspected],
  ] as const;

  test.each(modes)(
    "%s: a JSON-RPC stream event labelled `event: error` whose data is a result: the SDK client acts on its context, so it is A's",
    async (_mode, proxy) => {
      const joined: string[] = [];
      for (const version of ['1.0', '0.3'] as const) {
        const context = `ctx-${mark()}`;
        const task = `task-${mark()}`;
        hostile.script = (r) => {
          const result =
            version === '1.0'
              ? { task: { id: task, contextId: context, status: { state: 'TASK_STATE_WORKING' } } }
              : { kind: 'task', id: task, contextId: context, status: { state: 'working' } };
          return answer(
            200,
            [['content-type', 'text/event-stream']],
            `event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: r.id, result })}\n\n`,
            'chunked',
          );
        };
        const client = await makeClient(proxy().url, 'JSONRPC', version, { fetchImpl: ids.fetchAs('A') });
        let acted = '';
        try {
          acted = JSON.stringify(await collect(client.sendMessageStream(sendReq('hi'))));
        } catch (err) {
          acted = `ERROR ${(err as Error).message}`;
        }
        if (!acted.includes(context)) continue; // refused: holds
        if (await bJoins(proxy(), context)) joined.push(version);
      }
      expect({ joined }).toEqual({ joined: [] });
    },
  );

  /** A's message answered with a task the proxy binds to A; returns its id. */
  async function aOwnsTask(proxy: TestProxy): Promise<string> {
    const task = `task-${mark()}`;
    hostile.script = (r) =>
      answer(
        200,
        [['content-type', 'application/json']],
        JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { task: { id: task, contextId: `ctx-${mark()}`, status: { state: 'TASK_STATE_WORKING' } } } }),
      );
    await fetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs('A') },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'SendMessage', params: msgParams(false) }),
    }).then((r) => r.text());
    return task;
  }

  test.each(modes)(
    "%s: GetTask / CancelTask / SubscribeToTask answers on A's own task that name another context: A reads it, so it is A's",
    async (_mode, proxy) => {
      const joined: string[] = [];
      for (const method of ['GetTask', 'CancelTask', 'SubscribeToTask'] as const) {
        const task = await aOwnsTask(proxy());
        const context = `ctx-${mark()}`;
        hostile.script = (r) => {
          const t = { id: task, contextId: context, status: { state: 'TASK_STATE_WORKING' } };
          const body = JSON.stringify({ jsonrpc: '2.0', id: r.id, result: method === 'SubscribeToTask' ? { task: t } : t });
          return method === 'SubscribeToTask'
            ? answer(200, [['content-type', 'text/event-stream']], `data: ${body}\n\n`, 'chunked')
            : answer(200, [['content-type', 'application/json']], body);
        };
        const text = await fetch(`${proxy().url}/a2a/jsonrpc`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: method === 'SubscribeToTask' ? 'text/event-stream' : 'application/json',
            'a2a-version': '1.0',
            ...ids.headersAs('A'),
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 4, method, params: { id: task } }),
        }).then((r) => r.text());
        if (!text.includes(context)) continue;
        if (await bJoins(proxy(), context)) joined.push(method);
      }
      expect({ joined }).toEqual({ joined: [] });
    },
  );

  /** B's message answered with a task the proxy binds to B; returns its id. */
  async function bOwnsTask(proxy: TestProxy): Promise<string> {
    const task = `btask-${mark()}`;
    hostile.script = (r) =>
      answer(
        200,
        [['content-type', 'application/json']],
        JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { task: { id: task, contextId: `bctx-${mark()}`, status: { state: 'TASK_STATE_WORKING' } } } }),
      );
    await fetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs('B') },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'SendMessage', params: msgParams(false) }),
    }).then((r) => r.text());
    return task;
  }

  /**
   * ListTasks answers whose text names B's task where JSON.parse (last member wins, exact names) does not:
   * a member given twice (a first-wins reader, e.g. simdjson's on-demand find_field, reads the first) and
   * a member in another case (Go's encoding/json matches names case-insensitively). The oracle is the
   * bytes A gets: they must not name B's task at all.
   */
  test.each(modes)("%s: A's ListTasks answer: the bytes A gets never name B's task (duplicate and case-variant members)", async (_mode, proxy) => {
    const leaked: string[] = [];
    for (const shape of ['dupFirst', 'caseVariant', 'dupInTask'] as const) {
      const bTask = await bOwnsTask(proxy());
      hostile.script = (r) => {
        const b = JSON.stringify({ id: bTask, contextId: 'c', status: { state: 'TASK_STATE_WORKING' } });
        const result =
          shape === 'dupFirst'
            ? `{"tasks":[${b}],"tasks":[]}`
            : shape === 'caseVariant'
              ? `{"tasks":[],"Tasks":[${b}]}`
              : `{"tasks":[{"id":"${bTask}","id":"mine-${mark()}"}]}`;
        return answer(200, [['content-type', 'application/json']], `{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":${result}}`);
      };
      const text = await fetch(`${proxy().url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs('A') },
        body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ListTasks', params: {} }),
      }).then((r) => r.text());
      if (text.includes(bTask)) leaked.push(shape);
    }
    expect({ leaked }).toEqual({ leaked: [] });
  });

  /** A's SendMessage answer naming a context twice: a first-wins reader reads the first, which must be A's too. */
  test.each(modes)(
    "%s: A's SendMessage answer with contextId given twice (or in another case): the context a first-wins / case-insensitive reader gets is A's",
    async (_mode, proxy) => {
      const joined: string[] = [];
      for (const shape of ['dupContext', 'caseContext', 'caseTask'] as const) {
        const first = `ctx-${mark()}`;
        hostile.script = (r) => {
          const id = `task-${mark()}`;
          const task =
            shape === 'dupContext'
              ? `{"id":"${id}","contextId":"${first}","contextId":"ctx-${mark()}","status":{"state":"TASK_STATE_WORKING"}}`
              : shape === 'caseContext'
                ? `{"id":"${id}","contextId":"ctx-${mark()}","ContextId":"${first}","status":{"state":"TASK_STATE_WORKING"}}`
                : `{"id":"${id}","contextId":"${first}","status":{"state":"TASK_STATE_WORKING"}}`;
          const key = shape === 'caseTask' ? 'Task' : 'task';
          return answer(200, [['content-type', 'application/json']], `{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":{"${key}":${task}}}`);
        };
        const text = await fetch(`${proxy().url}/a2a/jsonrpc`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs('A') },
          body: JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'SendMessage', params: msgParams(false) }),
        }).then((r) => r.text());
        if (!text.includes(first)) continue;
        if (await bJoins(proxy(), first)) joined.push(shape);
      }
      expect({ joined }).toEqual({ joined: [] });
    },
  );

  test.each(modes)("%s: a context a splitlines reader finds inside an event's JSON string is A's", async (_mode, proxy) => {
    const context = `ctx-${mark()}`;
    const hidden = JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      result: { task: { id: `task-${mark()}`, contextId: context, status: { state: 'TASK_STATE_WORKING' } } },
    });
    hostile.script = (r) => {
      const ev = {
        jsonrpc: '2.0',
        id: r.id,
        result: { message: { messageId: 'x', role: 'ROLE_AGENT', parts: [{ text: `ok\u2028\u2028data: ${hidden}\u2028\u2028` }] } },
      };
      return answer(200, [['content-type', 'text/event-stream']], `data: ${JSON.stringify(ev)}\n\n`, 'chunked');
    };
    const text = await fetch(`${proxy().url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'a2a-version': '1.0', ...ids.headersAs('A') },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SendStreamingMessage', params: msgParams(false) }),
    }).then((r) => r.text());
    // The lax reader reads the context when an event it parses names it as a context (not as text inside a part).
    const laxReads = laxEvents(text).some((d) => contextsIn(canon(d) === undefined ? undefined : JSON.parse(d)).includes(context));
    if (!laxReads) return;
    expect({ bJoined: await bJoins(proxy(), context) }).toEqual({ bJoined: false });
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* 5. Cards in the spellings SDK parsers accept                                                     */
/* ---------------------------------------------------------------------------------------------- */

describe('cards: every interface list an SDK parser reads is rewritten (ts-proto fromJSON reads snake_case too)', () => {
  let proxy: TestProxy;
  let guardian: TestGuardian;
  beforeAll(async () => {
    ({ proxy, guardian } = await inspectedProxy('allow'));
  });
  /** The card with its interface lists under their proto (snake_case) names only. */
  function snakeCard(): Record<string, unknown> {
    const c = JSON.parse(hostile.cardText) as Record<string, unknown>;
    const ifaces = (c.supportedInterfaces as Record<string, unknown>[]).map((e) => ({
      url: e.url,
      protocol_binding: e.protocolBinding,
      protocol_version: e.protocolVersion,
      tenant: '',
    }));
    delete c.supportedInterfaces;
    return { ...c, supported_interfaces: ifaces, additional_interfaces: ifaces.map((e) => ({ url: e.url, transport: e.protocol_binding })) };
  }
  test.each(CARD_OPS.map((op) => [op.name, op] as const))('%s: a result with supported_interfaces / additional_interfaces', async (_n, op) => {
    hostile.script = (r) => {
      const card = snakeCard();
      return answer(
        200,
        [['content-type', 'application/json']],
        op.binding === 'jsonrpc' ? JSON.stringify({ jsonrpc: '2.0', id: r.id, result: card }) : JSON.stringify(card),
      );
    };
    const got = await callerGets(proxy.url, op);
    expect({ agentUrlLeaked: got.text.includes(hostile.hostPort) }).toEqual({ agentUrlLeaked: false });
  });

  /** A card the SDK's resolver parses with ts-proto (proto-shaped security), its interfaces under the proto names only. */
  function protoSnakeCard(): string {
    // Without the v0.3-only members, so the resolver takes it for a v1.0 card.
    const { url: _u, preferredTransport: _p, protocolVersion: _v, supportsAuthenticatedExtendedCard: _s, additionalInterfaces: _a, ...v1 } = snakeCard();
    return JSON.stringify({
      ...v1,
      security: [{ schemes: { bearer: { list: [] } } }],
      securitySchemes: { bearer: { httpAuthSecuritySchemeSchema: { scheme: 'bearer' } } },
    });
  }
  test("the public card: the SDK resolver (ts-proto AgentCard.fromJSON) reads no interface URL of the agent's", async () => {
    const sdkClient = require('@a2a-js/sdk/client') as {
      DefaultAgentCardResolver: new (o: unknown) => { resolve(url: string): Promise<{ supportedInterfaces: { url: string }[] }> };
    };
    hostile.publicCard = protoSnakeCard();
    try {
      const card = await new sdkClient.DefaultAgentCardResolver({ legacyCompat: { enabled: true } }).resolve(proxy.url);
      const urls = card.supportedInterfaces.map((i) => i.url);
      expect({ toAgent: urls.filter((u) => u.includes(hostile.hostPort)) }).toEqual({ toAgent: [] });
    } finally {
      hostile.publicCard = undefined;
    }
  });
  test("end to end: an SDK client made from the proxy's public card sends its message through the proxy (the guardian sees it)", async () => {
    hostile.publicCard = protoSnakeCard();
    try {
      const client = await makeClient(proxy.url, 'JSONRPC', '1.0');
      hostile.script = (r) =>
        answer(
          200,
          [['content-type', 'application/json']],
          JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { message: { messageId: 'x', role: 'ROLE_AGENT', parts: [{ text: 'hello' }] } } }),
        );
      hostile.received.length = 0;
      guardian.clear();
      await client.sendMessage(sendReq('exfiltrate-this'));
      const reachedAgent = hostile.received.some((r) => r.text.includes('exfiltrate-this'));
      const judged = guardian.calls().some((e) => JSON.stringify(e).includes('exfiltrate-this'));
      expect({ reachedAgent, judged }).toEqual({ reachedAgent: true, judged: true });
    } finally {
      hostile.publicCard = undefined;
    }
  });
  test.each([['JSONRPC'], ['HTTP+JSON']] as const)(
    "the extended card over %s v1.0: the SDK transport (AgentCard.fromJSON) reads no interface URL of the agent's",
    async (binding) => {
      const client = await makeClient(proxy.url, binding, '1.0');
      hostile.script = (r) => {
        const card = snakeCard();
        return answer(
          200,
          [['content-type', 'application/json']],
          binding === 'JSONRPC' ? JSON.stringify({ jsonrpc: '2.0', id: r.id, result: card }) : JSON.stringify(card),
        );
      };
      // The transport the client was made with (Client keeps it; getAgentCard calls it when the card says extendedAgentCard).
      const transport = (
        client as unknown as { transport: { getExtendedAgentCard(p: { tenant: string }): Promise<{ supportedInterfaces: { url: string }[] }> } }
      ).transport;
      const card = await transport.getExtendedAgentCard({ tenant: '' });
      const urls = card.supportedInterfaces.map((i) => i.url);
      expect({ read: urls.length > 0, toAgent: urls.filter((u) => u.includes(hostile.hostPort)) }).toEqual({ read: true, toAgent: [] });
    },
  );
});
