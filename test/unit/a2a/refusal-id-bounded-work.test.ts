/**
 * refusalId reads a bounded number of bytes whatever the body (a 9 KiB gzip body decodes to 9 MiB and may be refused for
 * its budget): counted as the bytes it indexes, never timed. A run of backslashes reaching far below the scanned tail
 * must not be counted to its start.
 */
import { ID_SCAN_BYTES, refusalId } from '../../../src/a2a/rpc-id';

/** `b` behind a proxy that counts its indexed reads (methods run on the buffer itself, uncounted). */
function counted(b: Buffer): { buf: Buffer; reads: () => number } {
  let reads = 0;
  const buf = new Proxy(b, {
    get(target, prop) {
      if (typeof prop === 'string' && /^\d+$/.test(prop)) reads++;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { buf, reads: () => reads };
}

const SIZE = 1024 * 1024;

describe('refusalId: bounded work on bodies built against its backward scan', () => {
  test.each([
    ['an escaped quote in the tail after a long run of backslashes', `{"a":"${'\\'.repeat(SIZE)}\\"${'x'.repeat(100)}"}`],
    ['a name "id" after a long run of backslashes', `{"a":"${'\\'.repeat(SIZE)}"id":1}`],
    ['a plain body with its id last', `{"a":"${'x'.repeat(SIZE)}","id":7}`],
  ])('%s', (_name, text) => {
    const { buf, reads } = counted(Buffer.from(text));
    refusalId(buf);
    expect(reads()).toBeLessThanOrEqual(4 * ID_SCAN_BYTES);
  });
});
