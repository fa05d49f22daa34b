import fs from 'node:fs';
import path from 'node:path';
import { HOOK_ORDER, PHASES, ROLES, SIDES } from '../../../src/aos/hook-points';
import { configFrom } from '../../../src/config/config';
import { PolicyFile } from '../../../src/guardian/policy';
import { A2ARole } from '../../../src/aos/schemas';

// Line breaks folded: the README wraps its prose.
const README = fs.readFileSync(path.resolve(__dirname, '../../../README.md'), 'utf8').replace(/\s+/g, ' ');

describe('hook order per ROLE (README, the ROLE list at the top)', () => {
  it('ROLE=server: the server-side request hook, the server-side response hook', () => {
    expect(HOOK_ORDER.server).toEqual({ request: ['server'], response: ['server'] });
    expect(README).toContain('`ROLE=server`: a sidecar in front of the observed **server** agent');
    expect(README).toContain('Hooks: server-side request hook, server-side response hook.');
  });

  it('ROLE=client: the client-side request hook, the client-side response hook', () => {
    expect(HOOK_ORDER.client).toEqual({ request: ['client'], response: ['client'] });
    expect(README).toContain('Hooks: client-side request hook (with `reasoning`), client-side response hook.');
  });

  it('ROLE=both: requests client side first, then server side; responses travel back, server side first', () => {
    expect(HOOK_ORDER.both).toEqual({ request: ['client', 'server'], response: ['server', 'client'] });
    expect(README).toMatch(/runs the client-side hook, then the server-side hook/);
    expect(README).toMatch(/Responses run the server side first, then the client side\./);
  });

  it('every role and phase has an order, naming each side at most once', () => {
    for (const role of ROLES) {
      for (const phase of PHASES) {
        const sides = HOOK_ORDER[role][phase];
        expect(sides.length).toBeGreaterThan(0);
        expect(new Set(sides).size).toBe(sides.length);
        for (const s of sides) expect(SIDES).toContain(s);
      }
    }
  });
});

describe('the schemas take their values from the one declaration', () => {
  it('ROLE accepts exactly the roles', () => {
    for (const role of ROLES) expect(configFrom({ UPSTREAM_URL: 'http://127.0.0.1:9', ROLE: role }).role).toBe(role);
    expect(() => configFrom({ UPSTREAM_URL: 'http://127.0.0.1:9', ROLE: 'proxy' })).toThrow(/ROLE/);
  });

  it('policy rule scopes accept exactly the sides and phases', () => {
    const rule = (scope: object) => PolicyFile.safeParse({ deny: [{ id: 'r', message: 'm', patterns: ['x'], ...scope }] }).success;
    expect(rule({ sides: [...SIDES], phases: [...PHASES] })).toBe(true);
    expect(rule({ sides: ['both'] })).toBe(false);
    expect(rule({ phases: ['event'] })).toBe(false);
  });

  it('an AOS context role is a side', () => {
    expect(A2ARole.options).toEqual([...SIDES]);
  });
});
