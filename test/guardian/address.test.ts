import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import type { JsonObject } from '../../src/aos/schemas';
import { classifyUrl, type HostClass } from '../../src/core/address';
import { createEngine } from '../../src/guardian/engine';
import { parsePolicy } from '../../src/guardian/policy';
import { requestEnvelope } from './fixtures/envelopes';

const classify = (url: string): { host: string; class: HostClass; range: string } => classifyUrl(new URL(url));

describe('address classes (ipaddr.js ranges; only unicast is public)', () => {
  const table: Array<[string, HostClass, string]> = [
    // IPv4
    ['8.8.8.8', 'public', 'unicast'],
    ['172.32.0.1', 'public', 'unicast'],
    ['100.128.0.1', 'public', 'unicast'],
    ['0.0.0.0', 'private', 'unspecified'],
    ['0.1.2.3', 'private', 'unspecified'],
    ['10.1.2.3', 'private', 'private'],
    ['172.16.0.1', 'private', 'private'],
    ['172.31.255.255', 'private', 'private'],
    ['192.168.1.1', 'private', 'private'],
    ['100.64.0.1', 'private', 'carrierGradeNat'],
    ['100.127.255.254', 'private', 'carrierGradeNat'],
    ['127.0.0.1', 'private', 'loopback'],
    ['127.255.255.254', 'private', 'loopback'],
    ['169.254.1.1', 'private', 'linkLocal'],
    ['192.0.0.8', 'private', 'reserved'],
    ['192.0.2.5', 'private', 'reserved'], // TEST-NET-1
    ['198.51.100.7', 'private', 'reserved'], // TEST-NET-2
    ['203.0.113.9', 'private', 'reserved'], // TEST-NET-3
    ['198.18.0.1', 'private', 'reserved'], // benchmarking
    ['198.19.255.254', 'private', 'reserved'],
    ['192.88.99.1', 'private', 'reserved'], // 6to4 relay anycast
    ['240.0.0.1', 'private', 'reserved'],
    ['224.0.0.1', 'private', 'multicast'],
    ['239.255.255.255', 'private', 'multicast'],
    ['255.255.255.255', 'private', 'broadcast'],
    ['192.175.48.1', 'private', 'as112'],
    ['192.52.193.1', 'private', 'amt'],
    // IPv6
    ['[2001:4860:4860::8888]', 'public', 'unicast'],
    ['[2a00:1450:4001:80b::200e]', 'public', 'unicast'],
    ['[::]', 'private', 'unspecified'],
    ['[::1]', 'private', 'loopback'],
    ['[fe80::1]', 'private', 'linkLocal'],
    ['[fec0::1]', 'private', 'deprecatedSiteLocal'],
    ['[fc00::1]', 'private', 'uniqueLocal'],
    ['[fd12:3456::1]', 'private', 'uniqueLocal'],
    ['[ff02::1]', 'private', 'multicast'],
    ['[::ffff:8.8.8.8]', 'private', 'ipv4Mapped'],
    ['[::ffff:0:8.8.8.8]', 'private', 'rfc6145'],
    ['[::8.8.8.8]', 'private', 'ipv4Compatible'],
    ['[64:ff9b::8.8.8.8]', 'private', 'rfc6052'], // NAT64
    ['[64:ff9b:1::1]', 'private', 'rfc6052'], // local-use NAT64
    ['[2002:808:808::1]', 'private', '6to4'],
    ['[2001::1]', 'private', 'teredo'],
    ['[2001:0:4136:e378:8000:63bf:3fff:fdd2]', 'private', 'teredo'],
    ['[2001:db8::1]', 'private', 'reserved'], // documentation
    ['[3fff::1]', 'private', 'reserved'], // documentation (RFC 9637)
    ['[2001:2::1]', 'private', 'benchmarking'],
    ['[100::1]', 'private', 'discard'],
    ['[5f00::1]', 'private', 'segmentRouting'],
    ['[4000::1]', 'private', 'notGlobalUnicast'],
    ['[1::1]', 'private', 'notGlobalUnicast'],
    // Cloud metadata endpoints, in every IPv6 wrapping
    ['169.254.169.254', 'metadata', 'metadata'],
    ['169.254.170.2', 'metadata', 'metadata'],
    ['169.254.170.23', 'metadata', 'metadata'],
    ['169.254.0.23', 'metadata', 'metadata'],
    ['100.100.100.200', 'metadata', 'metadata'],
    ['192.0.0.192', 'metadata', 'metadata'],
    ['[fd00:ec2::254]', 'metadata', 'metadata'],
    ['[fd00:ec2::23]', 'metadata', 'metadata'],
    ['[::ffff:169.254.169.254]', 'metadata', 'metadata'],
    ['[::169.254.169.254]', 'metadata', 'metadata'],
    ['[64:ff9b::169.254.169.254]', 'metadata', 'metadata'],
    ['[2002:a9fe:a9fe::1]', 'metadata', 'metadata'],
    ['[2001:0:a9fe:a9fe::1]', 'metadata', 'metadata'], // Teredo server
    ['[2001:0:1:2::5601:5601]', 'metadata', 'metadata'], // Teredo client (inverted bits)
    // Names
    ['hooks.example.com', 'public', 'name'],
    ['metadata', 'metadata', 'metadata'],
    ['metadata.google.internal', 'metadata', 'metadata'],
    ['METADATA.GOOGLE.INTERNAL.', 'metadata', 'metadata'],
    ['metadata.goog', 'metadata', 'metadata'],
    ['instance-data', 'metadata', 'metadata'],
    ['localhost', 'private', 'localName'],
    ['localhost.', 'private', 'localName'],
    ['api.localhost', 'private', 'localName'],
    ['localhost.localdomain', 'private', 'localName'],
    ['ip6-localhost', 'private', 'localName'],
    ['printer.local', 'private', 'localName'],
    ['db.corp.internal', 'private', 'localName'],
    ['router.home.arpa', 'private', 'localName'],
    ['kubernetes.default.svc', 'private', 'localName'],
    ['intranet', 'private', 'localName'],
  ];

  it.each(table)('%s is %s (%s)', (host, kind, range) => {
    expect(classify(`https://${host}/cb`)).toMatchObject({ class: kind, range });
  });

  it('classifies the address the WHATWG parser (and so fetch) connects to', () => {
    const loopbackForms = [
      'http://2130706433/',
      'http://0x7f000001/',
      'http://0X7F.1/',
      'http://0x7f.0x0.0x0.0x1/',
      'http://0177.0.0.01/',
      'http://127.1/',
      'http://127.0.1/',
      'http://127.0.0.1./',
      'http://%31%32%37.0.0.1/',
      'http://１２７.０.０.１/',
      'http://public.example@127.0.0.1/',
      'http://user:pw@127.0.0.1:8443/',
      'http://127.0.0.1\\@public.example/',
      'http://[0:0:0:0:0:0:0:1]/',
      'http://[::0001]/',
    ];
    for (const url of loopbackForms) expect([url, classify(url).class]).toEqual([url, 'private']);
    expect(classify('http://[::FFFF:7F00:1]/')).toMatchObject({ host: '::ffff:7f00:1', class: 'private', range: 'ipv4Mapped' });
    expect(classify('http://2852039166/')).toMatchObject({ host: '169.254.169.254', class: 'metadata' });
    // IPv6 zone ids are not URLs at all: the engine refuses them as invalid.
    expect(() => new URL('http://[fe80::1%25eth0]/')).toThrow();
  });

  it('calls public only what ipaddr.js calls unicast (property)', () => {
    const v6 = fc.ipV6().filter((a) => !a.includes('%'));
    fc.assert(
      fc.property(fc.oneof(fc.ipV4(), v6), (addr) => {
        const url = ipaddr.IPv6.isValid(addr) && addr.includes(':') ? `https://[${addr}]/` : `https://${addr}/`;
        const verdict = classify(url);
        if (verdict.class === 'public') expect(ipaddr.parse(addr).range()).toBe('unicast');
        if (ipaddr.parse(addr).range() !== 'unicast') expect(verdict.class).not.toBe('public');
      }),
      { numRuns: 2000 },
    );
  });
});

