/**
 * No bypass (README "Security behaviour (no bypass)", design sections 2, 5, 6): nothing with an A2A
 * method reaches the upstream agent without a guardian decision. Every door is tried with real
 * sockets against a real @a2a-js/sdk agent behind the in-process proxy and a real HTTP guardian that
 * denies any text containing "forbidden".
 *
 * After every test an invariant is checked on what the agent actually received: every request body
 * the agent got that a lenient server could read as an A2A JSON-RPC call (exact or loose method
 * name, alone or inside a batch) is byte for byte the canonical JSON of a payload the guardian
 * allowed. Each test also asserts its own door (refusal code, guardian and agent counts).
 */
import { rawRoundTrip } from '../../helpers/wire';
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import { type ReceivedRequest, type TestAgent } from '../../helpers/agent';
import { textIn, type TestGuardian } from '../../helpers/guardian';
import { closeServer, listen, sleep, waitFor } from '../../helpers/net';
import { operationForLooseMethod } from '../../../src/a2a/operations';
import { lenientSpellings } from '../../helpers/lenient-json';
import { type TestProxy, startTestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;

const MAX_BODY = 64 * 1024;
const stack = useStack({ name: 'Door Agent' });
let agent: TestAgent;
let guardian: TestGuardian;
let proxy: Proxy;
let port: number;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  proxy = await stack.proxy({
    ROLE: 'server',
    MAX_BODY_BYTES: String(MAX_BODY),
    BODY_TIMEOUT_MS: '1000',
  });
  port = Number(new URL(proxy.url).port);
});

const denyForbidden = () =>
  guardian.script((env) => (textIn(env).includes('forbidden') ? { decision: 'deny', reasonCode: ['TEST_DENY'] } : { decision: 'allow' }));

beforeEach(() => {
  guardian.reset();
  guardian.clear();
  denyForbidden();
  agent.clear();
});

afterEach(() => {
  expectNoBypass();
});

/* ------------------------------------------------------------------------------------------ */

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Could a lenient server run this value as an A2A call (exact or loosely spelled method, or a batch holding one)? */
function looksA2A(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(looksA2A);
  return isObj(v) && typeof v.method === 'string' && operationForLooseMethod(v.method.replace(/\0/g, '')) !== undefined;
}

/** Lenient reading of what the agent got: strict JSON, else strip a BOM / comments / trailing commas and try again. */
function lenientParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    const t = text
      .replace(/^\uFEFF/, '')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '')
      .replace(/,\s*([}\]])/g, '$1')
      .replace(/\bNaN\b|\bInfinity\b/g, '0');
    try {
      return JSON.parse(t);
    } catch {
      return undefined;
    }
  }
}

/** The invariant: anything A2A-like the agent received is exactly a payload the guardian allowed. */
function expectNoBypass(): void {
  // Only what the guardian allowed (or the replacement it gave): a denied payload that reached the agent is a bypass.
  const approved = new Set(guardian.approved());
  const bypass = agent.received
    .filter((r) => r.bodyText !== '' && looksA2A(lenientParse(r.bodyText)))
    .filter((r) => !approved.has(r.bodyText))
    .map((r) => ({ method: r.method, path: r.path, body: r.bodyText.slice(0, 300) }));
  expect(bypass).toEqual([]);
}

const agentCalls = (): ReceivedRequest[] => agent.received.filter((r) => !r.path.includes('/.well-known/'));

const msg = (id: string | number, text: string, method = 'message/send') => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { message: { kind: 'message', messageId: `m-${String(id)}`, role: 'user', parts: [{ kind: 'text', text }] } },
});

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

interface SendOpts {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: Buffer | string | object;
  /** Send `Expect: 100-continue` and the body only after `100 Continue`. */
  expectContinue?: boolean;
  /** Send the body chunked (no Content-Length). */
  chunked?: boolean;
}

