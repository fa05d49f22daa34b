/**
 * The ordering core of an inspected stream (src/proxy/window.ts), without sockets: each rule
 * written at the top of window.ts, with decisions that a test resolves in any order.
 */
import fc from 'fast-check';
import { OrderedWindow, type Verdict, type WindowBudget, type WindowIo } from '../../../src/proxy/window';
import { Gate } from '../../../src/aos/gate';
import type { SseEvent } from '../../../src/a2a/sse';

const ev = (n: number, bytes = 0): SseEvent => {
  const text = `data: {"n":${n}}\n\n`;
  return {
    raw: Buffer.from(text.padEnd(Math.max(bytes, text.length), ' ')),
    data: `{"n":${n}}`,
    event: undefined,
    id: undefined,
    retry: undefined,
    hasData: true,
    commentOnly: false,
    terminated: true,
  };
};
const keepAlive = (): SseEvent => ({
  raw: Buffer.from(': ping\n\n'),
  data: '',
  event: undefined,
  id: undefined,
  retry: undefined,
  hasData: false,
  commentOnly: true,
  terminated: true,
});
const nOf = (b: Buffer): string => {
  const m = /"n":(\d+)/.exec(b.toString());
  return m?.[1] ?? b.toString().trim();
};

interface Pending {
  readonly ev: SseEvent;
  resolve(v: Verdict): void;
  reject(e: unknown): void;
}

/** A window whose decisions wait for the test, recording everything it does. */
function harness(
  size: number,
  opts: {
    maxBytes?: number;
    full?: () => boolean;
    sync?: (e: SseEvent) => Verdict | undefined;
    throwOn?: number;
    line?: Gate;
    budget?: WindowBudget<Buffer>;
  } = {},
) {
  const pending: Pending[] = [];
  const written: string[] = [];
  const log: string[] = [];
  let ended: Buffer | undefined | null = null;
  let aborts = 0;
  let reading = true;
  const io: WindowIo = {
    decide: (e) => {
      log.push(`decide ${nOf(e.raw)}`);
      if (opts.throwOn !== undefined && nOf(e.raw) === String(opts.throwOn)) throw new Error('boom');
      const s = opts.sync?.(e);
      if (s !== undefined) return s;
      return new Promise<Verdict>((resolve, reject) => pending.push({ ev: e, resolve, reject }));
    },
    bytes: (e) => e.raw.length,
    write: (b) => {
      written.push(nOf(b));
      log.push(`write ${nOf(b)}`);
      return !(opts.full?.() ?? false);
    },
    end: (frame) => {
      if (ended !== null) throw new Error('ended twice');
      ended = frame;
      log.push(`end ${frame === undefined ? '' : frame.toString()}`);
    },
    flow: (r) => {
      reading = r;
      log.push(r ? 'resume' : 'pause');
    },
    abort: () => {
      aborts++;
      log.push('abort');
    },
    failure: () => Buffer.from('FAILURE'),
  };
  const w = new OrderedWindow(io, size, opts.maxBytes, opts.line, opts.budget);
  const decision = (n: number) => {
    const p = pending.find((x) => nOf(x.ev.raw) === String(n));
    if (p === undefined) throw new Error(`no decision under way for event ${n}`);
    return p;
  };
  const pass = (n: number) => decision(n).resolve({ pass: decision(n).ev.raw });
  const stop = (n: number, frame = `ERROR@${n}`) => decision(n).resolve({ stop: Buffer.from(frame) });
  return {
    w,
    pending,
    written,
    log,
    pass,
    stop,
    decision,
    get ended() {
      return ended;
    },
    get aborts() {
      return aborts;
    },
    get reading() {
      return reading;
    },
    decided: () => log.filter((l) => l.startsWith('decide')).map((l) => l.slice(7)),
  };
}

const tick = () => new Promise<void>((r) => setImmediate(r));
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

