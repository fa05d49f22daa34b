/**
 * The gRPC binding against hostile and unusual wire input: unknown methods, malformed frames,
 * compressed messages, oversized messages, undecodable messages, unknown fields. Each refusal is the
 * standard gRPC status with the proxy's ErrorInfo, and the agent (a real SDK gRPC agent, recorded
 * below its transport) never receives the call. A second, byte-recording HTTP/2 agent shows exactly
 * what the proxy sends: the re-encoded message, the caller's metadata minus proxy-owned headers, the
 * remaining deadline.
 */
import http2 from 'node:http2';
import zlib from 'node:zlib';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFrame, rawGrpc, type RawGrpcAnswer } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';
import { MessageReader } from '../../../src/a2a/bindings/grpc/framing';

jest.setTimeout(30_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap });
const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const MAX = 64 * 1024;

const sendMethod = grpcMethodForPath(SEND);
if (sendMethod === undefined) throw new Error('SendMessage missing');
const sendCodec = codecFor(sendMethod);
const sendBytes = (text: string): Buffer =>
  sendCodec.request.encode(sendCodec.request.fromJson({ message: { messageId: `m-${text.length}`, role: 'ROLE_USER', parts: [{ text }] } }));
const unknownField = (text: string) =>
  new BinaryWriter()
    .uint32((99 << 3) | 2)
    .string(text)
    .finish();

let proxy: TestProxy;
beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0', MAX_BODY_BYTES: String(MAX) });
});
beforeEach(() => rec.clear());

const V1 = { 'a2a-version': '1.0' };

function expectRefused(a: RawGrpcAnswer, status: number, reason = 'REQUEST_REJECTED'): void {
  expect(a.httpStatus).toBe(200);
  expect(a.grpcStatus).toBe(status);
  expect(a.details).toContainEqual(expect.objectContaining({ reason, domain: 'a2a-guard' }));
  expect(rec.calls).toHaveLength(0);
  expect(s.guardian.calls()).toHaveLength(0);
}