/** One request on a fresh connection with node:http (full control over headers; no fetch rules). */
function send(o: SendOpts): Promise<Reply> {
  const body =
    o.body === undefined ? undefined : Buffer.isBuffer(o.body) ? o.body : Buffer.from(typeof o.body === 'string' ? o.body : JSON.stringify(o.body), 'utf8');
  const headers: Record<string, string | number> = { 'content-type': 'application/json', ...(o.headers ?? {}) };
  if (body !== undefined && !o.chunked && headers['content-length'] === undefined) headers['content-length'] = body.length;
  if (o.expectContinue) headers.expect = '100-continue';
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: o.method ?? 'POST', path: o.path ?? '/a2a/jsonrpc', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body === undefined) return void req.end();
    if (o.expectContinue) req.once('continue', () => req.end(body));
    else if (o.chunked) {
      // Several chunks, so the proxy really reads a chunked body.
      const step = Math.max(1, Math.ceil(body.length / 4));
      for (let i = 0; i < body.length; i += step) req.write(body.subarray(i, i + step));
      req.end();
    } else req.end(body);
  });
}

/** Write raw bytes on a fresh TCP connection and collect everything until the server closes (or `ms`). */
function rawExchange(data: Buffer | string, ms = 10_000, keepWriting?: (s: net.Socket) => () => void): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let stop: (() => void) | undefined;
    const done = () => {
      clearTimeout(t);
      stop?.();
      s.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const t = setTimeout(done, ms);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('close', done);
    s.on('error', () => undefined);
    s.on('connect', () => {
      s.write(data);
      if (keepWriting) stop = keepWriting(s);
    });
  });
}

/** Refusal codes: the proxy's own, or the binding's standard one where the agent would refuse too. */
const REFUSAL_CODES = [-31400, -32700, -32600, -32601, -32005, -32009];

function expectRefused(r: Reply, id: unknown = null, httpStatus = 200): void {
  expect({ status: r.status, body: r.json }).toMatchObject({
    status: httpStatus,
    body: {
      jsonrpc: '2.0',
      id,
      error: { code: expect.any(Number), data: expect.arrayContaining([expect.objectContaining({ reason: 'REQUEST_REJECTED', domain: 'a2a-guard' })]) },
    },
  });
  expect(REFUSAL_CODES).toContain((r.json as { error: { code: number } }).error.code);
}

/** A refusal in either binding's form (JSON-RPC error, or REST google.rpc.Status), with the proxy's ErrorInfo. */
function expectRefusedAnyForm(r: Reply): void {
  const info = r.status === 200 ? r.json?.error?.data : r.json?.error?.details;
  expect({
    status: r.status,
    refused: Array.isArray(info) && info.some((d: { reason?: string; domain?: string }) => d.reason === 'REQUEST_REJECTED' && d.domain === 'a2a-guard'),
  }).toEqual({ status: r.status, refused: true });
}

function expectDenied(r: Reply, id: unknown): void {
  expect({ status: r.status, body: r.json }).toMatchObject({ status: 200, body: { jsonrpc: '2.0', id, error: { code: -31403 } } });
}

function expectAgentAnswer(r: Reply, id: unknown): void {
  expect({ status: r.status, id: r.json?.id, hasResult: r.json !== undefined && 'result' in r.json }).toEqual({ status: 200, id, hasResult: true });
}

/** Nobody behind the proxy saw anything. */
function expectNothingSeen(): void {
  expect({ guardianCalls: guardian.calls().length, agentCalls: agentCalls().map((r) => `${r.method} ${r.path}`) }).toEqual({
    guardianCalls: 0,
    agentCalls: [],
  });
}

/* ------------------------------------------------------------------------------------------ */

