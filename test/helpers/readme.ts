/**
 * The README read as data, for the tests that hold its tables to the code (variables, metrics,
 * errors, links): a newcomer has only the README, so a name or default that drifts must fail CI.
 */
import fs from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '../..');

export function readme(): string {
  return fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
}

/** A document of the repository by its path (`docs/reference/errors.md`). */
export function doc(file: string): string {
  return fs.readFileSync(path.join(ROOT, file), 'utf8');
}

/** README.md and every page under docs/, concatenated: to ask which names the documentation gives. */
export function allDocs(): string {
  const walk = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const p = path.join(dir, e.name);
      return e.isDirectory() ? walk(p) : e.name.endsWith('.md') ? [p] : [];
    });
  return [path.join(ROOT, 'README.md'), ...walk(path.join(ROOT, 'docs'))].map((f) => fs.readFileSync(f, 'utf8')).join('\n');
}

/**
 * The body rows of the Markdown table whose header line starts with `header`, as trimmed cells
 * (`\|` inside a cell is a literal `|`). Throws when there is no such table, so a renamed header
 * fails loudly instead of checking nothing.
 */
export function tableRows(text: string, header: string): string[][] {
  const lines = text.split('\n');
  const starts = lines.flatMap((l, i) => (l.startsWith(header) ? [i] : []));
  if (starts.length === 0) throw new Error(`no table starting with ${header}`);
  const rows: string[][] = [];
  // Every table with this header (a reference page splits one list into sections).
  for (const start of starts) {
    for (let i = start + 2; i < lines.length && (lines[i] as string).startsWith('|'); i++) {
      const cells = (lines[i] as string)
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim().replace(/\\\|/g, '|'));
      rows.push(cells);
    }
  }
  return rows;
}

/**
 * The body rows of every table whose header line starts with `header`, in README.md and then in the
 * Markdown files under docs/ (a reference page may hold the rows of its own feature). Throws when the
 * README has no such table.
 */
export function documentedRows(header: string): string[][] {
  const rows = tableRows(readme(), header);
  const walk = (dir: string): string[] =>
    (fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []).flatMap((e) => {
      const p = path.join(dir, e.name);
      return e.isDirectory() ? walk(p) : e.name.endsWith('.md') ? [p] : [];
    });
  for (const file of walk(path.join(ROOT, 'docs')).sort()) {
    const text = fs.readFileSync(file, 'utf8');
    if (text.split('\n').some((l) => l.startsWith(header))) rows.push(...tableRows(text, header));
  }
  return rows;
}

/** The `code` spans of a cell (or any text). */
export function codeSpans(text: string): string[] {
  return [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
}

/** Every .ts file under src/ (but `except`, paths relative to src/), concatenated: to ask whether a name the README gives exists in the code. */
export function sourceText(except: readonly string[] = []): string {
  const walk = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const p = path.join(dir, e.name);
      return e.isDirectory() ? walk(p) : e.name.endsWith('.ts') ? [p] : [];
    });
  const src = path.join(ROOT, 'src');
  return walk(src)
    .filter((f) => !except.includes(path.relative(src, f)))
    .map((f) => fs.readFileSync(f, 'utf8'))
    .join('\n');
}