describe('refused before the guardian, never relayed', () => {
  test('a well-formed call passes (the baseline of this file)', async () => {
    const a = await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(sendBytes('baseline')), V1);
    expect(a.grpcStatus).toBe(0);
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
  });

  test.each([
    ['an unknown method', '/lf.a2a.v1.A2AService/DropTables'],
    ['another case', '/lf.a2a.v1.A2AService/sendMessage'],
    ['another service', '/a2a.v2.A2AService/SendMessage'],
    ['a v1.0 method under the v0.3 service', '/a2a.v1.A2AService/SubscribeToTask'],
    ['gRPC reflection', '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo'],
    ['a health check', '/grpc.health.v1.Health/Check'],
    ['a trailing slash', `${SEND}/`],
  ])('%s: UNIMPLEMENTED', async (_what, path) => {
    expectRefused(await rawGrpc(proxy.grpcAddress as string, path, grpcFrame(sendBytes('x')), V1), 12);
  });

  test('a content type that is not gRPC', async () => {
    const a = await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(sendBytes('x')), { ...V1, 'content-type': 'application/json' });
    expectRefused(a, 3);
  });

  test('a truncated frame: INTERNAL', async () => {
    const frame = grpcFrame(sendBytes('truncated'));
    expectRefused(await rawGrpc(proxy.grpcAddress as string, SEND, frame.subarray(0, frame.length - 3), V1), 13);
  });

  test('no message at all, and two messages: INTERNAL', async () => {
    expectRefused(await rawGrpc(proxy.grpcAddress as string, SEND, Buffer.alloc(0), V1), 13);
    expectRefused(await rawGrpc(proxy.grpcAddress as string, SEND, Buffer.concat([grpcFrame(sendBytes('one')), grpcFrame(sendBytes('two'))]), V1), 13);
  });

  test('an invalid compressed flag: INTERNAL', async () => {
    const frame = grpcFrame(sendBytes('flag'));
    frame[0] = 7;
    expectRefused(await rawGrpc(proxy.grpcAddress as string, SEND, frame, V1), 13);
  });

  test('an oversized message: RESOURCE_EXHAUSTED, refused from its header', async () => {
    const a = await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(sendBytes('y'.repeat(MAX + 10))), V1);
    expectRefused(a, 8);
  });

  test('a compressed message without grpc-encoding: INTERNAL; with an unknown encoding: UNIMPLEMENTED naming what is accepted', async () => {
    const gz = zlib.gzipSync(sendBytes('compressed'));
    expectRefused(await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(gz, true), V1), 13);
    const a = await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(gz, true), { ...V1, 'grpc-encoding': 'snappy' });
    expectRefused(a, 12);
    expect(a.headers['grpc-accept-encoding']).toBe('identity,gzip,deflate');
  });

  test('a gzip bomb: RESOURCE_EXHAUSTED', async () => {
    const bomb = zlib.gzipSync(Buffer.concat([sendBytes('bomb'), unknownField('z'.repeat(MAX * 4))]));
    expect(bomb.length).toBeLessThan(MAX);
    expectRefused(await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(bomb, true), { ...V1, 'grpc-encoding': 'gzip' }), 8);
  });

  test('bytes that are not the request message: INVALID_ARGUMENT', async () => {
    expectRefused(await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(Buffer.from([0x12, 0x7f, 0x01, 0x02])), V1), 3);
  });

  test('over the in-flight budget (MAX_INFLIGHT_BODY_BYTES): RESOURCE_EXHAUSTED, PROXY_OVERLOADED', async () => {
    const small = await s.proxy({ GRPC_PORT: '0', MAX_INFLIGHT_BODY_BYTES: '200' });
    const a = await rawGrpc(small.grpcAddress as string, SEND, grpcFrame(sendBytes('o'.repeat(400))), V1);
    expectRefused(a, 8, 'PROXY_OVERLOADED');
  });

  test('a compressed message counts its copies of what it decodes to: a small gzip body over the budget is RESOURCE_EXHAUSTED, PROXY_OVERLOADED, before the guardian or the agent', async () => {
    const small = await s.proxy({ GRPC_PORT: '0', MAX_INFLIGHT_BODY_BYTES: String(1024 * 1024) });
    const seen = s.guardian.calls().length;
    const acted = rec.calls.length;
    // 2 MB of text, a few KB on the wire: within MAX_BODY_BYTES, over the budget once decoded.
    const zipped = grpcFrame(zlib.gzipSync(sendBytes('z'.repeat(2_000_000))), true);
    expect(zipped.length).toBeLessThan(16 * 1024);
    expectRefused(await rawGrpc(small.grpcAddress as string, SEND, zipped, { ...V1, 'grpc-encoding': 'gzip' }), 8, 'PROXY_OVERLOADED');
    // 300 KB held three times does not fit a 1 MiB budget either.
    expectRefused(await rawGrpc(small.grpcAddress as string, SEND, grpcFrame(sendBytes('o'.repeat(400_000))), V1), 8, 'PROXY_OVERLOADED');
    expect(s.guardian.calls().length).toBe(seen);
    expect(rec.calls.length).toBe(acted);
    expect(small.metrics.bodyBytesInFlight()).toBe(0);
  });

  test('a malformed grpc-timeout: INTERNAL', async () => {
    expectRefused(await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(sendBytes('t')), { ...V1, 'grpc-timeout': '10 seconds' }), 13);
  });
});

test('a gzip-compressed call is read, judged and relayed (uncompressed)', async () => {
  const a = await rawGrpc(proxy.grpcAddress as string, SEND, grpcFrame(zlib.gzipSync(sendBytes('zipped hello')), true), { ...V1, 'grpc-encoding': 'gzip' });
  expect(a.grpcStatus).toBe(0);
  expect(JSON.stringify(s.guardian.calls()[0]?.params.payload)).toContain('zipped hello');
  expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
});

