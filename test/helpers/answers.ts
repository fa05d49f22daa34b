/** Socket-free parts for the answer stages and the relay core (test/unit/proxy): an exchange, a scripted response-hook runner, a FAIL_MODE policy. */
import { operationForMethod, type Operation } from '../../src/a2a/operations';
import { jsonRpcCodec } from '../../src/a2a/bindings';
import type { Codec } from '../../src/a2a/binding';
import { Cancellation } from '../../src/core/cancel';
import { proxyError } from '../../src/core/errors';
import type { JsonObject } from '../../src/core/json';
import { openExchange, type Exchange } from '../../src/proxy/call';
import type { HookRun } from '../../src/proxy/hooks';
import { unreadableAnswer } from '../../src/proxy/enforce';

export const op = (m: string): Operation => operationForMethod(m) as Operation;
const NO_SPAN = {
  traceId: undefined,
  spanId: undefined,
  hook: () => ({ headers: undefined, end: () => undefined }),
  upstream: () => ({ headers: undefined, end: () => undefined }),
  end: () => undefined,
};

export function exchange(method: string, owner = 'oidc:iss:A', codec: Codec = jsonRpcCodec): Exchange {
  return openExchange({
    started: 0,
    codec,
    op: op(method),
    wireMethod: method,
    id: 1,
    shape: { v03: false, errorAsEvent: false },
    caller: new Cancellation(),
    identity: undefined,
    callerPeer: { name: 'A', url: 'http://a.test', version: '1' },
    owner,
    key: owner,
    span: NO_SPAN,
    remoteAddress: '127.0.0.1',
  });
}

/** A response-hook runner whose guardian answers `decide(payload)`; records what it was shown. */
export function scripted(decide: (payload: JsonObject) => 'allow' | 'deny' | JsonObject) {
  const seen: string[] = [];
  const judge = async (payload: JsonObject, payloadJson: string): Promise<HookRun> => {
    seen.push(payloadJson);
    const d = decide(payload);
    if (d === 'deny') return { type: 'block', error: proxyError('denied', 'no'), decision: 'deny' };
    const out = d === 'allow' ? payload : d;
    return { type: 'pass', payload: out, payloadJson: JSON.stringify(out), payloadBytes: undefined, modified: d !== 'allow', unchecked: false };
  };
  return { judge, seen };
}

/** The unreadable-answer policy of a proxy with this FAIL_MODE, recording each reason it was asked about. */
export function policy(failMode: 'closed' | 'open') {
  const asked: string[] = [];
  const unreadable = (why: string) => {
    asked.push(why);
    const action = unreadableAnswer(why, failMode, false);
    return action.type === 'refuse' ? action.error : undefined;
  };
  return { unreadable, asked };
}
