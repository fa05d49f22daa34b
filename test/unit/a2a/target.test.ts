/**
 * One reading of a request target (a2a/target.ts): what routers disagree on is refused, the rest is
 * decoded once, and the proxy encodes the path it forwards so that reading it again gives the same.
 */
import fc from 'fast-check';
import { encodePath, encodeQuery, encodeSegment, isUnder, parseTarget, pathSegments, type Target } from '../../../src/a2a/target';

function ok(raw: string): Target {
  const r = parseTarget(raw);
  if (!r.ok) throw new Error(`expected ${raw} to parse, got: ${r.why}`);
  return r.target;
}

function refused(raw: string): string {
  const r = parseTarget(raw);
  if (r.ok) throw new Error(`expected ${raw} to be refused, got ${JSON.stringify(r.target)}`);
  return r.why;
}

describe('parseTarget: accepted', () => {
  test.each([
    ['/', [], false],
    ['/a2a/rest/tasks/abc', ['a2a', 'rest', 'tasks', 'abc'], false],
    ['/a2a/jsonrpc/', ['a2a', 'jsonrpc'], true],
    ['/tasks/abc:cancel', ['tasks', 'abc:cancel'], false],
    ['/tasks/abc%3Acancel', ['tasks', 'abc:cancel'], false],
    ['/caf%C3%A9/%E6%97%A5', ['café', '日'], false],
    ['/café', ['café'], false],
    ['/a%20b/a+b', ['a b', 'a+b'], false],
    ['/.../x', ['...', 'x'], false],
    ['/.well-known/agent-card.json', ['.well-known', 'agent-card.json'], false],
    ['/a%25', ['a%'], false],
    ['/t@x/(y)/*/~z/!', ['t@x', '(y)', '*', '~z', '!'], false],
  ])('%p -> %j (trailing slash %p)', (raw, segments, trailingSlash) => {
    const t = ok(raw);
    expect(t.segments).toEqual(segments);
    expect(t.trailingSlash).toBe(trailingSlash);
    expect(t.query).toEqual([]);
  });

  test('the query is split on "&", decoded once ("+" is a space), order and empty values kept', () => {
    expect(ok('/a?b=%C3%A9&c=1+2&&d&=e&f=x=y&g=%2526').query).toEqual([
      ['b', 'é'],
      ['c', '1 2'],
      ['d', ''],
      ['', 'e'],
      ['f', 'x=y'],
      ['g', '%26'],
    ]);
    expect(ok('/a?').query).toEqual([]);
    expect(ok('/a?x=%00').query).toEqual([['x', '\0']]);
  });
});

describe('parseTarget: refused (servers disagree on these)', () => {
  test.each([
    ['encoded slash', '/a2a/rest/tasks/a%2Fb', /encoded slash/],
    ['encoded slash, lower case', '/a%2fb', /encoded slash/],
    ['encoded backslash', '/a%5Cb', /separator/],
    ['backslash', '/a2a\\rest', /"\\"/],
    ['dot segment', '/a/../b', /dot segment/],
    ['single dot', '/a/./b', /dot segment/],
    ['encoded dot segment', '/a/%2e%2E/b', /dot segment/],
    ['encoded single dot', '/%2e', /dot segment/],
    ['empty segment', '/a//b', /empty path segment/],
    ['leading //', '//a', /empty path segment/],
    ['double trailing slash', '/a//', /empty path segment/],
    ['"//" alone', '//', /empty path segment/],
    ['"///"', '///', /empty path segment/],
    ['matrix parameter', '/a;b=1', /";"/],
    ['encoded ;', '/a%3Bb', /";"/],
    ['double encoding of a slash', '/a%252Fb', /double percent-encoding/],
    ['double encoding of a letter', '/a%2541', /double percent-encoding/],
    ['double encoding of %', '/a%2525', /double percent-encoding/],
    ['double-encoded verb', '/tasks/abc%253Acancel', /double percent-encoding/],
    ['NUL', '/a%00b', /control character/],
    ['newline', '/a%0Ab', /control character/],
    ['carriage return', '/a%0db', /control character/],
    ['tab', '/a%09b', /control character/],
    ['DEL', '/a%7Fb', /control character/],
    ['encoded ?', '/a%3Fb', /separator/],
    ['encoded #', '/a%23b', /separator/],
    ['fragment', '/a#b', /"#"/],
    ['fragment in the query', '/a?x=1#b', /"#"/],
    ['malformed escape', '/a%ZZ', /malformed percent-encoding in path/],
    ['truncated UTF-8 escape', '/tasks/%E0%A4%A', /malformed percent-encoding in path/],
    ['malformed query escape', '/a?x=%ZZ', /malformed percent-encoding in query/],
    ['lone % in the query', '/a?%', /malformed percent-encoding in query/],
    ['relative target', 'a/b', /absolute path/],
    ['asterisk form', '*', /absolute path/],
    ['absolute form', 'http://agent.example/a', /absolute path/],
  ])('%s (%p)', (_n, raw, why) => {
    expect(refused(raw)).toMatch(why);
  });
});

