/**
 * Every JSON-RPC refusal carries the caller's id wherever the request could be read far enough to find
 * it (an SDK client drops an answer whose id is not its request's and reports an id mismatch instead of
 * the refusal). Walked over raw sockets through the proxy: refusals for a header, a media type, a
 * charset, the version, a query, a member name, the depth and value bounds, a body over MAX_BODY_BYTES
 * or past BODY_TIMEOUT_MS (its id read from what arrived), a body over the in-flight budget. Only a body
 * that is not JSON, or was never read (an unverified caller on a passthrough route), answers
 * `"id": null`. Nothing reaches the SDK agent's request handler.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { makeKey, writeJwks } from '../../helpers/keys';
import { exchange, type WireOutcome } from '../../helpers/wire';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);

const rec = handlerRecorder();
const stack = useStack({ wrapRequestHandler: rec.wrap });
beforeEach(() => rec.clear());
afterEach(() => {
  expect(rec.calls).toEqual([]);
});

const portOf = (p: TestProxy): number => Number(new URL(p.url).port);
const sendText = (id: string, extra = '', text = 'hi'): string =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":${JSON.stringify(text)}}]}}${extra}}`;

type Lines = ReadonlyArray<readonly [string, string]>;
const JSON_V1: Lines = [
  ['Host', 'x'],
  ['Content-Type', 'application/json'],
  ['A2A-Version', '1.0'],
];

function post(p: TestProxy, body: string, headers: Lines = JSON_V1, target = '/a2a/jsonrpc'): Promise<WireOutcome> {
  const bytes = Buffer.from(body, 'utf8');
  return exchange(portOf(p), { verb: 'POST', target, headers: [...headers, ['Content-Length', String(bytes.length)]], body: bytes }, 15_000);
}

/** A chunked body: nothing declares its length, so it is read until it ends or crosses a limit. */
function postChunked(p: TestProxy, body: string): Promise<WireOutcome> {
  const bytes = Buffer.from(body, 'utf8');
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += 1024) {
    const c = bytes.subarray(i, i + 1024);
    chunks.push(Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from('0\r\n\r\n'));
  return exchange(
    portOf(p),
    { verb: 'POST', target: '/a2a/jsonrpc', headers: [...JSON_V1, ['Transfer-Encoding', 'chunked']], body: Buffer.concat(chunks) },
    15_000,
  );
}

function answer(o: WireOutcome): { status: number; id: unknown; code: number } {
  if (o.kind !== 'answer') throw new Error(`no answer: ${o.kind} ${o.partial}`);
  const json = JSON.parse(o.body.toString('utf8')) as { id: unknown; error: { code: number } };
  return { status: o.status, id: json.id, code: json.error.code };
}

describe('refused by classification', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await stack.proxy();
  });

  const deep = `${'['.repeat(80)}${']'.repeat(80)}`;
  const many = `[${'0,'.repeat(100_001)}0]`;
  test.each<[string, string, Lines, string, number]>([
    [
      'a media type JSON-RPC does not take',
      sendText('a'),
      [
        ['Host', 'x'],
        ['Content-Type', 'text/plain'],
        ['A2A-Version', '1.0'],
      ],
      '/a2a/jsonrpc',
      -32005,
    ],
    [
      'no media type',
      sendText('a'),
      [
        ['Host', 'x'],
        ['A2A-Version', '1.0'],
      ],
      '/a2a/jsonrpc',
      -32005,
    ],
    [
      'a charset other than UTF-8',
      sendText('a'),
      [
        ['Host', 'x'],
        ['Content-Type', 'application/json; charset=utf-7'],
        ['A2A-Version', '1.0'],
      ],
      '/a2a/jsonrpc',
      -31400,
    ],
    ['a method override header', sendText('a'), [...JSON_V1, ['X-HTTP-Method-Override', 'GET']], '/a2a/jsonrpc', -31400],
    ['a Connection header naming A2A-Version', sendText('a'), [...JSON_V1, ['Connection', 'a2a-version']], '/a2a/jsonrpc', -31400],
    ['two A2A-Version values', sendText('a'), [...JSON_V1, ['A2A-Version', '0.3']], '/a2a/jsonrpc', -31400],
    ['a query parameter', sendText('a'), JSON_V1, '/a2a/jsonrpc?context=x', -32600],
    ['a member spelled another way', sendText('a', ',"ID":2'), JSON_V1, '/a2a/jsonrpc', -31400],
    ['params nested past the depth bound', sendText('a', `,"x":${deep}`), JSON_V1, '/a2a/jsonrpc', -31400],
    ['more values than the bound', sendText('a', `,"x":${many}`), JSON_V1, '/a2a/jsonrpc', -31400],
    ['a JSON object that is not a JSON-RPC request', '{"id":"a","foo":1}', JSON_V1, '/a2a/jsonrpc', -32602],
  ])('%s', async (_n, body, headers, target, code) => {
    expect(answer(await post(proxy, body, headers, target))).toEqual({ status: 200, id: 'a', code });
    expect(stack.guardian.calls()).toEqual([]);
  });

  test('a body that is not JSON answers "id": null, as JSON-RPC asks of a parse error', async () => {
    expect(answer(await post(proxy, sendText('a').slice(0, -2)))).toEqual({ status: 200, id: null, code: -32700 });
  });
});