describe('canonical forwarding: the agent gets the JSON the guardian saw, never the raw bytes', () => {
  const dupParams = (first: string, last: string) =>
    `{"jsonrpc":"2.0","id":"dup","method":"message/send",` +
    `"params":{"message":{"kind":"message","messageId":"d1","role":"user","parts":[{"kind":"text","text":"${first}"}]}},` +
    `"params":{"message":{"kind":"message","messageId":"d2","role":"user","parts":[{"kind":"text","text":"${last}"}]}}}`;

  test('duplicate "params" keys, forbidden text first: the guardian saw the last one, and only that one is forwarded', async () => {
    const raw = dupParams('forbidden plan', 'harmless question');
    const r = await send({ body: raw });
    expectAgentAnswer(r, 'dup');
    expect(guardian.calls()).toHaveLength(1);
    const seen = guardian.calls()[0].params.payload;
    expect(JSON.stringify(seen)).not.toContain('forbidden');
    const got = agentCalls();
    expect(got).toHaveLength(1);
    expect(got[0]!.bodyText).toBe(JSON.stringify(seen));
    expect(got[0]!.bodyText).not.toContain('forbidden');
    expect(got[0]!.bodyText).not.toBe(raw);
  });

  test('duplicate "params" keys, forbidden text last: the guardian sees it and denies; nothing forwarded', async () => {
    const r = await send({ body: dupParams('harmless question', 'forbidden plan') });
    expectDenied(r, 'dup');
    expect(guardian.calls()).toHaveLength(1);
    expect(agentCalls()).toEqual([]);
  });

  test('duplicate "method" keys: the method the guardian was asked about is the one forwarded', async () => {
    const raw = `{"jsonrpc":"2.0","id":"dm","method":"tasks/get","params":{"message":{"kind":"message","messageId":"dm","role":"user","parts":[{"kind":"text","text":"two methods"}]}},"method":"message/send"}`;
    const r = await send({ body: raw });
    expectAgentAnswer(r, 'dm');
    expect(guardian.calls().map((e) => [e.method, e.params.payload.method])).toEqual([['message/send', 'message/send']]);
    const body = agentCalls()[0]!.bodyText;
    expect(body.match(/"method"/g)).toHaveLength(1);
    expect(JSON.parse(body).method).toBe('message/send');
  });

  test('escapes and odd whitespace are normalised: forwarded bytes = canonical JSON of the guardian payload', async () => {
    const raw =
      ' \r\n{ "jsonrpc" : "2.0" ,\t"id":"esc", "m\\u0065thod" : "message\\/send", "params":{"message":{"kind":"message","messageId":"e1","role":"user","parts":[{"kind":"text","text":"h\\u0061rmless \\u00e9"}]}} }\n';
    const r = await send({ body: raw });
    expectAgentAnswer(r, 'esc');
    const seen = guardian.calls()[0].params.payload;
    expect(seen.method).toBe('message/send');
    expect(agentCalls()[0]!.bodyText).toBe(JSON.stringify(JSON.parse(raw)));
    expect(agentCalls()[0]!.bodyText).toBe(JSON.stringify(seen));
  });

  test('escaped "forbidden" is still what the guardian reads (no escape trick hides content)', async () => {
    const raw = JSON.stringify(msg('esc2', 'XX')).replace('XX', '\\u0066orbidden');
    expectDenied(await send({ body: raw }), 'esc2');
    expect(agentCalls()).toEqual([]);
  });

  test('a client-supplied X-AOS-Unchecked header never reaches the agent', async () => {
    const r = await send({ body: msg('uc', 'harmless'), headers: { 'x-aos-unchecked': 'true' } });
    expectAgentAnswer(r, 'uc');
    expect(agentCalls()[0]!.headers['x-aos-unchecked']).toBeUndefined();
  });
});

describe('bodies that are not strict JSON but that lenient parsers accept: -31400, nothing forwarded', () => {
  test.each(lenientSpellings(JSON.stringify(msg('lenient', 'forbidden? no, harmless'))))('%s', async (_name, body) => {
    for (const contentType of ['application/json', 'text/plain']) {
      const r = await send({ body, headers: { 'content-type': contentType } });
      expectRefused(r);
    }
    expectNothingSeen();
  });
});

