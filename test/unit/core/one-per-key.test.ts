import { OnePerKey } from '../../../src/core/turns';

/** A task that runs until `finish` is called, recording when it started. */
function gated(log: string[], name: string): { run: () => Promise<string>; finish: () => void } {
  let finish = (): void => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    run: async () => {
      log.push(`start ${name}`);
      await done;
      log.push(`end ${name}`);
      return name;
    },
    finish: () => finish(),
  };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('OnePerKey', () => {
  it("runs one key's work one at a time in the order asked, other keys' side by side, and forgets a key with nothing left", async () => {
    const line = new OnePerKey();
    const log: string[] = [];
    const [a1, a2, b1] = [gated(log, 'a1'), gated(log, 'a2'), gated(log, 'b1')];
    const runs = [line.run('a', a1.run), line.run('a', a2.run), line.run('b', b1.run)];
    await settle();
    expect(log).toEqual(['start a1', 'start b1']);
    a1.finish();
    await settle();
    expect(log).toEqual(['start a1', 'start b1', 'end a1', 'start a2']);
    a2.finish();
    b1.finish();
    expect(await Promise.all(runs)).toEqual(['a1', 'a2', 'b1']);
    expect((line as unknown as { last: Map<string, unknown> }).last.size).toBe(0);
  });

  it('a failed work lets the next one of its key run', async () => {
    const line = new OnePerKey();
    const failed = line.run('a', () => Promise.reject(new Error('no')));
    const next = line.run('a', () => Promise.resolve('ran'));
    await expect(failed).rejects.toThrow('no');
    expect(await next).toBe('ran');
  });
});
