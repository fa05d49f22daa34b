/**
 * A ROLE=client sidecar with ASSERTION_SIGNING_KEY_FILE signs "this is agent X" for whoever reaches
 * its listener, and HOST defaults to 0.0.0.0: any host that can reach the sidecar's port would be
 * verified upstream as the observed agent (and own its tasks). The README asks for HOST=127.0.0.1;
 * a warning at start names the exposure.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { configFrom, type Config } from '../../../src/config/config';
import { isLoopbackHost, setupIdentity } from '../../../src/identity/setup';
import { makeKey, writeSigningKey } from '../../helpers/keys';

async function warningsFor(env: Record<string, string>): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'client-signer-'));
  try {
    const keyFile = await writeSigningKey(dir, await makeKey('k1'));
    const config: Config = configFrom({
      UPSTREAM_URL: 'http://127.0.0.1:9',
      GUARDIAN_URL: 'http://127.0.0.1:9',
      ROLE: 'client',
      ASSERTION_SIGNING_KEY_FILE: keyFile,
      ...env,
    });
    const lines: string[] = [];
    const logger = pino(
      { level: 'warn' },
      new Writable({
        write(chunk: Buffer, _e, cb) {
          lines.push(chunk.toString('utf8'));
          cb();
        },
      }),
    );
    await setupIdentity(
      config,
      () => ({ id: 'a', name: 'a', url: 'http://a', version: '1', instructions: 'x', provider: { name: 'p', url: 'http://p' } }),
      logger,
    );
    return lines;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('ROLE=client signing assertions', () => {
  test('a listener that is not loopback (the default HOST=0.0.0.0) is warned about at start', async () => {
    expect((await warningsFor({})).join('\n')).toMatch(/signs identity assertions for every caller/);
    expect((await warningsFor({ HOST: '10.0.0.5' })).join('\n')).toMatch(/HOST=10\.0\.0\.5/);
  });

  test('a loopback listener is not', async () => {
    expect((await warningsFor({ HOST: '127.0.0.1' })).join('\n')).not.toMatch(/signs identity assertions for every caller/);
  });

  test('isLoopbackHost', () => {
    expect(['127.0.0.1', 'localhost', '::1', '[::1]', '127.1.2.3'].map(isLoopbackHost)).toEqual([true, true, true, true, true]);
    expect(['0.0.0.0', '::', '10.0.0.1', '127.0.0.1.example.com'].map(isLoopbackHost)).toEqual([false, false, false, false]);
  });
});
