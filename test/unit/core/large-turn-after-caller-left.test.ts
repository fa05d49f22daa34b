import { Cancellation } from '../../../src/core/cancel';
import { FairQueue } from '../../../src/core/fair-queue';
import { largeTurn } from '../../../src/core/turns';

/** Microtasks drained, no macrotask: what runs "in one task". */
async function drainMicrotasks(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

describe('a large body’s turn once its caller left', () => {
  it('still comes after the loop polled, so the remaining pieces never run in one task', async () => {
    const q = new FairQueue({ maxQueuedPerCaller: 8, sliceMs: 5 });
    const left = new Cancellation();
    left.cancel();
    let turns = 0;
    const pieces = (async () => {
      for (let i = 0; i < 10; i++) {
        await largeTurn(q, 'gone', left);
        turns++;
      }
    })();
    await drainMicrotasks();
    expect(turns).toBeLessThanOrEqual(1);
    await pieces;
    expect(turns).toBe(10);
  });
});
