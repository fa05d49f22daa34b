/**
 * gRPC message <-> the protobuf JSON mapping the guardian sees, with the SDK's own generated code:
 * bytes are read with the message types @a2a-js/sdk's gRPC server uses, and turned into JSON with
 * the same message types' toJSON, which is what the SDK's JSON-RPC server reads back with fromJSON.
 * So the guardian sees exactly the object the agent would act on, in the names the JSON-RPC binding
 * uses; fields the generated code does not know are skipped when read and so never re-encoded.
 *
 * Loaded only when the gRPC binding is configured (the SDK's code and @grpc/grpc-js are large).
 */
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type * as A2AGrpc from '@a2a-js/sdk/server/grpc' with { 'resolution-mode': 'import' };
import type * as A2AGrpcV03 from '@a2a-js/sdk/compat/v0_3/server/grpc' with { 'resolution-mode': 'import' };
import type { JsonObject } from '../../../core/json';
import { GRPC_METHODS, type GrpcMessageType, type GrpcMethod, type GrpcV03MessageType } from './methods';
import { SkipNotingReader, type UnreadField } from './unread';
import { v03FromJson, v03ToJson } from './v03';

/** One message type: wire bytes <-> JSON. Every function throws on input it cannot read. */
export interface MessageCodec {
  /** Read wire bytes into the generated code's object (unknown fields are skipped). */
  decode(bytes: Uint8Array): unknown;
  /** As decode, noting the first field the generated code skipped (unknown, or known under another wire type). */
  decodeNoting(bytes: Uint8Array): { readonly message: unknown; readonly unread: UnreadField | undefined };
  /** That object as the guardian sees it: v1.0, the protobuf JSON mapping; v0.3, the v0.3 JSON-RPC form (v03.ts). */
  toJson(message: unknown): unknown;
  /** JSON (as the guardian approved or replaced it) into the generated code's object. */
  fromJson(json: unknown): unknown;
  encode(message: unknown): Buffer;
}

export interface MethodCodec {
  readonly request: MessageCodec;
  readonly response: MessageCodec;
}

type Serialize = (value: never) => Buffer;
type Deserialize = (value: Buffer) => unknown;
interface JsonFns {
  fromJSON(object: never): unknown;
  toJSON(message: never): unknown;
}

function lowerFirst(name: string): string {
  return `${name.charAt(0).toLowerCase()}${name.slice(1)}`;
}

function asObject(v: unknown, what: string): JsonObject {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${what} is not a JSON object`);
  return v as JsonObject;
}

/** A message type's wire reading, plain and noting the fields its generated decode skips. */
function decoders(deserialize: Deserialize): Pick<MessageCodec, 'decode' | 'decodeNoting'> {
  return {
    decode: (bytes) => deserialize(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)),
    decodeNoting(bytes) {
      // The generated decode reads from a BinaryReader it is handed, as it is.
      const reader = new SkipNotingReader(bytes);
      return { message: deserialize(reader as unknown as Buffer), unread: reader.unread };
    },
  };
}

const EMPTY_JSON: JsonFns = { fromJSON: () => ({}), toJSON: () => ({}) };

function messageCodec(type: GrpcMessageType, serialize: Serialize, deserialize: Deserialize, sdk: typeof A2A): MessageCodec {
  const json = type === 'Empty' ? EMPTY_JSON : (sdk as unknown as Record<string, JsonFns | undefined>)[type];
  if (json === undefined || typeof json.toJSON !== 'function') throw new Error(`@a2a-js/sdk exports no JSON mapping for ${type}`);
  return {
    ...decoders(deserialize),
    // JSON.parse(JSON.stringify()) drops undefined members: the guardian gets plain JSON.
    toJson: (message) => asObject(JSON.parse(JSON.stringify(json.toJSON(message as never))), type),
    fromJson: (value) => json.fromJSON(asObject(value, type) as never),
    encode: (message) => serialize(message as never),
  };
}

/** A v0.3 message type: the SDK's v0.3 wire code, and the v0.3 JSON-RPC form both ways (v03.ts). */
function v03MessageCodec(type: GrpcV03MessageType, serialize: Serialize, deserialize: Deserialize): MessageCodec {
  return {
    ...decoders(deserialize),
    toJson: (message) => v03ToJson(type, message),
    fromJson: (value) => v03FromJson(type, value),
    encode: (message) => serialize(message as never),
  };
}

type ServiceDefs = Record<
  string,
  | {
      path: string;
      requestSerialize: Serialize;
      requestDeserialize: Deserialize;
      responseSerialize: Serialize;
      responseDeserialize: Deserialize;
    }
  | undefined
>;

let loaded: ReadonlyMap<string, MethodCodec> | undefined;

/** Field 1000, varint 1: no A2A message defines it. */
const UNKNOWN_FIELD = Uint8Array.of(0xc0, 0x3e, 0x01);

/** The codec of every method (by `:path`), built from the SDK on first use. */
export function grpcCodecs(): ReadonlyMap<string, MethodCodec> {
  if (loaded !== undefined) return loaded;
  const sdk = require('@a2a-js/sdk') as typeof A2A;
  const service = (require('@a2a-js/sdk/server/grpc') as typeof A2AGrpc).A2AService as unknown as ServiceDefs;
  const legacy = (require('@a2a-js/sdk/compat/v0_3/server/grpc') as typeof A2AGrpcV03).LegacyA2AService as unknown as ServiceDefs;
  const out = new Map<string, MethodCodec>();
  for (const m of GRPC_METHODS.values()) {
    const def = (m.version === '1.0' ? service : legacy)[lowerFirst(m.name)];
    if (def === undefined || def.path !== m.path) throw new Error(`@a2a-js/sdk's ${m.version === '1.0' ? 'A2AService' : 'LegacyA2AService'} has no ${m.path}`);
    const request =
      m.version === '1.0'
        ? messageCodec(m.request, def.requestSerialize, def.requestDeserialize, sdk)
        : v03MessageCodec(m.request, def.requestSerialize, def.requestDeserialize);
    // A decoder that does not take the proxy's reader as one (another copy of @bufbuild/protobuf) would read nothing.
    if (request.decodeNoting(UNKNOWN_FIELD).unread?.field !== 1000)
      throw new Error(`@a2a-js/sdk's ${m.request} decoder does not read through the proxy's reader`);
    const response =
      m.version === '1.0'
        ? messageCodec(m.response, def.responseSerialize, def.responseDeserialize, sdk)
        : v03MessageCodec(m.response, def.responseSerialize, def.responseDeserialize);
    out.set(m.path, { request, response });
  }
  loaded = out;
  return out;
}

