import zlib from 'node:zlib';
import { decodeBody, type BodyResult } from '../../src/proxy/body';

const JSON_BODY = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { parts: [{ kind: 'text', text: 'héllo ✓' }] } } }));
const MAX = 1024 * 1024;

function okBody(r: BodyResult): Buffer {
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.error)}`);
  return r.body;
}

function rejected(r: BodyResult) {
  if (r.ok) throw new Error('expected a refusal');
  expect(r.error.kind).toBe('rejected');
  return r.error;
}

describe('decodeBody: supported codings', () => {
  test('no Content-Encoding -> the same buffer', () => {
    expect(okBody(decodeBody(JSON_BODY, undefined, MAX))).toBe(JSON_BODY);
  });

  test.each(['identity', 'IDENTITY', '', ' ', 'identity, identity'])('%p -> unchanged', (ce) => {
    expect(okBody(decodeBody(JSON_BODY, ce, MAX)).equals(JSON_BODY)).toBe(true);
  });

  test.each([
    ['gzip', zlib.gzipSync],
    ['x-gzip', zlib.gzipSync],
    ['GZip', zlib.gzipSync],
    ['deflate', zlib.deflateSync],
    ['deflate', zlib.deflateRawSync],
    ['br', zlib.brotliCompressSync],
  ])('%p', (ce, compress) => {
    expect(okBody(decodeBody(compress(JSON_BODY), ce, MAX)).equals(JSON_BODY)).toBe(true);
  });

  test('stacked codings are undone in reverse order', () => {
    // "Content-Encoding: deflate, gzip, br" = deflate applied first, br last.
    const enc = zlib.brotliCompressSync(zlib.gzipSync(zlib.deflateSync(JSON_BODY)));
    expect(okBody(decodeBody(enc, 'deflate, gzip, br', MAX)).equals(JSON_BODY)).toBe(true);
    expect(okBody(decodeBody(zlib.gzipSync(zlib.gzipSync(JSON_BODY)), 'gzip,gzip', MAX)).equals(JSON_BODY)).toBe(true);
    expect(okBody(decodeBody(zlib.gzipSync(JSON_BODY), 'identity, gzip', MAX)).equals(JSON_BODY)).toBe(true);
  });

  test('stacked codings in the wrong order do not decode', () => {
    const enc = zlib.brotliCompressSync(zlib.gzipSync(JSON_BODY));
    rejected(decodeBody(enc, 'br, gzip', MAX));
  });

  test('the input buffer is not modified', () => {
    const enc = zlib.gzipSync(JSON_BODY);
    const copy = Buffer.from(enc);
    decodeBody(enc, 'gzip', MAX);
    expect(enc.equals(copy)).toBe(true);
  });
});

describe('decodeBody: refusals', () => {
  test.each(['compress', 'x-compress', 'zstd', 'gzip, zstd', 'exi', 'pack200-gzip'])('unsupported %p -> rejected (400 form)', (ce) => {
    const e = rejected(decodeBody(JSON_BODY, ce, MAX));
    expect(e.message).toMatch(/Unsupported Content-Encoding/);
    expect(e.httpStatus).toBeUndefined();
  });

  test('unsupported coding anywhere in the stack is refused, naming it', () => {
    const e = rejected(decodeBody(zlib.gzipSync(JSON_BODY), 'zstd, gzip', MAX));
    expect(e.metadata.contentEncoding).toBe('zstd');
  });

  test.each(['gzip', 'deflate', 'br'])('corrupt %p data -> rejected, not 413', (ce) => {
    const e = rejected(decodeBody(Buffer.from('definitely not compressed data'), ce, MAX));
    expect(e.httpStatus).toBeUndefined();
  });

  test('truncated gzip -> rejected', () => {
    const enc = zlib.gzipSync(JSON_BODY);
    rejected(decodeBody(enc.subarray(0, enc.length - 10), 'gzip', MAX));
  });

  // Regression (deflate, zlib-wrapped): Node's "Cannot create a Buffer larger than N bytes" used to be missed,
  // the raw-deflate fallback then failed on the zlib header, and the bomb got a 400 instead of a 413.
  const bomb = Buffer.alloc(2 * 1024 * 1024); // 2 MiB of zeros compresses to a few KiB
  test.each([
    ['gzip', zlib.gzipSync],
    ['deflate (raw)', zlib.deflateRawSync],
    ['deflate (zlib)', zlib.deflateSync],
    ['br', zlib.brotliCompressSync],
  ])('zip bomb (%s): decoded size > max -> 413 rejected', (name, compress) => {
    const enc = compress(bomb);
    expect(enc.length).toBeLessThan(64 * 1024);
    const e = rejected(decodeBody(enc, name.split(' ')[0], 64 * 1024));
    expect(e.httpStatus).toBe(413);
    expect(e.metadata.limit).toBe(String(64 * 1024));
  });

  test('zip bomb hidden inside stacked codings -> 413', () => {
    const enc = zlib.gzipSync(zlib.gzipSync(bomb));
    expect(rejected(decodeBody(enc, 'gzip, gzip', 64 * 1024)).httpStatus).toBe(413);
  });

  test('decoded size exactly at the limit is accepted, one byte over is not', () => {
    const exact = Buffer.alloc(5000, 0x61);
    expect(okBody(decodeBody(zlib.gzipSync(exact), 'gzip', 5000)).length).toBe(5000);
    expect(rejected(decodeBody(zlib.gzipSync(Buffer.alloc(5001, 0x61)), 'gzip', 5000)).httpStatus).toBe(413);
  });
});
