import fc from 'fast-check';
import { DEFAULT_MAX_SSE_EVENT_BYTES, SseEvent, SseEventTooLargeError, SseParser, formatSseErrorEvent, formatSseEvent, parseSse } from '../../src/a2a/sse';

const b = (s: string): Buffer => Buffer.from(s, 'utf8');

/** What a consumer sees of an event, minus the bytes. */
interface Fields {
  data: string;
  event: string | undefined;
  id: string | undefined;
  retry: number | undefined;
  hasData: boolean;
  commentOnly: boolean;
  terminated: boolean;
}

const fields = (e: SseEvent): Fields => ({
  data: e.data,
  event: e.event,
  id: e.id,
  retry: e.retry,
  hasData: e.hasData,
  commentOnly: e.commentOnly,
  terminated: e.terminated,
});

/** Feeds `input` cut at `cuts` (byte offsets), then ends the stream. */
function parseChunked(input: Buffer, cuts: readonly number[], parser = new SseParser()): SseEvent[] {
  const points = [...new Set(cuts.filter((c) => c > 0 && c < input.length))].sort((x, y) => x - y);
  const events: SseEvent[] = [];
  let start = 0;
  for (const p of [...points, input.length]) {
    events.push(...parser.push(input.subarray(start, p)));
    start = p;
  }
  events.push(...parser.end());
  return events;
}

const everyByte = (input: Buffer): number[] => Array.from({ length: input.length }, (_, i) => i);
const rawText = (events: readonly SseEvent[]): string[] => events.map((e) => e.raw.toString('utf8'));
const concatRaw = (events: readonly SseEvent[]): Buffer => Buffer.concat(events.map((e) => e.raw));

/**
 * Independent, deliberately naive WHATWG reader over the whole decoded string, used as an oracle.
 * It has the same end-of-stream policy as SseParser.end(): left-over content becomes one
 * `terminated: false` event parsed from its complete lines.
 */
function referenceParse(input: Buffer): Fields[] {
  const text = new TextDecoder('utf-8').decode(input); // strips one leading BOM, like the spec's decoder
  const out: Fields[] = [];
  let dataLines: string[] = [];
  let cur: Fields = fresh();
  // Bytes since the last dispatch; a leading BOM counts (it is in raw) although the decoder drops it.
  let pending = input.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf]));
  let i = 0;
  function fresh(): Fields {
    return { data: '', event: undefined, id: undefined, retry: undefined, hasData: false, commentOnly: true, terminated: true };
  }
  const emit = (terminated: boolean): void => {
    out.push({ ...cur, data: dataLines.join('\n'), terminated });
    cur = fresh();
    dataLines = [];
    pending = false;
  };
  while (i < text.length) {
    let j = i;
    while (j < text.length && text[j] !== '\n' && text[j] !== '\r') j++;
    if (j === text.length) {
      pending = true; // unterminated last line: kept in raw, not parsed
      break;
    }
    const line = text.slice(i, j);
    i = text[j] === '\r' && text[j + 1] === '\n' ? j + 2 : j + 1;
    pending = true;
    if (line === '') {
      emit(true);
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') {
      dataLines.push(value);
      cur.hasData = true;
      cur.commentOnly = false;
    } else if (name === 'event') {
      cur.event = value;
      cur.commentOnly = false;
    } else if (name === 'id') {
      if (!value.includes('\0')) {
        cur.id = value;
        cur.commentOnly = false;
      }
    } else if (name === 'retry') {
      if (/^[0-9]+$/.test(value)) {
        cur.retry = Number(value);
        cur.commentOnly = false;
      }
    }
  }
  if (pending) emit(false);
  return out;
}