export function codecFor(method: GrpcMethod): MethodCodec {
  const c = grpcCodecs().get(method.path);
  if (c === undefined) throw new Error(`no codec for ${method.path}`);
  return c;
}

/**
 * Whether the JSON form of a decoded message carries all of it: its encoding equals the encoding of
 * the JSON read back. Some values have no JSON form of their own (an enum number the generated code
 * does not know shows as "UNRECOGNIZED", a Struct NaN or Infinity as null, -0 as 0, a Value with no
 * kind not at all): the guardian would judge one message and the agent decode another. Returns the
 * message's encoding when faithful, undefined when not.
 */
export function faithfulEncoding(codec: MessageCodec, decoded: unknown, json: unknown): Buffer | undefined {
  const bytes = codec.encode(decoded);
  let again: Buffer;
  try {
    again = codec.encode(codec.fromJson(json));
  } catch {
    return undefined;
  }
  return bytes.equals(again) ? bytes : undefined;
}

/** The canonical JSON-RPC request the guardian sees for a gRPC call (its service's JSON-RPC method name, minted id). */
export function canonicalRequest(method: GrpcMethod, params: JsonObject, id: string): JsonObject {
  return { jsonrpc: '2.0', id, method: method.jsonRpcMethod, params };
}

/** The canonical JSON-RPC response (or stream event) for an answer message. */
export function canonicalResponse(id: string, result: unknown): JsonObject {
  return { jsonrpc: '2.0', id, result };
}

/**
 * The wire message for an approved (or replaced) JSON-RPC payload: `params` of a request, `result` of
 * an answer. Throws when it is not an object or the generated code cannot read it.
 */
export function encodeFromPayload(codec: MessageCodec, payload: JsonObject, member: 'params' | 'result'): Buffer {
  // `result` may be a list or null (v0.3 push config answers): each codec checks its own form.
  return codec.encode(codec.fromJson(member === 'params' ? asObject(payload[member], member) : payload[member]));
}

/** A problem string when a replacement payload does not encode as written, for enforce's "no valid answer". */
export function encodeProblem(codec: MessageCodec, payload: JsonObject, member: 'params' | 'result'): string | undefined {
  try {
    const json = member === 'params' ? asObject(payload[member], member) : payload[member];
    const message = codec.fromJson(json);
    codec.encode(message);
    const lost = lostInEncoding(json, codec.toJson(message));
    return lost === undefined ? undefined : `modified ${member} do not encode as written: ${lost}`;
  } catch (err) {
    return `modified ${member} do not encode: ${(err as Error).message}`;
  }
}

/** A surrogate not in a pair (String.prototype.isWellFormed, which this TypeScript lib does not declare). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const wellFormed = (s: string): boolean => !LONE_SURROGATE.test(s);

/** A value proto3 JSON leaves out (a default), so its absence from the read-back loses nothing. */
function isDefault(v: unknown): boolean {
  if (v === null || v === '' || v === 0 || v === false) return true;
  if (typeof v === 'string') return v.endsWith('_UNSPECIFIED');
  if (Array.isArray(v)) return v.length === 0;
  return typeof v === 'object' && Object.keys(v as object).length === 0;
}

/**
 * What of a replacement the agent would not get, read against the message's own JSON form: a string that is
 * not well-formed UTF-16 (protobuf carries UTF-8: a lone surrogate arrives as U+FFFD), or a member with a value
 * the generated code does not read (dropped on encoding). Without recursion (the guardian's answer is bounded).
 */
export function lostInEncoding(written: unknown, readBack: unknown): string | undefined {
  const todo: Array<[unknown, unknown, string]> = [[written, readBack, '']];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    const [w, r, at] = next;
    if (typeof w === 'string') {
      if (!wellFormed(w)) return `a string at ${at || '/'} is not well-formed Unicode`;
    } else if (Array.isArray(w)) {
      const rs = Array.isArray(r) && r.length === w.length ? r : undefined;
      w.forEach((x, i) => todo.push([x, rs?.[i], `${at}/${i}`]));
    } else if (typeof w === 'object' && w !== null) {
      const ro = typeof r === 'object' && r !== null && !Array.isArray(r) ? (r as Record<string, unknown>) : undefined;
      for (const [k, x] of Object.entries(w)) {
        if (!wellFormed(k)) return `a member name at ${at || '/'} is not well-formed Unicode`;
        if (ro !== undefined && !Object.hasOwn(ro, k) && !isDefault(x)) return `member ${at}/${k.slice(0, 32)} is not carried`;
        todo.push([x, ro?.[k], `${at}/${k.slice(0, 32)}`]);
      }
    }
  }
  return undefined;
}