describe('Content-Encoding: decoded before inspection (or refused), never forwarded unread', () => {
  const codings: [string, (b: Buffer) => Buffer][] = [
    ['gzip', (b) => zlib.gzipSync(b)],
    ['x-gzip', (b) => zlib.gzipSync(b)],
    ['deflate', (b) => zlib.deflateSync(b)],
    ['deflate', (b) => zlib.deflateRawSync(b)], // raw deflate, as some clients send it
    ['br', (b) => zlib.brotliCompressSync(b)],
    ['GZIP', (b) => zlib.gzipSync(b)],
    ['identity, br', (b) => zlib.brotliCompressSync(b)],
  ];

  test.each(codings)('%s: the guardian reads the decoded body (deny blocks; allow forwards it decoded)', async (coding, encode) => {
    const denied = await send({ body: encode(Buffer.from(JSON.stringify(msg('enc-deny', 'forbidden recipe')))), headers: { 'content-encoding': coding } });
    expectDenied(denied, 'enc-deny');
    expect(agentCalls()).toEqual([]);

    const allowed = await send({ body: encode(Buffer.from(JSON.stringify(msg('enc-ok', 'harmless recipe')))), headers: { 'content-encoding': coding } });
    expectAgentAnswer(allowed, 'enc-ok');
    expect(guardian.calls().map((e) => textIn(e))).toEqual(['forbidden recipe', 'harmless recipe']);
    const got = agentCalls();
    expect(got).toHaveLength(1);
    expect(got[0]!.headers['content-encoding']).toBeUndefined();
    expect(got[0]!.bodyText).toBe(JSON.stringify(guardian.calls()[1].params.payload));
    expect(Number(got[0]!.headers['content-length'])).toBe(Buffer.byteLength(got[0]!.bodyText));
  });

  test.each([
    ['unsupported coding (compress)', 'compress', zlib.gzipSync(Buffer.from(JSON.stringify(msg('x', 'harmless'))))],
    ['unsupported coding (zstd)', 'zstd', Buffer.from(JSON.stringify(msg('x', 'harmless')))],
    ['unknown coding over plain JSON', 'x-custom', Buffer.from(JSON.stringify(msg('x', 'harmless')))],
    ['corrupt gzip', 'gzip', Buffer.concat([zlib.gzipSync(Buffer.from(JSON.stringify(msg('x', 'harmless')))).subarray(0, 20), Buffer.from('garbage')])],
    ['gzip header over a plain body', 'gzip', Buffer.from(JSON.stringify(msg('x', 'harmless')))],
    ['br over a gzip body', 'br', zlib.gzipSync(Buffer.from(JSON.stringify(msg('x', 'harmless'))))],
    // More than one coding is refused: each layer costs a pass (600 stored layers stalled the event loop for seconds).
    ['stacked codings', 'deflate, gzip', zlib.gzipSync(zlib.deflateSync(Buffer.from(JSON.stringify(msg('x', 'harmless')))))],
    ['the same coding twice', 'gzip, gzip', zlib.gzipSync(zlib.gzipSync(Buffer.from(JSON.stringify(msg('x', 'harmless')))))],
  ])('%s: -31400, nothing forwarded', async (_name, coding, body) => {
    expectRefused(await send({ body, headers: { 'content-encoding': coding } }));
    expectNothingSeen();
  });

  test('a decompression bomb over MAX_BODY_BYTES: 413 / -31400, nothing forwarded', async () => {
    const big = JSON.stringify(msg('bomb', 'a'.repeat(4 * MAX_BODY)));
    const body = zlib.gzipSync(Buffer.from(big));
    expect(body.length).toBeLessThan(MAX_BODY);
    const r = await send({ body, headers: { 'content-encoding': 'gzip' } });
    expectRefused(r, null, 413);
    expectNothingSeen();
  });

  test('a compressed transfer coding (Transfer-Encoding: gzip, chunked) is not an unread A2A call to the agent', async () => {
    // Node hands the still-gzipped bytes to the proxy. Under a JSON Content-Type they must be refused;
    // under any other they may only travel as opaque bytes with no coding header (no server would inflate them).
    const gz = zlib.gzipSync(Buffer.from(JSON.stringify(msg('te', 'harmless via transfer coding'))));
    const head = (ct: string) =>
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${ct}\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n`;
    const framed = (ct: string) => Buffer.concat([Buffer.from(head(ct)), Buffer.from(`${gz.length.toString(16)}\r\n`), gz, Buffer.from('\r\n0\r\n\r\n')]);
    const asJson = await rawExchange(framed('application/json'));
    expect(asJson).toMatch(/^HTTP\/1\.1 200/);
    expect(asJson).toContain('REQUEST_REJECTED');
    expectNothingSeen();
    await rawExchange(framed('application/octet-stream'));
    expect(guardian.calls()).toHaveLength(0);
    for (const r of agentCalls()) {
      expect(r.headers['transfer-encoding']).toBeUndefined();
      expect(r.headers['content-encoding']).toBeUndefined();
    }
  });
});

describe('Content-Type: a body the binding does not accept is refused as the agent would (-32005), never judged or forwarded', () => {
  test.each([
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/octet-stream',
    'application/jsonrequest',
    'text/html; charset=utf-8',
    null,
  ])("Content-Type %s: -32005 with the proxy's ErrorInfo, nothing seen", async (ct) => {
    const headers: Record<string, string> = ct === null ? {} : { 'content-type': ct };
    const body = Buffer.from(JSON.stringify(msg('ct', 'forbidden in disguise')));
    const r = await new Promise<Reply>((resolve, reject) => {
      // Build the request by hand so that "no Content-Type" really sends none.
      const req = http.request(
        { host: '127.0.0.1', port, method: 'POST', path: '/a2a/jsonrpc', headers: { ...headers, 'content-length': body.length }, agent: false },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(r.json?.error?.code).toBe(-32005);
    expectRefused(r, 'ct');
    expectNothingSeen();
  });

  test.each(['utf-7', 'UTF-16', 'iso-8859-1', '"utf-7"', 'utf-8; charset=utf-7'])(
    'application/json; charset=%s: refused (the agent would decode other text than the guardian read)',
    async (cs) => {
      const r = await send({ body: msg('cs', 'harmless'), headers: { 'content-type': `application/json; charset=${cs}` } });
      expectRefused(r, 'cs');
      expectNothingSeen();
    },
  );

  test("application/json; charset=UTF-8 is accepted, and the agent gets the proxy's own Content-Type", async () => {
    const r = await send({ body: msg('ct-ok', 'harmless'), headers: { 'content-type': 'application/json; charset="UTF-8"' } });
    expectAgentAnswer(r, 'ct-ok');
    expect(agentCalls().map((c) => c.headers['content-type'])).toEqual(['application/json']);
    expect(agentCalls().map((c) => c.bodyText)).toEqual([JSON.stringify(guardian.calls()[0].params.payload)]);
  });

  test('a REST call under text/plain: HTTP 400 CONTENT_TYPE_NOT_SUPPORTED, nothing seen', async () => {
    const body = { message: { messageId: 'rest-ct', role: 'ROLE_USER', parts: [{ text: 'forbidden over REST' }] } };
    const r = await send({ path: '/a2a/rest/message:send', body, headers: { 'content-type': 'text/plain', 'a2a-version': '1.0' } });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({
      error: { code: 400, details: [{ reason: 'CONTENT_TYPE_NOT_SUPPORTED' }, { reason: 'REQUEST_REJECTED', domain: 'a2a-guard' }] },
    });
    expectNothingSeen();
  });
});

describe('method names in other letter cases or with whitespace are refused', () => {
  test.each([
    'Message/Send',
    'MESSAGE/SEND',
    ' message/send',
    'message/send ',
    'message/send\n',
    '\tSendMessage',
    'sendmessage',
    'SENDMESSAGE',
    'sendMessage',
    'Send_Message',
    'message.send',
    'message//send',
    'message-send',
    'Tasks/Get',
    'gettask',
    'SendStreamingMessage ',
    'MESSAGE/STREAM',
    '\u00a0message/send',
    'message/send\r\n',
    'tasks/pushNotificationConfig/SET',
    'tasks/resubscribe ',
  ])('%j', async (method) => {
    const r = await send({ body: msg('case', 'harmless', method) });
    expectRefused(r, 'case');
    expectNothingSeen();
  });

  test('a method that is not a string is refused', async () => {
    for (const method of [['message/send'], { name: 'message/send' }, 1]) {
      expectRefused(await send({ body: { ...msg('ns', 'harmless'), method } }), 'ns');
    }
    expectNothingSeen();
  });
});

describe('batches are refused', () => {
  test.each<[string, object]>([
    ['a batch of one', [msg('b1', 'harmless')]],
    ['a batch of two', [msg('b1', 'harmless'), msg('b2', 'harmless too')]],
    ['a batch with a non-A2A method', [{ jsonrpc: '2.0', id: 1, method: 'ping' }]],
    ['a batch with a leading scalar', [1, msg('b3', 'harmless')]],
    ['a nested batch', [[msg('b4', 'harmless')]]],
    ['a batch of loosely spelled methods', [msg('b5', 'harmless', 'Message/Send')]],
  ])('%s: -31400, nothing forwarded', async (_name, body) => {
    for (const ct of ['application/json', 'text/plain']) expectRefused(await send({ body, headers: { 'content-type': ct } }));
    expectNothingSeen();
  });
});

describe('a JSON-RPC call on any path is inspected', () => {
  test.each([
    '/',
    '/a2a/jsonrpc/',
    '/A2A/JSONRPC',
    '/somewhere/else',
    '/a2a/jsonrpc?A2A-Version=0.3',
    '/.well-known/agent-card.json',
    '/.well-known/agent.json',
    '/metrics',
    '/healthz',
    '/a2a/rest',
  ])('POST %s', async (path) => {
    const r = await send({ path, body: msg('path', 'forbidden by path') });
    expectDenied(r, 'path');
    expect(guardian.calls()).toHaveLength(1);
    expect(agentCalls()).toEqual([]);
  });

  test.each([
    '/a2a/jsonrpc?x=1&method=tasks/get',
    '/a2a/jsonrpc?access_token=other-caller',
    '/a2a/jsonrpc?tenant=b',
    '/a2a/jsonrpc?A2A-Version=0.3&id=2',
    '/?method=message/send',
    '/a2a/jsonrpc?=',
    '/a2a/jsonrpc?a',
    '/a2a/jsonrpc?%00=1',
  ])('POST %s: a JSON-RPC call with query parameters (the agent would read them unjudged) is refused, nothing forwarded', async (path) => {
    for (const text of ['forbidden by path', 'harmless by path']) expectRefused(await send({ path, body: msg('q', text) }), 'q');
    expectNothingSeen();
    // Positive control: the same call without the query reaches the agent.
    expectAgentAnswer(await send({ path: '/a2a/jsonrpc', body: msg('q', 'harmless by path') }), 'q');
  });

  test.each(['/a2a/rest/message:send', '/a2a/rest/v1/message:send', '/a2a/rest/tasks/t-1:cancel', '/tenant-a/message:stream', '/a2a/rest/tasks'])(
    'POST %s (an A2A REST route) with a JSON-RPC body: inspected and denied, or refused as ambiguous; never forwarded',
    async (path) => {
      for (const text of ['forbidden by path', 'harmless by path']) {
        const r = await send({ path, body: msg('path', text), headers: { 'a2a-version': '1.0' } });
        const denied = r.status === 200 && r.json?.error?.code === -31403;
        const info = r.status === 200 ? r.json?.error?.data : r.json?.error?.details;
        const refused = Array.isArray(info) && info.some((d: { reason?: string }) => d.reason === 'REQUEST_REJECTED');
        const allowedAndJudged = guardian.calls().some((e) => JSON.stringify(e.params.payload) === JSON.stringify(msg('path', text)));
        // A harmless call may pass only as the JSON-RPC call the guardian judged (the invariant checks the bytes).
        expect({ path, text, outcome: denied || refused || (text.startsWith('harmless') && allowedAndJudged) }).toEqual({ path, text, outcome: true });
      }
      expect(agentCalls().filter((c) => c.bodyText.includes('forbidden'))).toEqual([]);
    },
  );

  test('an allowed call on another path is forwarded to that path, as the guardian saw it', async () => {
    await send({ path: '/elsewhere', body: msg('path-ok', 'harmless') });
    expect(guardian.calls()).toHaveLength(1);
    expect(agentCalls().map((r) => [r.method, r.path, r.bodyText])).toEqual([['POST', '/elsewhere', JSON.stringify(guardian.calls()[0].params.payload)]]);
  });
});

describe('verbs and method overrides', () => {
  test.each(['X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override'])('%s is refused on any request', async (h) => {
    expectRefusedAnyForm(await send({ method: 'POST', body: msg('ov', 'harmless'), headers: { [h]: 'PUT' } }));
    expectRefusedAnyForm(await send({ method: 'GET', path: '/a2a/jsonrpc', body: msg('ov', 'harmless'), headers: { [h]: 'POST' } }));
    expectRefusedAnyForm(await send({ method: 'GET', path: '/anything', headers: { [h]: 'POST' } }));
    expectNothingSeen();
  });

  test.each(['PUT', 'PATCH', 'GET', 'DELETE', 'OPTIONS'])('an A2A JSON-RPC body sent with %s is refused', async (verb) => {
    const r = await send({ method: verb, body: msg('verb', 'harmless') });
    expectRefused(r, 'verb');
    expectNothingSeen();
  });

  test('a body on a REST GET route is refused', async () => {
    const r = await send({
      method: 'GET',
      path: '/a2a/rest/tasks/abc',
      body: { message: { parts: [{ text: 'forbidden' }] } },
      headers: { 'a2a-version': '1.0' },
    });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: { status: 'INVALID_ARGUMENT', details: [{ reason: 'REQUEST_REJECTED' }] } });
    expectNothingSeen();
  });

  test.each(['/a2a/rest/tasks/a%2Fb:cancel', '/a2a/rest/x/%2e%2e/message:send', '/a2a/rest/./message:send', '/a2a/rest/x/..%2Fmessage:send'])(
    'an ambiguous path (%s) is refused',
    async (path) => {
      const r = await send({
        path,
        body: { message: { messageId: 'amb', role: 'ROLE_USER', parts: [{ text: 'harmless' }] } },
        headers: { 'a2a-version': '1.0' },
      });
      expect(r.status).toBe(400);
      expectNothingSeen();
    },
  );
});

describe('Expect: 100-continue', () => {
  test('the body sent after 100 Continue is inspected: deny blocks', async () => {
    const r = await send({ body: msg('ec', 'forbidden after continue'), expectContinue: true });
    expectDenied(r, 'ec');
    expect(guardian.calls()).toHaveLength(1);
    expect(agentCalls()).toEqual([]);
  });

  test('an allowed call is forwarded whole, without the Expect header', async () => {
    const r = await send({ body: msg('ec-ok', 'harmless after continue'), expectContinue: true });
    expectAgentAnswer(r, 'ec-ok');
    const got = agentCalls();
    expect(got).toHaveLength(1);
    expect(got[0]!.headers.expect).toBeUndefined();
    expect(got[0]!.bodyText).toBe(JSON.stringify(guardian.calls()[0].params.payload));
  });

  test('Expect: 100-continue with a declared length over MAX_BODY_BYTES: 413, nothing forwarded', async () => {
    const out = await rawExchange(
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${MAX_BODY * 4}\r\n\r\n`,
      10_000,
    );
    expect(out).toMatch(/HTTP\/1\.1 413/);
    expect(out).toContain('-31400');
    expectNothingSeen();
  });
});