describe('rule 1: events leave in stream order, each after its own decision', () => {
  test('decisions answered in reverse order: nothing leaves until the first is decided, then all in order', async () => {
    const h = harness(8);
    h.w.push(range(1, 5).map((n) => ev(n)));
    for (const n of [5, 4, 3, 2]) h.pass(n);
    await tick();
    expect(h.written).toEqual([]);
    h.pass(1);
    await tick();
    expect(h.written).toEqual(['1', '2', '3', '4', '5']);
  });

  test('a later decision waits for the one before it, then both leave', async () => {
    const h = harness(8);
    h.w.push([ev(1), ev(2), ev(3)]);
    h.pass(2);
    await tick();
    expect(h.written).toEqual([]);
    h.pass(1);
    await tick();
    expect(h.written).toEqual(['1', '2']);
    h.pass(3);
    await tick();
    expect(h.written).toEqual(['1', '2', '3']);
  });

  test('keep-alives decided at once still wait for the events before them', async () => {
    const h = harness(8, { sync: (e) => (e.commentOnly ? { pass: e.raw } : undefined) });
    h.w.push([ev(1), keepAlive(), ev(2)]);
    expect(h.written).toEqual([]);
    h.pass(1);
    await tick();
    expect(h.written).toEqual(['1', ': ping']);
  });
});

describe('rule 2: at most `size` events admitted; only admitted events have a decision under way', () => {
  test('50 events into a window of 4: 4 decisions, the agent paused; each event that leaves admits one more', async () => {
    const h = harness(4);
    h.w.push(range(1, 50).map((n) => ev(n)));
    expect(h.decided()).toEqual(['1', '2', '3', '4']);
    expect(h.w.admitted).toBe(4);
    expect(h.reading).toBe(false);
    h.pass(1);
    await tick();
    expect(h.decided()).toEqual(['1', '2', '3', '4', '5']);
    for (let n = 2; n <= 50; n++) {
      h.pass(n);
      await tick();
    }
    expect(h.written).toEqual(range(1, 50).map(String));
    expect(h.w.peakAdmitted).toBe(4);
    expect(h.reading).toBe(true);
  });

  test('the byte bound admits the first event whatever its size, then stops at maxBytes', () => {
    const h = harness(16, { maxBytes: 100 });
    h.w.push([ev(1, 60), ev(2, 60), ev(3, 60)]);
    expect(h.decided()).toEqual(['1', '2']);
    const big = harness(16, { maxBytes: 100 });
    big.w.push([ev(1, 500), ev(2, 10)]);
    expect(big.decided()).toEqual(['1']);
  });

  test('a window of 1 is strictly one event at a time', async () => {
    const h = harness(1);
    h.w.push([ev(1), ev(2), ev(3)]);
    expect(h.decided()).toEqual(['1']);
    h.pass(1);
    await tick();
    expect(h.decided()).toEqual(['1', '2']);
  });

  test('a window size that is not a positive integer is refused', () => {
    expect(() => harness(0)).toThrow(RangeError);
  });
});

describe('rule 3: backpressure both ways', () => {
  test('a full caller socket stops the writes and the reading until drained', async () => {
    let full = false;
    const h = harness(4, { full: () => full });
    h.w.push([ev(1), ev(2), ev(3)]);
    full = true;
    h.pass(1);
    await tick();
    expect(h.written).toEqual(['1']);
    h.pass(2);
    h.pass(3);
    await tick();
    expect(h.written).toEqual(['1']);
    expect(h.reading).toBe(false);
    // Parsed events may still be judged, within the window; none leaves and the agent stays paused.
    h.w.push(range(4, 9).map((n) => ev(n)));
    expect(h.decided()).toEqual(['1', '2', '3', '4', '5']);
    expect(h.w.admitted).toBe(4);
    expect(h.reading).toBe(false);
    full = false;
    h.w.drained();
    expect(h.written).toEqual(['1', '2', '3']);
    expect(h.decided()).toEqual(range(1, 7).map(String));
  });

  test('a slow guardian keeps the agent paused while the window is full, reading resumes once it has room', async () => {
    const h = harness(2);
    h.w.push([ev(1), ev(2)]);
    expect(h.reading).toBe(false);
    h.pass(1);
    await tick();
    expect(h.reading).toBe(true);
  });
});

