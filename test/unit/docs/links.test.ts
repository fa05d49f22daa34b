/**
 * The documentation holds together: every relative link in README.md, CONTRIBUTING.md, SECURITY.md and
 * docs/**\/*.md names a file or folder of the repository, every `#anchor` a heading of the file it points
 * into, every repository path written as code exists, and the README stays a short front page.
 */
import fs from 'node:fs';
import path from 'node:path';
import { codeSpans, ROOT } from '../../helpers/readme';

const README_MAX_BYTES = 15_000;

function markdownFiles(): string[] {
  const walk = (dir: string): string[] =>
    fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.join(dir, e.name);
      return e.isDirectory() ? walk(rel) : e.name.endsWith('.md') ? [rel] : [];
    });
  return ['README.md', 'CONTRIBUTING.md', 'SECURITY.md', 'CHANGELOG.md', ...walk('docs')];
}

/** The text outside fenced code blocks (a link or heading inside one is an example). */
const prose = (text: string) => text.replace(/^ *```[^\n]*\n[\s\S]*?^ *```$/gm, '');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

/** The anchors a Markdown file offers: its headings (a repeated one gets -1, -2, ...) and explicit `<a id>`s. */
function anchors(file: string): Set<string> {
  const text = prose(fs.readFileSync(path.join(ROOT, file), 'utf8'));
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const h = /^#{1,6} (.*)$/.exec(line);
    if (h === null) continue;
    const base = slug((h[1] as string).replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a (?:id|name)="([^"]+)"/g)) out.add(m[1] as string);
  return out;
}

const files = markdownFiles();

test('the README is a front page: at most 15,000 bytes', () => {
  expect(fs.statSync(path.join(ROOT, 'README.md')).size).toBeLessThanOrEqual(README_MAX_BYTES);
});

test('the docs tree has the pages the README links to', () => {
  expect(files).toEqual(
    expect.arrayContaining(
      [
        'docs/concepts.md',
        'docs/operations.md',
        'docs/security.md',
        'docs/performance.md',
        'docs/guides/writing-a-guardian.md',
        'docs/guides/kubernetes.md',
        'docs/guides/identity.md',
        'docs/guides/task-ownership.md',
        'docs/guides/image.md',
        'docs/reference/configuration.md',
        'docs/reference/metrics.md',
        'docs/reference/errors.md',
        'docs/reference/wire-rules.md',
        'docs/reference/policy.md',
        'docs/reference/audit-log.md',
      ].map((f) => path.normalize(f)),
    ),
  );
});

test.each(files)('%s: every relative link names a file of the repository, and every anchor a heading there', (file) => {
  const text = prose(fs.readFileSync(path.join(ROOT, file), 'utf8'));
  const links = [...text.matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)].map((m) => m[1] as string).filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l));
  for (const link of links) {
    const [target, hash] = link.split('#') as [string, string | undefined];
    const resolved = target === '' ? file : path.normalize(path.join(path.dirname(file), decodeURIComponent(target)));
    expect([link, !resolved.startsWith('..') && fs.existsSync(path.join(ROOT, resolved))]).toEqual([link, true]);
    if (hash !== undefined && resolved.endsWith('.md')) expect([link, anchors(resolved).has(hash)]).toEqual([link, true]);
  }
});

test.each(files)('%s: every repository path written as code exists', (file) => {
  const paths = codeSpans(prose(fs.readFileSync(path.join(ROOT, file), 'utf8'))).filter(
    (s) => /^(src|test|bench|scripts|deploy|docs|config|\.ci)\/[\w./-]*$/.test(s) && !s.includes('...'),
  );
  for (const p of paths) expect([p, fs.existsSync(path.join(ROOT, p))]).toEqual([p, true]);
});