describe('push URL decisions are the same for every spelling of an address (property)', () => {
  const engine = createEngine(parsePolicy({ pushNotifications: { allowHttp: true } }, 'test'));
  const decide = (url: string): unknown => {
    const payload: JsonObject = {
      jsonrpc: '2.0',
      id: 1,
      method: 'CreateTaskPushNotificationConfig',
      params: { taskId: 't-1', id: 'c-1', url },
    };
    const { decision, reasonCode } = engine.decide(requestEnvelope(payload));
    return { decision, reasonCode };
  };

  /** Interesting IPv4 addresses: ipaddr.js range edges, metadata endpoints, and random ones. */
  const ipv4 = fc.oneof(
    fc.ipV4(),
    fc.constantFrom(
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.0.1',
      '100.64.0.1',
      '169.254.169.254',
      '100.100.100.200',
      '192.0.2.1',
      '198.51.100.1',
      '203.0.113.1',
      '198.18.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '8.8.8.8',
    ),
  );
  const octets = (a: string): number[] => a.split('.').map(Number);
  const asInt = (a: string): number => octets(a).reduce((acc, o) => acc * 256 + o, 0);
  const digitsFullWidth = (s: string): string => s.replace(/\d/g, (d) => String.fromCharCode(0xff10 + Number(d)));
  const percent = (s: string): string => [...s].map((c) => (/\d/.test(c) ? `%${c.charCodeAt(0).toString(16)}` : c)).join('');

  /** Host spellings WHATWG URL reads as the same IPv4 address. */
  const ipv4Forms: Array<(a: string, n: number) => string> = [
    (a) => a,
    (a) => String(asInt(a)),
    (a) => `0x${asInt(a).toString(16)}`,
    (a) => `0X${asInt(a).toString(16).toUpperCase()}`,
    (a) =>
      octets(a)
        .map((o) => `0${o.toString(8)}`)
        .join('.'),
    (a) =>
      octets(a)
        .map((o) => `0x${o.toString(16)}`)
        .join('.'),
    (a, n) =>
      octets(a)
        .map((o, i) => ((n >> i) & 1 ? `0x${o.toString(16)}` : String(o)))
        .join('.'),
    (a) => {
      const [x, y, z, w] = octets(a) as [number, number, number, number];
      return `${x}.${y}.${z * 256 + w}`;
    },
    (a) => {
      const [x, y, z, w] = octets(a) as [number, number, number, number];
      return `${x}.${(y << 16) + (z << 8) + w}`;
    },
    (a) => `${a}.`,
    (a) => percent(a),
    (a) => digitsFullWidth(a),
    (a) => `public.example@${a}`,
    (a) => `user:secret@${a}:8443`,
  ];

  it('IPv4 in decimal, hex, octal, short, dotted-with-dot, percent-encoded, full-width, with userinfo', () => {
    fc.assert(
      fc.property(ipv4, fc.nat({ max: ipv4Forms.length - 1 }), fc.nat({ max: 15 }), fc.constantFrom('https', 'http'), (addr, form, n, scheme) => {
        const spelled = (ipv4Forms[form] as (a: string, n: number) => string)(addr, n);
        expect(decide(`${scheme}://${spelled}/cb`)).toEqual(decide(`${scheme}://${addr}/cb`));
      }),
      { numRuns: 3000 },
    );
  });

  it('IPv6 compressed, expanded, upper-case, zero-padded, with a dotted tail', () => {
    const forms: Array<(a: ipaddr.IPv6) => string> = [
      (a) => a.toRFC5952String(),
      (a) => a.toNormalizedString(),
      (a) => a.toNormalizedString().toUpperCase(),
      (a) => a.parts.map((x) => x.toString(16).padStart(4, '0')).join(':'),
      (a) => {
        const p = a.parts;
        return `${p
          .slice(0, 6)
          .map((x) => x.toString(16))
          .join(':')}:${p[6]! >> 8}.${p[6]! & 255}.${p[7]! >> 8}.${p[7]! & 255}`;
      },
    ];
    const v6 = fc.oneof(
      fc.ipV6().filter((a) => !a.includes('%')),
      fc.constantFrom('::1', 'fe80::1', 'fd00:ec2::254', '2001:db8::1', '64:ff9b::a9fe:a9fe', '2002:a9fe:a9fe::', '2001::1', '2001:4860:4860::8888'),
    );
    fc.assert(
      fc.property(v6, fc.nat({ max: forms.length - 1 }), (text, form) => {
        const addr = ipaddr.IPv6.parse(text);
        const spelled = (forms[form] as (a: ipaddr.IPv6) => string)(addr);
        expect(decide(`https://[${spelled}]/cb`)).toEqual(decide(`https://[${addr.toRFC5952String()}]/cb`));
      }),
      { numRuns: 2000 },
    );
  });

  it('an IPv4 address wrapped in IPv6 is never public; a wrapped metadata address stays metadata', () => {
    const wraps: Array<(o: number[]) => string> = [
      (o) => `::ffff:${o.join('.')}`,
      (o) => `::ffff:0:${o.join('.')}`,
      (o) => `::${o.join('.')}`,
      (o) => `64:ff9b::${o.join('.')}`,
      (o) => `2002:${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}::1`,
      (o) => `2001:0:${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}::1`,
      (o) => `2001:0:1:2::${(((o[0]! << 8) | o[1]!) ^ 0xffff).toString(16)}:${(((o[2]! << 8) | o[3]!) ^ 0xffff).toString(16)}`,
    ];
    fc.assert(
      fc.property(ipv4, fc.nat({ max: wraps.length - 1 }), (addr, w) => {
        const wrapped = (wraps[w] as (o: number[]) => string)(octets(addr));
        const plain = classify(`https://${addr}/`).class;
        const verdict = classify(`https://[${wrapped}]/`).class;
        expect(verdict).toBe(plain === 'metadata' ? 'metadata' : 'private');
      }),
      { numRuns: 2000 },
    );
  });
});