describe('rule 4: a stop at event k', () => {
  test('deny at k with later calls in flight: 1..k-1, the error, nothing after; later answers ignored; upstream aborted', async () => {
    const h = harness(8);
    h.w.push(range(1, 10).map((n) => ev(n)));
    expect(h.decided()).toEqual(range(1, 8).map(String));
    h.pass(6);
    h.pass(7);
    h.stop(5);
    h.pass(2);
    await tick();
    expect(h.written).toEqual([]);
    h.pass(1);
    h.pass(3);
    await tick();
    expect(h.written).toEqual(['1', '2', '3']);
    expect(h.ended).toBeNull();
    h.pass(4);
    await tick();
    expect(h.written).toEqual(['1', '2', '3', '4']);
    expect(h.ended?.toString()).toBe('ERROR@5');
    expect(h.aborts).toBe(1);
    h.pass(8);
    await tick();
    h.w.push([ev(11)]);
    h.w.upstreamEnded();
    expect(h.written).toEqual(['1', '2', '3', '4']);
    // 9 and 10 were admitted as 1..4 left (the window had room); nothing after the stop is.
    expect(h.decided()).toEqual(range(1, 10).map(String));
    expect(h.log.filter((l) => l.startsWith('end'))).toHaveLength(1);
  });

  test('a decision that throws or rejects ends the stream with the failure frame, never a pass', async () => {
    const h = harness(4, { throwOn: 2 });
    h.w.push([ev(1), ev(2), ev(3)]);
    h.pass(1);
    await tick();
    expect(h.written).toEqual(['1']);
    expect(h.ended?.toString()).toBe('FAILURE');
    const r = harness(4);
    r.w.push([ev(1), ev(2)]);
    r.decision(1).reject(new Error('x'));
    await tick();
    expect(r.written).toEqual([]);
    expect(r.ended?.toString()).toBe('FAILURE');
    expect(r.aborts).toBe(1);
  });

  test('stop() (a shutdown) ends at once with its frame and aborts', () => {
    const h = harness(4);
    h.w.push([ev(1), ev(2)]);
    h.w.stop(Buffer.from('SHUTDOWN'));
    expect(h.ended?.toString()).toBe('SHUTDOWN');
    expect(h.aborts).toBe(1);
  });
});

describe('rule 5: a modify replaces exactly its own event', () => {
  test('event 2 replaced, 1 and 3 as they were', async () => {
    const h = harness(4);
    h.w.push([ev(1), ev(2), ev(3)]);
    h.decision(2).resolve({ pass: Buffer.from('data: {"n":222}\n\n') });
    h.pass(3);
    h.pass(1);
    await tick();
    expect(h.written).toEqual(['1', '222', '3']);
  });
});

describe('rule 6: the end of the agent stream is acted on after the events before it', () => {
  test('complete: the response ends only once every event has left', async () => {
    const h = harness(4);
    h.w.push([ev(1), ev(2)]);
    h.w.upstreamEnded();
    expect(h.ended).toBeNull();
    h.pass(2);
    h.pass(1);
    await tick();
    expect(h.written).toEqual(['1', '2']);
    expect(h.ended).toBeUndefined();
    expect(h.aborts).toBe(0);
  });

  test('cut: the error frame comes after the last event; its builder runs only then', async () => {
    const h = harness(4);
    let built = 0;
    h.w.push([ev(1)]);
    h.w.upstreamEnded(() => {
      built++;
      return Buffer.from('CUT');
    });
    expect(built).toBe(0);
    h.pass(1);
    await tick();
    expect(h.written).toEqual(['1']);
    expect(h.ended?.toString()).toBe('CUT');
    expect(built).toBe(1);
  });

  test('a stop before the end wins: the end frame is never written', async () => {
    const h = harness(4);
    h.w.push([ev(1)]);
    h.w.upstreamEnded(() => Buffer.from('CUT'));
    h.stop(1);
    await tick();
    expect(h.ended?.toString()).toBe('ERROR@1');
  });
});

