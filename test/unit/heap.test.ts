/** The V8 settings src/heap.ts and src/undici-pool.ts make are ones this node knows (V8 ignores an unknown one without a word). */
import { spawnSync } from 'node:child_process';
import { PRETENURING_FLAG } from '../../src/heap';
import { PARSER_TIERING_FLAG } from '../../src/undici-pool';

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
});
