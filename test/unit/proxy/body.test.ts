import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { decodeBody, readBody, type BodyResult } from '../../../src/proxy/http/body';
import { BodyBudget } from '../../../src/proxy/budget';

const JSON_BODY = Buffer.from(
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { parts: [{ kind: 'text', text: 'héllo ✓' }] } } }),
);
const MAX = 1024 * 1024;

function okBody(r: BodyResult): Buffer {
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.error)}`);
  return r.body;
}

function refused(r: BodyResult, kind: 'rejected' | 'overloaded' | 'limited' = 'rejected') {
  if (r.ok) throw new Error('expected a refusal');
  expect(r.error.kind).toBe(kind);
  return r.error;
}

describe('decodeBody: supported codings', () => {
  test('no Content-Encoding -> the same buffer', async () => {
    expect(okBody(await decodeBody(JSON_BODY, undefined, MAX))).toBe(JSON_BODY);
  });

  test.each(['identity', 'IDENTITY', '', ' ', 'identity, identity', ','])('%p -> unchanged', async (ce) => {
    expect(okBody(await decodeBody(JSON_BODY, ce, MAX)).equals(JSON_BODY)).toBe(true);
  });

  test.each([
    ['gzip', zlib.gzipSync],
    ['x-gzip', zlib.gzipSync],
    ['GZip', zlib.gzipSync],
    [' gzip ', zlib.gzipSync],
    ['deflate', zlib.deflateSync],
    ['deflate', zlib.deflateRawSync],
    ['br', zlib.brotliCompressSync],
  ])('%p', async (ce, compress) => {
    expect(okBody(await decodeBody(compress(JSON_BODY), ce, MAX)).equals(JSON_BODY)).toBe(true);
  });

  test('identity next to one real coding is that one coding', async () => {
    expect(okBody(await decodeBody(zlib.gzipSync(JSON_BODY), 'identity, gzip', MAX)).equals(JSON_BODY)).toBe(true);
    expect(okBody(await decodeBody(zlib.brotliCompressSync(JSON_BODY), 'br, identity', MAX)).equals(JSON_BODY)).toBe(true);
  });

  test('the input buffer is not modified', async () => {
    const enc = zlib.gzipSync(JSON_BODY);
    const copy = Buffer.from(enc);
    await decodeBody(enc, 'gzip', MAX);
    expect(enc.equals(copy)).toBe(true);
  });

  // Decompression runs on the thread pool: other calls' callbacks keep running while a large body is inflated.
  test('the event loop keeps turning while a body is decoded', async () => {
    const big = zlib.gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x61));
    let turns = 0;
    let spinning = true;
    const spin = () => {
      if (!spinning) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const r = await decodeBody(big, 'gzip', 16 * 1024 * 1024);
    spinning = false;
    expect(okBody(r).length).toBe(8 * 1024 * 1024);
    expect(turns).toBeGreaterThan(0);
  });
});

describe('decodeBody: refusals', () => {
  // Each layer costs a pass: 600 stored gzip layers held the event loop for seconds.
  test.each(['gzip, gzip', 'deflate, gzip, br', 'gzip,gzip', 'br, br', 'gzip, identity, gzip', Array(600).fill('gzip').join(', ')])(
    'more than one coding (%p) is refused before anything is decoded',
    async (ce) => {
      const e = refused(await decodeBody(zlib.gzipSync(zlib.gzipSync(JSON_BODY)), ce, MAX));
      expect(e.message).toMatch(/At most one Content-Encoding/);
      expect(e.httpStatus).toBeUndefined();
      expect(e.metadata.contentEncoding).toBe(ce.slice(0, 64));
    },
  );

  test('a stacked coding is refused even when its layers are valid and tiny', async () => {
    let b = JSON_BODY;
    for (let i = 0; i < 50; i++) b = zlib.gzipSync(b, { level: 0 });
    refused(await decodeBody(b, Array(50).fill('gzip').join(','), MAX));
  });

  test.each(['compress', 'x-compress', 'zstd', 'exi', 'pack200-gzip', 'gzip;q=1'])('unsupported %p -> rejected (400 form), naming it', async (ce) => {
    const e = refused(await decodeBody(JSON_BODY, ce, MAX));
    expect(e.message).toMatch(/Unsupported Content-Encoding/);
    expect(e.httpStatus).toBeUndefined();
    expect(e.metadata.contentEncoding).toBe(ce.toLowerCase());
  });

  test.each(['gzip', 'deflate', 'br'])('corrupt %p data -> rejected, not 413', async (ce) => {
    const e = refused(await decodeBody(Buffer.from('definitely not compressed data'), ce, MAX));
    expect(e.httpStatus).toBeUndefined();
    expect(e.message).toMatch(/could not be decoded/);
  });

  test('truncated gzip -> rejected', async () => {
    const enc = zlib.gzipSync(JSON_BODY);
    refused(await decodeBody(enc.subarray(0, enc.length - 10), 'gzip', MAX));
  });

  // Regression (deflate, zlib-wrapped): Node's "Cannot create a Buffer larger than N bytes" used to be missed,
  // the raw-deflate fallback then failed on the zlib header, and the bomb got a 400 instead of a 413.
  const bomb = Buffer.alloc(2 * 1024 * 1024); // 2 MiB of zeros compresses to a few KiB
  test.each([
    ['gzip', zlib.gzipSync],
    ['deflate (raw)', zlib.deflateRawSync],
    ['deflate (zlib)', zlib.deflateSync],
    ['br', zlib.brotliCompressSync],
  ])('zip bomb (%s): decoded size > max -> 413 rejected', async (name, compress) => {
    const enc = compress(bomb);
    expect(enc.length).toBeLessThan(64 * 1024);
    const e = refused(await decodeBody(enc, name.split(' ')[0], 64 * 1024));
    expect(e.httpStatus).toBe(413);
    expect(e.metadata.limit).toBe(String(64 * 1024));
  });

  test('decoded size exactly at the limit is accepted, one byte over is not', async () => {
    const exact = Buffer.alloc(5000, 0x61);
    expect(okBody(await decodeBody(zlib.gzipSync(exact), 'gzip', 5000)).length).toBe(5000);
    expect(refused(await decodeBody(zlib.gzipSync(Buffer.alloc(5001, 0x61)), 'gzip', 5000)).httpStatus).toBe(413);
  });
});

describe('BodyBudget', () => {
  test('leases share one limit; a take that would go over is refused and takes nothing', () => {
    const budget = new BodyBudget(100);
    const a = budget.lease();
    const b = budget.lease();
    expect(a.take(60)).toBe(true);
    expect(b.take(50)).toBe(false);
    expect(budget.inFlight).toBe(60);
    expect(b.take(40)).toBe(true);
    expect(budget.inFlight).toBe(100);
    expect(b.take(1)).toBe(false);
    expect(a.take(0)).toBe(true);
    a.release();
    expect(budget.inFlight).toBe(40);
    expect(b.take(60)).toBe(true);
    expect(budget.inFlight).toBe(100);
  });

  test('shrinkTo gives bytes back and never grows (never refused), release returns it all, twice is harmless', () => {
    const budget = new BodyBudget(100);
    const a = budget.lease();
    expect(a.take(80)).toBe(true);
    a.shrinkTo(30); // the raw bytes are dropped once decoded
    expect(budget.inFlight).toBe(30);
    a.shrinkTo(150); // growth only through take/hold, which the budget may refuse
    expect(budget.inFlight).toBe(30);
    expect(budget.lease().take(70)).toBe(true);
    a.release();
    a.release();
    expect(budget.inFlight).toBe(70);
  });
});

/** A request stream with headers, as readBody sees an IncomingMessage (no socket needed for the logic under test). */
function request(chunks: Buffer[], headers: Record<string, string> = {}): IncomingMessage {
  const r = Readable.from(chunks, { objectMode: false }) as unknown as IncomingMessage;
  (r as { headers: Record<string, string> }).headers = headers;
  return r;
}

const PACE = { timeoutMs: 5000, minBytesPerSecond: 0 };

describe('readBody with the in-flight budget', () => {
  test('a declared length holds nothing: bytes are held as they arrive, and at the budget the call is "overloaded" (HTTP 503)', async () => {
    const budget = new BodyBudget(1000);
    const held = budget.lease();
    expect(held.take(900)).toBe(true);
    const lease = budget.lease();
    // A caller that announces a large body holds none of the budget until its bytes come.
    const stalled = new Readable({ read() {} }) as unknown as IncomingMessage;
    (stalled as { headers: Record<string, string> }).headers = { 'content-length': '1000000' };
    const waiting = readBody(stalled, 10_000_000, { timeoutMs: 5000, minBytesPerSecond: 0 }, budget.lease());
    expect(budget.inFlight).toBe(900);
    (stalled as unknown as Readable).push(null);
    await waiting;
    const e = refused(await readBody(request([Buffer.alloc(200)], { 'content-length': '200' }), MAX, PACE, lease), 'overloaded');
    expect(e.httpStatus).toBe(503);
    expect(budget.inFlight).toBe(900);
  });

  test("a caller's share: past it only that caller is refused (429 with Retry-After), another caller's body is read", async () => {
    const budget = new BodyBudget(1000, 300);
    const a = budget.lease('caller-a');
    expect(a.take(250)).toBe(true);
    const e = refused(
      await readBody(
        request([Buffer.alloc(100)], { 'content-length': '100' }),
        MAX,
        PACE,
        (() => {
          const l = budget.lease();
          l.charge('caller-a');
          return l;
        })(),
      ),
      'limited',
    );
    expect(e.metadata['retryAfterSeconds']).toBe('1');
    const b = budget.lease('caller-b');
    expect(okBody(await readBody(request([Buffer.alloc(300)], { 'content-length': '300' }), MAX, PACE, b)).length).toBe(300);
    expect(budget.heldBy('caller-a')).toBe(250);
    expect(budget.heldBy('caller-b')).toBe(300);
    a.release();
    b.release();
    expect(budget.callers).toBe(0);
  });

  test('a body that trickles below the minimum rate is cut (408), whatever its timeout', async () => {
    const trickle = new Readable({ read() {} });
    (trickle as unknown as { headers: Record<string, string> }).headers = { 'content-length': '100000' };
    trickle.push(Buffer.alloc(10));
    const e = refused(await readBody(trickle as unknown as IncomingMessage, MAX, { timeoutMs: 60_000, minBytesPerSecond: 1000, graceMs: 0 }));
    expect(e.httpStatus).toBe(408);
    expect(e.message).toContain('slower than 1000 bytes per second');
    trickle.destroy();
  });

  test('a chunked body grows its lease as it arrives and is refused at the budget', async () => {
    const budget = new BodyBudget(1000);
    const lease = budget.lease();
    refused(await readBody(request([Buffer.alloc(600), Buffer.alloc(600)], { 'transfer-encoding': 'chunked' }), MAX, PACE, lease), 'overloaded');
    expect(budget.inFlight).toBe(600);
    lease.release();
    expect(budget.inFlight).toBe(0);
  });

  test('a body within the budget is read whole; its lease holds its size until released', async () => {
    const budget = new BodyBudget(1000);
    const lease = budget.lease();
    const body = okBody(await readBody(request([Buffer.from('ab'), Buffer.from('cd')], { 'transfer-encoding': 'chunked' }), MAX, PACE, lease));
    expect(body.toString()).toBe('abcd');
    expect(budget.inFlight).toBe(4);
    lease.release();
    expect(budget.inFlight).toBe(0);
  });

  test('MAX_BODY_BYTES is still 413, declared or streamed', async () => {
    expect(refused(await readBody(request([Buffer.alloc(20)], { 'content-length': '20' }), 10, PACE)).httpStatus).toBe(413);
    expect(refused(await readBody(request([Buffer.alloc(6), Buffer.alloc(6)], { 'transfer-encoding': 'chunked' }), 10, PACE)).httpStatus).toBe(413);
  });
});

describe('decodeBody with the in-flight budget', () => {
  // 9 MiB of spaces in about 9 KiB of gzip: many at once held gigabytes while only their wire bytes were counted.
  const bomb = zlib.gzipSync(Buffer.alloc(9 * 1024 * 1024, 0x20));
  const MiB = 1024 * 1024;

  it('holds the output in the lease as it comes, and stops decoding where the budget ends (503)', async () => {
    const budget = new BodyBudget(MiB);
    const lease = budget.lease('a');
    const r = await decodeBody(bomb, 'gzip', 10 * MiB, lease);
    expect(r.ok ? 'decoded' : r.error.kind).toBe('overloaded');
    expect(budget.inFlight).toBeLessThanOrEqual(MiB);
    lease.release();
    expect(budget.inFlight).toBe(0);
  });

  it("past the caller's share it is that caller's refusal (429), and a body that fits is held at its decoded size", async () => {
    const budget = new BodyBudget(100 * MiB, 2 * MiB);
    const over = budget.lease('a');
    const r = await decodeBody(bomb, 'gzip', 10 * MiB, over);
    expect(r.ok ? 'decoded' : r.error.kind).toBe('limited');
    over.release();
    const fits = budget.lease('b');
    const small = Buffer.alloc(MiB, 0x20);
    const ok = await decodeBody(zlib.brotliCompressSync(small), 'br', 10 * MiB, fits);
    expect(ok.ok && ok.body.equals(small)).toBe(true);
    expect(budget.heldBy('b')).toBe(MiB);
  });
});
