/**
 * The decoders gather their output as it comes, and decode as zlib's one-shot functions do: the same bytes,
 * a refusal for the same inputs, and ERR_BUFFER_TOO_LARGE past the bound.
 */
import fc from 'fast-check';
import zlib from 'node:zlib';
import { zlibDecoders } from '../../../src/core/decoders';

const encoders = {
  gunzip: [zlib.gzipSync, zlib.gunzipSync],
  inflate: [zlib.deflateSync, zlib.inflateSync],
  inflateRaw: [zlib.deflateRawSync, zlib.inflateRawSync],
  brotli: [zlib.brotliCompressSync, zlib.brotliDecompressSync],
} as const;

const outcome = async (f: () => Promise<Buffer> | Buffer): Promise<string> => {
  try {
    return `ok ${(await f()).toString('hex')}`;
  } catch {
    return 'refused';
  }
};

describe.each(Object.keys(encoders) as (keyof typeof encoders)[])('%s', (name) => {
  const [encode, decodeSync] = encoders[name];
  const decode = zlibDecoders()[name];

  it('gives the bytes zlib gives, for encoded data cut, extended or changed anywhere', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300_000 }), fc.nat(), fc.integer({ min: 0, max: 3 }), async (raw, at, edit) => {
        let b = encode(Buffer.from(raw));
        const i = at % (b.length + 1);
        if (edit === 1) b = b.subarray(0, i);
        if (edit === 2) b = Buffer.concat([b, b.subarray(0, i % 16)]);
        if (edit === 3 && i < b.length) b[i] = (b[i] as number) ^ 0x5a;
        const limit = { maxOutputLength: 1 << 20 };
        expect(await outcome(() => decode(b, limit))).toBe(await outcome(() => decodeSync(b, limit)));
      }),
      { numRuns: 60 },
    );
  });

  it('fails with ERR_BUFFER_TOO_LARGE past maxOutputLength', async () => {
    const bomb = encode(Buffer.alloc(3 * 1024 * 1024, 0x20));
    await expect(decode(bomb, { maxOutputLength: 1024 * 1024 })).rejects.toMatchObject({ code: 'ERR_BUFFER_TOO_LARGE' });
    expect((await decode(bomb, { maxOutputLength: 3 * 1024 * 1024 })).equals(Buffer.alloc(3 * 1024 * 1024, 0x20))).toBe(true);
  });
});
