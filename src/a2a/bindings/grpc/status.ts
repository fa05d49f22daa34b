/**
 * `grpc-status-details-bin`: a google.rpc.Status (code, message, details as Any) whose details are
 * google.rpc.ErrorInfo messages, the gRPC twin of the JSON-RPC `data` list and the REST `details`.
 */
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { GRPC_STATUS } from './framing';

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

/** The agent's error status as the response hooks see it: its google.rpc.Status in JSON (the gRPC twin of a REST error body). */
export interface AgentStatusJson {
  readonly code: number;
  readonly status: string;
  readonly message: string;
  readonly details: ErrorInfoJson[];
}

const STATUS_NAMES: readonly string[] = Object.keys(GRPC_STATUS);

/** A status code as a client reads it: 0..16, anything else UNKNOWN. */
function knownCode(text: string | undefined): number {
  const n = text !== undefined && /^\d{1,2}$/.test(text) ? Number(text) : NaN;
  return n >= 0 && n <= 16 ? n : GRPC_STATUS.UNKNOWN;
}

/** `grpc-message` as its sender meant it: %XX sequences are UTF-8 bytes; anything malformed stays as written (PROTOCOL-HTTP2.md). */
export function decodeGrpcMessage(value: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x25 && /^[0-9A-Fa-f]{2}$/.test(value.slice(i + 1, i + 3))) {
      bytes.push(parseInt(value.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(c & 0xff);
  }
  return Buffer.from(bytes).toString('utf8');
}

/** google.rpc.ErrorInfo bytes -> JSON; undefined when they do not read as one. */
function readErrorInfo(bytes: Uint8Array): ErrorInfoJson | undefined {
  const r = new BinaryReader(bytes);
  let reason = '';
  let domain = '';
  const metadata: Record<string, string> = {};
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === WireType.LengthDelimited) reason = r.string();
    else if (field === 2 && wire === WireType.LengthDelimited) domain = r.string();
    else if (field === 3 && wire === WireType.LengthDelimited) {
      const entry = new BinaryReader(r.bytes());
      let k = '';
      let v = '';
      while (entry.pos < entry.len) {
        const [f, w] = entry.tag();
        if (f === 1 && w === WireType.LengthDelimited) k = entry.string();
        else if (f === 2 && w === WireType.LengthDelimited) v = entry.string();
        else entry.skip(w);
      }
      metadata[k] = v;
    } else r.skip(wire);
  }
  return { '@type': ERROR_INFO_TYPE, reason, domain, metadata };
}

/** The ErrorInfo details of `grpc-status-details-bin` (base64); other detail types and unreadable bytes are left out. */
function readDetails(bin: string | undefined): ErrorInfoJson[] {
  if (bin === undefined) return [];
  const out: ErrorInfoJson[] = [];
  try {
    const r = new BinaryReader(Buffer.from(bin, 'base64'));
    while (r.pos < r.len) {
      const [field, wire] = r.tag();
      if (field !== 3 || wire !== WireType.LengthDelimited) {
        r.skip(wire);
        continue;
      }
      const any = new BinaryReader(r.bytes());
      let typeUrl = '';
      let value: Uint8Array = new Uint8Array();
      while (any.pos < any.len) {
        const [f, w] = any.tag();
        if (f === 1 && w === WireType.LengthDelimited) typeUrl = any.string();
        else if (f === 2 && w === WireType.LengthDelimited) value = any.bytes();
        else any.skip(w);
      }
      const info = typeUrl === ERROR_INFO_TYPE ? readErrorInfo(value) : undefined;
      if (info !== undefined) out.push(info);
    }
  } catch {
    return [];
  }
  return out;
}

/**
 * An agent's status (trailers, or the headers of a trailers-only answer) as the hooks judge it. Only
 * what the caller gets back is shown: the code as clients read it, the message, the ErrorInfo details
 * (the details a client reads; others are not relayed, see statusTrailers).
 */
export function agentStatusJson(h: Readonly<Record<string, string | string[] | undefined>>): AgentStatusJson {
  const one = (k: string): string | undefined => {
    const v = h[k];
    return Array.isArray(v) ? v[0] : v;
  };
  const code = knownCode(one('grpc-status'));
  const message = one('grpc-message');
  return {
    code,
    status: STATUS_NAMES[code] as string,
    message: message === undefined ? '' : decodeGrpcMessage(message),
    details: readDetails(one('grpc-status-details-bin')),
  };
}

/** Why a (guardian's) JSON error is no gRPC error status, or undefined when it is one. */
export function statusProblem(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || Array.isArray(error)) return 'the error is not an object';
  const e = error as Record<string, unknown>;
  if (!Number.isInteger(e.code) || (e.code as number) < 1 || (e.code as number) > 16) return 'error.code is not a gRPC error status (1..16)';
  if (e.status !== undefined && e.status !== STATUS_NAMES[e.code as number]) return 'error.status does not name error.code';
  if (e.message !== undefined && typeof e.message !== 'string') return 'error.message is not a string';
  if (e.details === undefined) return undefined;
  if (!Array.isArray(e.details)) return 'error.details is not a list';
  for (const d of e.details as unknown[]) {
    const info = d as Record<string, unknown> | null;
    if (typeof info !== 'object' || info === null || info['@type'] !== ERROR_INFO_TYPE)
      return 'error.details holds something other than a google.rpc.ErrorInfo';
    if (typeof info.reason !== 'string' || typeof info.domain !== 'string') return 'an ErrorInfo has no reason or domain';
    const md = info.metadata;
    if (md !== undefined && (typeof md !== 'object' || md === null || Array.isArray(md) || Object.values(md).some((v) => typeof v !== 'string')))
      return 'an ErrorInfo metadata is not a map of strings';
  }
  return undefined;
}

/** The status trailers for an approved JSON error (checked with statusProblem): exactly what the guardian saw. */
export function statusTrailers(error: Readonly<Record<string, unknown>>): Record<string, string> {
  const code = error.code as number;
  const message = typeof error.message === 'string' ? error.message : '';
  const details = (Array.isArray(error.details) ? error.details : []) as ErrorInfoJson[];
  return {
    'grpc-status': String(code),
    ...(message === '' ? {} : { 'grpc-message': encodeGrpcMessage(message) }),
    ...(details.length === 0 ? {} : { 'grpc-status-details-bin': statusDetailsBin(code, message, details).toString('base64') }),
  };
}
