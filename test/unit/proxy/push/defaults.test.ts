/** When push notifications go through the relay by default, and what the variables refuse. */
import { configFrom } from '../../../../src/config/config';

const base = { UPSTREAM_URL: 'http://127.0.0.1:1' };

describe('PUSH_DELIVERIES', () => {
  it('relays by default once responses are inspected on the server side', () => {
    expect(configFrom({ ...base, INSPECT_RESPONSES: 'true' }).push.relay).toBe(true);
    expect(configFrom({ ...base, INSPECT_RESPONSES: 'true', ROLE: 'both' }).push.relay).toBe(true);
    expect(configFrom({ ...base, INSPECT_RESPONSES: 'true', ROLE: 'client' }).push.relay).toBe(false);
    expect(configFrom({ ...base }).push.relay).toBe(false);
  });

  it('keeps direct deliveries when asked, and refuses a relay a client sidecar cannot have', () => {
    expect(configFrom({ ...base, INSPECT_RESPONSES: 'true', PUSH_DELIVERIES: 'direct' }).push.relay).toBe(false);
    expect(() => configFrom({ ...base, ROLE: 'client', PUSH_DELIVERIES: 'relay' })).toThrow(/PUSH_DELIVERIES/);
  });

  it('binds the relay to loopback by default', () => {
    const push = configFrom({ ...base, INSPECT_RESPONSES: 'true' }).push;
    expect(push.host).toBe('127.0.0.1');
    expect(push.allowPrivate).toBe(false);
  });
});
