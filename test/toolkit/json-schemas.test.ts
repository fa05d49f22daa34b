/**
 * The toolkit's JSON Schemas (packages/toolkit/schemas/), for guardian authors who do not write
 * TypeScript: current with the zod schemas they are generated from; the envelope schema accepts every
 * envelope a real a2a-guard sends (request and response hooks, both sides, v0.3 and v1.0 clients of a
 * real SDK agent); the answer schema accepts what allow/deny/modify build and refuses what a2a-guard refuses.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { allow, deny, modify, type Envelope } from '@a2a-guard/toolkit';
import { makeClient, sendReq, startAgent, type TestAgent } from '../helpers/agent';
import { startGuardian, type TestGuardian } from '../helpers/guardian';
import { startTestProxy, type TestProxy } from '../helpers/proxy-harness';
import { ROOT } from '../helpers/pack';
import { SCHEMA_DIR, schemaFiles } from '../../scripts/toolkit-schemas';

const schema = (name: string): object => JSON.parse(fs.readFileSync(path.join(ROOT, SCHEMA_DIR, name), 'utf8')) as object;
const ajv = new Ajv2020({ strict: false });
const validEnvelope = ajv.compile(schema('envelope.schema.json'));
const validAnswer = ajv.compile(schema('answer.schema.json'));

test('the files are current (npm run toolkit:schema writes them)', () => {
  for (const [name, text] of Object.entries(schemaFiles())) expect([name, fs.readFileSync(path.join(ROOT, SCHEMA_DIR, name), 'utf8')]).toEqual([name, text]);
});

describe('envelope.schema.json, against what a real proxy sends', () => {
  let agent: TestAgent;
  let guardian: TestGuardian;
  let proxy: TestProxy;

  beforeAll(async () => {
    agent = await startAgent({ name: 'Schema Agent' });
    guardian = await startGuardian();
    proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'both', INSPECT_RESPONSES: 'true' });
  });

  afterAll(async () => {
    await proxy?.close();
    await guardian?.close();
    await agent?.close();
  });

  test('accepts every envelope of a v1.0 and a v0.3 call, request and response hooks, both sides', async () => {
    for (const version of ['1.0', '0.3'] as const) {
      const client = await makeClient(proxy.url, 'JSONRPC', version);
      await client.sendMessage(sendReq(`a question in ${version}`));
    }
    const calls = guardian.calls();
    // Per call: the client side's and the server side's request and response hooks.
    expect(calls.length).toBeGreaterThanOrEqual(8);
    for (const envelope of calls) expect([envelope.id, validEnvelope(envelope), validEnvelope.errors ?? null]).toEqual([envelope.id, true, null]);
  });

  test('refuses an envelope without context, with an empty method or with a payload that is not an object', () => {
    const envelope = guardian.calls()[0] as Envelope;
    expect(validEnvelope(envelope)).toBe(true);
    expect(validEnvelope({ ...envelope, params: { payload: envelope.params.payload } })).toBe(false);
    expect(validEnvelope({ ...envelope, method: '' })).toBe(false);
    expect(validEnvelope({ ...envelope, params: { ...envelope.params, payload: [] } })).toBe(false);
  });
});

describe('answer.schema.json', () => {
  const envelope: Envelope = {
    jsonrpc: '2.0',
    id: 'e-1',
    method: 'message/send',
    params: {
      payload: { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { role: 'user', messageId: 'm', parts: [{ kind: 'text', text: 'hi' }] } } },
      context: {
        from: { agent: { url: 'https://a.example', name: 'A', version: '1' }, role: 'client' },
        to: { agent: { url: 'https://b.example', name: 'B', version: '1' }, role: 'server' },
      },
    },
  };
  const answer = (result: unknown, id: unknown = 'e-1') => ({ jsonrpc: '2.0', id, result });

  test('accepts what allow, deny and modify build', () => {
    for (const result of [
      allow(),
      deny('No.', { reasonCode: ['X'], reasoning: 'why' }),
      modify(envelope, { ...envelope.params.payload, id: 1 }, 'Masked.', { data: { n: 1 } }),
    ]) {
      expect([result.decision, validAnswer(answer(result))]).toEqual([result.decision, true]);
    }
  });

  test('refuses a decision AOS does not have, a missing message, a modify without modifiedRequest and a null id', () => {
    expect(validAnswer(answer({ decision: 'maybe', message: 'hmm' }))).toBe(false);
    expect(validAnswer(answer({ decision: 'deny' }))).toBe(false);
    expect(validAnswer(answer({ decision: 'modify', message: 'Masked.' }))).toBe(false);
    expect(validAnswer(answer(allow(), null))).toBe(false);
  });
});
