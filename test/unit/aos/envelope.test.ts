import fc from 'fast-check';
import { buildEnvelope, envelopeBytes, envelopeJson, envelopeSlices, envelopeWireBytes } from '../../../src/aos/envelope';
import { Envelope, type A2AContext, type JsonObject } from '../../../src/aos/schemas';
import { fullAgent, hookContext, partialAgent } from '../../../src/aos/identity';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const context: A2AContext = hookContext(
  'client',
  'request',
  fullAgent({ id: 'c-1', name: 'client', url: 'http://client', version: '1', instructions: 'be nice', providerName: 'Acme', providerUrl: 'http://acme' }, {}),
  partialAgent({ name: 'server', url: 'http://server', version: '2' }),
);

const payload: JsonObject = { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { role: 'user', parts: [{ kind: 'text', text: 'hi' }] } } };

describe('buildEnvelope', () => {
  test('shape of a request hook envelope (spec 4.8)', () => {
    const env = buildEnvelope({ method: 'message/send', payload, context, reasoning: 'because' });
    expect(env.jsonrpc).toBe('2.0');
    expect(env.method).toBe('message/send');
    expect(env.id).toMatch(UUID_V4);
    expect(env.params.payload).toBe(payload);
    expect(env.params.context).toBe(context);
    expect(env.params.reasoning).toBe('because');
    expect(Envelope.safeParse(env).success).toBe(true);
  });

  test('reasoning is absent (not undefined-valued) when not supplied', () => {
    const env = buildEnvelope({ method: 'tasks/get', payload, context });
    expect('reasoning' in env.params).toBe(false);
    const env2 = buildEnvelope({ method: 'tasks/get', payload, context, reasoning: undefined });
    expect('reasoning' in env2.params).toBe(false);
  });

  test('empty reasoning string is kept', () => {
    expect(buildEnvelope({ method: 'tasks/get', payload, context, reasoning: '' }).params.reasoning).toBe('');
  });

  test('fresh uuid v4 per envelope', () => {
    const ids = new Set<string | number>();
    for (let i = 0; i < 200; i++) {
      const id = buildEnvelope({ method: 'message/send', payload, context }).id;
      expect(String(id)).toMatch(UUID_V4);
      ids.add(id);
    }
    expect(ids.size).toBe(200);
  });

  test('explicit id is used', () => {
    expect(buildEnvelope({ method: 'message/send', payload, context, id: 'fixed' }).id).toBe('fixed');
  });
});

const jsonObject = fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 6 }) as fc.Arbitrary<JsonObject>;

describe('envelopeJson', () => {
  test('without reasoning: same bytes as JSON.stringify(envelope) (property)', () => {
    fc.assert(
      fc.property(jsonObject, fc.string({ minLength: 1 }), (p, method) => {
        const env = buildEnvelope({ method, payload: p, context });
        expect(envelopeJson(env, JSON.stringify(p))).toBe(JSON.stringify(env));
      }),
      { numRuns: 100 },
    );
  });

  test('with reasoning: same JSON value as the envelope (property)', () => {
    fc.assert(
      fc.property(jsonObject, fc.string(), (p, reasoning) => {
        const env = buildEnvelope({ method: 'message/send', payload: p, context, reasoning });
        const text = envelopeJson(env, JSON.stringify(p));
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(env)));
      }),
      { numRuns: 100 },
    );
  });

  // Regression: buildEnvelope used to insert params keys as payload, context, reasoning while envelopeJson
  // writes payload, reasoning, context, so with reasoning the bytes differed from JSON.stringify(envelope).
  test('with reasoning: same bytes as JSON.stringify(envelope)', () => {
    fc.assert(
      fc.property(jsonObject, fc.option(fc.string(), { nil: undefined }), (p, reasoning) => {
        const env = buildEnvelope({ method: 'message/send', payload: p, context, reasoning });
        expect(envelopeJson(env, JSON.stringify(p))).toBe(JSON.stringify(env));
      }),
      { numRuns: 100 },
    );
  });

  test('the spliced payload text is used verbatim (bytes the guardian sees are the bytes forwarded)', () => {
    const env = buildEnvelope({ method: 'message/send', payload, context, id: 'e-1' });
    const payloadJson = JSON.stringify(payload);
    const text = envelopeJson(env, payloadJson);
    expect(text.startsWith('{"jsonrpc":"2.0","id":"e-1","method":"message/send","params":{"payload":')).toBe(true);
    expect(text).toContain(`"payload":${payloadJson},"context":`);
  });

  test('strings needing escapes in method, id and reasoning stay valid JSON', () => {
    const env = buildEnvelope({ method: 'a"b\\c\n', payload, context, id: '"\u2028', reasoning: '</script>"\u0000' });
    const parsed = JSON.parse(envelopeJson(env, JSON.stringify(payload)));
    expect(parsed.method).toBe('a"b\\c\n');
    expect(parsed.id).toBe('"\u2028');
    expect(parsed.params.reasoning).toBe('</script>"\u0000');
  });

  test('a caller-provided context JSON is spliced in', () => {
    const env = buildEnvelope({ method: 'tasks/get', payload, context, id: 'x' });
    const text = envelopeJson(env, JSON.stringify(payload), JSON.stringify(context));
    expect(text).toBe(JSON.stringify(env));
  });
});