// A real v1.0 JSON-RPC SendStreamingMessage stream as written by the SDK server (wire reference §4.2).
const SDK_EVENTS = [
  '{"jsonrpc":"2.0","id":2,"result":{"task":{"id":"83acb45c","contextId":"6bc05361","status":{"state":"TASK_STATE_SUBMITTED"},"history":[]}}}',
  '{"jsonrpc":"2.0","id":2,"result":{"statusUpdate":{"taskId":"83acb45c","contextId":"6bc05361","status":{"state":"TASK_STATE_WORKING","message":{"role":"ROLE_AGENT","parts":[{"text":"working on: stream me","mediaType":"text/plain"}]}}}}}',
  '{"jsonrpc":"2.0","id":2,"result":{"artifactUpdate":{"taskId":"83acb45c","contextId":"6bc05361","artifact":{"artifactId":"echo-1","name":"echo","parts":[{"text":"echo: stream me ✓ 😀","mediaType":"text/plain"}]},"lastChunk":true}}}',
  '{"jsonrpc":"2.0","id":2,"result":{"statusUpdate":{"taskId":"83acb45c","contextId":"6bc05361","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2025-01-01T00:00:00Z"}}}}',
];
const SDK_STREAM = b(SDK_EVENTS.map((j) => `data: ${j}\n\n`).join(''));

describe('SseParser: A2A SDK framing', () => {
  test('one event per `data: <json>\\n\\n` frame, raw is the exact frame', () => {
    const events = new SseParser().push(SDK_STREAM);
    expect(events).toHaveLength(4);
    events.forEach((e, i) => {
      expect(e.raw.toString('utf8')).toBe(`data: ${SDK_EVENTS[i]}\n\n`);
      expect(e.data).toBe(SDK_EVENTS[i]);
      expect(JSON.parse(e.data)).toMatchObject({ jsonrpc: '2.0', id: 2 });
      expect(e).toMatchObject({ hasData: true, commentOnly: false, terminated: true, event: undefined, id: undefined, retry: undefined });
    });
    expect(concatRaw(events).equals(SDK_STREAM)).toBe(true);
  });

  test('each event is returned as soon as its blank line arrives, not earlier', () => {
    const p = new SseParser();
    const frame = b(`data: ${SDK_EVENTS[0]}\n\n`);
    expect(p.push(frame.subarray(0, frame.length - 1))).toEqual([]); // "...}\n" without the blank line
    const [e] = p.push(frame.subarray(frame.length - 1));
    expect(e?.data).toBe(SDK_EVENTS[0]);
    expect(e?.raw.equals(frame)).toBe(true);
    expect(p.end()).toEqual([]);
  });

  test('v0.3 frames and a mid-stream `event: error` frame', () => {
    const err = '{"jsonrpc":"2.0","id":"a3","error":{"code":-32001,"message":"Task not found: nope"}}';
    const stream = b('data: {"id":2,"jsonrpc":"2.0","result":{"kind":"status-update","final":false}}\n\n' + `event: error\ndata: ${err}\n\n`);
    const events = parseSse(stream);
    expect(events.map((e) => e.event)).toEqual([undefined, 'error']);
    expect(events[1]?.data).toBe(err);
    expect(events[1]?.raw.toString()).toBe(`event: error\ndata: ${err}\n\n`);
  });

  test('splitting the SDK stream at every byte gives the same events', () => {
    const events = parseChunked(SDK_STREAM, everyByte(SDK_STREAM));
    expect(events.map(fields)).toEqual(parseSse(SDK_STREAM).map(fields));
    expect(rawText(events)).toEqual(SDK_EVENTS.map((j) => `data: ${j}\n\n`));
  });
});

