import {
  AGENT_HEADERS,
  UNKNOWN,
  decodeAgentHeader,
  encodeAgentHeader,
  fullAgent,
  hookContext,
  partialAgent,
  partialFromHeaders,
  towards,
} from '../../../src/aos/identity';
import { A2AContext, Agent, PartialAgent } from '../../../src/aos/schemas';

describe('fullAgent', () => {
  test('nothing known -> every required field is "unknown", no description', () => {
    const a = fullAgent({}, {});
    expect(a).toEqual({ id: UNKNOWN, name: UNKNOWN, url: UNKNOWN, version: UNKNOWN, instructions: UNKNOWN, provider: { name: UNKNOWN, url: UNKNOWN } });
    expect(UNKNOWN).toBe('unknown');
    expect('description' in a).toBe(false);
    expect(Agent.safeParse(a).success).toBe(true);
  });

  test('card fills in what variables leave unset', () => {
    expect(
      fullAgent({}, { name: 'card-name', url: 'http://card', version: '3', description: 'from card', providerName: 'Org', providerUrl: 'http://org' }),
    ).toEqual({
      id: UNKNOWN,
      name: 'card-name',
      url: 'http://card',
      version: '3',
      instructions: UNKNOWN,
      description: 'from card',
      provider: { name: 'Org', url: 'http://org' },
    });
  });

  test('variables win over the card', () => {
    const a = fullAgent(
      {
        id: 'id-1',
        name: 'env-name',
        url: 'http://env',
        version: '9',
        description: 'env desc',
        instructions: 'do X',
        providerName: 'EnvOrg',
        providerUrl: 'http://envorg',
      },
      { name: 'card-name', url: 'http://card', version: '3', description: 'card desc', providerName: 'Org', providerUrl: 'http://org' },
    );
    expect(a).toEqual({
      id: 'id-1',
      name: 'env-name',
      url: 'http://env',
      version: '9',
      instructions: 'do X',
      description: 'env desc',
      provider: { name: 'EnvOrg', url: 'http://envorg' },
    });
  });

  test('partial overrides mix with the card field by field', () => {
    const a = fullAgent({ name: 'env-name', providerUrl: 'http://envorg' }, { name: 'card', version: '3', providerName: 'Org', providerUrl: 'http://org' });
    expect(a.name).toBe('env-name');
    expect(a.version).toBe('3');
    expect(a.url).toBe(UNKNOWN);
    expect(a.provider).toEqual({ name: 'Org', url: 'http://envorg' });
  });
});

describe('partialAgent / partialFromHeaders', () => {
  test('partialAgent takes url, name, version only', () => {
    expect(partialAgent({ name: 'n', url: 'u', version: 'v', description: 'd', providerName: 'p' })).toEqual({ url: 'u', name: 'n', version: 'v' });
    expect(partialAgent({})).toEqual({ url: UNKNOWN, name: UNKNOWN, version: UNKNOWN });
  });

  test('headers present', () => {
    const p = partialFromHeaders({ [AGENT_HEADERS.name]: 'caller', [AGENT_HEADERS.url]: 'http://caller', [AGENT_HEADERS.version]: '1.2' });
    expect(p).toEqual({ url: 'http://caller', name: 'caller', version: '1.2' });
    expect(PartialAgent.safeParse(p).success).toBe(true);
  });

  test('header names are the X-AOS-Agent-* ones, lower-cased as Node delivers them', () => {
    expect(AGENT_HEADERS).toEqual({ name: 'x-aos-agent-name', url: 'x-aos-agent-url', version: 'x-aos-agent-version' });
  });

  test('missing, blank or list-valued headers are "unknown"; values are trimmed', () => {
    expect(partialFromHeaders({})).toEqual({ url: UNKNOWN, name: UNKNOWN, version: UNKNOWN });
    expect(partialFromHeaders({ 'x-aos-agent-name': '   ', 'x-aos-agent-url': ['a', 'b'] as unknown as string, 'x-aos-agent-version': ' 2 ' })).toEqual({
      url: UNKNOWN,
      name: UNKNOWN,
      version: '2',
    });
  });
});

