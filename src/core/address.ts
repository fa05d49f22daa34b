/**
 * Addresses: the group a caller's address counts in (`callerAddress`), and which kind of host a URL names (public,
 * private or a cloud metadata endpoint), for the webhooks
 * the reference guardian admits and the card links the proxy treats as the agent's. A URL is parsed with WHATWG `URL`, as `fetch` parses it when
 * the agent later POSTs the notification, so every spelling of a host (2130706433, 0x7f.1,
 * 0177.0.0.1, %31%32%37.0.0.1, full-width digits, userinfo@, trailing dots, [::ffff:7f00:1])
 * is classified as the address it will connect to. Address ranges come from ipaddr.js: only its
 * `unicast` range is public (for IPv6, inside 2000::/3, the global unicast space).
 */
import ipaddr from 'ipaddr.js';

const MAPPED_V4 = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/;

/**
 * The address an unverified caller's shares are counted under: an IPv4 address (also one an IPv4-mapped IPv6 address
 * carries) as it is; an IPv6 address as its first `ipv6Prefix` bits (`2001:db8:1:2::/64`), zone id dropped and
 * written one way, since one host usually holds a whole /64 and could otherwise count as 2^64 callers.
 */
export function callerAddress(remoteAddress: string | undefined, ipv6Prefix: number): string {
  if (remoteAddress === undefined) return 'unknown';
  if (!remoteAddress.includes(':')) return remoteAddress;
  // How a dual-stack socket names an IPv4 caller, without the parse (~1 µs) other spellings take.
  const v4 = MAPPED_V4.exec(remoteAddress)?.[1];
  if (v4 !== undefined) return v4;
  // A call asks for its address's group at several stages: an IPv6 parse costs ~2.5 µs each time.
  const memoKey = `${ipv6Prefix}|${remoteAddress}`;
  const known = V6_GROUPS.get(memoKey);
  if (known !== undefined) return known;
  const group = ipv6Group(remoteAddress, ipv6Prefix);
  // Bounded: callers rotating addresses only empty it (each address then costs its parse, as without it).
  if (V6_GROUPS.size >= V6_GROUPS_KEPT) V6_GROUPS.clear();
  V6_GROUPS.set(memoKey, group);
  return group;
}

/** The groups of the IPv6 addresses seen last. */
const V6_GROUPS = new Map<string, string>();
const V6_GROUPS_KEPT = 4096;

function ipv6Group(remoteAddress: string, ipv6Prefix: number): string {
  let addr: ipaddr.IPv6;
  try {
    addr = ipaddr.IPv6.parse(remoteAddress.split('%', 1)[0] ?? '');
  } catch {
    return remoteAddress;
  }
  if (addr.isIPv4MappedAddress()) return addr.toIPv4Address().toString();
  const parts = addr.parts.map((part, i) => part & (0xffff << (16 - Math.min(16, Math.max(0, ipv6Prefix - 16 * i)))));
  return `${new ipaddr.IPv6(parts).toRFC5952String()}/${ipv6Prefix}`;
}

export type HostClass = 'public' | 'private' | 'metadata';

export interface HostVerdict {
  /** The host as the URL parser canonicalised it, without brackets or trailing dots. */
  readonly host: string;
  readonly class: HostClass;
  /** Why: an ipaddr.js range name (`loopback`, `teredo`, `carrierGradeNat`, ...), `metadata`, `localName` or `name`. */
  readonly range: string;
}

/** Cloud instance-metadata endpoints: refused even when private targets are allowed. */
const METADATA_NAMES: ReadonlySet<string> = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.tencentyun.com',
]);
const METADATA_V4: ReadonlySet<string> = new Set([
  '169.254.169.254', // AWS, GCP, Azure, OCI, OpenStack, DigitalOcean, ...
  '169.254.170.2', // AWS ECS task metadata and credentials
  '169.254.170.23', // AWS EKS pod identity agent
  '169.254.0.23', // Tencent Cloud
  '100.100.100.200', // Alibaba Cloud
  '192.0.0.192', // Oracle Cloud (legacy)
]);
const METADATA_V6: ReadonlySet<string> = new Set(['fd00:ec2::254', 'fd00:ec2::23'].map((a) => ipaddr.IPv6.parse(a).toNormalizedString()));

/** Names that only resolve inside a host or a private network. */
const LOCAL_NAMES: ReadonlySet<string> = new Set(['localhost', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback']);
const LOCAL_SUFFIXES = ['.localhost', '.local', '.localdomain', '.internal', '.home.arpa', '.svc'];

const DOTTED_QUAD = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
/** Deprecated IPv4-compatible IPv6 (::a.b.c.d); ipaddr.js calls it unicast. */
const IPV4_COMPATIBLE_V6 = ipaddr.IPv6.parseCIDR('::/96');

/** Classify the host of a parsed URL: the address `fetch` would connect to. */
export function classifyUrl(url: URL): HostVerdict {
  const raw = url.hostname;
  if (raw.startsWith('[') && raw.endsWith(']')) return classifyIPv6(ipaddr.IPv6.parse(raw.slice(1, -1)));
  // The URL parser already turned every IPv4 spelling into dotted decimal (and a name never ends in a number).
  if (DOTTED_QUAD.test(raw)) return classifyIPv4(ipaddr.IPv4.parse(raw));
  return classifyName(raw.replace(/\.+$/, ''));
}

function classifyName(host: string): HostVerdict {
  if (METADATA_NAMES.has(host)) return { host, class: 'metadata', range: 'metadata' };
  // A name without a dot is resolved through search domains: never a public internet host.
  const local = LOCAL_NAMES.has(host) || !host.includes('.') || LOCAL_SUFFIXES.some((s) => host.endsWith(s));
  return local ? { host, class: 'private', range: 'localName' } : { host, class: 'public', range: 'name' };
}

function classifyIPv4(addr: ipaddr.IPv4): HostVerdict {
  const host = addr.toString();
  if (METADATA_V4.has(host)) return { host, class: 'metadata', range: 'metadata' };
  const range = addr.range();
  return { host, class: range === 'unicast' ? 'public' : 'private', range };
}

function classifyIPv6(addr: ipaddr.IPv6): HostVerdict {
  const host = addr.toRFC5952String();
  if (METADATA_V6.has(addr.toNormalizedString()) || embeddedIPv4(addr).some((v4) => METADATA_V4.has(v4.toString()))) {
    return { host, class: 'metadata', range: 'metadata' };
  }
  const range = addr.range();
  if (range !== 'unicast') return { host, class: 'private', range };
  if (addr.match(IPV4_COMPATIBLE_V6)) return { host, class: 'private', range: 'ipv4Compatible' };
  if (!addr.match(GLOBAL_UNICAST_V6)) return { host, class: 'private', range: 'notGlobalUnicast' };
  return { host, class: 'public', range };
}

/** IPv4 addresses an IPv6 address carries (mapped, translated, NAT64, compatible, 6to4, Teredo). */
function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = addr.parts;
  const v4 = (hi: number, lo: number): ipaddr.IPv4 => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  const at = (i: number): number => p[i] ?? 0;
  switch (addr.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'rfc6052':
      return [v4(at(6), at(7))];
    case '6to4':
      return [v4(at(1), at(2))];
    case 'teredo': // server in bits 32-63, client (inverted) in the last 32 bits
      return [v4(at(2), at(3)), v4(at(6) ^ 0xffff, at(7) ^ 0xffff)];
    default:
      return addr.match(IPV4_COMPATIBLE_V6) ? [v4(at(6), at(7))] : [];
  }
}