describe('SseParser: line ends', () => {
  test('CRLF stream', () => {
    const stream = b('event: error\r\ndata: a\r\ndata: b\r\n\r\n: ping\r\n\r\ndata: c\r\n\r\n');
    const events = parseSse(stream);
    expect(events.map(fields)).toEqual([
      { data: 'a\nb', event: 'error', id: undefined, retry: undefined, hasData: true, commentOnly: false, terminated: true },
      { data: '', event: undefined, id: undefined, retry: undefined, hasData: false, commentOnly: true, terminated: true },
      { data: 'c', event: undefined, id: undefined, retry: undefined, hasData: true, commentOnly: false, terminated: true },
    ]);
    expect(rawText(events)).toEqual(['event: error\r\ndata: a\r\ndata: b\r\n\r\n', ': ping\r\n\r\n', 'data: c\r\n\r\n']);
  });

  test('CR-only and mixed line ends', () => {
    expect(parseSse(b('data: a\rdata: b\r\rdata: c\n\r')).map((e) => [e.data, e.raw.toString()])).toEqual([
      ['a\nb', 'data: a\rdata: b\r\r'],
      ['c', 'data: c\n\r'],
    ]);
    // "\n\r" is two line ends (LF, then CR), not one.
    expect(parseSse(b('data: x\n\r')).map((e) => e.terminated)).toEqual([true]);
  });

  test('a CR at the end of one chunk and an LF at the start of the next are one line end', () => {
    const p = new SseParser();
    expect(p.push(b('data: a\r'))).toEqual([]);
    expect(p.push(b('\n'))).toEqual([]); // if this LF were a second line end it would dispatch here
    const events = p.push(b('\n'));
    expect(events.map((e) => [e.data, e.raw.toString()])).toEqual([['a', 'data: a\r\n\n']]);
  });

  test('CR then a non-LF byte in the next chunk: the CR alone ended the line', () => {
    const p = new SseParser();
    expect(p.push(b('data: a\r'))).toEqual([]);
    expect(p.push(b('data: b\r\r')).map((e) => e.data)).toEqual(['a\nb']);
  });

  test('dispatching CR at a chunk end: event is returned at once, the LF is carried into the next raw', () => {
    const p = new SseParser();
    const first = p.push(b('data: a\r\n\r'));
    expect(first.map((e) => [e.data, e.raw.toString()])).toEqual([['a', 'data: a\r\n\r']]);
    const second = p.push(b('\ndata: b\r\n\r\n'));
    // The carried LF does not make an extra (empty) event.
    expect(second.map((e) => [e.data, e.raw.toString(), e.commentOnly])).toEqual([['b', '\ndata: b\r\n\r\n', false]]);
    expect(p.end()).toEqual([]);
  });

  test('a carried LF that is the last byte of the stream is flushed by end() as an inert block', () => {
    const p = new SseParser();
    expect(p.push(b('data: a\r\n\r')).map((e) => e.data)).toEqual(['a']);
    expect(p.push(b('\n'))).toEqual([]);
    const tail = p.end();
    expect(tail.map((e) => [e.raw.toString(), e.commentOnly, e.hasData])).toEqual([['\n', true, false]]);
  });
});

describe('SseParser: fields', () => {
  const one = (s: string): SseEvent => {
    const events = parseSse(b(s));
    expect(events).toHaveLength(1);
    return events[0] as SseEvent;
  };

  test('multi-line data is joined with "\\n"; only one space after the colon is stripped', () => {
    expect(one('data: a\ndata:b\ndata:  c\ndata:\n\n').data).toBe('a\nb\n c\n');
  });

  test('a line without a colon is a field with an empty value', () => {
    const e = one('data\ndata\n\n');
    expect([e.data, e.hasData]).toEqual(['\n', true]);
    expect(one('data\n\n')).toMatchObject({ data: '', hasData: true, commentOnly: false });
  });

  test('colons after the first belong to the value', () => {
    expect(one('data: a: b :c\n\n').data).toBe('a: b :c');
  });

  test('event, id and retry; the last one wins', () => {
    expect(fields(one('event: a\nevent: update\nid: 1\nid: 42\nretry: 5\nretry: 3000\ndata: x\n\n'))).toEqual({
      data: 'x',
      event: 'update',
      id: '42',
      retry: 3000,
      hasData: true,
      commentOnly: false,
      terminated: true,
    });
  });

  test('id containing NUL is ignored; an empty id is kept', () => {
    expect(one('id: 7\nid: a\u0000b\ndata: x\n\n').id).toBe('7');
    expect(one('id: a\u0000b\n\n')).toMatchObject({ id: undefined, commentOnly: true });
    expect(one('id\n\n')).toMatchObject({ id: '', commentOnly: false, hasData: false });
  });

  test('retry accepts ASCII digits only', () => {
    expect(one('retry: 1500\n\n').retry).toBe(1500);
    expect(one('retry:0\n\n').retry).toBe(0);
    for (const bad of ['retry: 12a', 'retry: -1', 'retry: 1.5', 'retry:  10', 'retry: ', 'retry', 'retry: ١٢']) {
      expect(one(`${bad}\n\n`)).toMatchObject({ retry: undefined, commentOnly: true });
    }
  });

  test('unknown and differently-cased field names are ignored', () => {
    for (const line of ['Data: x', 'DATA: x', 'data : x', ' data: x', 'datas: x', 'dat: x', 'datadata', 'eventful: x', 'foo', 'retryx: 5']) {
      expect(one(`${line}\n\n`)).toMatchObject({ data: '', hasData: false, commentOnly: true, event: undefined });
    }
  });

  test('an event field alone is a field but not data', () => {
    expect(one('event: ping\n\n')).toMatchObject({ event: 'ping', hasData: false, commentOnly: false });
  });

  test('UTF-8 values, split inside multi-byte characters', () => {
    const stream = b('event: é\ndata: héllo € 😀\n\n');
    const events = parseChunked(stream, everyByte(stream));
    expect(events.map((e) => [e.event, e.data])).toEqual([['é', 'héllo € 😀']]);
    expect(concatRaw(events).equals(stream)).toBe(true);
  });

  test('a long line spread over many chunks', () => {
    const value = 'x'.repeat(100_000) + '😀';
    const stream = b(`data: ${value}\n\n`);
    const cuts = Array.from({ length: 200 }, (_, i) => i * 503 + 1);
    expect(parseChunked(stream, cuts).map((e) => e.data)).toEqual([value]);
  });
});

