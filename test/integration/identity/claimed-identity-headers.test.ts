/**
 * Claimed identities (IDENTITY_POLICY=claims): X-AOS-Agent-* values may be RFC 8187
 * ext-values (`UTF-8''` + percent-encoded UTF-8), decoded before the guardian sees them. Raw header
 * values cannot carry control characters or line breaks, but decoded ones could: `UTF-8''a%0Ab%1B[31m`
 * became a name with a line break and an escape sequence in the envelope's `from` and the audit line,
 * and a value as long as the header limit allows was copied whole into every envelope. Now a claimed
 * field is held to the rules of verified ones (bounded, no control characters) or is "unknown".
 * Real SDK agent, real HTTP guardian; each header, each control character class and size.
 */
import { useStack } from '../../helpers/proxy-harness';

const s = useStack();

const CONTROLS = [0x00, 0x01, 0x07, 0x09, 0x0a, 0x0d, 0x1b, 0x1f, 0x7f];
const HEADERS = ['x-aos-agent-name', 'x-aos-agent-url', 'x-aos-agent-version'] as const;
const FIELD = { 'x-aos-agent-name': 'name', 'x-aos-agent-url': 'url', 'x-aos-agent-version': 'version' } as const;

/** Every trick for every header; `want` is what the guardian must see for that field. */
const CASES: Array<{ header: (typeof HEADERS)[number]; value: string; want: string | 'unknown' }> = HEADERS.flatMap((header) => [
  ...CONTROLS.map((c) => ({ header, value: `UTF-8''evil${encodeURIComponent(String.fromCharCode(c))}agent`, want: 'unknown' })),
  { header, value: `UTF-8''ok%22%7D%0A%7B%22level%22%3A30%2C%22msg%22%3A%22a2a%20call%22%7D`, want: 'unknown' },
  { header, value: 'x'.repeat(5000), want: 'unknown' },
  { header, value: `UTF-8''${encodeURIComponent('é'.repeat(1500))}`, want: 'unknown' },
  // Positive controls: a plain value and an ext-value with non-ASCII letters come through as they are.
  { header, value: 'plain-value', want: 'plain-value' },
  { header, value: `UTF-8''${encodeURIComponent('Kuchenbäcker 焼き')}`, want: 'Kuchenbäcker 焼き' },
]);

test(`claimed X-AOS-Agent-* values (${CASES.length} cases): the guardian sees each bounded and free of control characters, or "unknown"`, async () => {
  const p = await s.proxy({ ROLE: 'server', IDENTITY_POLICY: 'claims' });
  await p.upstreamCard.ready();
  const wrong: string[] = [];
  for (const [i, c] of CASES.entries()) {
    s.guardian.clear();
    const res = await fetch(`${p.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [c.header]: c.value },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: i,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: `m-${i}`, role: 'user', parts: [{ kind: 'text', text: 'hi' }] } },
      }),
    });
    await res.text();
    const from = s.guardian.calls()[0]?.params?.context?.from?.agent as Record<string, unknown> | undefined;
    const got = from?.[FIELD[c.header]];
    if (got !== c.want) wrong.push(`${c.header}: ${c.value.slice(0, 48)} -> ${JSON.stringify(got).slice(0, 60)}`);
  }
  expect(wrong).toEqual([]);
});
