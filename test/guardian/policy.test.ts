import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { globToRegExp, loadPolicy, normaliseKey, parsePolicy, PolicyError } from '../../src/guardian/policy';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'guardian-policy-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writePolicy(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

/** The problems a bad document produces (fails the test when it loads). */
function problemsOf(doc: unknown): readonly string[] {
  try {
    parsePolicy(doc, 'test');
  } catch (err) {
    if (err instanceof PolicyError) return err.problems;
    throw err;
  }
  throw new Error('expected the policy to be rejected');
}

describe('loadPolicy', () => {
  it('loads the shipped demo policy', () => {
    const policy = loadPolicy(resolve(__dirname, '../../config/policy.json'));
    expect(policy.deny.map((r) => r.id)).toEqual(['weapons', 'prompt-injection']);
    expect(policy.mask.map((r) => r.id)).toEqual(['secret-keys', 'iban', 'pii']);
    expect(policy.push).toMatchObject({ allowHttp: false, allowPrivate: false });
    expect(policy.peers.allowUnknown).toBe(true);
  });

  it('loads a minimal file and fills in the defaults', () => {
    const policy = loadPolicy(writePolicy('empty.json', '{}'));
    expect(policy.deny).toEqual([]);
    expect(policy.mask).toEqual([]);
    expect(policy.messages.allow).toBe('Allowed by policy.');
    expect(policy.push).toEqual({ allowHttp: false, allowPrivate: false, allowHosts: [] });
    expect(policy.peers).toEqual({ allow: [], block: [], allowUnknown: true });
  });

  it('compiles patterns once, case-insensitive unless asked otherwise', () => {
    const policy = parsePolicy({
      deny: [
        { id: 'a', message: 'm', patterns: ['bomb'] },
        { id: 'b', message: 'm', patterns: ['Bomb'], caseSensitive: true },
      ],
    });
    expect(policy.deny[0]?.patterns[0]?.flags).toBe('i');
    expect(policy.deny[0]?.patterns[0]?.test('BOMB')).toBe(true);
    expect(policy.deny[1]?.patterns[0]?.test('bomb')).toBe(false);
  });

  it('normalises v1.0 method names in rule scopes to AOS names', () => {
    const policy = parsePolicy({ deny: [{ id: 'a', message: 'm', patterns: ['x'], methods: ['SendMessage', 'tasks/get'] }] });
    expect([...(policy.deny[0]?.scope.methods ?? [])]).toEqual(['message/send', 'tasks/get']);
  });

  it('denies unknown peers by default once an allow list exists', () => {
    expect(parsePolicy({ peers: { allow: ['Friend*'] } }).peers.allowUnknown).toBe(false);
    expect(parsePolicy({ peers: { allow: ['Friend*'], allowUnknown: true } }).peers.allowUnknown).toBe(true);
  });

  it('reports an unreadable file', () => {
    expect(() => loadPolicy(join(dir, 'missing.json'))).toThrow(/cannot read the file: ENOENT/);
  });

  it('reports a file that is not JSON', () => {
    const path = writePolicy('bad.json', '{ "deny": [ }');
    expect(() => loadPolicy(path)).toThrow(PolicyError);
    expect(() => loadPolicy(path)).toThrow(/not valid JSON/);
  });

  it('puts the file name and one line per problem in the error message', () => {
    const path = writePolicy('many.json', JSON.stringify({ deny: [{ id: 'a', message: 'm', patterns: ['('] }], mask: [{ id: 'b', detectors: ['dna'] }] }));
    let message = '';
    try {
      loadPolicy(path);
    } catch (err) {
      message = (err as Error).message;
    }
    const lines = message.split('\n');
    expect(lines[0]).toBe(`Invalid policy (${path}):`);
    expect(lines).toHaveLength(2); // schema problems are reported before regexes are compiled
    expect(lines[1]).toMatch(/^ {2}- mask\[0\]\.detectors\[0\]: /);
  });
});

