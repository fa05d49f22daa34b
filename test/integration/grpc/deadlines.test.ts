/**
 * Caller-chosen gRPC deadlines. `grpc-timeout` allows up to 99999999 hours; Node's timers
 * hold at most 2^31-1 ms (24.8 days) and fire a longer delay after 1 ms instead (with a
 * TimeoutOverflowWarning on stderr per call). So a call with a deadline of a month was ended at once
 * with DEADLINE_EXCEEDED by the proxy, whatever the agent would have done. Generated deadlines of
 * every unit, past and below the timer limit: the proxy ends a call only when its deadline passed.
 * Real SDK gRPC agent, real HTTP guardian, raw HTTP/2.
 */
import fc from 'fast-check';
import { grpcFrame, rawGrpc } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(60_000);

const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const s = useStack({ grpc: true, stepMs: 20 });
const CASES = Number(process.env.DEADLINE_CASES ?? 20);

function sendFrame(n: number): Buffer {
  const m = grpcMethodForPath(SEND);
  if (m === undefined) throw new Error(SEND);
  const c = codecFor(m).request;
  return grpcFrame(c.encode(c.fromJson({ message: { messageId: `deadline-${n}`, role: 'ROLE_USER', parts: [{ text: 'hello' }] } })));
}

let proxy: TestProxy;
beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0' });
});

test('long deadlines (past what a Node timer holds) do not end the call at once', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on('warning', onWarning);
  // Deadlines from 10 s up to the largest grpc-timeout, in every unit that can express them.
  const arb = fc.oneof(
    fc.tuple(fc.integer({ min: 10, max: 99_999_999 }), fc.constant('S')),
    fc.tuple(fc.integer({ min: 1, max: 99_999_999 }), fc.constant('M')),
    fc.tuple(fc.integer({ min: 1, max: 99_999_999 }), fc.constant('H')),
    fc.tuple(fc.integer({ min: 10_000, max: 99_999_999 }), fc.constant('m')),
  );
  let n = 0;
  try {
    await fc.assert(
      fc.asyncProperty(arb, async ([value, unit]) => {
        const a = await rawGrpc(proxy.grpcAddress as string, SEND, sendFrame(n++), { 'a2a-version': '1.0', 'grpc-timeout': `${value}${unit}` });
        expect({ timeout: `${value}${unit}`, status: a.grpcStatus }).toEqual({ timeout: `${value}${unit}`, status: 0 });
      }),
      { numRuns: CASES, examples: [[[30, 'H']], [[1000, 'H']], [[99_999_999, 'H']], [[2_147_484, 'S']]] },
    );
  } finally {
    process.off('warning', onWarning);
  }
  expect(warnings).not.toContain('TimeoutOverflowWarning');
});

test('a short deadline still ends the call with DEADLINE_EXCEEDED', async () => {
  s.guardian.script(() => ({ decision: 'allow', delayMs: 500 }));
  const a = await rawGrpc(proxy.grpcAddress as string, SEND, sendFrame(999), { 'a2a-version': '1.0', 'grpc-timeout': '50m' });
  expect(a.grpcStatus).toBe(4);
});