describe('what the agent receives (a byte-recording HTTP/2 agent)', () => {
  interface Seen {
    headers: http2.IncomingHttpHeaders;
    body: Buffer;
  }
  const seen: Seen[] = [];
  let raw: http2.Http2Server;
  let relay: TestProxy;
  const sessions = new Set<http2.ServerHttp2Session>();

  beforeAll(async () => {
    raw = http2.createServer();
    raw.on('session', (sess) => sessions.add(sess));
    raw.on('stream', (stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        seen.push({ headers, body: Buffer.concat(chunks) });
        const answer = Buffer.concat([
          sendCodec.response.encode(sendCodec.response.fromJson({ task: { id: 't1', contextId: 'c1', status: { state: 'TASK_STATE_COMPLETED' } } })),
          unknownField('AGENT-EXTRA'),
        ]);
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'x-agent-meta': 'kept' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-agent-trailer': 'kept' }));
        stream.end(grpcFrame(answer));
      });
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', () => r()));
    const port = (raw.address() as { port: number }).port;
    relay = await s.proxy({ GRPC_PORT: '0', GRPC_UPSTREAM_URL: `http://127.0.0.1:${port}` });
  });
  afterAll(async () => {
    for (const sess of sessions) sess.destroy();
    await new Promise<void>((r) => raw.close(() => r()));
  });
  beforeEach(() => {
    seen.length = 0;
  });

  test("a field the SDK's decoder does not know is refused by number, never dropped on the way to the agent", async () => {
    const hostile = Buffer.concat([sendBytes('hello with extras'), unknownField('SMUGGLED-FIELD')]);
    const a = await rawGrpc(relay.grpcAddress as string, SEND, grpcFrame(hostile), V1);
    expect(a.grpcStatus).toBe(3);
    expect(a.grpcMessage).toMatch(/field 99 \(wire type 2\)/);
    expect(seen).toHaveLength(0);
    expect(s.guardian.calls()).toHaveLength(0);
  });

  test('metadata passes minus proxy-owned headers; the deadline shrinks', async () => {
    const a = await rawGrpc(relay.grpcAddress as string, SEND, grpcFrame(sendBytes('hello with extras')), {
      ...V1,
      'grpc-timeout': '5S',
      'x-custom': 'passes',
      authorization: 'Bearer abc',
      'x-aos-reasoning': 'secret reasoning',
      'x-aos-agent-name': 'claimed',
      'x-aos-unchecked': 'true',
      'grpc-encoding': 'identity',
      'grpc-accept-encoding': 'gzip',
      'user-agent': 'grpc-node-js/test',
    });
    expect(a.grpcStatus).toBe(0);
    expect(a.headers['x-agent-meta']).toBe('kept');
    expect(a.trailers['x-agent-trailer']).toBe('kept');
    expect(seen).toHaveLength(1);
    const got = seen[0] as Seen;
    expect(got.body.includes('SMUGGLED')).toBe(false);
    const msgs = new MessageReader(MAX).push(got.body);
    if (!Array.isArray(msgs)) throw new Error(msgs.message);
    expect(msgs).toHaveLength(1);
    expect(sendCodec.request.toJson(sendCodec.request.decode((msgs[0] as { data: Buffer }).data))).toEqual(s.guardian.calls()[0]?.params.payload.params);
    expect(got.headers['x-custom']).toBe('passes');
    expect(got.headers.authorization).toBe('Bearer abc');
    expect(got.headers['user-agent']).toBe('grpc-node-js/test');
    expect(got.headers['a2a-version']).toBe('1.0');
    expect(got.headers['x-aos-reasoning']).toBeUndefined();
    expect(got.headers['x-aos-agent-name']).toBeUndefined();
    // A caller cannot mark its own call as unchecked, nor choose the agent's answer encoding.
    expect(got.headers['x-aos-unchecked']).toBeUndefined();
    expect(got.headers['grpc-encoding']).toBeUndefined();
    expect(got.headers['grpc-accept-encoding']).toBe('identity');
    expect(got.headers.te).toBe('trailers');
    const left = Number(/^(\d+)m$/.exec(String(got.headers['grpc-timeout']))?.[1]);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(5000);
  });

  test('a judged answer reaches the caller without fields the guardian did not see; an unjudged one as the agent sent it', async () => {
    const port = (raw.address() as { port: number }).port;
    const judged = await s.proxy({ GRPC_PORT: '0', GRPC_UPSTREAM_URL: `http://127.0.0.1:${port}`, INSPECT_RESPONSES: 'true' });
    const a = await rawGrpc(judged.grpcAddress as string, SEND, grpcFrame(sendBytes('answer please')), V1);
    expect(a.grpcStatus).toBe(0);
    expect(a.body.includes('AGENT-EXTRA')).toBe(false);
    expect(a.body.includes('t1')).toBe(true);
    const b = await rawGrpc(relay.grpcAddress as string, SEND, grpcFrame(sendBytes('answer please')), V1);
    expect(b.body.includes('AGENT-EXTRA')).toBe(true);
  });

  test("ROLE=client: the caller's reasoning reaches the guardian, never the agent", async () => {
    const client = await s.proxy({ GRPC_PORT: '0', ROLE: 'client', GRPC_UPSTREAM_URL: `http://127.0.0.1:${(raw.address() as { port: number }).port}` });
    const a = await rawGrpc(client.grpcAddress as string, SEND, grpcFrame(sendBytes('why')), { ...V1, 'x-aos-reasoning': 'because the user asked' });
    expect(a.grpcStatus).toBe(0);
    expect(s.guardian.calls()[0]?.params.reasoning).toBe('because the user asked');
    expect(seen[0]?.headers['x-aos-reasoning']).toBeUndefined();
  });
});

