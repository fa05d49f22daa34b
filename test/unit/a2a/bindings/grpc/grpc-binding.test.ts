/**
 * The gRPC binding's pure parts: the method table against the SDK's service definition, the codec
 * (what the guardian sees, and that re-encoding carries nothing it did not see), framing, the status
 * details, the card rewrite.
 */
import zlib from 'node:zlib';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import type * as A2AGrpc from '@a2a-js/sdk/server/grpc' with { 'resolution-mode': 'import' };
import type * as A2AGrpcV03 from '@a2a-js/sdk/compat/v0_3/server/grpc' with { 'resolution-mode': 'import' };
import { GRPC_METHODS, grpcMethodForPath } from '../../../../../src/a2a/bindings/grpc/methods';
import { codecFor, encodeFromPayload, encodeProblem } from '../../../../../src/a2a/bindings/grpc/codec';
import { MessageReader, formatTimeout, frameMessage, isProblem, parseTimeout, readMessage } from '../../../../../src/a2a/bindings/grpc/framing';
import { encodeGrpcMessage, statusDetailsBin } from '../../../../../src/a2a/bindings/grpc/status';
import { grpcTargetFromCard, grpcUrl } from '../../../../../src/a2a/bindings/grpc/card';
import { rewriteCard } from '../../../../../src/a2a/card';
import { doorCheck } from '../../../../../src/proxy/grpc/call';
import { OPERATIONS } from '../../../../../src/a2a/operations';
import { sdkGrpcErrors } from '../../../../helpers/grpc';

const sdkGrpc: typeof A2AGrpc = require('@a2a-js/sdk/server/grpc');
const sdkGrpcV03: typeof A2AGrpcV03 = require('@a2a-js/sdk/compat/v0_3/server/grpc');

const method = (name: string) => {
  const m = grpcMethodForPath(`/lf.a2a.v1.A2AService/${name}`);
  if (m === undefined) throw new Error(name);
  return m;
};

/** A field the generated code does not know: number 99, length-delimited. */
function unknownField(text: string): Uint8Array {
  return new BinaryWriter()
    .uint32((99 << 3) | 2)
    .string(text)
    .finish();
}

const sendBytes = (text: string): Buffer => {
  const c = codecFor(method('SendMessage')).request;
  return c.encode(c.fromJson({ message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text }] } }));
};

describe('method table', () => {
  test("is exactly the SDK's A2AService and its v0.3 LegacyA2AService, each method on its operation-table row", () => {
    const sdkPaths = [sdkGrpc.A2AService, sdkGrpcV03.LegacyA2AService].flatMap((svc) =>
      Object.values(svc as unknown as Record<string, { path: string; responseStream: boolean }>),
    );
    expect([...GRPC_METHODS.keys()].sort()).toEqual(sdkPaths.map((d) => d.path).sort());
    for (const d of sdkPaths) expect(grpcMethodForPath(d.path)?.streaming).toBe(d.responseStream);
    // Every operation of the table is reachable over gRPC.
    expect(new Set([...GRPC_METHODS.values()].map((m) => m.op))).toEqual(new Set(OPERATIONS));
  });

  test('matches the exact path only (no case folding, no other service)', () => {
    expect(grpcMethodForPath('/lf.a2a.v1.A2AService/sendmessage')).toBeUndefined();
    expect(grpcMethodForPath('/lf.a2a.v1.a2aservice/SendMessage')).toBeUndefined();
    expect(grpcMethodForPath('/a2a.v1.A2AService/SendMessage')?.version).toBe('0.3');
    expect(grpcMethodForPath('/a2a.v1.A2AService/ListTasks')).toBeUndefined();
    expect(grpcMethodForPath('/a2a.v1.A2AService/GetExtendedAgentCard')).toBeUndefined();
    expect(grpcMethodForPath('/lf.a2a.v1.A2AService/TaskSubscription')).toBeUndefined();
    expect(grpcMethodForPath('/a2a.v1.a2aservice/SendMessage')).toBeUndefined();
    expect(grpcMethodForPath('/lf.a2a.v1.A2AService/SendMessage/')).toBeUndefined();
    expect(grpcMethodForPath('//lf.a2a.v1.A2AService/SendMessage')).toBeUndefined();
  });
});

