/** The webhook address check at delivery time, the SDK's auth headers, and the webhook connections kept within their part of the descriptors. */
import { PinnedDispatchers, authHeaders, checkedAddress, type Resolver } from '../../../../src/proxy/push/deliver';

const resolving =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('checkedAddress', () => {
  it('connects to the public address a name resolves to now', async () => {
    expect(await checkedAddress(new URL('https://hooks.example.com/x'), false, resolving('93.184.216.34'))).toEqual({ address: '93.184.216.34', family: 4 });
  });

  it.each([
    ['a name resolving to loopback', 'https://hooks.example.com/x', resolving('127.0.0.1')],
    ['a name with one private address among public ones', 'https://hooks.example.com/x', resolving('93.184.216.34', '10.0.0.5')],
    ['a name resolving to link-local IPv6', 'https://hooks.example.com/x', resolving('fe80::1')],
    ['a loopback literal in another spelling', 'http://2130706433/x', resolving()],
    ['localhost', 'http://localhost/x', resolving('127.0.0.1')],
  ])('refuses %s', async (_what, url, resolve) => {
    expect(await checkedAddress(new URL(url), false, resolve)).toHaveProperty('refused');
  });

  it('refuses metadata addresses even when private webhooks are allowed', async () => {
    expect(await checkedAddress(new URL('http://hooks.example.com/x'), true, resolving('169.254.169.254'))).toHaveProperty('refused');
    expect(await checkedAddress(new URL('http://hooks.example.com/x'), true, resolving('127.0.0.1'))).toEqual({ address: '127.0.0.1', family: 4 });
  });

  it('refuses a host that does not resolve, other schemes and credentials in the URL', async () => {
    const failing: Resolver = async () => {
      throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
    };
    expect(await checkedAddress(new URL('https://nowhere.example.com/'), false, failing)).toEqual({ refused: 'host does not resolve (ENOTFOUND)' });
    expect(await checkedAddress(new URL('ftp://hooks.example.com/'), false, resolving('93.184.216.34'))).toHaveProperty('refused');
    expect(await checkedAddress(new URL('https://u:p@hooks.example.com/'), false, resolving('93.184.216.34'))).toHaveProperty('refused');
  });
});

describe('authHeaders', () => {
  it('sends authentication as Authorization, else the token header, as the SDK push sender does', () => {
    expect(authHeaders({ url: 'x', token: 't', authentication: { scheme: 'Bearer', credentials: 'c' } })).toEqual({ authorization: 'Bearer c' });
    expect(authHeaders({ url: 'x', token: 't' })).toEqual({ 'x-a2a-notification-token': 't' });
    expect(authHeaders({ url: 'x' })).toEqual({});
  });
});

describe('PinnedDispatchers', () => {
  it("keeps connections to webhooks within the push deliveries' part of the descriptors: four per destination kept", async () => {
    // 16 connections: two destinations kept (four connections each, half of it), one caller may keep both.
    const kept = new PinnedDispatchers(16);
    const pin = (caller: string, i: number) => kept.pinned(new URL(`http://hook-${i}.example.com/`), `93.184.216.${i}`, 4, caller);
    for (let i = 1; i <= 3; i++) pin('a', i);
    expect(kept.held('a')).toBe(2);
    // Another caller's destination takes the place of one of the caller keeping the most.
    pin('b', 9);
    expect([kept.held('a'), kept.held('b')]).toEqual([1, 1]);
    await kept.close();
  });
});