describe('policy validation problems name the JSON path', () => {
  it('bad regular expression', () => {
    const problems = problemsOf({ deny: [{ id: 'a', message: 'm', patterns: ['ok', 'bad(('] }] });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toBe('deny[0].patterns[1]: invalid regular expression "bad((": Unterminated group');
  });

  it('pattern that matches the empty string', () => {
    expect(problemsOf({ mask: [{ id: 'a', patterns: ['x*'] }] })).toEqual(['mask[0].patterns[0]: pattern /x*/ matches the empty string']);
  });

  it('unknown detector', () => {
    const problems = problemsOf({ mask: [{ id: 'a', detectors: ['email', 'dna'] }] });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^mask\[0\]\.detectors\[1\]: /);
  });

  it('unknown key (typo) at any level', () => {
    const problems = problemsOf({ deny: [{ id: 'a', message: 'm', pattern: ['x'] }], pushNotification: {} });
    expect(problems.some((p) => p.startsWith('deny[0]: ') && p.includes('pattern'))).toBe(true);
    expect(problems.some((p) => p.startsWith('(root): ') && p.includes('pushNotification'))).toBe(true);
  });

  it('missing required fields', () => {
    const problems = problemsOf({ deny: [{ id: 'a' }] });
    expect(problems.some((p) => p.startsWith('deny[0].message: '))).toBe(true);
    expect(problems.some((p) => p.startsWith('deny[0].patterns: '))).toBe(true);
  });

  it('wrong types', () => {
    const problems = problemsOf({ pushNotifications: { allowHttp: 'yes' }, peers: { block: 'evil' } });
    expect(problems.some((p) => p.startsWith('pushNotifications.allowHttp: '))).toBe(true);
    expect(problems.some((p) => p.startsWith('peers.block: '))).toBe(true);
  });

  it('non-object document', () => {
    expect(problemsOf([])[0]).toMatch(/^\(root\): /);
  });

  it('unknown A2A method in a scope', () => {
    expect(problemsOf({ deny: [{ id: 'a', message: 'm', patterns: ['x'], methods: ['message/sned'] }] })).toEqual([
      'deny[0].methods[0]: unknown A2A method "message/sned"',
    ]);
  });

  it('bad side and phase', () => {
    const problems = problemsOf({ deny: [{ id: 'a', message: 'm', patterns: ['x'], sides: ['agent'], phases: ['reply'] }] });
    expect(problems.some((p) => p.startsWith('deny[0].sides[0]: '))).toBe(true);
    expect(problems.some((p) => p.startsWith('deny[0].phases[0]: '))).toBe(true);
  });

  it('mask rule with nothing to mask', () => {
    expect(problemsOf({ mask: [{ id: 'a', replacement: 'x' }] })).toEqual(['mask[0]: needs at least one of "keys", "detectors", "patterns"']);
  });

  it('mask key that is protocol structure', () => {
    expect(problemsOf({ mask: [{ id: 'a', keys: ['password', 'messageId'] }] })).toEqual([
      'mask[0].keys[1]: "messageId" is protocol structure and is never masked',
    ]);
  });

  it('duplicate rule ids across deny and mask', () => {
    expect(problemsOf({ deny: [{ id: 'dup', message: 'm', patterns: ['x'] }], mask: [{ id: 'dup', keys: ['k'] }] })).toEqual([
      'mask[0].id: duplicate rule id "dup" (first used at deny[0])',
    ]);
  });

  it('empty pattern list and empty strings', () => {
    const problems = problemsOf({ deny: [{ id: 'a', message: '', patterns: [] }] });
    expect(problems.some((p) => p.startsWith('deny[0].message: '))).toBe(true);
    expect(problems.some((p) => p.startsWith('deny[0].patterns: '))).toBe(true);
  });

  it('reports every problem, not just the first', () => {
    const problems = problemsOf({
      deny: [
        { id: 'a', message: 'm', patterns: ['('] },
        { id: 'b', message: 'm', patterns: ['['] },
      ],
    });
    expect(problems).toHaveLength(2);
  });
});

describe('helpers', () => {
  it('globToRegExp matches whole strings, * and ?, case-insensitively, everything else literal', () => {
    expect(globToRegExp('*.example.com').test('api.EXAMPLE.com')).toBe(true);
    expect(globToRegExp('*.example.com').test('example.com')).toBe(false);
    expect(globToRegExp('agent-?').test('agent-7')).toBe(true);
    expect(globToRegExp('a.b').test('axb')).toBe(false);
    expect(globToRegExp('Cake Baker').test('cake baker')).toBe(true);
    expect(globToRegExp('Cake').test('Cake Baker')).toBe(false);
  });

  it('normaliseKey folds case, "_", "-" and spaces', () => {
    expect(['apiKey', 'api_key', 'API-KEY', 'apikey'].map(normaliseKey)).toEqual(['apikey', 'apikey', 'apikey', 'apikey']);
  });
});
