import type { IncomingHttpHeaders } from 'node:http';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { callUpstream, createUpstream, endToEndHeaders } from '../../../src/proxy/http/forward';
import { forwardRequestHeaders, type RequestHeaderRules } from '../../../src/proxy/headers';

const ANNOUNCE = { name: 'client-agent', url: 'http://client.example', version: '3.1' };

function rules(over: Partial<RequestHeaderRules> = {}): RequestHeaderRules {
  return {
    role: 'server',
    reasoningHeader: 'x-aos-reasoning',
    announce: undefined,
    unchecked: false,
    bodyLength: 42,
    upstreamHost: 'agent.internal:4000',
    remoteAddress: undefined,
    encrypted: false,
    ...over,
  };
}

const incoming = (h: IncomingHttpHeaders): IncomingHttpHeaders => ({ host: 'proxy.example:8080', ...h });

describe('forwardRequestHeaders', () => {
  test('end-to-end headers pass through untouched', () => {
    const out = forwardRequestHeaders(
      incoming({
        'a2a-version': '1.0',
        'a2a-extensions': 'https://ext/1',
        'x-a2a-extensions': 'https://ext/2',
        authorization: 'Bearer abc',
        'content-type': 'application/json; charset=utf-8',
        accept: 'text/event-stream',
        'user-agent': 'sdk',
        cookie: 'a=1',
      }),
      rules(),
    );
    expect(out).toMatchObject({
      'a2a-version': '1.0',
      'a2a-extensions': 'https://ext/1',
      'x-a2a-extensions': 'https://ext/2',
      authorization: 'Bearer abc',
      'content-type': 'application/json; charset=utf-8',
      accept: 'text/event-stream',
      'user-agent': 'sdk',
      cookie: 'a=1',
    });
  });

  test('absence of A2A-Version is preserved (no default added)', () => {
    expect('a2a-version' in forwardRequestHeaders(incoming({}), rules())).toBe(false);
  });

  test('hop-by-hop headers are removed', () => {
    const out = forwardRequestHeaders(
      incoming({
        connection: 'keep-alive',
        'keep-alive': 'timeout=5',
        'proxy-authorization': 'Basic x',
        'proxy-connection': 'keep-alive',
        te: 'trailers',
        trailer: 'x-t',
        'transfer-encoding': 'chunked',
        upgrade: 'websocket',
        'proxy-authenticate': 'Basic',
      }),
      rules(),
    );
    for (const h of [
      'connection',
      'keep-alive',
      'proxy-authorization',
      'proxy-connection',
      'te',
      'trailer',
      'transfer-encoding',
      'upgrade',
      'proxy-authenticate',
    ]) {
      expect(out).not.toHaveProperty(h);
    }
  });

  test('headers named in Connection are removed too', () => {
    const out = forwardRequestHeaders(incoming({ connection: 'close, X-Secret-Hop ,x-other', 'x-secret-hop': '1', 'x-other': '2', 'x-kept': '3' }), rules());
    expect(out).not.toHaveProperty('x-secret-hop');
    expect(out).not.toHaveProperty('x-other');
    expect(out['x-kept']).toBe('3');
  });

  test('reasoning header is removed (default and configured names)', () => {
    expect(forwardRequestHeaders(incoming({ 'x-aos-reasoning': 'secret plan' }), rules())).not.toHaveProperty('x-aos-reasoning');
    const out = forwardRequestHeaders(incoming({ 'x-why': 'secret plan', 'x-aos-reasoning': 'other' }), rules({ reasoningHeader: 'x-why' }));
    expect(out).not.toHaveProperty('x-why');
    expect(JSON.stringify(out)).not.toContain('secret plan');
  });

  test('a configured reasoning name with an underscore is removed in both spellings, whatever name was configured before', () => {
    for (const name of ['x_why', 'x-why', 'x_why', 'my_reason']) {
      const dashed = name.replace(/_/g, '-');
      for (const sent of [name, dashed]) {
        const out = forwardRequestHeaders(incoming({ [sent]: 'secret plan', 'x-other_name': 'kept' }), rules({ reasoningHeader: name }));
        expect(JSON.stringify(out)).not.toContain('secret plan');
        expect(out['x-other_name']).toBe('kept');
      }
    }
  });

  test('ROLE=client: X-AOS-Agent-* from the caller are replaced by the announced agent', () => {
    const out = forwardRequestHeaders(
      incoming({ 'x-aos-agent-name': 'spoofed', 'x-aos-agent-url': 'http://evil', 'x-aos-agent-version': '0' }),
      rules({ role: 'client', announce: ANNOUNCE }),
    );
    expect(out['x-aos-agent-name']).toBe('client-agent');
    expect(out['x-aos-agent-url']).toBe('http://client.example');
    expect(out['x-aos-agent-version']).toBe('3.1');
  });

  test('ROLE=client adds the headers even when the caller sent none', () => {
    const out = forwardRequestHeaders(incoming({}), rules({ role: 'client', announce: ANNOUNCE }));
    expect([out['x-aos-agent-name'], out['x-aos-agent-url'], out['x-aos-agent-version']]).toEqual(['client-agent', 'http://client.example', '3.1']);
  });

  test('ROLE=server (announce undefined): X-AOS-Agent-* are removed upstream', () => {
    const out = forwardRequestHeaders(incoming({ 'x-aos-agent-name': 'caller', 'x-aos-agent-url': 'http://caller', 'x-aos-agent-version': '1' }), rules());
    expect(out).not.toHaveProperty('x-aos-agent-name');
    expect(out).not.toHaveProperty('x-aos-agent-url');
    expect(out).not.toHaveProperty('x-aos-agent-version');
  });

  test('x-aos-unchecked only when unchecked, never from the caller', () => {
    expect(forwardRequestHeaders(incoming({ 'x-aos-unchecked': 'true' }), rules())).not.toHaveProperty('x-aos-unchecked');
    expect(forwardRequestHeaders(incoming({}), rules({ unchecked: true }))['x-aos-unchecked']).toBe('true');
    expect(forwardRequestHeaders(incoming({ 'x-aos-unchecked': 'false' }), rules({ unchecked: true }))['x-aos-unchecked']).toBe('true');
  });

  test('content-length is the length of the body the proxy sends; content-encoding and expect are dropped', () => {
    const out = forwardRequestHeaders(incoming({ 'content-length': '999', 'content-encoding': 'gzip', expect: '100-continue' }), rules({ bodyLength: 17 }));
    expect(out['content-length']).toBe('17');
    expect(out).not.toHaveProperty('content-encoding');
    expect(out).not.toHaveProperty('expect');
  });

  test('no body -> no content-length', () => {
    expect(forwardRequestHeaders(incoming({ 'content-length': '0' }), rules({ bodyLength: null }))).not.toHaveProperty('content-length');
  });

  test('chunked request re-sent with a content-length', () => {
    const out = forwardRequestHeaders(incoming({ 'transfer-encoding': 'chunked' }), rules({ bodyLength: 5 }));
    expect(out).not.toHaveProperty('transfer-encoding');
    expect(out['content-length']).toBe('5');
  });

  test('host = upstream host; the caller host goes to x-forwarded-host', () => {
    const out = forwardRequestHeaders(incoming({}), rules());
    expect(out.host).toBe('agent.internal:4000');
    expect(out['x-forwarded-host']).toBe('proxy.example:8080');
  });

  test('x-forwarded-for is appended, x-forwarded-proto set unless present', () => {
    const a = forwardRequestHeaders(incoming({}), rules({ remoteAddress: '10.0.0.1', encrypted: true }));
    expect(a['x-forwarded-for']).toBe('10.0.0.1');
    expect(a['x-forwarded-proto']).toBe('https');
    const b = forwardRequestHeaders(
      incoming({ 'x-forwarded-for': '1.1.1.1', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'edge' }),
      rules({ remoteAddress: '10.0.0.2' }),
    );
    expect(b['x-forwarded-for']).toBe('1.1.1.1, 10.0.0.2');
    expect(b['x-forwarded-proto']).toBe('https');
    expect(b['x-forwarded-host']).toBe('edge');
    expect(forwardRequestHeaders(incoming({}), rules())['x-forwarded-proto']).toBe('http');
  });

  test('the incoming header object is not mutated', () => {
    const h = incoming({ connection: 'x-a', 'x-a': '1', 'x-aos-reasoning': 'r' });
    const before = { ...h };
    forwardRequestHeaders(h, rules({ role: 'client', announce: ANNOUNCE, unchecked: true }));
    expect(h).toEqual(before);
  });
});

