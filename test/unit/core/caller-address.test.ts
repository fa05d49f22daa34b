/** The address an unverified caller counts as: IPv6 by its prefix (one host holds a whole /64), IPv4 per address. */
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { callerAddress } from '../../../src/core/address';

type Parts = number[];

/** An IPv4-mapped IPv6 address (::ffff:0:0/96): an IPv4 caller. */
const mapped = (p: Parts): boolean => p.slice(0, 5).every((x) => x === 0) && p[5] === 0xffff;
/** Any other IPv6 address, as its eight 16-bit parts. */
const v6: fc.Arbitrary<Parts> = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }).filter((p) => !mapped(p));
const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join('.'));
const prefix = fc.integer({ min: 1, max: 128 });

const full = (p: Parts): string => p.map((x) => x.toString(16).padStart(4, '0')).join(':');
const short = (p: Parts): string => new ipaddr.IPv6(p).toRFC5952String();
/** `p` with bit `bit` (0 = the first) flipped. */
const flip = (p: Parts, bit: number): Parts => p.map((x, i) => (i === bit >> 4 ? x ^ (0x8000 >> (bit & 15)) : x));

test('an IPv6 caller is its /64, written one way', () => {
  expect(callerAddress('2001:db8:1:2:3:4:5:6', 64)).toBe('2001:db8:1:2::/64');
  expect(callerAddress('2001:DB8:0001:0002:0000:0000:0000:0007%eth0', 64)).toBe('2001:db8:1:2::/64');
  expect(callerAddress('::1', 64)).toBe('::/64');
  expect(callerAddress('2001:db8::1', 128)).toBe('2001:db8::1/128');
  expect(callerAddress(undefined, 64)).toBe('unknown');
});

test('property: addresses with the same first bits are one caller; a bit changed within them, another', () => {
  fc.assert(
    fc.property(v6, prefix, fc.nat(127), (p, bits, bit) => {
      fc.pre(!mapped(flip(p, bit)));
      const changed = callerAddress(full(flip(p, bit)), bits);
      if (bit < bits) expect(changed).not.toBe(callerAddress(full(p), bits));
      else expect(changed).toBe(callerAddress(full(p), bits));
    }),
  );
});

test('property: rotating through the interface half of a /64 stays one caller', () => {
  fc.assert(
    fc.property(v6, fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 4, maxLength: 4 }), (p, host) => {
      expect(callerAddress(short([...p.slice(0, 4), ...host]), 64)).toBe(callerAddress(short(p), 64));
    }),
  );
});

test('property: every spelling of an address (full, compressed, upper case, with a zone id) is one caller', () => {
  fc.assert(
    fc.property(v6, prefix, fc.constantFrom('%eth0', '%2', '%en0'), (p, bits, zone) => {
      const key = callerAddress(short(p), bits);
      for (const spelling of [full(p), full(p).toUpperCase(), short(p).toUpperCase(), `${short(p)}${zone}`]) {
        expect(callerAddress(spelling, bits)).toBe(key);
      }
    }),
  );
});

test('property: at 128 bits each IPv6 address is its own caller', () => {
  fc.assert(
    fc.property(v6, v6, (a, b) => {
      expect(callerAddress(full(a), 128) === callerAddress(full(b), 128)).toBe(full(a) === full(b));
    }),
  );
});

test('property: IPv4, and IPv4 mapped into IPv6 (a dual-stack socket), is per address whatever the prefix', () => {
  fc.assert(
    fc.property(v4, v4, prefix, (a, b, bits) => {
      expect(callerAddress(a, bits)).toBe(a);
      expect(callerAddress(`::ffff:${a}`, bits)).toBe(a);
      expect(callerAddress(`::FFFF:${a}`, bits)).toBe(a);
      expect(callerAddress(`::ffff:${a}`, bits) === callerAddress(b, bits)).toBe(a === b);
    }),
  );
});

test("property: an address's group is the same asked again, under another prefix, and after thousands of other addresses", () => {
  fc.assert(
    fc.property(v6, prefix, prefix, fc.array(v6, { minLength: 0, maxLength: 40 }), (a, bits, other, rest) => {
      const first = callerAddress(full(a), bits);
      expect(callerAddress(full(a), other)).toBe(callerAddress(full(a), other));
      for (const r of rest) callerAddress(full(r), bits);
      expect(callerAddress(full(a), bits)).toBe(first);
      expect(first.endsWith(`/${bits}`)).toBe(true);
    }),
  );
  // Past the groups kept (4096), the next addresses still get theirs.
  const many = Array.from({ length: 5000 }, (_v, i) => `2001:db8:${(i >> 8).toString(16)}:${(i & 0xff).toString(16)}::1`);
  const groups = many.map((m) => callerAddress(m, 64));
  expect(many.map((m) => callerAddress(m, 64))).toEqual(groups);
  expect(new Set(groups).size).toBe(5000);
});
