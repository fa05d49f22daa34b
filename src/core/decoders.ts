/**
 * node:zlib's one-shot decoders as promises, loaded at the first compressed body or gRPC message:
 * the modules that use them load at start, and node:zlib cost ~1-5 ms of CPU there (bench machine;
 * a default start never decodes anything).
 */
import { promisify } from 'node:util';
import type * as Zlib from 'node:zlib';

type Decode<O> = (data: Buffer, opts: O) => Promise<Buffer>;

export interface Decoders {
  readonly gunzip: Decode<Zlib.ZlibOptions>;
  readonly inflate: Decode<Zlib.ZlibOptions>;
  readonly inflateRaw: Decode<Zlib.ZlibOptions>;
  readonly brotli: Decode<Zlib.BrotliOptions>;
}

let decoders: Decoders | undefined;

export function zlibDecoders(): Decoders {
  if (decoders === undefined) {
    const zlib = require('node:zlib') as typeof Zlib;
    decoders = {
      gunzip: promisify<Buffer, Zlib.ZlibOptions, Buffer>(zlib.gunzip),
      inflate: promisify<Buffer, Zlib.ZlibOptions, Buffer>(zlib.inflate),
      inflateRaw: promisify<Buffer, Zlib.ZlibOptions, Buffer>(zlib.inflateRaw),
      brotli: promisify<Buffer, Zlib.BrotliOptions, Buffer>(zlib.brotliDecompress),
    };
  }
  return decoders;
}