/** Header pairs as undici hands them over: names as the agent spelled them, values as raw bytes. */
const raw = (...pairs: [string, string][]): Buffer[] => pairs.flatMap(([k, v]) => [Buffer.from(k, 'latin1'), Buffer.from(v, 'latin1')]);

describe('endToEndHeaders', () => {
  test('hop-by-hop removed, everything else relayed (incl. SSE headers, set-cookie arrays, Vary)', () => {
    const out = endToEndHeaders(
      raw(
        ['Connection', 'keep-alive, X-Hop'],
        ['Keep-Alive', 'timeout=5'],
        ['Transfer-Encoding', 'chunked'],
        ['x-hop', '1'],
        ['Content-Type', 'text/event-stream'],
        ['Cache-Control', 'no-cache'],
        ['X-Accel-Buffering', 'no'],
        ['Set-Cookie', 'a=1'],
        ['set-cookie', 'b=2'],
        ['Vary', 'A2A-Version'],
        ['A2A-Extensions', 'https://ext/1'],
      ),
    );
    expect(out).toEqual({
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'set-cookie': ['a=1', 'b=2'],
      vary: 'A2A-Version',
      'a2a-extensions': 'https://ext/1',
    });
  });

  test('content-length and content-encoding of the agent are relayed as they are', () => {
    expect(endToEndHeaders(raw(['Content-Length', '12'], ['content-encoding', 'gzip']))).toEqual({ 'content-length': '12', 'content-encoding': 'gzip' });
  });

  test('every Connection header counts, wherever it stands, and a repeated header stays in order', () => {
    const out = endToEndHeaders(
      raw(['x-a', '1'], ['x-kept', 'one'], ['Connection', 'x-a'], ['x-b', '2'], ['connection', ' X-B ,close'], ['X-Kept', 'two'], ['x-kept', 'three']),
    );
    expect(out).toEqual({ 'x-kept': ['one', 'two', 'three'] });
  });

  test('names of Object.prototype members are headers like any other', () => {
    const out = endToEndHeaders(raw(['constructor', 'c'], ['__proto__', 'p'], ['toString', 't'], ['__proto__', 'q']));
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(['constructor', '__proto__', 'tostring']);
    expect(out.constructor).toBe('c');
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toEqual(['p', 'q']);
    expect(out.tostring).toBe('t');
  });

  test('values are read as latin1 bytes (as undici and node:http do)', () => {
    expect(endToEndHeaders([Buffer.from('x-v'), Buffer.from([0x63, 0xe9])])).toEqual({ 'x-v': 'c\u00e9' });
  });
});

