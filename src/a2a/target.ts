/**
 * Request targets read one way only. A path is accepted when every server reads it the same:
 * its segments are percent-decoded once, and anything that routers disagree on (encoded slashes,
 * dot segments, empty segments, matrix parameters, backslashes, fragments, control characters)
 * makes the request refused instead of relayed. The proxy then forwards the path it encodes itself
 * from the decoded segments, so the agent routes exactly what was classified. Pure.
 */
import { fold } from '../core/json';

export interface Target {
  /** Decoded path segments, in order ('/a2a/rest/tasks/x' -> ['a2a', 'rest', 'tasks', 'x']). */
  readonly segments: readonly string[];
  /** The path ended in '/' (routers that are not strict ignore it; it is kept for non-A2A paths). */
  readonly trailingSlash: boolean;
  /** Query parameters in order, decoded. */
  readonly query: readonly (readonly [string, string])[];
}

export type TargetResult = { readonly ok: true; readonly target: Target } | { readonly ok: false; readonly why: string };

// Characters a segment may hold once decoded: printable, no separators servers disagree on.
const BAD_IN_SEGMENT = /[\x00-\x1f\x7f/\\;#?]/;

/** ASCII character classes, as bits: 1 may stand in a plain path's segment, 2 is its own encoding in a segment. */
const CHAR_CLASS = new Uint8Array(128);
const ALNUM_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
for (const [bit, chars] of [
  [1, `${ALNUM_CHARS}-._~!$&'()*+,=:@`],
  [2, `${ALNUM_CHARS}-_.!~*'():@`],
] as const) {
  for (let i = 0; i < chars.length; i++) CHAR_CLASS[chars.charCodeAt(i)] = (CHAR_CLASS[chars.charCodeAt(i)] ?? 0) | bit;
}

/**
 * Paths of plain segments: unreserved characters and sub-delims that decode to themselves (no '%',
 * no ';', no '?'), as almost every A2A call's path is: /^(?:\/[A-Za-z0-9\-._~!$&'()*+,=:@]+)+\/?$/,
 * read in one pass that cuts the segments as it goes. Such a path reads the same decoded, so the
 * general loop below has nothing to decode or refuse but dot segments; this skips its per-segment
 * decodeURIComponent and tests (parsing and encoding the path were ~4 µs of a unary call's CPU under
 * load in the V8 profile of `npm run bench`, 2026-11-24; parseTarget hot in a loop: 0.61 -> 0.11 µs).
 * test/unit/a2a/target-fast.test.ts checks it against the general loop.
 */
export function parseTarget(raw: string): TargetResult {
  const n = raw.length;
  if (n < 2 || raw.charCodeAt(0) !== 0x2f) return parseGeneral(raw);
  const segments: string[] = [];
  let start = 1;
  for (let i = 1; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x2f) {
      if (i === start || !plainSegment(segments, raw.slice(start, i))) return parseGeneral(raw);
      start = i + 1;
    } else if (c > 0x7f || ((CHAR_CLASS[c] ?? 0) & 1) === 0) {
      return parseGeneral(raw);
    }
  }
  const trailingSlash = start === n;
  if (!trailingSlash && !plainSegment(segments, raw.slice(start))) return parseGeneral(raw);
  return { ok: true, target: { segments, trailingSlash, query: [] } };
}

/** Keep a plain segment; a dot segment is the general loop's to refuse. */
function plainSegment(into: string[], s: string): boolean {
  if (s === '.' || s === '..') return false;
  into.push(s);
  return true;
}

