/** The V8 settings src/runtime/heap.ts and src/net/undici-pool.ts make are ones this node knows (V8 ignores an unknown one without a word). */
import { spawnSync } from 'node:child_process';
import { PRETENURING_FLAG } from '../../src/runtime/heap';
import { PARSER_TIERING_FLAG } from '../../src/net/undici-pool';

describe('heap', () => {
  it('node accepts the pretenuring and parser tiering flags, and refuses a flag it does not know', () => {
    const known = spawnSync(process.execPath, [PRETENURING_FLAG, '-e', '0'], { encoding: 'utf8' });
    expect(known.stderr).toBe('');
    expect(known.status).toBe(0);
    const tiering = spawnSync(process.execPath, [PARSER_TIERING_FLAG, '-e', '0'], { encoding: 'utf8' });
    expect(tiering.stderr).toBe('');
    expect(tiering.status).toBe(0);
    const unknown = spawnSync(process.execPath, ['--no-such-v8-flag-for-a2a-guard', '-e', '0'], { encoding: 'utf8' });
    expect(unknown.status).not.toBe(0);
  });

  it("the parser tiering flag keeps undici's parser off TurboFan for its first calls, which V8's default budget does not", () => {
    // Three keep-alive calls through undici to a local server, with V8 printing each WebAssembly function it compiles.
    const script = `
      const http = require('http');
      const { Pool } = require(${JSON.stringify(require.resolve('undici'))});
      const srv = http.createServer((q, s) => s.end('ok')).listen(0, '127.0.0.1', async () => {
        const pool = new Pool('http://127.0.0.1:' + srv.address().port);
        for (let i = 0; i < 3; i++) { const r = await pool.request({ path: '/', method: 'GET' }); await r.body.text(); }
        await new Promise((r) => setTimeout(r, 300));
        await pool.close(); srv.close();
      });`;
    const run = (flags: string[]) =>
      spawnSync(process.execPath, [...flags, '--trace-wasm-compilation-times', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    const byDefault = run([]);
    expect(byDefault.status).toBe(0);
    expect(byDefault.stdout).toMatch(/using TurboFan/);
    const late = run([PARSER_TIERING_FLAG]);
    expect(late.status).toBe(0);
    expect(late.stdout).not.toMatch(/using TurboFan/);
  });
});
