/**
 * The README's links and file names lead somewhere: every relative link names a file of the
 * repository (and an in-page anchor a heading), every repository path written as code exists.
 * The variable, metric and error tables are held to the code by test/unit/observe/observe.test.ts
 * and test/unit/core/errors.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { codeSpans, readme, ROOT } from '../helpers/readme';

const text = readme();

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');

test('every relative link names a file of the repository, and every anchor a heading', () => {
  const headings = new Set(text.split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => anchor(l.replace(/^#+ /, ''))));
  const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string).filter((l) => !/^[a-z]+:/.test(l));
  expect(links.length).toBeGreaterThan(20);
  for (const link of links) {
    const [file, hash] = link.split('#') as [string, string | undefined];
    if (file !== '') expect([link, fs.existsSync(path.join(ROOT, file))]).toEqual([link, true]);
    else expect([link, headings.has(hash ?? '')]).toEqual([link, true]);
  }
});

test('every repository path the README writes as code exists', () => {
  const prose = text.replace(/^ *```[^\n]*\n[\s\S]*?^ *```$/gm, '');
  const paths = codeSpans(prose).filter((s) => /^(src|test|bench|scripts|deploy|docs|config|\.ci)\/[\w./-]*$/.test(s));
  expect(paths.length).toBeGreaterThan(20);
  for (const p of paths) expect([p, fs.existsSync(path.join(ROOT, p))]).toEqual([p, true]);
});
