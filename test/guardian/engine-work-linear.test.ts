/**
 * The engine's work is linear in the payload, whatever its shape: every string reaches deny matching
 * and masking a bounded number of times (a text nested d arrays deep is joined and checked once, not
 * once per level), the detectors stay within their step bounds, and n data keys masked to one name
 * cost about n name tries, not n^2/2. Counted with the reference guardian's work counters, never timed.
 */
import path from 'node:path';
import fc from 'fast-check';
import type { JsonObject } from '../../src/aos/schemas';
import { DETECTOR_STEP_BOUND, work } from '../../src/guardian/detectors';
import { createEngine } from '../../src/guardian/engine';
import { loadPolicy } from '../../src/guardian/policy';
import { requestEnvelope } from './fixtures/envelopes';

const engine = createEngine(loadPolicy(path.join(__dirname, '../../config/policy.json')));
/** The demo policy's detector rule runs all four detectors over each masked text. */
const STEPS_PER_MASKED_CHAR = Object.values(DETECTOR_STEP_BOUND).reduce((a, b) => a + b, 0);

const send = (parts: unknown[]): JsonObject => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: 'm', role: 'user', parts } },
});

function workOf(payload: JsonObject): { deny: number; mask: number; steps: number; keyNames: number; decision: string } {
  const before = { ...work };
  const decision = engine.decide(requestEnvelope(payload)).decision;
  return {
    deny: work.denyChars - before.denyChars,
    mask: work.maskChars - before.maskChars,
    steps: work.steps - before.steps,
    keyNames: work.keyNames - before.keyNames,
    decision,
  };
}

/** Strings that make the detectors work: digit runs, separators, '@', '+', capitals. */
const leaf = fc.oneof(
  fc.constantFrom('1 ', '1-', '4', '+1 ', 'a@', 'A ', '0 ', '(1', 'x').chain((unit) => fc.integer({ min: 1, max: 2000 }).map((n) => unit.repeat(n))),
  fc.string({ unit: fc.constantFrom(...'0123456789 -.()+@aZA'), maxLength: 30 }),
);

/** A text value: a string, or fragments nested in arrays (a tree of depth <= 60, with siblings at each level). */
const textValue: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, fc.array(tie('node'), { minLength: 1, maxLength: 3 })),
})).node;
const deep = fc.tuple(fc.integer({ min: 1, max: 60 }), leaf, fc.array(leaf, { maxLength: 3 })).map(([depth, inner, siblings]) => {
  let v: unknown = inner;
  for (let d = 0; d < depth; d++) v = [v, ...siblings];
  return v;
});

describe('the engine hands each string to the matchers a bounded number of times', () => {
  it('text fields, however deep their fragments are nested (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(textValue, deep), { minLength: 1, maxLength: 4 }), (texts) => {
        const payload = send(texts.map((text) => ({ kind: 'text', text })));
        const size = JSON.stringify(payload).length;
        const w = workOf(payload);
        // Each fragment alone and once inside the text its outermost array joins into.
        expect(w.deny).toBeLessThanOrEqual(4 * size);
        expect(w.mask).toBeLessThanOrEqual(4 * size);
        expect(w.steps).toBeLessThanOrEqual(STEPS_PER_MASKED_CHAR * w.mask + 64 * size);
      }),
      { numRuns: 150 },
    );
  });

  it('a text nested 55 arrays deep is checked once, not once per level', () => {
    let text: unknown = '1 '.repeat(50_000);
    for (let d = 0; d < 55; d++) text = [text];
    const payload = send([{ kind: 'text', text }]);
    const w = workOf(payload);
    expect(w.deny).toBeLessThanOrEqual(2 * 100_000 + 1000);
    expect(w.mask).toBeLessThanOrEqual(2 * 100_000 + 1000);
  });

  it('many small strings (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20_000 }), fc.constantFrom('1', '1 1', 'a@b.co', '+1 2'), (count, s) => {
        const payload = send([
          { kind: 'text', text: Array.from({ length: count }, () => s) },
          { kind: 'data', data: { list: Array.from({ length: count }, () => s) } },
        ]);
        const size = JSON.stringify(payload).length;
        const w = workOf(payload);
        expect(w.deny).toBeLessThanOrEqual(4 * size);
        expect(w.mask).toBeLessThanOrEqual(4 * size);
        expect(w.steps).toBeLessThanOrEqual(STEPS_PER_MASKED_CHAR * w.mask + 64 * size);
      }),
      { numRuns: 40 },
    );
  });

  it('data keys that all mask to one name cost a bounded number of name tries each (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20_000 }), fc.boolean(), (count, clash) => {
        const data: JsonObject = {};
        // Keys already named like the suffixed names make the tries skip over them.
        if (clash) for (let i = 2; i < 50; i++) data[`[EMAIL]#${i}`] = i;
        for (let i = 0; i < count; i++) data[`a${i}@x.io`] = i;
        const w = workOf(send([{ kind: 'data', data }]));
        expect(w.decision).toBe('modify');
        expect(w.keyNames).toBeLessThanOrEqual(3 * Object.keys(data).length);
      }),
      { numRuns: 20 },
    );
  });
});