describe('hookContext', () => {
  const observed = fullAgent({ id: 'me', name: 'observed', url: 'http://observed', version: '1', instructions: 'i' }, {});
  const peer = partialAgent({ name: 'peer', url: 'http://peer', version: '2' });

  test('client side, request: from = observed client, to = peer server', () => {
    const c = hookContext('client', 'request', observed, peer);
    expect(c).toEqual({ from: { agent: observed, role: 'client' }, to: { agent: peer, role: 'server' } });
    expect(A2AContext.safeParse(c).success).toBe(true);
  });

  test('client side, response: from = peer server, to = observed client', () => {
    expect(hookContext('client', 'response', observed, peer)).toEqual({ from: { agent: peer, role: 'server' }, to: { agent: observed, role: 'client' } });
  });

  test('server side, request: from = peer client, to = observed server', () => {
    expect(hookContext('server', 'request', observed, peer)).toEqual({ from: { agent: peer, role: 'client' }, to: { agent: observed, role: 'server' } });
  });

  test('server side, response: from = observed server, to = peer client', () => {
    const c = hookContext('server', 'response', observed, peer);
    expect(c).toEqual({ from: { agent: observed, role: 'server' }, to: { agent: peer, role: 'client' } });
    expect(A2AContext.safeParse(c).success).toBe(true);
  });

  test('request and response contexts are mirror images', () => {
    for (const side of ['client', 'server'] as const) {
      const req = hookContext(side, 'request', observed, peer);
      const res = hookContext(side, 'response', observed, peer);
      expect(res.from).toEqual(req.to);
      expect(res.to).toEqual(req.from);
    }
  });
});

describe('X-AOS-Agent-* values outside ASCII (RFC 8187 ext-value)', () => {
  test("ASCII values go as they are; others as UTF-8'' + percent-encoding, and read back the same", () => {
    expect(encodeAgentHeader('Cake Baker')).toBe('Cake Baker');
    expect(encodeAgentHeader('https://a.example/x?y=1')).toBe('https://a.example/x?y=1');
    const jp = 'エージェント';
    const wire = encodeAgentHeader(jp);
    expect(wire).toMatch(/^UTF-8''[A-Za-z0-9%._~!*'()-]+$/);
    expect(decodeAgentHeader(wire)).toBe(jp);
    expect(decodeAgentHeader('Caf\u00e9')).toBe('Caf\u00e9'); // latin1 as received: not guessed
    expect(encodeAgentHeader('tab\there')).toMatch(/^UTF-8''/); // control characters never go raw
  });

  test('partialFromHeaders decodes ext-values; malformed percent-encoding is kept as sent', () => {
    const p = partialFromHeaders({
      [AGENT_HEADERS.name]: encodeAgentHeader('エージェント'),
      [AGENT_HEADERS.url]: 'https://c.example/',
      [AGENT_HEADERS.version]: "utf-8''%E0%A4",
    });
    expect(p).toEqual({ name: 'エージェント', url: 'https://c.example/', version: "utf-8''%E0%A4" });
  });
});

describe('towards (the callee of a client-side hook)', () => {
  const upstream = new URL('http://remote.example:9000/a2a');
  test("the card's URL when it has UPSTREAM_URL's origin (where the call lands)", () => {
    const card = { url: 'http://remote.example:9000/a2a/jsonrpc', name: 'Remote', version: '1' };
    expect(towards(card, upstream)).toBe(card);
    expect(towards({ ...card, url: 'HTTP://REMOTE.EXAMPLE:9000/x' }, upstream).url).toBe('HTTP://REMOTE.EXAMPLE:9000/x');
  });
  test("UPSTREAM_URL when the card names another origin, none, or no URL at all; its name and version stay the card's claims", () => {
    for (const url of [
      'http://other.example:9000/a2a',
      'http://remote.example:9001/a2a',
      'https://remote.example:9000/a2a',
      'remote.example:9000',
      UNKNOWN,
      '',
    ]) {
      expect(towards({ url, name: 'Remote', version: '1' }, upstream)).toEqual({ url: 'http://remote.example:9000/a2a', name: 'Remote', version: '1' });
    }
  });
});
