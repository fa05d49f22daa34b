/**
 * The push relay's listener has no authentication of its own: a POST for a key it does not hold is
 * answered 404 at once, before its body is read or held (a well-formed key costs a sender nothing to make).
 */
import net from 'node:net';
import { useStack } from '../../helpers/proxy-harness';

const stack = useStack({ sdkPushSender: true });

it('answers a delivery for an unknown key without waiting for (or holding) its body', async () => {
  const proxy = await stack.proxy({ INSPECT_RESPONSES: 'true' });
  const relay = new URL(proxy.pushRelayUrl as string);
  const key = 'A'.repeat(43);
  // Announces 8 MiB and sends a few bytes: the answer must not wait for the rest.
  const head = await new Promise<string>((resolve, reject) => {
    const s = net.connect(Number(relay.port), relay.hostname, () => {
      s.write(`POST /a2a-guard/push/${key} HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: ${8 * 1024 * 1024}\r\n\r\n{"kind":`);
    });
    let text = '';
    s.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      if (text.includes('\r\n\r\n')) {
        s.destroy();
        resolve(text);
      }
    });
    s.on('error', reject);
  });
  expect(head).toMatch(/^HTTP\/1\.1 404 /);
  expect(await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_push_deliveries_total')).toMatch(/outcome="refused_key"} 1/);
});
