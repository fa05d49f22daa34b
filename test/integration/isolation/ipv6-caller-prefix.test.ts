/**
 * An unverified IPv6 caller is its address's first CALLER_IPV6_PREFIX bits (64 by default), over real sockets: two
 * addresses of one prefix share one caller's calls in flight. Hosts rarely have two addresses in one /64 (loopback is
 * ::1 alone), so the test takes the two local IPv6 addresses sharing the most leading bits (e.g. a ULA and a
 * link-local address share 6: fd00::/8 and fe80::/10) and sets the prefix to that; it is skipped on a host without two.
 * The link-local one comes with its zone id (`%eth0`), which the proxy drops.
 *
 * Real parts: a real SDK agent (its "slow" task holds the caller's one place), the test guardian, a2a-guard
 * in-process listening on every address (HOST=::), raw HTTP calls from each address.
 */
import http from 'node:http';
import os from 'node:os';
import ipaddr from 'ipaddr.js';
import { waitFor } from '../../helpers/net';
import { useStack } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);

/** This host's two IPv6 addresses sharing the most leading bits (1 to 127), zone ids on link-local ones. */
function twoAddresses(): { a: string; b: string; shared: number } | undefined {
  const local = Object.entries(os.networkInterfaces()).flatMap(([name, list]) =>
    (list ?? []).filter((i) => i.family === 'IPv6').map((i) => (i.scopeid === 0 || i.scopeid === undefined ? i.address : `${i.address}%${name}`)),
  );
  const bits = (s: string): string =>
    ipaddr.IPv6.parse(s.split('%')[0] ?? s)
      .toByteArray()
      .map((b) => b.toString(2).padStart(8, '0'))
      .join('');
  let best: { a: string; b: string; shared: number } | undefined;
  for (const a of local) {
    for (const b of local) {
      const [x, y] = [bits(a), bits(b)];
      let shared = 0;
      while (shared < 128 && x[shared] === y[shared]) shared++;
      if (shared >= 1 && shared < 128 && shared > (best?.shared ?? 0)) best = { a, b, shared };
    }
  }
  return best;
}

const pair = twoAddresses();
const stack = useStack({ slowMs: 20_000 });

/** A JSON-RPC SendMessage from `from` to the proxy on `from` itself; resolves with its status (or 0 once aborted). */
function sendFrom(from: string, port: number, text: string, signal?: AbortSignal): Promise<number> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'SendMessage',
    params: { message: { messageId: `m-${text}`, role: 'ROLE_USER', parts: [{ text }] } },
  });
  return new Promise((resolve) => {
    const req = http.request({ host: from, localAddress: from, family: 6, port, method: 'POST', path: '/a2a/jsonrpc', signal }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.setHeader('content-type', 'application/json').setHeader('a2a-version', '1.0').end(body);
  });
}

(pair === undefined ? test.skip : test)('two IPv6 addresses within CALLER_IPV6_PREFIX are one caller; one bit more and they are two', async () => {
  const { a, b, shared } = pair as NonNullable<typeof pair>;
  const holding = new AbortController();
  try {
    for (const [prefix, second] of [
      [shared, 429],
      [shared + 1, 200],
    ] as const) {
      const proxy = await stack.proxy({ ROLE: 'server', HOST: '::', CALLER_IPV6_PREFIX: String(prefix), MAX_CALLS_PER_CALLER: '1', CALL_WAIT_MS: '0' });
      const port = Number(new URL(proxy.url).port);
      stack.agent.clear();
      void sendFrom(a, port, `slow ${prefix}`, holding.signal);
      await waitFor(() => stack.agent.received.length >= 1, 20_000, `the call from ${a} at the agent`);
      expect([prefix, await sendFrom(b, port, `from b ${prefix}`)]).toEqual([prefix, second]);
    }
  } finally {
    holding.abort();
  }
});
