import fc from 'fast-check';
import { encodeSegment, parseGeneral, parseTarget } from '../../../src/a2a/target';

/** Paths near the fast path's edge: plain characters, and every character it must leave to the general loop. */
const segmentChar = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...'abcXYZ019-._~!$&\'()*+,=:@'.split('')) },
  { weight: 1, arbitrary: fc.constantFrom('%', '%2F', '%2e', '%41', '%25', ';', '?', '#', '\\', '\x00', '\x7f', ' ', 'é', '[', '"', '/', '', '.', '..') },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 2 }) },
);
const target = fc.tuple(
  fc.array(fc.array(segmentChar, { maxLength: 5 }).map((cs) => cs.join('')), { maxLength: 5 }),
  fc.boolean(),
  fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
).map(([segs, slash, query]) => `/${segs.join('/')}${slash ? '/' : ''}${query === undefined ? '' : `?${query}`}`);

describe('parseTarget fast path: the same result as the general loop', () => {
  test('generated targets', () => {
    fc.assert(fc.property(fc.oneof(target, fc.string()), (raw) => {
      expect(parseTarget(raw)).toEqual(parseGeneral(raw));
    }), { numRuns: 20_000 });
  });

  test('hand-picked targets', () => {
    for (const raw of ['/', '//', '/a', '/a/', '/a//b', '/./a', '/a/..', '/a/.../b', '/.well-known/agent-card.json', '/a2a/jsonrpc', '/a2a/jsonrpc/', '/a;b', '/a%2Fb', '/a?x=1', '/a:b@c', "/!$&'()*+,=", '/a/b/c/d/e/f/g']) {
      expect([raw, parseTarget(raw)]).toEqual([raw, parseGeneral(raw)]);
    }
  });
});

describe('encodeSegment: plain segments are their own encoding', () => {
  test('generated segments: what encodeURIComponent (with ":" and "@" literal) writes', () => {
    fc.assert(fc.property(fc.oneof(fc.array(segmentChar).map((cs) => cs.join('')), fc.string({ unit: 'grapheme' })), (s) => {
      expect(encodeSegment(s)).toBe(encodeURIComponent(s).replace(/%3A/gi, ':').replace(/%40/g, '@'));
    }), { numRuns: 20_000 });
  });
});