describe('rule 7: the caller leaving', () => {
  test('no more writes, no new decisions, the upstream aborted, nothing ended', async () => {
    const h = harness(2);
    h.w.push([ev(1), ev(2), ev(3)]);
    h.w.close();
    expect(h.aborts).toBe(1);
    h.pass(1);
    h.pass(2);
    await tick();
    h.w.push([ev(4)]);
    expect(h.written).toEqual([]);
    expect(h.decided()).toEqual(['1', '2']);
    expect(h.ended).toBeNull();
  });
});

describe('rule 2 with a shared line: no more decisions under way across streams than it has places', () => {
  test('two streams, two places: the first takes both; the second gets each place as a decision comes back', async () => {
    const line = new Gate(2);
    const a = harness(8, { line });
    const b = harness(8, { line });
    a.w.push(range(1, 5).map((n) => ev(n)));
    b.w.push(range(1, 3).map((n) => ev(n)));
    expect(a.decided()).toEqual(['1', '2']);
    expect(b.decided()).toEqual([]);
    expect(line.waiting).toBe(2); // a's next event and b's first
    expect(b.reading).toBe(false);
    a.pass(1);
    await tick();
    // The place went to the stream that asked first: a (which asked for its 3rd event before b asked).
    expect(a.written).toEqual(['1']);
    expect([...a.decided(), ...b.decided()]).toHaveLength(3);
    a.pass(2);
    await tick();
    expect(a.decided()).toHaveLength(3);
    expect(b.decided()).toEqual(['1']);
  });

  test('places come back when a stream stops at k (its undecided events included) and when a waiting stream leaves', async () => {
    const line = new Gate(2);
    const a = harness(8, { line });
    a.w.push(range(1, 4).map((n) => ev(n)));
    const b = harness(8, { line });
    b.w.push([ev(1)]);
    const c = harness(8, { line });
    c.w.push([ev(1)]);
    expect(line.waiting).toBe(3);
    b.w.close(); // leaves the line
    expect(line.waiting).toBe(2);
    a.stop(1); // a ends: event 2's decision is abandoned, both places come back
    await tick();
    expect(a.ended?.toString()).toBe('ERROR@1');
    expect(c.decided()).toEqual(['1']);
    expect(b.decided()).toEqual([]);
    c.pass(1);
    await tick();
    expect(line.waiting).toBe(0);
    // Nothing leaked: both places are free again.
    expect(line.enter()).toBe(true);
    expect(line.enter()).toBe(true);
  });
});

test('property: any decision order, any stop position, any window: the caller sees exactly the events before the first stop, in order, then its frame', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: 1, max: 20 }),
      fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }),
      fc.array(fc.nat(), { minLength: 40, maxLength: 40 }),
      async (size, count, stopAt, picks) => {
        const h = harness(size);
        h.w.push(range(1, count).map((n) => ev(n)));
        h.w.upstreamEnded();
        let i = 0;
        // Answer the decisions under way in an order the generator picks, until the window is over.
        while (h.pending.length > 0 && h.ended === null) {
          expect(h.w.admitted).toBeLessThanOrEqual(size);
          const p = h.pending.splice((picks[i++ % picks.length] ?? 0) % h.pending.length, 1)[0] as Pending;
          const n = Number(nOf(p.ev.raw));
          p.resolve(n === stopAt ? { stop: Buffer.from(`ERROR@${n}`) } : { pass: p.ev.raw });
          await tick();
        }
        const stopped = stopAt !== undefined && stopAt <= count;
        expect(h.written).toEqual(range(1, stopped ? stopAt - 1 : count).map(String));
        expect(h.ended === undefined ? undefined : h.ended?.toString()).toBe(stopped ? `ERROR@${stopAt}` : undefined);
        expect(h.w.peakAdmitted).toBeLessThanOrEqual(size);
      },
    ),
    { numRuns: 100 },
  );
});

