/**
 * A binding is a codec between its wire form and the one canonical JSON-RPC call and answer that the
 * pipeline and the guardian work on (architecture.md "Layers"). The request side of each binding is
 * its classifier and rebuilder (classify.ts, rebuild.ts; gRPC: bindings/grpc/codec.ts); this is the
 * answer side and the binding's own error forms, which the relays and refusals use instead of asking
 * which binding a call came by. A new binding is one codec here, registered in bindings/index.ts
 * (`satisfies Record<BindingName, Codec>` makes the compiler name every place that must know it).
 * Pure: no I/O.
 */
import type { JsonObject, JsonRpcId } from '../core/json';
import type { ProxyError } from '../core/errors';

export type BindingName = 'jsonrpc' | 'rest' | 'grpc';

/** What a refused call looked like, which decides the exact form of the binding's error answer. */
export interface ErrorShape {
  /** v0.3 wire shapes (a v0.3 JSON-RPC method, a /v1/... REST route). */
  readonly v03: boolean;
  /** The agent answers this call's "task not found" as the one event of a stream (v0.3 JSON-RPC tasks/resubscribe). */
  readonly errorAsEvent: boolean;
}

/** An answer as it goes on the wire before any message of it: HTTP status, headers, body. */
export interface WireAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface Codec {
  readonly name: BindingName;
  /**
   * An answer or stream message, as JSON (REST: the body; JSON-RPC: the response object; gRPC: the
   * message's protobuf JSON) -> the response-hook payload, a JSON-RPC response; undefined when the
   * answer is not one the hooks can read.
   */
  toPayload(id: JsonRpcId | null, answer: unknown, ok: boolean): JsonObject | undefined;
  /**
   * An approved or modified payload -> the answer's JSON text (`original` keeps the error wrapper's
   * shape; `payloadJson`, the payload's serialization when the caller has it, is not made again).
   */
  fromPayload(payload: JsonObject, original: unknown, payloadJson?: string): string;
  /** The result an answer carries (a task, a card, a task list); undefined for an error answer. */
  resultOf(answer: unknown): unknown;
  /** The same answer with `result` in place of its result. */
  withResult(answer: unknown, result: unknown): unknown;
  /** The binding's error answer to a call that gets no answer from the agent. */
  errorAnswer(err: ProxyError, id: JsonRpcId | null, shape?: ErrorShape): WireAnswer;
  /**
   * How an answer already under way ends with an error: an SSE `event: error` frame (HTTP bindings),
   * or the status trailers (gRPC), whichever the binding defines.
   */
  streamError(err: ProxyError, id: JsonRpcId | null): { readonly frame: Buffer } | { readonly trailers: Readonly<Record<string, string>> };
}

/**
 * One answer message's bytes and its JSON form, the form the answer stages work on (proxy/answers.ts):
 * HTTP bindings, a JSON body or one SSE event's data; gRPC, one protobuf message (grpc/codec.ts
 * messageAnswers).
 */
export interface AnswerCodec {
  /** The JSON form of one answer message; throws when the bytes are not one. */
  decodeAnswer(bytes: Buffer): unknown;
  /** The bytes of an answer message the proxy writes (a card rewritten, a list filtered). */
  encodeAnswer(json: unknown): Buffer;
}

/**
 * An HTTP answer as JSON, read as an SDK caller's `response.json()` reads it: UTF-8 with one leading
 * byte order mark dropped (WHATWG "UTF-8 decode"); no bytes at all read as null. JSON.parse alone
 * refuses the mark, and an answer the proxy could not read but the caller can would pass unjudged.
 */
export const JSON_ANSWERS: AnswerCodec = {
  decodeAnswer(raw) {
    if (raw.length === 0) return null;
    const bom = raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf;
    return JSON.parse(raw.toString('utf8', bom ? 3 : 0));
  },
  encodeAnswer: (json) => Buffer.from(JSON.stringify(json), 'utf8'),
};

/** A binding over HTTP/1.1 whose streams are SSE: an error under way is an `event: error` frame. */
export interface SseCodec extends Codec, AnswerCodec {
  readonly name: 'jsonrpc' | 'rest';
  streamError(err: ProxyError, id: JsonRpcId | null): { readonly frame: Buffer };
}