describe('SseParser: comments and keep-alives', () => {
  test('a comment-only block is returned, in order, as commentOnly', () => {
    const stream = b(': keep-alive\n\ndata: 1\n\n:\n\ndata: 2\n\n');
    const events = parseSse(stream);
    expect(events.map((e) => [e.commentOnly, e.hasData, e.data, e.raw.toString()])).toEqual([
      [true, false, '', ': keep-alive\n\n'],
      [false, true, '1', 'data: 1\n\n'],
      [true, false, '', ':\n\n'],
      [false, true, '2', 'data: 2\n\n'],
    ]);
  });

  test('comments inside a block are part of that event’s raw and do not affect data', () => {
    const e = parseSse(b(': before\ndata: a\n: between\ndata: b\n\n'));
    expect(e.map((x) => [x.data, x.commentOnly, x.raw.toString()])).toEqual([['a\nb', false, ': before\ndata: a\n: between\ndata: b\n\n']]);
  });

  test('a comment containing "data:" is still a comment', () => {
    expect(parseSse(b(':data: evil\n\n'))[0]).toMatchObject({ commentOnly: true, hasData: false, data: '' });
  });

  test('stray blank lines become empty inert blocks so every byte is accounted for', () => {
    const events = parseSse(b('\n\ndata: a\n\n\r\n'));
    expect(events.map((e) => [e.raw.toString(), e.commentOnly])).toEqual([
      ['\n', true],
      ['\n', true],
      ['data: a\n\n', false],
      ['\r\n', true],
    ]);
  });
});

