/**
 * The reference guardian's serviceParameters rules: A2A versions and extensions allowed by default and
 * per peer, read from the request envelope's params.context.serviceParameters.
 */
import type { Envelope } from '../../src/aos/schemas';
import { createEngine } from '../../src/guardian/engine';
import { parsePolicy, type PolicyFile } from '../../src/guardian/policy';
import { asEnvelope, requestEnvelope, responseEnvelope, sendMessage, v1TaskResult } from './fixtures/envelopes';

const EXT_A = 'https://example.com/ext/a';
const EXT_B = 'https://example.com/ext/b';
const engine = createEngine(
  parsePolicy(
    {
      serviceParameters: {
        versions: ['1.0'],
        extensions: [EXT_A],
        peers: [{ match: ['Legacy partner'], versions: ['0.3', '1.0'], extensions: [EXT_A, EXT_B] }],
      },
    } satisfies PolicyFile,
    'test',
  ),
);

/** A client-side request hook (the peer is the server agent the observed client calls), showing `sp`. */
function withParameters(sp: unknown, peerName = 'Peer agent'): Envelope {
  const env = requestEnvelope(sendMessage('v1', 'hello'), { side: 'client', peer: { name: peerName } }) as unknown as {
    params: { context: Record<string, unknown> };
  };
  if (sp !== undefined) env.params.context.serviceParameters = sp;
  return asEnvelope(env);
}

const decide = (env: Envelope) => {
  const r = engine.decide(env);
  return [r.decision, r.reasonCode];
};

test('defaults: an allowed version and extension pass; another version or extension is denied', () => {
  expect(decide(withParameters({ 'A2A-Version': '1.0', 'A2A-Extensions': [EXT_A] }))).toEqual(['allow', ['ALLOWED']]);
  expect(decide(withParameters({ 'A2A-Version': '0.3', 'A2A-Extensions': [] }))).toEqual(['deny', ['VERSION_NOT_ALLOWED']]);
  expect(decide(withParameters({ 'A2A-Version': '1.0', 'A2A-Extensions': [EXT_A, EXT_B] }))).toEqual(['deny', ['EXTENSION_NOT_ALLOWED']]);
});

test('a peer rule allows that peer what the defaults refuse, and only that peer', () => {
  expect(decide(withParameters({ 'A2A-Version': '0.3', 'A2A-Extensions': [EXT_B] }, 'Legacy partner'))).toEqual(['allow', ['ALLOWED']]);
  expect(decide(withParameters({ 'A2A-Version': '0.3', 'A2A-Extensions': [EXT_B] }, 'Someone else'))).toEqual(['deny', ['VERSION_NOT_ALLOWED']]);
});

test('with rules set, a request that shows no service parameters is denied; responses are not checked', () => {
  expect(decide(withParameters(undefined))).toEqual(['deny', ['SERVICE_PARAMETERS_UNKNOWN']]);
  expect(engine.decide(responseEnvelope('SendMessage', v1TaskResult('done'))).decision).toBe('allow');
});

test('without rules nothing is checked', () => {
  const open = createEngine(parsePolicy({}, 'test'));
  expect(open.decide(withParameters({ 'A2A-Version': '0.3', 'A2A-Extensions': [EXT_B] })).decision).toBe('allow');
  expect(open.decide(withParameters(undefined)).decision).toBe('allow');
});

test('a policy with an unknown member in serviceParameters is refused at load', () => {
  expect(() => parsePolicy({ serviceParameters: { version: ['1.0'] } }, 'test')).toThrow(/serviceParameters/);
});