describe('callUpstream refuses what undici would refuse, before any connection', () => {
  test.each([
    ['an asterisk-form target', { path: '*', headers: {} }],
    ['a header value with a control character', { path: '/x', headers: { 'x-bad': 'a\u0001b' } }],
    ['a header value above U+00FF', { path: '/x', headers: { 'x-bad': ['ok', 'エ'] } }],
  ])('%s: onError with ERR_NOT_FORWARDABLE, the agent sees no connection', async (_name, call) => {
    let connections = 0;
    const server = http.createServer((_req, res) => res.end('ok'));
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const up = createUpstream(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
    try {
      const err = await new Promise<NodeJS.ErrnoException>((resolve, reject) => {
        callUpstream(
          up,
          { verb: 'GET', body: null, ...call },
          () => reject(new Error('answered')),
          (e) => resolve(e),
        );
      });
      expect(err.code).toBe('ERR_NOT_FORWARDABLE');
      // The pool is still usable and opened exactly one connection for the good call.
      const status = await new Promise<number>((resolve, reject) => {
        callUpstream(
          up,
          { verb: 'GET', path: '/ok', headers: {}, body: null },
          (a) => {
            a.discard();
            resolve(a.statusCode);
          },
          reject,
        );
      });
      expect(status).toBe(200);
      expect(connections).toBe(1);
    } finally {
      await up.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
