/**
 * Binding codecs of the response side: an A2A answer or stream event <-> the response-hook payload
 * (a JSON-RPC response object), and the in-stream error frame of each binding (design section 5).
 */
import type { JsonObject, JsonRpcId } from '../../aos/schemas';
import type { Binding } from '../../a2a/classify';
import { formatSseErrorEvent } from '../../a2a/sse';
import { jsonRpcErrorObject, restErrorObject, type ProxyError } from '../../core/errors';

export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON-RPC answers already are JSON-RPC responses; REST answers are wrapped as one. */
export function toPayload(binding: Binding, id: JsonRpcId | null, body: unknown, ok: boolean): JsonObject | undefined {
  if (binding === 'jsonrpc') return isObject(body) ? body : undefined;
  if (ok) return { jsonrpc: '2.0', id, result: body ?? null };
  const error = isObject(body) && isObject(body.error) ? body.error : body;
  return { jsonrpc: '2.0', id, error: error ?? null };
}

/** The wire form of a (modified) payload: the JSON-RPC response itself, or the REST body it stands for. */
export function fromPayload(binding: Binding, payload: JsonObject, originalBody: unknown): string {
  if (binding === 'jsonrpc') return JSON.stringify(payload);
  if ('result' in payload) return JSON.stringify(payload.result);
  return JSON.stringify(isObject(originalBody) && 'error' in originalBody ? { error: payload.error } : payload.error);
}

/** `event: error` + the JSON-RPC error with the caller's id (REST: `{"error": {...}}`). */
export function errorEvent(binding: Binding, err: ProxyError, id: JsonRpcId | null): Buffer {
  return formatSseErrorEvent(JSON.stringify(binding === 'rest' ? restErrorObject(err) : jsonRpcErrorObject(err, id)));
}
