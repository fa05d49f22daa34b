/** The JSON-RPC binding's answer side: its answers already are JSON-RPC responses. */
import { JSON_ANSWERS, type SseCodec } from '../binding';
import { isObject, type JsonObject } from '../../core/json';
import { jsonRpcErrorObject } from '../../core/errors';
import { formatSseErrorEvent } from '../sse';

const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json' });
const SSE_HEADERS = Object.freeze({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });

export const jsonRpcCodec: SseCodec = {
  ...JSON_ANSWERS,
  name: 'jsonrpc',
  toPayload: (_id, answer) => (isObject(answer) ? answer : undefined),
  fromPayload: (payload, _original, payloadJson) => payloadJson ?? JSON.stringify(payload),
  resultOf: (answer) => (isObject(answer) ? answer.result : undefined),
  withResult: (answer, result) => ({ ...(answer as JsonObject), result }),
  errorAnswer(err, id, shape) {
    const full = jsonRpcErrorObject(err, id);
    // v0.3 agents (the SDK's v0.3 dispatcher) send no `data` with their errors; a refusal that must look
    // like the agent's own answer (task not found) takes that shape.
    const answer = shape?.v03 === true && err.kind === 'taskNotFound' ? { ...full, error: { code: full.error.code, message: full.error.message } } : full;
    // v0.3 streaming calls answer an unknown task as the stream's one event.
    if (shape?.errorAsEvent === true && err.kind === 'taskNotFound') {
      return { status: 200, headers: SSE_HEADERS, body: formatSseErrorEvent(JSON.stringify(answer)).toString('utf8') };
    }
    return { status: 200, headers: JSON_HEADERS, body: JSON.stringify(answer) };
  },
  streamError: (err, id) => ({ frame: formatSseErrorEvent(JSON.stringify(jsonRpcErrorObject(err, id))) }),
};
