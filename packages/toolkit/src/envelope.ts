// Its declarations name node types: a consumer with @types/node installed needs no `types` entry for them.
/// <reference types="node" preserve="true" />
/**
 * Build AOS envelopes (spec 4.8 request hooks, 4.9 response hooks). Pure. The serialized form
 * splices the already-serialized payload in, so the payload is stringified once per hook and the
 * bytes the guardian sees are exactly the bytes the proxy forwards on `allow`. `envelopeBytes` goes
 * one step further for large payloads: the envelope is the payload's own buffer between a small
 * head and tail, so the payload is never copied into an envelope.
 */
import { randomUUID } from 'node:crypto';
import type { A2AContext, Envelope, JsonObject } from './schemas';

export interface EnvelopeInput {
  readonly method: string;
  readonly payload: JsonObject;
  readonly context: A2AContext;
  /** Client-side request hooks only, and only when the caller supplied it. */
  readonly reasoning?: string | undefined;
  /** Defaults to a fresh UUID v4. */
  readonly id?: string;
}

export function buildEnvelope(input: EnvelopeInput): Envelope {
  // Key order payload, reasoning, context: the order envelopeJson writes.
  const params: Envelope['params'] =
    input.reasoning === undefined
      ? { payload: input.payload, context: input.context }
      : { payload: input.payload, reasoning: input.reasoning, context: input.context };
  return { jsonrpc: '2.0', id: input.id ?? randomUUID(), method: input.method, params };
}

/**
 * JSON text of an envelope, given its payload's JSON text (must be JSON.stringify(envelope.params.payload)).
 * Same bytes as JSON.stringify(envelope) with the key order jsonrpc, id, method, params{payload, reasoning, context}.
 */
export function envelopeJson(env: Envelope, payloadJson: string, contextJson: string = JSON.stringify(env.params.context)): string {
  const reasoning = env.params.reasoning === undefined ? '' : `,"reasoning":${JSON.stringify(env.params.reasoning)}`;
  return `{"jsonrpc":"2.0","id":${JSON.stringify(env.id)},"method":${JSON.stringify(env.method)},"params":{"payload":${payloadJson}${reasoning},"context":${contextJson}}}`;
}

/** An envelope as bytes in order; `length` is their total. */
export interface EnvelopeBytes {
  readonly chunks: readonly Buffer[];
  readonly length: number;
}

/**
 * The bytes of envelopeJson(env, payload text, contextJson), given the payload's UTF-8 bytes: a small
 * head, the payload buffer itself (not copied), a small tail.
 */
export function envelopeBytes(env: Envelope, payload: Buffer, contextJson: string = JSON.stringify(env.params.context)): EnvelopeBytes {
  const reasoning = env.params.reasoning === undefined ? '' : `,"reasoning":${JSON.stringify(env.params.reasoning)}`;
  const head = Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(env.id)},"method":${JSON.stringify(env.method)},"params":{"payload":`, 'utf8');
  const tail = Buffer.from(`${reasoning},"context":${contextJson}}}`, 'utf8');
  return { chunks: [head, payload, tail], length: head.length + payload.length + tail.length };
}
