/** The HTTP+JSON (REST) binding's answer side: a REST body stands for a JSON-RPC result or error. */
import { JSON_ANSWERS, type SseCodec } from '../binding';
import { isObject } from '../../core/json';
import { errorCode, restErrorObject, restHttpStatus } from '../../core/errors';
import { formatSseErrorEvent } from '../sse';

const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json' });
/** The media type a v1.0 REST agent (the SDK's) answers with: a refusal in its own form carries it too. */
const A2A_JSON_HEADERS = Object.freeze({ 'content-type': 'application/a2a+json' });

export const restCodec: SseCodec = {
  ...JSON_ANSWERS,
  name: 'rest',
  toPayload(id, answer, ok) {
    if (ok) return { jsonrpc: '2.0', id, result: answer ?? null };
    const error = isObject(answer) && isObject(answer.error) ? answer.error : answer;
    return { jsonrpc: '2.0', id, error: error ?? null };
  },
  fromPayload(payload, original) {
    if ('result' in payload) return JSON.stringify(payload.result);
    return JSON.stringify(isObject(original) && 'error' in original ? { error: payload.error } : payload.error);
  },
  resultOf: (answer) => answer,
  withResult: (_answer, result) => result,
  errorAnswer(err, _id, shape) {
    // v0.3 REST agents answer {code, message}; v1.0 a google.rpc.Status (a refusal in the agent's own form takes the same).
    const agentForm = shape !== undefined && err.kind === 'taskNotFound';
    const body = agentForm && shape.v03 ? { code: errorCode(err.kind), message: err.message } : restErrorObject(err);
    return { status: restHttpStatus(err), headers: agentForm && !shape.v03 ? A2A_JSON_HEADERS : JSON_HEADERS, body: JSON.stringify(body) };
  },
  streamError: (err) => ({ frame: formatSseErrorEvent(JSON.stringify(restErrorObject(err))) }),
};