describe('encodeSegment / encodePath / encodeQuery', () => {
  test('segments are encoded as the SDK client encodes them, with ":" and "@" left literal', () => {
    expect(encodeSegment('abc:cancel')).toBe('abc:cancel');
    expect(encodeSegment('t@x')).toBe('t@x');
    expect(encodeSegment('a/b')).toBe('a%2Fb');
    expect(encodeSegment('a b;c?d#e%')).toBe('a%20b%3Bc%3Fd%23e%25');
    expect(encodeSegment('café')).toBe('caf%C3%A9');
  });

  test('paths: root, trailing slash only for non-empty paths', () => {
    expect(encodePath([])).toBe('/');
    expect(encodePath([], true)).toBe('/');
    expect(encodePath(['a2a', 'rest'])).toBe('/a2a/rest');
    expect(encodePath(['a2a', 'rest'], true)).toBe('/a2a/rest/');
  });

  test('queries: empty is "", pairs encoded', () => {
    expect(encodeQuery([])).toBe('');
    expect(
      encodeQuery([
        ['a b', 'c&d=e'],
        ['x', ''],
      ]),
    ).toBe('?a%20b=c%26d%3De&x=');
  });

  const segment = fc.string({ minLength: 1, maxLength: 12, unit: 'binary' }).filter((s) => s !== '.' && s !== '..');

  test('encodePath round trip: every segment a target can hold reads back the same; the rest is refused, never changed', () => {
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 5 }), fc.boolean(), (segs, slash) => {
        const r = parseTarget(encodePath(segs, slash));
        if (!r.ok) {
          // Only segments a target may not hold (separators, control characters, "%XX" text) fail to come back.
          expect(segs.some((s) => /[\x00-\x1f\x7f/\\;#?]/.test(s) || /%[0-9a-f]{2}/i.test(s))).toBe(true);
          return;
        }
        expect(r.target.segments).toEqual(segs);
        expect(r.target.trailingSlash).toBe(slash && segs.length > 0);
        // Canonical: encoding what was read gives the same text again.
        expect(encodePath(r.target.segments, r.target.trailingSlash)).toBe(encodePath(segs, slash));
      }),
      { numRuns: 500 },
    );
  });

  test('encodeQuery round trip', () => {
    const text = fc.string({ maxLength: 8, unit: 'grapheme' });
    fc.assert(
      fc.property(fc.array(fc.tuple(text, text), { maxLength: 4 }), (pairs) => {
        const kept = pairs.filter(([k, v]) => k !== '' || v !== '');
        expect(ok(`/x${encodeQuery(kept)}`).query).toEqual(kept);
      }),
      { numRuns: 300 },
    );
  });

  test('any target that parses reads the same once re-encoded (one reading)', () => {
    const raw = fc.oneof(
      fc.string({ maxLength: 30 }).map((s) => `/${s}`),
      fc
        .array(fc.oneof(fc.constantFrom('%2F', '%2e', '%25', '%3A', '%C3%A9', ':', '@', 'tasks', 'a b', '+', '%20'), fc.string({ maxLength: 4 })), {
          maxLength: 6,
        })
        .map((p) => `/${p.join('/')}`),
    );
    fc.assert(
      fc.property(raw, (r) => {
        const a = parseTarget(r);
        if (!a.ok) return;
        const b = parseTarget(encodePath(a.target.segments, a.target.trailingSlash) + encodeQuery(a.target.query));
        expect(b).toEqual(a);
      }),
      { numRuns: 500 },
    );
  });
});

describe('isUnder / pathSegments', () => {
  test('prefixes match whole segments, letter case ignored (as Express mounts do)', () => {
    expect(isUnder(['a2a', 'rest', 'tasks'], ['a2a', 'rest'])).toBe(true);
    expect(isUnder(['A2A', 'Rest'], ['a2a', 'rest'])).toBe(true);
    expect(isUnder(['a2a', 'restx'], ['a2a', 'rest'])).toBe(false);
    expect(isUnder(['a2a'], ['a2a', 'rest'])).toBe(false);
    expect(isUnder(['anything'], [])).toBe(true);
  });

  test('configured and advertised paths', () => {
    expect(pathSegments('/a2a/rest/')).toEqual(['a2a', 'rest']);
    expect(pathSegments('')).toEqual([]);
    expect(pathSegments('/')).toEqual([]);
    expect(pathSegments('/caf%C3%A9')).toEqual(['café']);
    expect(pathSegments('a2a/rest')).toBeUndefined();
    expect(pathSegments('/a//b')).toBeUndefined();
    expect(pathSegments('/a%2Fb')).toBeUndefined();
  });
});
