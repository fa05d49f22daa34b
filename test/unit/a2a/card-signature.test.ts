/**
 * The canonical JSON card signatures are made over (RFC 8785, empty members dropped), held to an
 * independent implementation (a sorted copy serialised by JSON.stringify) on generated JSON values.
 */
import fc from 'fast-check';
import { canonicalJson, cardPayload, cardSignatureProblem } from '../../../src/a2a/card-signature';
import { referenceCanonical as reference } from '../../helpers/cards';

test('generated JSON values: the same canonical text as the reference, whatever the member order', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      expect(canonicalJson(v)).toBe(reference(v));
      const reordered = JSON.parse(
        JSON.stringify(v, (_k, x) => (x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).reverse()) : x)),
      );
      expect(canonicalJson(reordered)).toBe(canonicalJson(v));
    }),
    { numRuns: 2000 },
  );
});

test('RFC 8785 number and string forms; UTF-16 member order; a __proto__ member is a member', () => {
  expect(canonicalJson({ n: [1e21, 1e-7, -0, 0.1, 123456789012345680000, 4.5] })).toBe('{"n":[1e+21,1e-7,0,0.1,123456789012345680000,4.5]}');
  expect(canonicalJson({ '\u20ac': 1, '\r': 2, '\ud83d\ude00': 3, '\ufb33': 4, '1': 5 })).toBe('{"\\r":2,"1":5,"\u20ac":1,"\ud83d\ude00":3,"\ufb33":4}');
  expect(canonicalJson({ s: 'a\u0001"\\\u2028' })).toBe('{"s":"a\\u0001\\"\\\\\u2028"}');
  expect(canonicalJson(JSON.parse('{"__proto__":{"x":1},"a":1}'))).toBe('{"__proto__":{"x":1},"a":1}');
});

test('the payload of a card: signatures left out, empty members dropped (A2A v1.0 section 8.4)', () => {
  const card = {
    name: 'A',
    description: '',
    signatures: [{ protected: 'p', signature: 's' }],
    capabilities: { streaming: false, extensions: [] },
    skills: [{ id: 's', tags: [] }],
  };
  expect(cardPayload(card)).toBe('{"capabilities":{"streaming":false},"name":"A","skills":[{"id":"s"}]}');
});

test('malformed signature entries are problems, never exceptions', () => {
  const { generateKeyPairSync } = require('node:crypto') as typeof import('node:crypto');
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const trust = new Map([['k', { key: publicKey, alg: 'ES256' }]]);
  const prot = Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'JOSE', kid: 'k' })).toString('base64url');
  const cases: unknown[] = [
    [{ protected: prot, signature: 'AA' }],
    [{ protected: prot, signature: '!!' }],
    [{ protected: 'e30', signature: 'x' }],
    [null, 7],
    [{ protected: '%%', signature: '' }],
    [],
  ];
  for (const signatures of cases) expect(typeof cardSignatureProblem({ name: 'x', signatures }, trust)).toBe('string');
  const crit = Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'k', crit: ['b64'], b64: false })).toString('base64url');
  expect(cardSignatureProblem({ name: 'x', signatures: [{ protected: crit, signature: 'AA' }] }, trust)).toContain('not accepted');
});
