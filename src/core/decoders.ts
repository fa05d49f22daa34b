/**
 * node:zlib's decoders as promises of the whole output, loaded at the first compressed body or gRPC message:
 * the modules that use them load at start, and node:zlib cost ~1-5 ms of CPU there (bench machine;
 * a default start never decodes anything).
 *
 * The output is gathered as it comes (core/bounded.ts), not joined at the end as zlib's one-shot functions
 * do: a 9 KiB gzip bomb of 9 MiB of spaces made a 9 MiB join of fresh pages, one 47-53 ms task here.
 */
import type * as Zlib from 'node:zlib';
import type { Transform } from 'node:stream';
import { BoundedBytes } from './bounded';

/**
 * Decode `data` whole; past `maxOutputLength` bytes it fails with code ERR_BUFFER_TOO_LARGE (as zlib's own). `take`
 * is asked for each piece of output as it comes (a budget): once it refuses, decoding stops with code BUDGET_SPENT.
 */
type Decode = (data: Buffer, opts: DecodeOptions) => Promise<Buffer>;

export interface DecodeOptions {
  readonly maxOutputLength: number;
  readonly take?: ((n: number) => boolean) | undefined;
}

/** The code of a decode stopped because `take` refused its output. */
export const BUDGET_SPENT = 'A2A_GUARD_BUDGET_SPENT';

export interface Decoders {
  readonly gunzip: Decode;
  readonly inflate: Decode;
  readonly inflateRaw: Decode;
  readonly brotli: Decode;
}

/** Output pieces of 64 KiB: a 9 MiB output is ~150 callbacks, each copying its piece into the one buffer. */
const CHUNK = 64 * 1024;

let decoders: Decoders | undefined;

export function zlibDecoders(): Decoders {
  if (decoders === undefined) {
    const zlib = require('node:zlib') as typeof Zlib;
    decoders = {
      gunzip: gathered(() => zlib.createGunzip({ chunkSize: CHUNK })),
      inflate: gathered(() => zlib.createInflate({ chunkSize: CHUNK })),
      inflateRaw: gathered(() => zlib.createInflateRaw({ chunkSize: CHUNK })),
      brotli: gathered(() => zlib.createBrotliDecompress({ chunkSize: CHUNK })),
    };
  }
  return decoders;
}

function gathered(make: () => Transform): Decode {
  return (data, { maxOutputLength, take }) =>
    new Promise((resolve, reject) => {
      const out = new BoundedBytes(maxOutputLength);
      const z = make();
      z.on('data', (c: Buffer) => {
        if (!out.push(c)) {
          z.destroy();
          return reject(Object.assign(new RangeError(`Cannot create a Buffer larger than ${maxOutputLength} bytes`), { code: 'ERR_BUFFER_TOO_LARGE' }));
        }
        if (take === undefined || take(c.length)) return;
        z.destroy();
        reject(Object.assign(new Error('the output does not fit the budget'), { code: BUDGET_SPENT }));
      });
      z.on('end', () => resolve(out.buffer()));
      z.on('error', reject);
      z.end(data);
    });
}