describe('envelopeBytes', () => {
  test('the same bytes as envelopeJson, with or without reasoning, any payload text (property)', () => {
    fc.assert(
      fc.property(jsonObject, fc.option(fc.string(), { nil: undefined }), (p, reasoning) => {
        const env = buildEnvelope({ method: 'message/stream', payload: p, context, reasoning });
        const payloadJson = JSON.stringify(p);
        const bytes = envelopeBytes(env, Buffer.from(payloadJson, 'utf8'));
        const joined = Buffer.concat(bytes.chunks);
        expect(joined.length).toBe(bytes.length);
        expect(joined.toString('utf8')).toBe(envelopeJson(env, payloadJson));
      }),
      { numRuns: 100 },
    );
  });

  test('the payload buffer is sent as it is: the middle piece is that very buffer, not a copy', () => {
    const env = buildEnvelope({ method: 'message/send', payload, context, id: 'e-2' });
    const payloadBytes = Buffer.from(JSON.stringify(payload), 'utf8');
    const bytes = envelopeBytes(env, payloadBytes, JSON.stringify(context));
    expect(bytes.chunks).toHaveLength(3);
    expect(bytes.chunks[1]).toBe(payloadBytes);
    expect(Buffer.concat(bytes.chunks).toString('utf8')).toBe(JSON.stringify(env));
  });
});

describe('envelopeWireBytes', () => {
  test('a payload made as it is written: its slices in turn between head and tail, made afresh each time, and `chunks` made whole for a guardian that reads them', () => {
    const env = buildEnvelope({ method: 'message/send', payload, context, id: 'e-3', reasoning: 'why' });
    const text = Buffer.from(JSON.stringify(payload), 'utf8');
    let made = 0;
    const lazy = {
      length: text.length,
      *slices(): Generator<Buffer> {
        made++;
        for (let at = 0; at < text.length; at += 7) yield Buffer.from(text.subarray(at, at + 7));
      },
    };
    const bytes = envelopeWireBytes(env, lazy, JSON.stringify(context));
    const expected = Buffer.from(JSON.stringify(env), 'utf8');
    expect(bytes.length).toBe(expected.length);
    expect(Buffer.concat([...envelopeSlices(bytes)]).equals(expected)).toBe(true);
    expect(Buffer.concat([...envelopeSlices(bytes)]).equals(expected)).toBe(true);
    expect(made).toBe(2);
    expect(Buffer.concat(bytes.chunks).equals(expected)).toBe(true);
    // A payload buffer: envelopeBytes' own pieces.
    expect(envelopeWireBytes(env, text).chunks[1]).toBe(text);
  });
});