describe('SseParser: BOM', () => {
  const BOM = '\uFEFF';

  test('a leading BOM is ignored for parsing and kept in raw', () => {
    const events = parseSse(b(`${BOM}data: a\n\n`));
    expect(events.map((e) => [e.data, e.hasData])).toEqual([['a', true]]);
    expect(events[0]?.raw.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
  });

  test('a BOM split across chunks is still ignored', () => {
    const stream = b(`${BOM}data: a\n\n`);
    expect(parseChunked(stream, [1, 2]).map((e) => e.data)).toEqual(['a']);
  });

  test('only one BOM, and only at the very start of the stream', () => {
    expect(parseSse(b(`${BOM}${BOM}data: a\n\n`))[0]).toMatchObject({ hasData: false, commentOnly: true });
    expect(parseSse(b(`data: a\n\n${BOM}data: b\n\n`)).map((e) => e.hasData)).toEqual([true, false]);
    expect(parseSse(b(`data: ${BOM}a\n\n`))[0]?.data).toBe(`${BOM}a`);
  });

  test('a BOM alone on the first line makes it a blank line', () => {
    expect(parseSse(b(`${BOM}\ndata: a\n\n`)).map((e) => [e.commentOnly, e.data])).toEqual([
      [true, ''],
      [false, 'a'],
    ]);
  });
});

describe('SseParser: end of stream', () => {
  test('complete fields without the final blank line are flushed by end() as terminated: false', () => {
    const p = new SseParser();
    expect(p.push(b('data: a\n\nevent: error\ndata: {"x":1}\n'))).toHaveLength(1);
    const [last] = p.end();
    expect(last).toMatchObject({ event: 'error', data: '{"x":1}', hasData: true, terminated: false });
    expect(last?.raw.toString()).toBe('event: error\ndata: {"x":1}\n');
  });

  test('an unterminated last line is kept in raw but not parsed', () => {
    const [last] = parseSse(b('data: a\ndata: partial'));
    expect(last).toMatchObject({ data: 'a', terminated: false });
    expect(last?.raw.toString()).toBe('data: a\ndata: partial');
    expect(parseSse(b('data: only-partial'))).toMatchObject([{ hasData: false, commentOnly: true, terminated: false }]);
  });

  test('a trailing CR ends the last line', () => {
    expect(parseSse(b('data: a\r'))).toMatchObject([{ data: 'a', hasData: true, terminated: false }]);
  });

  test('nothing pending: end() returns no event; empty chunks are harmless', () => {
    const p = new SseParser();
    expect(p.push(Buffer.alloc(0))).toEqual([]);
    expect(p.push(b('data: a\n\n'))).toHaveLength(1);
    expect(p.push(Buffer.alloc(0))).toEqual([]);
    expect(p.end()).toEqual([]);
  });

  test('input after end() is refused', () => {
    const p = new SseParser();
    p.end();
    expect(() => p.push(b('data: a\n\n'))).toThrow(/after end/);
    expect(() => p.end()).toThrow(/after end/);
  });
});

describe('SseParser: maximum event size', () => {
  test('default is 4 MiB like the SDK client', () => {
    expect(DEFAULT_MAX_SSE_EVENT_BYTES).toBe(4 * 1024 * 1024);
    expect(new SseParser().maxEventBytes).toBe(DEFAULT_MAX_SSE_EVENT_BYTES);
    const atLimit = b(`data: ${'x'.repeat(DEFAULT_MAX_SSE_EVENT_BYTES - 8)}\n\n`);
    expect(atLimit.length).toBe(DEFAULT_MAX_SSE_EVENT_BYTES);
    expect(new SseParser().push(atLimit)).toHaveLength(1);
    const over = b(`data: ${'x'.repeat(DEFAULT_MAX_SSE_EVENT_BYTES - 7)}\n\n`);
    expect(() => new SseParser().push(over)).toThrow(SseEventTooLargeError);
  });

  test('an event of exactly maxEventBytes passes, one byte more throws a typed error', () => {
    const ok = b('data: 12345\n\n'); // 13 bytes
    expect(new SseParser({ maxEventBytes: 13 }).push(ok)).toHaveLength(1);
    let caught: unknown;
    try {
      new SseParser({ maxEventBytes: 12 }).push(ok);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(SseEventTooLargeError);
    expect(caught).toBeInstanceOf(Error);
    expect(caught).toMatchObject({ name: 'SseEventTooLargeError', maxEventBytes: 12, eventBytes: 13, events: [] });
  });

  test('the limit counts comments and does not depend on chunking', () => {
    const stream = b(': pad pad pad\ndata: 1\n\n'); // 23 bytes
    for (const cuts of [[], everyByte(stream), [5], [20]]) {
      expect(() => parseChunked(stream, cuts, new SseParser({ maxEventBytes: 22 }))).toThrow(SseEventTooLargeError);
      expect(parseChunked(stream, cuts, new SseParser({ maxEventBytes: 23 }))).toHaveLength(1);
    }
  });

  test('a block that never ends is stopped once its buffered bytes exceed the limit', () => {
    const p = new SseParser({ maxEventBytes: 1000 });
    let thrown: unknown;
    let pushed = 0;
    try {
      for (; pushed < 100; pushed++) p.push(b('data: ' + 'y'.repeat(94) + '\n')); // 101 bytes, no blank line
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(SseEventTooLargeError);
    expect(pushed).toBe(9); // the 10th push brings the block to 1010 bytes
    expect(() => p.push(b('\n'))).toThrow(SseEventTooLargeError); // the parser stays failed
  });

  test('complete events that preceded the oversized one in the same push are handed over on the error', () => {
    const p = new SseParser({ maxEventBytes: 20 });
    try {
      p.push(b('data: a\n\n: ka\n\ndata: ' + 'z'.repeat(50) + '\n\n'));
      throw new Error('expected a throw');
    } catch (e) {
      expect(e).toBeInstanceOf(SseEventTooLargeError);
      expect(rawText((e as SseEventTooLargeError).events)).toEqual(['data: a\n\n', ': ka\n\n']);
    }
  });

  test('a carried LF does not count towards the limit', () => {
    const p = new SseParser({ maxEventBytes: 9 });
    expect(p.push(b('data: a\r\r'))).toHaveLength(1);
    expect(p.push(b('\ndata: b\n\n')).map((e) => e.raw.toString())).toEqual(['\ndata: b\n\n']); // 10 raw bytes, 9 counted
  });

  test('rejects a non-positive limit', () => {
    expect(() => new SseParser({ maxEventBytes: 0 })).toThrow(RangeError);
    expect(() => new SseParser({ maxEventBytes: 1.5 })).toThrow(RangeError);
  });
});

describe('writer', () => {
  test('formatSseEvent: exact SDK framing', () => {
    expect(formatSseEvent({ data: SDK_EVENTS[0] as string }).toString()).toBe(`data: ${SDK_EVENTS[0]}\n\n`);
  });

  test('formatSseEvent: event and id lines, then one data line per line of data', () => {
    expect(formatSseEvent({ event: 'update', id: '7', data: 'a\r\nb\rc\nd' }).toString()).toBe('event: update\nid: 7\ndata: a\ndata: b\ndata: c\ndata: d\n\n');
    expect(formatSseEvent({ data: '' }).toString()).toBe('data: \n\n');
    expect(formatSseEvent({ data: 'x\n' }).toString()).toBe('data: x\ndata: \n\n');
  });

  test('formatSseEvent refuses values that would inject lines', () => {
    expect(() => formatSseEvent({ event: 'a\ndata: evil', data: 'x' })).toThrow(TypeError);
    expect(() => formatSseEvent({ id: 'a\rb', data: 'x' })).toThrow(TypeError);
    expect(() => formatSseEvent({ id: 'a\u0000b', data: 'x' })).toThrow(TypeError);
  });

  test('formatSseErrorEvent gives `event: error\\ndata: <json>\\n\\n`', () => {
    const json = '{"jsonrpc":"2.0","id":2,"error":{"code":-32050,"message":"blocked by policy"}}';
    const frame = formatSseErrorEvent(json);
    expect(frame.toString('utf8')).toBe(`event: error\ndata: ${json}\n\n`);
    expect(parseSse(frame).map(fields)).toEqual([
      { data: json, event: 'error', id: undefined, retry: undefined, hasData: true, commentOnly: false, terminated: true },
    ]);
  });

  test('formatSseErrorEvent keeps pretty-printed JSON parseable', () => {
    const json = JSON.stringify({ jsonrpc: '2.0', id: 'a3', error: { code: -32001, message: 'x' } }, null, 2);
    const [e] = parseSse(formatSseErrorEvent(json));
    expect(JSON.parse(e?.data ?? '')).toEqual(JSON.parse(json));
  });

  test('property: format then parse returns the data, with CR and CRLF read as LF', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.option(fc.stringMatching(/^[^\r\n]*$/)), (data, event) => {
        const init = event === null ? { data } : { data, event };
        const events = parseSse(formatSseEvent(init));
        expect(events).toHaveLength(1);
        expect(events[0]?.data).toBe(data.replace(/\r\n|\r/g, '\n'));
        expect(events[0]?.event).toBe(event ?? undefined);
        expect(events[0]?.hasData).toBe(true);
      }),
    );
  });
});

