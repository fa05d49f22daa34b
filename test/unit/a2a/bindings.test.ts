/**
 * The binding codecs (src/a2a/bindings): each binding's answers <-> the canonical JSON-RPC response
 * the response hooks judge, and each binding's own error forms. Pure, no sockets.
 */
import { CODECS } from '../../../src/a2a/bindings';
import { grpcErrorStatus } from '../../../src/a2a/bindings/grpc/binding';
import { proxyError } from '../../../src/core/errors';
import { taskNotFound } from '../../../src/proxy/ownership';
import { sdkGrpcErrors } from '../../helpers/grpc';

const { jsonrpc, rest, grpc } = CODECS;

describe('errorAnswer: "task not found" is the SDK agent\'s own answer on each binding and version', () => {
  const err = taskNotFound('t-1');
  const info = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' };
  test("JSON-RPC v1.0: -32001 with A2A's ErrorInfo only", () => {
    const a = jsonrpc.errorAnswer(err, 7, { v03: false, errorAsEvent: false });
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32001, message: 'Task not found: t-1', data: [info] } });
  });
  test('JSON-RPC v0.3: -32001 without data; tasks/resubscribe as an SSE error event', () => {
    expect(JSON.parse(jsonrpc.errorAnswer(err, 'a', { v03: true, errorAsEvent: false }).body)).toEqual({
      jsonrpc: '2.0',
      id: 'a',
      error: { code: -32001, message: 'Task not found: t-1' },
    });
    const sse = jsonrpc.errorAnswer(err, 'a3', { v03: true, errorAsEvent: true });
    expect(sse.status).toBe(200);
    expect(sse.headers['content-type']).toBe('text/event-stream');
    expect(sse.body).toBe('event: error\ndata: {"jsonrpc":"2.0","id":"a3","error":{"code":-32001,"message":"Task not found: t-1"}}\n\n');
  });
  test('REST v1.0: 404 NOT_FOUND Status; v0.3: 404 {code, message}', () => {
    const v1 = rest.errorAnswer(err, 'minted', { v03: false, errorAsEvent: false });
    expect(v1.status).toBe(404);
    expect(v1.headers['content-type']).toBe('application/a2a+json');
    expect(JSON.parse(v1.body)).toEqual({ error: { code: 404, status: 'NOT_FOUND', message: 'Task not found: t-1', details: [info] } });
    const v03 = rest.errorAnswer(err, 'minted', { v03: true, errorAsEvent: false });
    expect(v03.status).toBe(404);
    expect(JSON.parse(v03.body)).toEqual({ code: -32001, message: 'Task not found: t-1' });
  });
  test('gRPC: trailers-only NOT_FOUND (5) with the status details', () => {
    const a = grpc.errorAnswer(err, 'grpc-1');
    expect(a.status).toBe(200);
    expect(a.body).toBe('');
    expect(a.headers['grpc-status']).toBe('5');
    expect(a.headers['grpc-message']).toBe('Task not found: t-1');
    // The details, read with the SDK's own decoder: A2A's ErrorInfo only (the agent's own form, no proxy ErrorInfo).
    const status = sdkGrpcErrors.decodeStatus(Buffer.from(a.headers['grpc-status-details-bin'] as string, 'base64'));
    expect(status.code).toBe(5);
    expect(status.message).toBe('Task not found: t-1');
    const infos = status.details.filter((d) => d.typeUrl.endsWith('google.rpc.ErrorInfo')).map((d) => sdkGrpcErrors.decodeErrorInfo(Buffer.from(d.value)));
    expect(infos.map((i) => [i.reason, i.domain])).toEqual([['TASK_NOT_FOUND', 'a2a-protocol.org']]);
  });
  test("the proxy's own errors keep their ErrorInfo whatever the shape", () => {
    const denied = proxyError('denied', 'no');
    for (const shape of [undefined, { v03: true, errorAsEvent: true }]) {
      const body = JSON.parse(jsonrpc.errorAnswer(denied, 1, shape).body);
      expect(body.error.code).toBe(-31403);
      expect(body.error.data[0].domain).toBe('a2a-guard');
      expect(rest.errorAnswer(denied, 1, shape).status).toBe(403);
    }
    expect(grpcErrorStatus(denied)['grpc-status']).toBe('7');
  });
});

describe('answers <-> the response-hook payload', () => {
  const task = { id: 't', contextId: 'c', status: { state: 'completed' } };
  test("JSON-RPC: the answer is the payload; approved text is the payload's own serialization", () => {
    const answer = { jsonrpc: '2.0', id: 3, result: task };
    expect(jsonrpc.toPayload(3, answer, true)).toBe(answer);
    expect(jsonrpc.toPayload(3, [answer], true)).toBeUndefined();
    expect(jsonrpc.fromPayload(answer, answer, 'GIVEN')).toBe('GIVEN');
    expect(JSON.parse(jsonrpc.fromPayload(answer, answer))).toEqual(answer);
    expect(jsonrpc.resultOf(answer)).toBe(task);
    expect(jsonrpc.withResult(answer, { x: 1 })).toEqual({ jsonrpc: '2.0', id: 3, result: { x: 1 } });
  });
  test('REST: a body stands for a result, an error body for an error (wrapper kept)', () => {
    expect(rest.toPayload('m', task, true)).toEqual({ jsonrpc: '2.0', id: 'm', result: task });
    const wrapped = { error: { code: 404, message: 'gone' } };
    const p = rest.toPayload('m', wrapped, false);
    expect(p).toEqual({ jsonrpc: '2.0', id: 'm', error: { code: 404, message: 'gone' } });
    expect(JSON.parse(rest.fromPayload(p as never, wrapped))).toEqual(wrapped);
    expect(JSON.parse(rest.fromPayload(p as never, { code: 404, message: 'gone' }))).toEqual({ code: 404, message: 'gone' });
    expect(JSON.parse(rest.fromPayload({ jsonrpc: '2.0', id: 'm', result: task }, task, 'IGNORED'))).toEqual(task);
    expect(rest.resultOf(task)).toBe(task);
    expect(rest.withResult(task, { y: 2 })).toEqual({ y: 2 });
  });
  test("gRPC: a message is a result; the caller gets the payload's result", () => {
    expect(grpc.toPayload('g', task, true)).toEqual({ jsonrpc: '2.0', id: 'g', result: task });
    expect(grpc.toPayload('g', 'x', true)).toBeUndefined();
    expect(JSON.parse(grpc.fromPayload({ jsonrpc: '2.0', id: 'g', result: task }, task))).toEqual(task);
  });
  test('stream errors: SSE frames for the HTTP bindings, status trailers for gRPC', () => {
    const err = proxyError('denied', 'no');
    expect(jsonrpc.streamError(err, 5).frame.toString()).toMatch(/^event: error\ndata: \{"jsonrpc":"2.0","id":5,"error":\{"code":-31403/);
    expect(rest.streamError(err, 5).frame.toString()).toMatch(/^event: error\ndata: \{"error":\{"code":403/);
    expect(grpc.streamError(err, 5)).toEqual({ trailers: expect.objectContaining({ 'grpc-status': '7' }) });
  });
});
