/**
 * docs/reference/configuration.md and docs/reference/metrics.md are generated from the variable schema
 * and from the metrics a running proxy registers (scripts/docs-reference.ts): a variable or metric
 * added, renamed or reworded without `npm run docs:reference` fails here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { renderAll, ROOT } from '../../../scripts/docs-reference';

test('the generated reference pages are current (run `npm run docs:reference` when this fails)', async () => {
  const files = await renderAll();
  expect(Object.keys(files).sort()).toEqual(['docs/reference/configuration.md', 'docs/reference/metrics.md']);
  for (const [file, text] of Object.entries(files)) expect([file, fs.readFileSync(path.join(ROOT, file), 'utf8')]).toEqual([file, text]);
});