describe('property: any chunking gives the same events and reassembles the input', () => {
  const text = fc.array(fc.constantFrom('a', 'Z', ' ', ':', '0', '9', '{', '"', 'é', '€', '😀', '\u0000', '\uFEFF'), { maxLength: 8 }).map((cs) => cs.join(''));
  const line = fc.oneof(
    text.map((v) => `data: ${v}`),
    text.map((v) => `data:${v}`),
    fc.constant('data'),
    text.map((v) => `event: ${v}`),
    text.map((v) => `id: ${v}`),
    fc.constantFrom('retry: 1000', 'retry:7', 'retry: x1', 'retry'),
    text.map((v) => `:${v}`),
    text.map((v) => `foo: ${v}`),
    text,
    fc.constant(''),
  );
  const eol = fc.constantFrom('\n', '\r\n', '\r');
  const streamArb = fc
    .record({
      bom: fc.boolean(),
      lines: fc.array(fc.tuple(line, eol), { maxLength: 30 }),
      tail: fc.option(text, { nil: undefined }), // an unterminated last line
    })
    .map(({ bom, lines, tail }) => b((bom ? '\uFEFF' : '') + lines.map(([l, e]) => l + e).join('') + (tail ?? '')));

  const cutsFor = (input: Buffer): fc.Arbitrary<number[]> => fc.array(fc.integer({ min: 0, max: input.length }), { maxLength: 12 });

  /**
   * Per-event raw may differ from the unsplit parse only by the LF of a CRLF that ended an event:
   * in a split parse that LF can move from the end of one event to the start of the next.
   */
  function expectSameRawUpToCarriedLF(split: readonly SseEvent[], whole: readonly SseEvent[]): void {
    let s = split.map((e) => e.raw.toString('latin1'));
    const w = whole.map((e) => e.raw.toString('latin1'));
    // A carried LF at the very end of the stream surfaces as a last block of its own.
    if (s.length === w.length + 1 && s[s.length - 1] === '\n' && s[s.length - 2]?.endsWith('\r')) {
      s = s.slice(0, -1);
      s[s.length - 1] += '\n';
    }
    expect(s.length).toBe(w.length);
    for (let i = 0; i < s.length; i++) {
      let si = s[i] as string;
      let wi = w[i] as string;
      if (i > 0 && si.startsWith('\n') && (w[i - 1] as string).endsWith('\r\n') && !(s[i - 1] as string).endsWith('\r\n')) si = si.slice(1);
      if (wi.endsWith('\r\n') && !si.endsWith('\r\n')) wi = wi.slice(0, -1);
      expect(si).toBe(wi);
    }
  }

  /** The split parse has the same fields as the unsplit one, reassembles the input, and differs in raw only by a carried LF. */
  function expectSameAsWhole(input: Buffer, split: readonly SseEvent[]): void {
    const whole = parseSse(input);
    expect(concatRaw(split).equals(input)).toBe(true);
    const splitFields = split.map(fields);
    if (split.length === whole.length + 1) splitFields.pop(); // a trailing carried-LF block, checked just below
    expect(splitFields).toEqual(whole.map(fields));
    expectSameRawUpToCarriedLF(split, whole);
  }

  test('unsplit parse agrees with a naive WHATWG reference and reassembles the input', () => {
    fc.assert(
      fc.property(streamArb, (input) => {
        const events = parseSse(input);
        expect(events.map(fields)).toEqual(referenceParse(input));
        expect(concatRaw(events).equals(input)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  test('random cut points (including inside UTF-8 characters and CRLF pairs)', () => {
    fc.assert(
      fc.property(
        streamArb.chain((input) => fc.tuple(fc.constant(input), cutsFor(input))),
        ([input, cuts]) => expectSameAsWhole(input, parseChunked(input, cuts)),
      ),
      { numRuns: 1000 },
    );
  });

  test('one byte per chunk', () => {
    fc.assert(
      fc.property(streamArb, (input) => expectSameAsWhole(input, parseChunked(input, everyByte(input)))),
      { numRuns: 300 },
    );
  });

  test('cuts inside every multi-byte character and every CRLF of a fixed stream', () => {
    const input = b('\uFEFFdata: é€😀\r\n: c\r\n\r\nevent: é\rdata: 😀\r\r\ndata: x\r\n\r\n');
    const interesting = everyByte(input).filter((i) => {
      const prev = input[i - 1] ?? 0;
      const cur = input[i] ?? 0;
      return (prev === 0x0d && cur === 0x0a) || (cur & 0xc0) === 0x80;
    });
    expect(interesting.length).toBeGreaterThan(10);
    for (const cut of interesting) expectSameAsWhole(input, parseChunked(input, [cut]));
    // The cut between the final CR and LF leaves that LF as a last inert block of its own.
    expect(rawText(parseChunked(input, [input.length - 1])).slice(-2)).toEqual(['data: x\r\n\r', '\n']);
    expect(parseSse(input).map((e) => [e.event, e.data])).toEqual([
      [undefined, 'é€😀'],
      ['é', '😀'],
      [undefined, 'x'],
    ]);
  });
});
