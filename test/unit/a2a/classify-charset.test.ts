import fc from 'fast-check';
import { classify } from '../../../src/a2a/classify';
import { A2A_OPTIONS } from '../../helpers/classify';

/**
 * The charset check runs only when Content-Type has a ';' (classify.ts): any form a parser reads a
 * charset parameter from must still be refused unless it is UTF-8, with or without spaces around ';'.
 */
const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 't-1' } }));
const refused = (ct: string) => {
  const c = classify({ verb: 'POST', path: '/a2a/jsonrpc', headers: { 'content-type': ct }, body }, A2A_OPTIONS);
  return c.kind === 'reject' && c.error.kind === 'rejected' && /Charset/.test(c.error.message);
};

describe('Content-Type charset: every spelling of a non-UTF-8 charset is refused', () => {
  test.each([
    'application/json;charset=utf-7',
    'application/json;charset=UTF-16',
    'application/json\t;\tcharset=latin1',
    'application/json;foo=bar;charset=utf-7',
    'application/json;CHARSET="utf-16"',
    'application/json;charset=',
  ])('%p', (ct) => {
    expect(refused(ct)).toBe(true);
  });

  test('generated parameter lists: refused exactly when some charset is not UTF-8', () => {
    const space = fc.constantFrom('', ' ', '\t', '  ');
    const charset = fc.constantFrom('utf-8', 'UTF-8', 'utf8', '"utf-8"', 'utf-7', 'utf-16', 'latin1', '', 'utf-8x', '"utf-7"');
    const param = fc.oneof(
      fc
        .tuple(space, fc.constantFrom('charset', 'Charset', 'CHARSET'), space, space, charset)
        .map(([a, n, b, c, v]) => ({ text: `${a}${n}${b}=${c}${v}`, bad: !['utf-8', 'utf8'].includes(v.replace(/"/g, '').toLowerCase()) })),
      fc.constantFrom('foo=bar', 'q=1', '').map((text) => ({ text, bad: false })),
    );
    fc.assert(
      fc.property(fc.constantFrom('application/json', 'APPLICATION/JSON'), fc.array(fc.tuple(space, param), { minLength: 1, maxLength: 3 }), (type, params) => {
        const ct = type + params.map(([s, p]) => `${s};${p.text}`).join('');
        expect([ct, refused(ct)]).toEqual([ct, params.some(([, p]) => p.bad)]);
      }),
      { numRuns: 2000 },
    );
  });
});