test("binding-neutral: events that are not SSE events (gRPC messages) are weighed by `bytes`, and a stop carries the binding's own end (a status, not a frame)", async () => {
  interface Message {
    readonly n: number;
    readonly data: Buffer;
  }
  interface Status {
    readonly code: number;
    readonly at: number;
  }
  const pending: Array<{ m: Message; resolve: (v: Verdict<Status>) => void }> = [];
  const written: number[] = [];
  let ended: Status | undefined | null = null;
  let aborts = 0;
  const io: WindowIo<Message, Status> = {
    decide: (m) => new Promise((resolve) => pending.push({ m, resolve })),
    bytes: (m) => m.data.length,
    write: (b) => (written.push(b.readUInt8(0)), true),
    end: (s) => (ended = s),
    flow: () => undefined,
    abort: () => aborts++,
    failure: () => ({ code: 14, at: -1 }),
  };
  const msg = (n: number, bytes: number): Message => ({ n, data: Buffer.alloc(bytes, n) });
  // 10 bytes max: the first message whatever its size, then only while under the bound.
  const w = new OrderedWindow<Message, Status>(io, 8, 10, undefined);
  w.push([msg(1, 6), msg(2, 6), msg(3, 1), msg(4, 1)]);
  expect(pending.map((p) => p.m.n)).toEqual([1, 2]);
  pending[1]!.resolve({ pass: Buffer.from([2]) });
  pending[0]!.resolve({ pass: Buffer.from([1]) });
  await tick();
  expect(written).toEqual([1, 2]);
  expect(pending.map((p) => p.m.n)).toEqual([1, 2, 3, 4]);
  pending[3]!.resolve({ pass: Buffer.from([4]) });
  pending[2]!.resolve({ stop: { code: 7, at: 3 } });
  await tick();
  expect(written).toEqual([1, 2]);
  expect(ended).toEqual({ code: 7, at: 3 });
  expect(aborts).toBe(1);
});

describe('the in-flight budget: admitted events hold their bytes in it', () => {
  /** A budget of `limit` bytes, recording how much is held. */
  const budget = (limit: number) => {
    const b = {
      used: 0,
      peak: 0,
      take: (n: number) => {
        if (b.used + n > limit) return false;
        b.used += n;
        b.peak = Math.max(b.peak, b.used);
        return true;
      },
      give: (n: number) => {
        b.used -= n;
      },
      refused: () => Buffer.from('OVERLOADED'),
    };
    return b;
  };

  test('an event the budget cannot take stops the stream there, after the events before it; never judged', async () => {
    const b = budget(100);
    const h = harness(8, { budget: b });
    h.w.push([ev(1, 40), ev(2, 40), ev(3, 40), ev(4, 10)]);
    expect(h.decided()).toEqual(['1', '2']);
    h.pass(2);
    h.pass(1);
    await tick();
    expect(h.written).toEqual(['1', '2']);
    expect(h.ended?.toString()).toBe('OVERLOADED');
    expect(h.aborts).toBe(1);
    expect(b.used).toBe(0);
  });

  test('bytes go back as events leave: a long stream within the budget is never refused', async () => {
    const b = budget(100);
    const h = harness(2, { budget: b, sync: (e) => ({ pass: e.raw }) });
    for (const n of range(1, 50)) h.w.push([ev(n, 40)]);
    h.w.upstreamEnded();
    expect(h.written).toEqual(range(1, 50).map(String));
    expect(h.ended).toBeUndefined();
    expect(b.used).toBe(0);
    expect(b.peak).toBeLessThanOrEqual(100);
  });

  test('the caller going away gives back what was held', async () => {
    const b = budget(1000);
    const h = harness(8, { budget: b });
    h.w.push([ev(1, 40), ev(2, 40)]);
    expect(b.used).toBe(80);
    h.w.close();
    expect(b.used).toBe(0);
  });
});
