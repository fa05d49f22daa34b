/**
 * `grpc-status-details-bin`: a google.rpc.Status (code, message, details as Any) whose details are
 * google.rpc.ErrorInfo messages, the gRPC twin of the JSON-RPC `data` list and the REST `details`.
 */
import { BinaryWriter } from '@bufbuild/protobuf/wire';

export interface ErrorInfoJson {
  readonly '@type': string;
  readonly reason: string;
  readonly domain: string;
  readonly metadata?: Readonly<Record<string, string>>;
}

const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';

function errorInfoBytes(info: ErrorInfoJson): Uint8Array {
  const w = new BinaryWriter();
  if (info.reason !== '') w.uint32(10).string(info.reason);
  if (info.domain !== '') w.uint32(18).string(info.domain);
  for (const [k, v] of Object.entries(info.metadata ?? {})) {
    w.uint32(26).fork().uint32(10).string(k).uint32(18).string(v).join();
  }
  return w.finish();
}

/** google.rpc.Status bytes for a code, message and ErrorInfo details. */
export function statusDetailsBin(code: number, message: string, details: readonly ErrorInfoJson[]): Buffer {
  const w = new BinaryWriter();
  if (code !== 0) w.uint32(8).int32(code);
  if (message !== '') w.uint32(18).string(message);
  for (const d of details) {
    if (d['@type'] !== ERROR_INFO_TYPE) continue;
    w.uint32(26).fork().uint32(10).string(ERROR_INFO_TYPE).uint32(18).bytes(errorInfoBytes(d)).join();
  }
  return Buffer.from(w.finish());
}

/**
 * `grpc-message` is percent-encoded (PROTOCOL-HTTP2.md): bytes outside printable ASCII and `%`
 * itself become %XX, so any UTF-8 message survives the header.
 */
export function encodeGrpcMessage(message: string): string {
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
