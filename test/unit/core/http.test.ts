import { contentCodings, isEncoded } from '../../../src/core/http';

describe('contentCodings / isEncoded', () => {
  it.each([
    [undefined, []],
    ['', []],
    ['identity', []],
    [' Identity , ', []],
    ['gzip', ['gzip']],
    ['GZIP', ['gzip']],
    ['identity, br', ['br']],
    ['gzip, gzip', ['gzip', 'gzip']],
    [
      ['gzip', 'br'],
      ['gzip', 'br'],
    ],
    [['identity', ''], []],
  ] as const)('%j -> %j', (header, codings) => {
    expect(contentCodings(header)).toEqual(codings);
    expect(isEncoded(header)).toBe(codings.length > 0);
  });
});