describe('MAX_BODY_BYTES: HTTP 413 / -31400, the agent sees nothing', () => {
  const sized = (n: number) => {
    const base = JSON.stringify(msg('size', ''));
    return JSON.stringify(msg('size', 'a'.repeat(n - Buffer.byteLength(base))));
  };

  test('exactly MAX_BODY_BYTES is accepted and inspected', async () => {
    const body = sized(MAX_BODY);
    expect(Buffer.byteLength(body)).toBe(MAX_BODY);
    const r = await send({ body });
    expectAgentAnswer(r, 'size');
    expect(guardian.calls()).toHaveLength(1);
  });

  test('one byte more (Content-Length): 413', async () => {
    const r = await send({ body: sized(MAX_BODY + 1) });
    expectRefused(r, null, 413);
    expect(r.headers.connection).toBe('close');
    expectNothingSeen();
  });

  test('one byte more (chunked, no Content-Length): 413', async () => {
    const r = await send({ body: sized(MAX_BODY + 1), chunked: true });
    // The body was read up to the limit: its id, sent first, was read.
    expectRefused(r, 'size', 413);
    expectNothingSeen();
  });

  test('a declared length far over the limit is refused before the body arrives', async () => {
    const out = await rawExchange(
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{"jsonrpc":"2.0"`,
      10_000,
    );
    expect(out).toMatch(/^HTTP\/1\.1 413/);
    expectNothingSeen();
  });
});

describe('slow-loris request bodies: cut after BODY_TIMEOUT_MS', () => {
  test('a body that stops half way: 408 / -31400, nothing forwarded', async () => {
    const body = JSON.stringify(msg('loris', 'forbidden slowly'));
    const out = await rawExchange(
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 20)}`,
      15_000,
    );
    expect(out).toMatch(/^HTTP\/1\.1 408/);
    expect(out).toContain('-31400');
    expectNothingSeen();
  });

  test('a body that trickles in one byte at a time: cut, nothing forwarded', async () => {
    const body = JSON.stringify(msg('trickle', 'harmless but slow'));
    let i = 0;
    const out = await rawExchange(
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      15_000,
      (s) => {
        const t = setInterval(() => {
          if (i < body.length && !s.destroyed) s.write(body[i++]!);
        }, 50);
        return () => clearInterval(t);
      },
    );
    expect(i).toBeLessThan(body.length);
    expect(out).toMatch(/^HTTP\/1\.1 408/);
    expectNothingSeen();
  });
});

describe('HTTP framing tricks', () => {
  test('Content-Length together with Transfer-Encoding is rejected; nothing forwarded', async () => {
    const body = JSON.stringify(msg('smuggle', 'harmless'));
    const out = await rawExchange(
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    );
    expect(out).toMatch(/^HTTP\/1\.1 400/);
    expectNothingSeen();
  });

  test('two different Content-Length headers are rejected', async () => {
    const body = JSON.stringify(msg('cl2', 'harmless'));
    const out = await rawExchange(
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nContent-Length: 5\r\n\r\n${body}`,
    );
    expect(out).toMatch(/^HTTP\/1\.1 400/);
    expectNothingSeen();
  });

  test('a second request pipelined behind an allowed one is inspected on its own', async () => {
    const a = JSON.stringify(msg('pipe-1', 'harmless first'));
    const b = JSON.stringify(msg('pipe-2', 'forbidden second'));
    const req = (body: string, last: boolean) =>
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${last ? 'Connection: close\r\n' : ''}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const out = await rawExchange(req(a, false) + req(b, true), 10_000);
    expect(out.match(/HTTP\/1\.1 200/g)?.length).toBe(2);
    expect(out).toContain('-31403');
    expect(guardian.calls().map((e) => e.params.payload.id)).toEqual(['pipe-1', 'pipe-2']);
    expect(agentCalls().map((r) => JSON.parse(r.bodyText).id)).toEqual(['pipe-1']);
  });
});

describe('WebSocket and other HTTP upgrades', () => {
  const upgrade = (verb: string, path: string, proto: string, body = '') =>
    `${verb} ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: ${proto}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n` +
    (body === '' ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`) +
    `\r\n${body}`;

  test.each<[string, string, string, string]>([
    ['GET websocket', 'GET', '/a2a/jsonrpc', 'websocket'],
    ['GET websocket on /', 'GET', '/', 'websocket'],
    ['POST websocket with an A2A body', 'POST', '/a2a/jsonrpc', 'websocket'],
    ['POST h2c with an A2A body', 'POST', '/a2a/jsonrpc', 'h2c'],
  ])('%s is refused with 403 (ALLOW_WEBSOCKETS unset)', async (_n, verb, path, proto) => {
    const out = await rawExchange(upgrade(verb, path, proto, verb === 'POST' ? JSON.stringify(msg('ws', 'forbidden through a tunnel')) : ''), 5_000);
    expect(out).toMatch(/^HTTP\/1\.1 403/);
    expectNothingSeen();
  });

  test('ALLOW_WEBSOCKETS=true forwards a real WebSocket upgrade to the upstream', async () => {
    let upgrades = 0;
    const up = http.createServer((_req, res) => res.end('plain'));
    up.on('upgrade', (_req, socket: net.Socket) => {
      upgrades++;
      socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n');
    });
    const upUrl = await listen(up);
    const ws = await startTestProxy({ UPSTREAM_URL: upUrl, GUARDIAN_URL: guardian.url, ROLE: 'server', ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/socket' });
    try {
      const wsPort = Number(new URL(ws.url).port);
      const out = await rawRoundTrip(wsPort, upgrade('GET', '/socket', 'websocket'), 5_000);
      expect(out).toMatch(/^HTTP\/1\.1 101/);
      expect(upgrades).toBe(1);
    } finally {
      await ws.close();
      await closeServer(up);
    }
  });
});

describe('ALLOW_WEBSOCKETS=true still carries no uninspected A2A call to the agent', () => {
  test.each(['POST', 'GET'])('%s with Upgrade: websocket and an A2A body', async (verb) => {
    const ws = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/' });
    try {
      const wsPort = Number(new URL(ws.url).port);
      const body = JSON.stringify(msg('ws-open', 'forbidden through an upgrade'));
      const head =
        `${verb} /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
        `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      await new Promise<void>((resolve) => {
        const s = net.connect(wsPort, '127.0.0.1', () => s.write(head));
        s.on('data', () => undefined);
        s.on('close', () => resolve());
        s.on('error', () => resolve());
        setTimeout(() => s.destroy(), 1_500).unref();
      });
      // Whatever the upgrade path did, the agent did not get this call (the afterEach invariant checks the bytes too).
      expect(agentCalls().filter((r) => r.bodyText.includes('forbidden'))).toEqual([]);
    } finally {
      await ws.close();
    }
  });
});

describe('the invariant checker itself', () => {
  test('would notice a request that reached the agent without a guardian decision', async () => {
    // Talk to the agent directly, around the proxy: the checker must flag it (then clean up).
    await fetch(agent.jsonRpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(msg('direct', 'around the proxy')),
    }).then((r) => r.text());
    await waitFor(() => agentCalls().length === 1, 5000, 'direct call recorded');
    expect(() => expectNoBypass()).toThrow();
    agent.clear();
    await sleep(0);
  });
});