/** Any request target: every segment decoded and checked (and the reference parseTarget's fast path is tested against). */
export function parseGeneral(raw: string): TargetResult {
  if (raw.includes('#')) return { ok: false, why: 'request target contains "#"' };
  if (raw.includes('\\')) return { ok: false, why: 'request target contains "\\"' };
  if (!raw.startsWith('/')) return { ok: false, why: 'request target must be an absolute path' };
  const q = raw.indexOf('?');
  const pathname = q === -1 ? raw : raw.slice(0, q);
  const search = q === -1 ? '' : raw.slice(q + 1);
  const parts = pathname.split('/').slice(1);
  const trailingSlash = parts.length > 1 && parts[parts.length - 1] === '';
  if (trailingSlash) parts.pop();
  const segments: string[] = [];
  for (const p of parts) {
    if (p === '') {
      if (pathname === '/') break; // the root path ('//' is an empty segment, not the root)
      return { ok: false, why: 'empty path segment ("//")' };
    }
    let d: string;
    try {
      d = decodeURIComponent(p);
    } catch {
      return { ok: false, why: 'malformed percent-encoding in path' };
    }
    if (d === '.' || d === '..') return { ok: false, why: 'dot segment in path' };
    if (BAD_IN_SEGMENT.test(d)) return { ok: false, why: 'path segment holds an encoded slash, ";", control character or other separator' };
    // Decoding twice must not change it: a router that decodes again would see another path.
    if (d.includes('%') && /%[0-9a-f]{2}/i.test(d)) return { ok: false, why: 'double percent-encoding in path' };
    segments.push(d);
  }
  const query: (readonly [string, string])[] = [];
  if (search !== '') {
    for (const pair of search.split('&')) {
      if (pair === '') continue;
      const eq = pair.indexOf('=');
      const k = eq === -1 ? pair : pair.slice(0, eq);
      const v = eq === -1 ? '' : pair.slice(eq + 1);
      try {
        query.push([decodeURIComponent(k.replace(/\+/g, ' ')), decodeURIComponent(v.replace(/\+/g, ' '))]);
      } catch {
        return { ok: false, why: 'malformed percent-encoding in query' };
      }
    }
  }
  return { ok: true, target: { segments, trailingSlash, query } };
}

/** Is every character one encodeURIComponent leaves as it is, or ':' or '@' (/^[A-Za-z0-9\-_.!~*'():@]*$/)? Then `s` is its own encoding. */
function plainForEncoding(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f || ((CHAR_CLASS[c] ?? 0) & 2) === 0) return false;
  }
  return true;
}

/** One segment as every client encodes it (the SDK uses encodeURIComponent); ':' and '@' stay literal. */
export function encodeSegment(s: string): string {
  if (plainForEncoding(s)) return s;
  return encodeURIComponent(s).replace(/%3A/gi, ':').replace(/%40/g, '@');
}

export function encodePath(segments: readonly string[], trailingSlash = false): string {
  if (segments.length === 0) return '/';
  let p = '';
  for (const s of segments) p += `/${encodeSegment(s)}`;
  return trailingSlash ? `${p}/` : p;
}

/**
 * encodePath(t.segments, t.trailingSlash) for `t` = parseTarget(raw)'s target, without re-encoding a
 * path that already is its own encoding: '/' and characters encodeURIComponent keeps (or ':', '@')
 * only, and then no query, no empty or dot segment (parseTarget refused those). The JSON-RPC path of
 * nearly every call: ~100 instructions instead of ~1,000 (callgrind).
 */
export function encodeParsedPath(raw: string, t: Target): string {
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c !== 0x2f && (c > 0x7f || ((CHAR_CLASS[c] ?? 0) & 2) === 0)) return encodePath(t.segments, t.trailingSlash);
  }
  return raw;
}

export function encodeQuery(query: readonly (readonly [string, string])[]): string {
  if (query.length === 0) return '';
  return `?${query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`;
}

/** Is `segments` at or below the path prefix `base` (segment-wise; letter case ignored, as Express mounts do)? */
export function isUnder(segments: readonly string[], base: readonly string[]): boolean {
  if (segments.length < base.length) return false;
  for (let i = 0; i < base.length; i++) {
    const s = segments[i] as string;
    const b = base[i] as string;
    if (s !== b && s.toLowerCase() !== b.toLowerCase()) return false; // (equal strings need no folding)
  }
  return true;
}

/** Split a configured or advertised path ('/a2a/rest/') into decoded segments; undefined if it is not plain. */
export function pathSegments(path: string): string[] | undefined {
  const r = parseTarget(path === '' ? '/' : path);
  return r.ok ? [...r.target.segments] : undefined;
}

/**
 * A path segment as a router that ignores letter case may read it, for refusing route shapes (never
 * for forwarding): ASCII lower-cased, other text Unicode-folded (`ſ` U+017F is `s`, `ı` is `i`) with the
 * combining dot that `İ` (U+0130) leaves behind dropped, as Java's per-character lower-casing reads it.
 */
export function routeFold(s: string): string {
  // ASCII on the native lower-casing: fold's character loop cost ~1.7 k instructions more per path (callgrind).
  return ASCII.test(s) ? s.toLowerCase() : fold(s).replace(/\u0307/g, '');
}

const ASCII = /^[\x00-\x7f]*$/;
