/** The lean undici entry points are undici's own exports (an upgrade that moves a file fails here). */
import * as undici from 'undici';
import { LeanPool, createAgent, leanBuildConnector } from '../../src/undici-pool';

describe('undici-pool', () => {
  it('Pool, Agent and buildConnector are the objects undici exports', async () => {
    expect(LeanPool).toBe(undici.Pool);
    const agent = createAgent({});
    expect(agent).toBeInstanceOf(undici.Agent);
    await agent.close();
    expect(typeof leanBuildConnector({})).toBe('function');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    expect(require('undici/lib/core/connect')).toBe(undici.buildConnector);
  });
});
