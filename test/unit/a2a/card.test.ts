import fc from 'fast-check';
import {
  agentAddress,
  cardIn,
  cardUrls,
  getJson,
  hostBoundCacheControl,
  identityFromCard,
  isCardPath,
  rewriteCard,
  rewriteEndpoint,
  weakEtag,
  type CardJson,
  type RewriteOptions,
} from '../../../src/a2a/card';

const opts = (publicBase: string, upstreamBase: string, signatures: 'strip' | 'keep' = 'strip'): RewriteOptions => ({
  publicBase: new URL(publicBase),
  upstreamBase: new URL(upstreamBase),
  signatures,
});

const SIG = [{ protected: 'eyJhbGciOiJFUzI1NiJ9', signature: 'abc' }];

/** The SDK's hybrid v0.3 card: url + additionalInterfaces + supportedInterfaces (wire reference 10.11). */
function hybridCard(origin: string): CardJson {
  return {
    name: 'echo',
    description: 'echo agent',
    version: '1.0.0',
    protocolVersion: '0.3.0',
    url: `${origin}/a2a/jsonrpc`,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [
      { url: `${origin}/a2a/jsonrpc`, transport: 'JSONRPC' },
      { url: `${origin}/a2a/rest`, transport: 'HTTP+JSON' },
      { url: 'agent.internal:50051', transport: 'GRPC' },
    ],
    supportedInterfaces: [
      { url: `${origin}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: `${origin}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
      { url: '127.0.0.1:50051', protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' },
      { url: `${origin}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    capabilities: { streaming: true },
    skills: [{ id: 'echo', name: 'echo', description: 'docs at https://agent.internal:4000/docs', tags: [] }],
    provider: { organization: 'Acme', url: 'https://acme.example' },
    signatures: SIG,
  };
}

describe('rewriteEndpoint', () => {
  test('same path layout, different scheme/host/port', () => {
    expect(rewriteEndpoint('http://127.0.0.1:4000/a2a/jsonrpc', opts('https://proxy.example', 'http://127.0.0.1:4000'))).toBe(
      'https://proxy.example/a2a/jsonrpc',
    );
  });

  test('upstream path prefix is replaced by the public path prefix', () => {
    const o = opts('https://proxy.example:8443/guard/', 'http://agent:4000/agent');
    expect(rewriteEndpoint('http://agent:4000/agent/a2a/rest', o)).toBe('https://proxy.example:8443/guard/a2a/rest');
    expect(rewriteEndpoint('http://agent:4000/agent', o)).toBe('https://proxy.example:8443/guard');
    expect(rewriteEndpoint('http://agent:4000/agent/', o)).toBe('https://proxy.example:8443/guard/');
  });

  test('upstream prefix only strips whole segments', () => {
    const o = opts('http://proxy:8080', 'http://agent:4000/agent');
    expect(rewriteEndpoint('http://agent:4000/agentx/rpc', o)).toBe('http://proxy:8080/agentx/rpc');
  });

  test('a card URL on another host than UPSTREAM_URL (agent advertises its public name) still points at the proxy', () => {
    expect(rewriteEndpoint('https://agent.public.example/a2a/jsonrpc', opts('http://proxy:8080', 'http://10.0.0.5:4000'))).toBe(
      'http://proxy:8080/a2a/jsonrpc',
    );
  });

  test('query is kept, fragment dropped; result is absolute', () => {
    const out = rewriteEndpoint('http://agent:4000/rpc?tenant=t1#frag', opts('https://proxy.example', 'http://agent:4000'));
    expect(out).toBe('https://proxy.example/rpc?tenant=t1');
    expect(() => new URL(out!)).not.toThrow();
  });

  test.each(['127.0.0.1:50051', 'agent.internal:50051', 'localhost:50051', 'grpc://agent:50051', 'dns:///agent:443', '', 'not a url', '/relative/path'])(
    'non-http(s) endpoint %p -> undefined',
    (raw) => {
      expect(rewriteEndpoint(raw, opts('https://proxy.example', 'http://agent:4000'))).toBeUndefined();
    },
  );

  test('public base with a default port and uppercase host is normalised by URL', () => {
    expect(rewriteEndpoint('http://agent:4000/a', opts('HTTPS://PROXY.EXAMPLE:443/', 'http://agent:4000'))).toBe('https://proxy.example/a');
  });
});

describe('rewriteCard', () => {
  test('v0.3 card: url and additionalInterfaces', () => {
    const card: CardJson = {
      name: 'v03',
      url: 'http://agent:4000/a2a/jsonrpc',
      version: '1',
      additionalInterfaces: [
        { url: 'http://agent:4000/a2a/jsonrpc', transport: 'JSONRPC' },
        { url: 'http://agent:4000/a2a/rest', transport: 'HTTP+JSON' },
      ],
    };
    const out = rewriteCard(card, opts('https://proxy.example', 'http://agent:4000'));
    expect(out).toEqual({
      name: 'v03',
      url: 'https://proxy.example/a2a/jsonrpc',
      version: '1',
      additionalInterfaces: [
        { url: 'https://proxy.example/a2a/jsonrpc', transport: 'JSONRPC' },
        { url: 'https://proxy.example/a2a/rest', transport: 'HTTP+JSON' },
      ],
    });
  });

  test('v1.0 card: supportedInterfaces, gRPC removed, other fields untouched', () => {
    const card: CardJson = {
      name: 'v1',
      version: '2',
      supportedInterfaces: [
        { url: 'http://agent:4000/base/a2a/jsonrpc', protocolBinding: 'JSONRPC', tenant: 't', protocolVersion: '1.0' },
        { url: 'agent:50051', protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' },
        { url: 'http://agent:4000/base/a2a/rest', protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
      ],
      documentationUrl: 'http://agent:4000/base/docs',
    };
    const out = rewriteCard(card, opts('http://proxy:8080/p', 'http://agent:4000/base'));
    expect(out.supportedInterfaces).toEqual([
      { url: 'http://proxy:8080/p/a2a/jsonrpc', protocolBinding: 'JSONRPC', tenant: 't', protocolVersion: '1.0' },
      { url: 'http://proxy:8080/p/a2a/rest', protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
    ]);
    expect(out.documentationUrl).toBe('http://agent:4000/base/docs');
    expect(out.url).toBeUndefined();
    expect('additionalInterfaces' in out).toBe(false);
  });

  test('hybrid card: all three places rewritten, no upstream URL left in any interface', () => {
    const card = hybridCard('http://127.0.0.1:4000');
    const out = rewriteCard(card, opts('https://guard.example:9443', 'http://127.0.0.1:4000'));
    expect(out.url).toBe('https://guard.example:9443/a2a/jsonrpc');
    expect(out.additionalInterfaces).toEqual([
      { url: 'https://guard.example:9443/a2a/jsonrpc', transport: 'JSONRPC' },
      { url: 'https://guard.example:9443/a2a/rest', transport: 'HTTP+JSON' },
    ]);
    expect(out.supportedInterfaces).toEqual([
      { url: 'https://guard.example:9443/a2a/jsonrpc', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: 'https://guard.example:9443/a2a/rest', protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
      { url: 'https://guard.example:9443/a2a/jsonrpc', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ]);
    for (const list of [out.additionalInterfaces, out.supportedInterfaces] as Array<Array<{ url: string }>>) {
      for (const i of list) {
        expect(i.url).not.toContain('127.0.0.1');
        expect(new URL(i.url).protocol).toBe('https:');
      }
    }
    expect(out.skills).toEqual(card.skills);
    expect(out.provider).toEqual(card.provider);
  });

  test('different upstream path prefix and public path prefix across the whole hybrid card', () => {
    const card = hybridCard('http://agent:4000/agent');
    const out = rewriteCard(card, opts('https://edge.example/team/guard', 'http://agent:4000/agent/'));
    expect(out.url).toBe('https://edge.example/team/guard/a2a/jsonrpc');
    expect((out.supportedInterfaces as Array<{ url: string }>).map((i) => i.url)).toEqual([
      'https://edge.example/team/guard/a2a/jsonrpc',
      'https://edge.example/team/guard/a2a/rest',
      'https://edge.example/team/guard/a2a/jsonrpc',
    ]);
  });

  test('signatures stripped by default mode "strip", kept with "keep"', () => {
    const card = hybridCard('http://a:1');
    const stripped = rewriteCard(card, opts('http://p', 'http://a:1', 'strip'));
    expect('signatures' in stripped).toBe(false);
    const kept = rewriteCard(card, opts('http://p', 'http://a:1', 'keep'));
    expect(kept.signatures).toEqual(SIG);
  });

  test('the input card is not mutated', () => {
    const card = hybridCard('http://a:1');
    const before = JSON.parse(JSON.stringify(card));
    rewriteCard(card, opts('http://p', 'http://a:1'));
    expect(card).toEqual(before);
  });

  test('entries without a url are left as they are; a url that is not a string and an interface field that is not a list are removed', () => {
    const card: CardJson = {
      supportedInterfaces: [{ protocolBinding: 'JSONRPC' }, 'junk', null, { url: 5 }, { url: ['http://elsewhere/a2a'] }],
      additionalInterfaces: 'not a list',
      url: 42,
    };
    const out = rewriteCard(card, opts('http://p', 'http://a'));
    // SDK clients String() a url: ["http://elsewhere/a2a"] is that address to them.
    expect(out).toEqual({ supportedInterfaces: [{ protocolBinding: 'JSONRPC' }, 'junk', null] });
  });

  /**
   * Decoders read endpoint members under other names: ts-proto's fromJSON (the SDK's v1.0 cards) the
   * proto names (`supported_interfaces`, `protocol_binding`), Go's encoding/json any letter case. Generated
   * spellings of every endpoint member, alone or next to the proxy's own: the rewritten card holds each
   * member once, in the proxy's spelling, and no agent URL anywhere.
   */
  test('endpoint members in any spelling a decoder reads: each leaves once, rewritten, in one spelling', () => {
    const spell = (name: string, how: number): string => {
      const snake = name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
      return [name, snake, name.toUpperCase(), snake.toUpperCase(), name[0]!.toUpperCase() + name.slice(1), snake.replace(/_/g, '-'), name.replace('r', 'R')][
        how % 7
      ] as string;
    };
    fc.assert(
      fc.property(fc.nat(6), fc.nat(6), fc.nat(6), fc.nat(6), fc.boolean(), (a, b, c, d, both) => {
        const iface = { [spell('url', c)]: 'http://a:1/a2a/jsonrpc', [spell('protocolBinding', d)]: 'JSONRPC', [spell('protocolVersion', d)]: '1.0' };
        const card: CardJson = {
          name: 'n',
          [spell('supportedInterfaces', a)]: [iface],
          [spell('additionalInterfaces', b)]: [{ [spell('url', a)]: 'http://a:1/a2a/rest', [spell('transport', b)]: 'HTTP+JSON' }],
          [spell('url', b)]: 'http://a:1/a2a/jsonrpc',
          [spell('preferredTransport', c)]: 'JSONRPC',
          ...(both ? { supportedInterfaces: [{ url: 'http://a:1/own', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] } : {}),
        };
        const out = rewriteCard(card, opts('http://p', 'http://a:1'));
        const text = JSON.stringify(out);
        expect(text).not.toContain('http://a:1');
        expect(Object.keys(out).sort()).toEqual(['additionalInterfaces', 'name', 'preferredTransport', 'supportedInterfaces', 'url']);
        const s0 = (out.supportedInterfaces as CardJson[])[0] as CardJson;
        expect(Object.keys(s0).sort()).toEqual(['protocolBinding', 'protocolVersion', 'url']);
        expect(s0.url).toBe(both ? 'http://p/own' : 'http://p/a2a/jsonrpc');
        expect((out.additionalInterfaces as CardJson[])[0]).toEqual({ url: 'http://p/a2a/rest', transport: 'HTTP+JSON' });
      }),
      { numRuns: 500 },
    );
  });
});

describe('identityFromCard', () => {
  test('undefined card -> {}', () => {
    expect(identityFromCard(undefined)).toEqual({});
  });

  test('v0.3 card: url, provider.organization', () => {
    expect(
      identityFromCard({
        name: 'Planner',
        url: 'http://planner/a2a',
        version: '0.9',
        description: 'plans',
        provider: { organization: 'Acme', url: 'https://acme' },
        supportedInterfaces: [{ url: 'http://other/x' }],
      }),
    ).toEqual({ name: 'Planner', url: 'http://planner/a2a', version: '0.9', description: 'plans', providerName: 'Acme', providerUrl: 'https://acme' });
  });

  test('v1.0 card: url from the first supportedInterfaces entry that has one', () => {
    expect(
      identityFromCard({
        name: 'Booker',
        version: '2.1.0',
        supportedInterfaces: [{ protocolBinding: 'GRPC' }, { url: 'http://booker/rpc', protocolBinding: 'JSONRPC' }, { url: 'http://booker/rest' }],
        provider: { organization: 'Travel Co', url: 'https://travel.example' },
      }),
    ).toEqual({ name: 'Booker', url: 'http://booker/rpc', version: '2.1.0', providerName: 'Travel Co', providerUrl: 'https://travel.example' });
  });

  test('empty strings and wrong types are treated as absent', () => {
    expect(identityFromCard({ name: '', url: 7, version: null, description: ['x'], provider: 'Acme' })).toEqual({});
    expect(identityFromCard({ provider: { name: 'Fallback' } })).toEqual({ providerName: 'Fallback' });
  });
});

describe('cardUrls', () => {
  test('base with a path: below the path, then the origin root', () => {
    expect(cardUrls(new URL('http://agent:4000/a2a')).map((u) => u.href)).toEqual([
      'http://agent:4000/a2a/.well-known/agent-card.json',
      'http://agent:4000/.well-known/agent-card.json',
    ]);
  });

  test('origin only: one candidate', () => {
    expect(cardUrls(new URL('http://agent:4000')).map((u) => u.href)).toEqual(['http://agent:4000/.well-known/agent-card.json']);
    expect(cardUrls(new URL('http://agent:4000/')).map((u) => u.href)).toEqual(['http://agent:4000/.well-known/agent-card.json']);
  });

  test('a direct card URL is used as it is', () => {
    expect(cardUrls(new URL('http://agent:4000/cards/me.json')).map((u) => u.href)).toEqual(['http://agent:4000/cards/me.json']);
  });
});

describe('weakEtag and isCardPath', () => {
  test('weakEtag is a deterministic weak validator that changes with the body', () => {
    const a = weakEtag(Buffer.from('{"a":1}'));
    expect(a).toMatch(/^W\/"[A-Za-z0-9_-]+"$/);
    expect(weakEtag(Buffer.from('{"a":1}'))).toBe(a);
    expect(weakEtag(Buffer.from('{"a":2}'))).not.toBe(a);
  });

  test.each([
    ['/.well-known/agent-card.json', true],
    ['/.well-known/agent.json', true],
    ['/tenant/.well-known/agent-card.json', true],
    ['/.well-known/agent-card.jsonx', false],
    ['/.well-known/agent-card', false],
    ['/well-known/agent-card.json', false],
    ['/a2a/jsonrpc', false],
  ])('isCardPath(%p) = %p', (p, want) => {
    expect(isCardPath(p)).toBe(want);
  });
});

describe('hostBoundCacheControl (a card rewritten from the request Host)', () => {
  test.each([
    ['public, max-age=3600', 'private, max-age=3600'],
    ['max-age=60, public', 'private, max-age=60'],
    ['private, max-age=5', 'private, max-age=5'],
    [['public', 'max-age=10'], 'private, max-age=10'],
    ['public, s-maxage=600', 'private, no-cache'],
    ['max-age=1, max-age=2', 'private, no-cache'],
    ['no-cache, max-age=60', 'private, no-cache'],
    ['no-store', 'private, no-store'],
    ['max-age=abc', 'private, no-cache'],
    [undefined, 'private, no-cache'],
  ] as const)("%j -> %s: never for a shared cache, the agent's freshness kept", (agent, expected) => {
    expect(hostBoundCacheControl(agent as string | string[] | undefined)).toBe(expected);
  });
});

describe('getJson: which redirects are followed', () => {
  /** A fake GET: the first URL redirects to `to`, anything else answers a card; the URLs asked, in order. */
  async function follow(from: string, to: string): Promise<{ asked: string[]; outcome: string }> {
    const asked: string[] = [];
    const once = async (u: URL) => {
      asked.push(u.href);
      return asked.length === 1 ? { status: 302, location: to, text: '' } : { status: 200, location: undefined, text: '{"name":"card"}' };
    };
    const outcome = await getJson(new URL(from), 1000, once).then(
      (r) => JSON.stringify(r.body),
      (e: Error) => `refused: ${e.message}`,
    );
    return { asked, outcome };
  }
  test.each([
    ['same origin, another path', 'http://agent.example:8080/a', '/b', true],
    ['http -> https, same host, default port', 'http://agent.example/a', 'https://agent.example/a', true],
    ['http -> https, same host and port', 'http://agent.example:8443/a', 'https://agent.example:8443/a', true],
    ['http -> https, same host, another port', 'http://agent.example/a', 'https://agent.example:9000/a', false],
    ['https -> http (downgrade)', 'https://agent.example/a', 'http://agent.example/a', false],
    ['another host', 'http://agent.example/a', 'http://169.254.169.254/latest/meta-data', false],
    ['https, another host', 'http://agent.example/a', 'https://internal.example/a', false],
    ['protocol-relative to another host', 'http://agent.example/a', '//127.0.0.1:9/x', false],
    ['another port', 'http://agent.example:8080/a', 'http://agent.example:9090/a', false],
  ])('%s', async (_what, from, to, followed) => {
    const r = await follow(from, to);
    expect(r.asked).toHaveLength(followed ? 2 : 1);
    expect(r.outcome.startsWith('refused')).toBe(!followed);
  });
});

describe('a minimal card (what the v0.3 A2AClient follows) on an unjudged answer', () => {
  const upstream = new URL('http://agent.example:8080/');
  const atAgent = (u: string) => agentAddress(u, upstream);
  test.each([
    ['the upstream host', { name: 'a', url: 'http://agent.example:9999/rpc' }],
    ['a loopback address', { name: 'a', url: 'http://127.0.0.1:41000/' }],
    ['a private address', { name: 'a', url: 'https://10.1.2.3/' }],
    ['an IPv6 loopback', { name: 'a', url: 'http://[::1]:80/' }],
    ['a cluster-internal name', { name: 'a', url: 'http://agent.default.svc.cluster.local/' }],
    ['a one-label name', { name: 'a', url: 'http://agent/' }],
    ['another spelling of url', { Name: 'a', URL: 'http://127.0.0.1/' }],
    ['an interface list', { name: 'a', supported_interfaces: [{ url: 'http://127.0.0.1/' }] }],
  ])('%s is a card', (_n, o) => {
    expect(cardIn(o, atAgent)).toBe('top');
  });
  test.each([
    ['a public link', { name: 'docs', url: 'https://docs.example/x' }],
    ['no name', { url: 'http://127.0.0.1/' }],
    ['not http', { name: 'a', url: 'ftp://127.0.0.1/' }],
    ['nested', { items: [{ name: 'a', url: 'http://127.0.0.1/' }] }],
  ])('%s is not', (_n, o) => {
    expect(cardIn(o, atAgent)).toBeUndefined();
  });
});