describe('refused while the body is read', () => {
  const LIMIT = 4096;
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await stack.proxy({ MAX_BODY_BYTES: String(LIMIT), BODY_TIMEOUT_MS: '500' });
  });

  test('a chunked body over MAX_BODY_BYTES: 413 with the id read before the cut', async () => {
    expect(answer(await postChunked(proxy, sendText('big', '', 'x'.repeat(LIMIT * 3))))).toEqual({ status: 413, id: 'big', code: -31400 });
  });

  test('a body past BODY_TIMEOUT_MS: 408 with the id read before the deadline', async () => {
    const whole = Buffer.from(sendText('slow', '', 'x'.repeat(200)));
    const o = await exchange(
      portOf(proxy),
      { verb: 'POST', target: '/a2a/jsonrpc', headers: [...JSON_V1, ['Content-Length', String(whole.length)]], body: whole.subarray(0, 60) },
      15_000,
    );
    expect(answer(o)).toEqual({ status: 408, id: 'slow', code: -31400 });
  });

  test('a declared length over MAX_BODY_BYTES is refused before a byte is read: "id": null', async () => {
    const o = await exchange(
      portOf(proxy),
      { verb: 'POST', target: '/a2a/jsonrpc', headers: [...JSON_V1, ['Content-Length', String(LIMIT * 10)]], body: Buffer.from(sendText('unread')) },
      15_000,
    );
    expect(answer(o)).toEqual({ status: 413, id: null, code: -31400 });
  });
});

test('a body over the in-flight budget: -31429 with the id read before it', async () => {
  const proxy = await stack.proxy({ MAX_INFLIGHT_BODY_BYTES: '2048' });
  expect(answer(await postChunked(proxy, sendText('budget', '', 'y'.repeat(8192))))).toEqual({ status: 503, id: 'budget', code: -31429 });
});

test('an unverified caller on a passthrough route (a JSON-RPC method that is not A2A): -31401 before a byte of its body is read, so without its id', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'a2a-guard-ids-'));
  try {
    const trust = await writeJwks(dir, [await makeKey('k1')]);
    const proxy = await stack.proxy({
      IDENTITY_POLICY: 'required',
      ASSERTION_TRUST_JWKS_FILE: trust,
      ASSERTION_AUDIENCE: 'http://proxy.test',
      PASSTHROUGH_PATHS: '/hook',
    });
    const o = await post(proxy, '{"jsonrpc":"2.0","id":"hook-1","method":"custom/notify","params":{}}', JSON_V1, '/hook');
    // Admission before cost: an unverified caller's body is never read, so its id is not known.
    expect(answer(o)).toEqual({ status: 200, id: null, code: -31401 });
    expect(stack.agent.received.filter((q) => q.path === '/hook')).toEqual([]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
