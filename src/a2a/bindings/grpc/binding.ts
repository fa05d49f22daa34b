/**
 * The gRPC binding's answer side. Answers are protobuf messages, read into their protobuf JSON
 * (codec.ts) before they reach this codec; a message is always a result (errors are statuses, sent as
 * trailers), and the caller gets the payload's result re-encoded (codec.ts encodeFromPayload).
 */
import type { Codec } from '../../binding';
import { grpcErrorParts } from '../../../core/errors';
import { grpcStatusCode } from './framing';
import type { ErrorInfoJson } from './status';
import { isObject, type JsonObject } from '../../../core/json';

/** The status headers of a proxy error, with its ErrorInfo in grpc-status-details-bin. */
export function grpcErrorStatus(err: Parameters<typeof grpcErrorParts>[0], statusOverride?: string): Record<string, string> {
  const parts = grpcErrorParts(err, statusOverride);
  const code = grpcStatusCode(parts.status);
  // status.ts loads the protobuf wire writer: only when a gRPC error is written (gRPC configured).
  const { encodeGrpcMessage, statusDetailsBin } = require('./status') as typeof import('./status');
  return {
    'grpc-status': String(code),
    'grpc-message': encodeGrpcMessage(parts.message),
    'grpc-status-details-bin': statusDetailsBin(code, parts.message, parts.details as readonly ErrorInfoJson[]).toString('base64'),
  };
}

export const grpcCodec: Codec = {
  name: 'grpc',
  toPayload: (id, answer) => (isObject(answer) ? { jsonrpc: '2.0', id, result: answer } : undefined),
  fromPayload: (payload) => JSON.stringify(payload.result),
  resultOf: (answer) => answer,
  withResult: (_answer, result) => result as JsonObject,
  // Trailers-only: HTTP 200 with the status in the headers and no message.
  errorAnswer: (err) => ({ status: 200, headers: { 'content-type': 'application/grpc', ...grpcErrorStatus(err) }, body: '' }),
  streamError: (err) => ({ trailers: grpcErrorStatus(err) }),
};