describe('codec', () => {
  test('a request reads as the protobuf JSON mapping (v1.0 JSON-RPC params)', () => {
    const c = codecFor(method('SendMessage')).request;
    expect(c.toJson(c.decode(sendBytes('hi')))).toEqual({ message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } });
    const g = codecFor(method('GetTask')).request;
    expect(g.toJson(g.decode(g.encode(g.fromJson({ id: 't1', historyLength: 3 }))))).toEqual({ id: 't1', historyLength: 3 });
  });

  test('unknown fields, at the top and nested, are not re-encoded: the agent gets only what the guardian saw', () => {
    const c = codecFor(method('SendMessage')).request;
    // Nested: an unknown field inside the Message (field 2 of SendMessageRequest).
    const msg = new BinaryWriter().uint32(10).string('m1').uint32(32).int32(1).raw(unknownField('NESTED-SMUGGLE')).finish();
    const hostile = Buffer.concat([new BinaryWriter().uint32(18).bytes(msg).finish(), unknownField('TOP-SMUGGLE')]);
    expect(hostile.includes('SMUGGLE')).toBe(true);
    const decoded = c.decode(hostile);
    const json = c.toJson(decoded);
    expect(JSON.stringify(json)).not.toContain('SMUGGLE');
    expect(c.encode(decoded).includes('SMUGGLE')).toBe(false);
    expect(encodeFromPayload(c, { params: json }, 'params').includes('SMUGGLE')).toBe(false);
  });

  test('a repeated singular field has one meaning: the one the guardian sees is the only one re-encoded', () => {
    const c = codecFor(method('SendMessage')).request;
    const twice = Buffer.concat([sendBytes('first EVIL'), sendBytes('second benign')]);
    const decoded = c.decode(twice);
    expect(JSON.stringify(c.toJson(decoded))).not.toContain('EVIL');
    expect(c.encode(decoded).includes('EVIL')).toBe(false);
  });

  test('malformed bytes throw (refused as INVALID_ARGUMENT by the call)', () => {
    const c = codecFor(method('SendMessage')).request;
    expect(() => c.decode(Buffer.from([0x12, 0x50, 0x01]))).toThrow();
  });

  test('a replacement that is not an object does not encode', () => {
    const c = codecFor(method('GetTask')).request;
    expect(() => encodeFromPayload(c, { params: 'x' }, 'params')).toThrow();
  });
});

describe('framing', () => {
  test('messages split across chunks and several in one chunk', () => {
    const r = new MessageReader(1000);
    const a = frameMessage(Buffer.from('hello'));
    const b = frameMessage(Buffer.from('world!'));
    const all = Buffer.concat([a, b]);
    expect(r.push(all.subarray(0, 3))).toEqual([]);
    const got = r.push(all.subarray(3, 12));
    expect(isProblem(got) ? got : got.map((m) => m.data.toString())).toEqual(['hello']);
    expect(r.clean).toBe(false);
    const rest = r.push(all.subarray(12));
    expect(isProblem(rest) ? rest : rest.map((m) => m.data.toString())).toEqual(['world!']);
    expect(r.clean).toBe(true);
  });

  test('an oversized message is refused from its header; a bad flag is malformed', () => {
    const head = Buffer.from([0, 0, 0, 4, 0]);
    expect(new MessageReader(1000).push(head)).toMatchObject({ status: 'RESOURCE_EXHAUSTED' });
    expect(new MessageReader(1000).push(Buffer.from([2, 0, 0, 0, 0]))).toMatchObject({ status: 'INTERNAL' });
  });

  test('compressed messages: gzip and deflate read, bounded; no encoding is malformed; unknown is unimplemented', async () => {
    const data = Buffer.from('x'.repeat(100));
    expect((await readMessage({ compressed: true, data: zlib.gzipSync(data) }, 'gzip', 1000)) as Buffer).toEqual(data);
    expect((await readMessage({ compressed: true, data: zlib.deflateSync(data) }, 'deflate', 1000)) as Buffer).toEqual(data);
    const bomb = zlib.gzipSync(Buffer.alloc(10_000_000));
    expect(bomb.length).toBeLessThan(20_000);
    expect(await readMessage({ compressed: true, data: bomb }, 'gzip', 1_000_000)).toMatchObject({ status: 'RESOURCE_EXHAUSTED' });
    expect(await readMessage({ compressed: true, data }, undefined, 1000)).toMatchObject({ status: 'INTERNAL' });
    expect(await readMessage({ compressed: true, data }, 'identity', 1000)).toMatchObject({ status: 'INTERNAL' });
    expect(await readMessage({ compressed: true, data }, 'snappy', 1000)).toMatchObject({ status: 'UNIMPLEMENTED' });
    expect(await readMessage({ compressed: true, data: Buffer.from('not gzip') }, 'gzip', 1000)).toMatchObject({ status: 'INTERNAL' });
  });

  test('grpc-timeout', () => {
    expect(parseTimeout(undefined)).toBeUndefined();
    expect(parseTimeout('1500m')).toBe(1500);
    expect(parseTimeout('2S')).toBe(2000);
    expect(parseTimeout('1H')).toBe(3_600_000);
    expect(parseTimeout('100u')).toBeCloseTo(0.1);
    for (const bad of ['', '1', '123456789m', '-1S', '1s', '1.5S', ' 1S']) expect(parseTimeout(bad)).toBeNull();
    expect(formatTimeout(1234.2)).toBe('1235m');
    expect(formatTimeout(0)).toBe('1m');
    expect(parseTimeout(formatTimeout(5e11))).toBeGreaterThan(0);
  });
});

