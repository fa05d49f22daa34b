/**
 * No function in src/ runs past 120 lines: a longer one is split into named steps.
 */
import path from 'node:path';
import { longFunctions, longFunctionsIn } from '../../scripts/function-lengths';

const LIMIT = 120;

describe('function length in src/', () => {
  it(`has no function over ${LIMIT} lines outside the allowlist`, () => {
    const offenders = longFunctions(path.resolve(__dirname, '../../src'), LIMIT);
    expect(offenders.map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`)).toEqual([]);
  });

  it('counts functions, arrows and methods from their first line to their closing brace', () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = [`export function f() {\n${body(3)}\n}`, `const g = () => {\n${body(4)}\n};`, `class C {\n  m() {\n${body(5)}\n  }\n}`].join('\n');
    const found = longFunctionsIn('x.ts', text, 2).map((f) => [f.name, f.lines]);
    expect(found).toEqual([
      ['f', 5],
      ['g', 6],
      ['m', 7],
    ]);
  });
});