describe('streams: backpressure and the agent ending a stream', () => {
  const STREAM = '/lf.a2a.v1.A2AService/SendStreamingMessage';
  const EVENTS = 400;
  let sent = 0;
  let mode: 'flood' | 'reset' = 'flood';
  let agent: http2.Http2Server;
  const sessions = new Set<http2.ServerHttp2Session>();
  const streamMethod = grpcMethodForPath(STREAM);
  if (streamMethod === undefined) throw new Error('SendStreamingMessage missing');
  const events = codecFor(streamMethod).response;
  // One artifact update of ~32 KiB.
  const event = events.encode(
    events.fromJson({ artifactUpdate: { taskId: 't1', contextId: 'c1', artifact: { artifactId: 'a', parts: [{ text: 'x'.repeat(32 * 1024) }] } } }),
  );

  beforeAll(async () => {
    agent = http2.createServer();
    agent.on('session', (sess) => sessions.add(sess));
    agent.on('stream', (stream) => {
      stream.on('data', () => undefined);
      stream.on('error', () => undefined);
      stream.on('end', async () => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        if (mode === 'reset') {
          stream.write(grpcFrame(event));
          setTimeout(() => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR), 50);
          return;
        }
        for (let i = 0; i < EVENTS && !stream.destroyed; i++) {
          // The agent honours backpressure: it waits while its side is full.
          if (!stream.write(grpcFrame(event))) await new Promise((r) => stream.once('drain', r));
          sent++;
        }
        stream.end();
      });
    });
    await new Promise<void>((r) => agent.listen(0, '127.0.0.1', () => r()));
  });
  afterAll(async () => {
    for (const sess of sessions) sess.destroy();
    await new Promise<void>((r) => agent.close(() => r()));
  });
  beforeEach(() => {
    sent = 0;
  });

  const upstream = () => `http://127.0.0.1:${(agent.address() as { port: number }).port}`;

  test.each([
    ['relayed as bytes', 'false'],
    ['judged per message', 'true'],
  ])('a caller that does not read holds the agent back (%s)', async (_what, inspect) => {
    const p = await s.proxy({ GRPC_PORT: '0', GRPC_UPSTREAM_URL: upstream(), INSPECT_RESPONSES: inspect, MAX_BODY_BYTES: String(1024 * 1024) });
    const session = http2.connect(`http://${p.grpcAddress as string}`);
    const req = session.request({ ':method': 'POST', ':path': STREAM, 'content-type': 'application/grpc', te: 'trailers', ...V1 });
    req.end(grpcFrame(sendBytes('flood me')));
    req.pause();
    await new Promise((r) => setTimeout(r, 1500));
    // 400 events of 32 KiB = 12.5 MiB; a proxy that held them back sent the agent's side a few windows' worth at most.
    expect(sent).toBeLessThan(EVENTS / 4);
    const heldBack = sent;
    let bytes = 0;
    const status = await new Promise<string | undefined>((resolve) => {
      req.on('data', (c: Buffer) => (bytes += c.length));
      req.on('trailers', (t) => resolve(t['grpc-status'] as string | undefined));
      req.resume();
    });
    expect(status).toBe('0');
    expect(sent).toBe(EVENTS);
    expect(sent).toBeGreaterThan(heldBack);
    expect(bytes).toBe(EVENTS * (event.length + 5));
    session.close();
  });

  test('an agent that resets its stream: the caller gets UNAVAILABLE, not a clean end', async () => {
    mode = 'reset';
    try {
      const p = await s.proxy({ GRPC_PORT: '0', GRPC_UPSTREAM_URL: upstream() });
      const a = await rawGrpc(p.grpcAddress as string, STREAM, grpcFrame(sendBytes('reset me')), V1);
      expect(a.grpcStatus).toBe(14);
      expect(a.details).toContainEqual(expect.objectContaining({ reason: 'UPSTREAM_UNAVAILABLE', domain: 'a2a-guard' }));
    } finally {
      mode = 'flood';
    }
  });
});
