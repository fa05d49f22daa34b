import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { EXIT_CONFIG_ERROR, main, readGuardianConfig } from '../../src/guardian/main';

class ExitCalled extends Error {
  constructor(readonly code: string | number | null | undefined) {
    super(`process.exit(${String(code)})`);
  }
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'guardian-main-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => jest.restoreAllMocks());

describe('readGuardianConfig', () => {
  it("has the documented defaults (the policy: the package's own, whatever the working directory)", () => {
    expect(readGuardianConfig({}, '/srv/app')).toEqual({
      config: { port: 7070, host: '0.0.0.0', policyFile: resolve(__dirname, '../../config/policy.json'), policyWatch: true, logLevel: 'info' },
      problems: [],
    });
  });

  it('reads the variables, resolving POLICY_FILE against the working directory', () => {
    const { config, problems } = readGuardianConfig(
      { GUARDIAN_PORT: '0', GUARDIAN_HOST: '127.0.0.1', POLICY_FILE: 'p/strict.json', LOG_LEVEL: 'DEBUG' },
      '/srv/app',
    );
    expect(problems).toEqual([]);
    expect(config).toEqual({ port: 0, host: '127.0.0.1', policyFile: '/srv/app/p/strict.json', policyWatch: true, logLevel: 'debug' });
    expect(readGuardianConfig({ POLICY_FILE: '/etc/policy.json' }, '/srv/app').config.policyFile).toBe('/etc/policy.json');
  });

  it('reports one line per bad variable', () => {
    const { problems } = readGuardianConfig({ GUARDIAN_PORT: '70000', LOG_LEVEL: 'loud', GUARDIAN_HOST: ' ' }, '/');
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^GUARDIAN_PORT: /);
    expect(problems[1]).toMatch(/^LOG_LEVEL: /);
    expect(problems[2]).toMatch(/^GUARDIAN_HOST: /);
    expect(readGuardianConfig({ GUARDIAN_PORT: 'http' }, '/').problems).toHaveLength(1);
  });
});

describe('main', () => {
  it('exits 2 with one stderr line per policy problem', async () => {
    const policyFile = join(dir, 'bad.json');
    writeFileSync(
      policyFile,
      JSON.stringify({
        deny: [
          { id: 'a', message: 'm', patterns: ['('] },
          { id: 'b', message: 'm', patterns: ['['] },
        ],
      }),
    );
    const stderr: string[] = [];
    jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr.push(String(chunk));
      return true;
    });
    jest.spyOn(process, 'exit').mockImplementation((code) => {
      throw new ExitCalled(code);
    });
    await expect(main({ POLICY_FILE: policyFile, GUARDIAN_PORT: '0', LOG_LEVEL: 'silent' })).rejects.toEqual(new ExitCalled(EXIT_CONFIG_ERROR));
    expect(stderr).toHaveLength(2);
    expect(stderr[0]).toMatch(new RegExp(`^guardian: ${policyFile.replace(/[.\\]/g, '\\$&')}: deny\\[0\\]\\.patterns\\[0\\]: invalid regular expression`));
    expect(stderr[1]).toMatch(/deny\[1\]\.patterns\[0\]: invalid regular expression/);
  });

  it('exits 2 on a bad variable', async () => {
    jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    jest.spyOn(process, 'exit').mockImplementation((code) => {
      throw new ExitCalled(code);
    });
    await expect(main({ GUARDIAN_PORT: '-1' })).rejects.toEqual(new ExitCalled(EXIT_CONFIG_ERROR));
  });

  it('serves the policy, then closes and exits 0 on SIGTERM', async () => {
    const exits: Array<string | number | null | undefined> = [];
    jest.spyOn(process, 'exit').mockImplementation((code) => {
      exits.push(code);
      return undefined as never;
    });
    const server: Server = await main({
      POLICY_FILE: resolve(__dirname, '../../config/policy.json'),
      GUARDIAN_PORT: '0',
      GUARDIAN_HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
    });
    const { port } = server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { timestamp: new Date().toISOString() } }),
    });
    expect(await res.json()).toMatchObject({ id: 1, result: { status: 'connected' } });

    const closed = new Promise<void>((done) => server.once('close', done));
    process.emit('SIGTERM');
    await closed;
    await new Promise((done) => setImmediate(done));
    expect(server.listening).toBe(false);
    expect(exits).toEqual([0]);
  });
});
