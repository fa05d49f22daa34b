import { asObject, isObject } from '../../../src/core/json';

describe('isObject / asObject', () => {
  it.each([
    [{}, true],
    [{ a: 1 }, true],
    [Object.create(null) as object, true],
    [[], false],
    [null, false],
    [undefined, false],
    ['{}', false],
    [1, false],
  ])('%p is an object: %p', (v, yes) => {
    expect(isObject(v)).toBe(yes);
    expect(asObject(v)).toBe(yes ? v : undefined);
  });
});