describe('status details', () => {
  test("google.rpc.Status with the proxy's ErrorInfo, readable by the SDK", () => {
    const bin = statusDetailsBin(7, 'Blocked by guardian: no', [
      {
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: 'GUARDIAN_DENIED',
        domain: 'a2a-guard',
        metadata: { envelopeId: 'e1', reasonCode: 'A,B' },
      },
    ]);
    const st = sdkGrpcErrors.decodeStatus(bin);
    expect(st.code).toBe(7);
    expect(st.message).toBe('Blocked by guardian: no');
    expect(st.details).toHaveLength(1);
    const info = sdkGrpcErrors.decodeErrorInfo(Buffer.from(st.details[0]?.value as Uint8Array));
    expect(info).toEqual({ reason: 'GUARDIAN_DENIED', domain: 'a2a-guard', metadata: { envelopeId: 'e1', reasonCode: 'A,B' } });
  });

  test('grpc-message is percent-encoded', () => {
    expect(encodeGrpcMessage('a b%c\né')).toBe('a b%25c%0A%C3%A9');
    expect(decodeURIComponent(encodeGrpcMessage('Blocked: ünïcode 100%'))).toBe('Blocked: ünïcode 100%');
  });
});

describe('card', () => {
  const card = {
    name: 'a',
    supportedInterfaces: [
      { url: 'http://agent:9000/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: 'agent:50051', protocolBinding: 'GRPC', protocolVersion: '1.0' },
      { url: 'agent:50052', protocolBinding: 'GRPC', protocolVersion: '0.3' },
    ],
    additionalInterfaces: [{ url: 'agent:50052', transport: 'GRPC' }],
  };
  const opts = { publicBase: new URL('http://proxy:8080/'), upstreamBase: new URL('http://agent:9000/'), signatures: 'strip' as const };

  test('gRPC interfaces are removed unless the proxy serves gRPC; then v1.0 and v0.3 ones name the proxy', () => {
    const without = rewriteCard(card, opts);
    expect(JSON.stringify(without)).not.toContain('agent:5005');
    const withGrpc = rewriteCard(card, { ...opts, grpcAddress: 'proxy:9443' });
    expect(withGrpc.supportedInterfaces).toEqual([
      { url: 'http://proxy:8080/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: 'proxy:9443', protocolBinding: 'GRPC', protocolVersion: '1.0' },
      { url: 'proxy:9443', protocolBinding: 'GRPC', protocolVersion: '0.3' },
    ]);
    expect(withGrpc.additionalInterfaces).toEqual([{ url: 'proxy:9443', transport: 'GRPC' }]);
    expect(JSON.stringify(withGrpc)).not.toContain('agent:5005');
  });

  test('a v0.3 card: its gRPC main endpoint and additional interfaces name the proxy; versions the proxy does not carry go', () => {
    const v03 = {
      protocolVersion: '0.3.0',
      url: 'agent:50052',
      preferredTransport: 'GRPC',
      additionalInterfaces: [
        { url: 'agent:50052', transport: 'GRPC' },
        { url: 'http://agent:9000/a2a/jsonrpc', transport: 'JSONRPC' },
      ],
    };
    expect(rewriteCard(v03, { ...opts, grpcAddress: 'proxy:9443' })).toEqual({
      protocolVersion: '0.3.0',
      url: 'proxy:9443',
      preferredTransport: 'GRPC',
      additionalInterfaces: [
        { url: 'proxy:9443', transport: 'GRPC' },
        { url: 'http://proxy:8080/a2a/jsonrpc', transport: 'JSONRPC' },
      ],
    });
    // Without a gRPC listener the main endpoint becomes the first HTTP interface.
    expect(rewriteCard(v03, opts)).toEqual({
      protocolVersion: '0.3.0',
      url: 'http://proxy:8080/a2a/jsonrpc',
      preferredTransport: 'JSONRPC',
      additionalInterfaces: [{ url: 'http://proxy:8080/a2a/jsonrpc', transport: 'JSONRPC' }],
    });
    // A 0.2 card's gRPC service is not one the proxy carries.
    const v02 = rewriteCard({ ...v03, protocolVersion: '0.2.5' }, { ...opts, grpcAddress: 'proxy:9443' });
    expect(JSON.stringify(v02)).not.toMatch(/agent:5005|proxy:9443/);
    // The agent's own v0.3 gRPC endpoint, from either place.
    expect(grpcTargetFromCard(v03, new URL('http://agent:9000'))?.href).toBe('http://agent:50052/');
    expect(
      grpcTargetFromCard(
        { protocolVersion: '0.3.0', url: 'http://agent:9000/a2a', additionalInterfaces: [{ url: 'agent:50053', transport: 'GRPC' }] },
        new URL('http://agent:9000'),
      )?.href,
    ).toBe('http://agent:50053/');
    // Each service version's own interface first; else the one the card has.
    const agentUrl = new URL('http://agent:9000');
    expect(grpcTargetFromCard(card, agentUrl, false, '0.3')?.href).toBe('http://agent:50052/');
    expect(grpcTargetFromCard(card, agentUrl, false, '1.0')?.href).toBe('http://agent:50051/');
    expect(grpcTargetFromCard(v03, agentUrl, false, '1.0')?.href).toBe('http://agent:50052/');
  });

  test("the agent's gRPC endpoint from its card", () => {
    expect(grpcTargetFromCard(card, new URL('http://agent:9000'))?.href).toBe('http://agent:50051/');
    expect(grpcTargetFromCard(card, new URL('https://agent:9000'))?.href).toBe('https://agent:50051/');
    expect(grpcTargetFromCard({ supportedInterfaces: [] }, new URL('http://agent:9000'))).toBeUndefined();
    expect(grpcUrl('grpcs://agent:1', 'http:')?.href).toBe('https://agent:1/');
    expect(grpcUrl('ftp://agent:1', 'http:')).toBeUndefined();
  });

  test("a remote agent's card (ROLE=client) may only name UPSTREAM_URL's own host and port for gRPC", () => {
    const elsewhere = (url: string) => ({ supportedInterfaces: [{ url, protocolBinding: 'GRPC', protocolVersion: '1.0' }] });
    const remote = new URL('http://agent:9000');
    // Another host, and another port of the same host (another service there would get the proxy's signed assertion).
    for (const url of [
      '169.254.169.254:80',
      'internal.svc:50051',
      'http://agent.evil:50051',
      'grpc://10.0.0.1:1',
      'agent:50051',
      'agent:9001',
      'https://agent:9000',
    ]) {
      expect(grpcTargetFromCard(elsewhere(url), remote, true)).toBeUndefined();
      expect(grpcTargetFromCard(elsewhere(url), remote, false)).toBeDefined();
    }
    expect(grpcTargetFromCard(elsewhere('AGENT:9000'), remote, true)?.href).toBe('http://agent:9000/');
    expect(grpcTargetFromCard(elsewhere('grpc://agent:9000'), remote, true)?.href).toBe('http://agent:9000/');
    // Loopback names are not one host here: each may be another listener.
    expect(grpcTargetFromCard(elsewhere('localhost:9000'), new URL('http://127.0.0.1:9000'), true)).toBeUndefined();
    expect(grpcTargetFromCard(elsewhere('127.0.0.1:9000'), new URL('http://127.0.0.1:9000'), true)?.href).toBe('http://127.0.0.1:9000/');
    // The first interface at UPSTREAM_URL is taken, one elsewhere is skipped.
    const both = { supportedInterfaces: [elsewhere('agent:1').supportedInterfaces[0], elsewhere('agent:9000').supportedInterfaces[0]] };
    expect(grpcTargetFromCard(both, remote, true)?.href).toBe('http://agent:9000/');
  });
});

describe('door checks (before the body is read)', () => {
  const ok = { ':method': 'POST', ':path': '/lf.a2a.v1.A2AService/GetTask', 'content-type': 'application/grpc' };
  test.each([
    ['a known RPC', ok, 'pass'],
    ['+proto and parameters', { ...ok, 'content-type': 'application/grpc+proto; charset=utf-8' }, 'pass'],
    ['gzip', { ...ok, 'grpc-encoding': 'gzip' }, 'pass'],
    ['GET', { ...ok, ':method': 'GET' }, 'UNIMPLEMENTED'],
    ['grpc+json', { ...ok, 'content-type': 'application/grpc+json' }, 'INVALID_ARGUMENT'],
    ['no content type', { ':method': 'POST', ':path': ok[':path'] }, 'INVALID_ARGUMENT'],
    ['an unknown RPC', { ...ok, ':path': '/lf.a2a.v1.A2AService/Other' }, 'UNIMPLEMENTED'],
    ['snappy', { ...ok, 'grpc-encoding': 'snappy' }, 'UNIMPLEMENTED'],
    ['a bad deadline', { ...ok, 'grpc-timeout': '1 hour' }, 'INTERNAL'],
  ] as const)('%s', (_what, headers, expected) => {
    const d = doorCheck(headers);
    expect(d.type === 'pass' ? 'pass' : d.status).toBe(expected);
  });

  test('a deadline is read in ms', () => {
    const d = doorCheck({ ...ok, 'grpc-timeout': '3S' });
    expect(d.type === 'pass' ? d.timeoutMs : undefined).toBe(3000);
  });
});

describe('a replacement protobuf cannot carry as written is no valid answer', () => {
  const send = codecFor(method('SendMessage')).request;
  const msg = (extra: Record<string, unknown>) => ({ params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }], ...extra } } });

  test.each([
    ['a lone surrogate in a text', msg({ parts: [{ text: 'a\ud800' }] }), /not well-formed Unicode/],
    ['a lone surrogate in a metadata key', msg({ metadata: { '\udc00': 1 } }), /member name .* not well-formed/],
    ['a member the type does not read', msg({ approvedBy: 'nobody' }), /member \/message\/approvedBy is not carried/],
    ['both members of a oneof', msg({ parts: [{ text: 'a', url: 'https://x.example/' }] }), /is not carried/],
  ])('%s', (_n, payload, why) => {
    expect(encodeProblem(send, payload, 'params')).toMatch(why);
  });

  test.each([
    ['defaults written out', msg({ contextId: '', taskId: '', extensions: [], metadata: {} })],
    ['an enum at its default', msg({ role: 'ROLE_UNSPECIFIED' })],
    ['a surrogate pair', msg({ parts: [{ text: 'emoji \ud83d\ude00' }] })],
    ['null and nested values in metadata', msg({ metadata: { a: null, b: { c: [1, 'x', true] } } })],
  ])('%s still encodes', (_n, payload) => {
    expect(encodeProblem(send, payload, 'params')).toBeUndefined();
  });
});
