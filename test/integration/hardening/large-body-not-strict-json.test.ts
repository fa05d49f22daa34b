/**
 * A large body (256 KiB and up, read and parsed in pieces: core/json-pieces.ts) that a lenient parser
 * would read but that is not strict JSON is refused as the same spelling of a small one is (the same
 * code and words, the proxy's ErrorInfo), nothing shown to the guardian, nothing forwarded to the agent. Real SDK agent, real
 * HTTP guardian.
 */
import { lenientSpellings } from '../../helpers/lenient-json';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);

const s = useStack();
let proxy: TestProxy;
beforeAll(async () => {
  proxy = await s.proxy({});
});

const message = (text: string): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 'lenient',
    method: 'message/send',
    params: { message: { kind: 'message', messageId: 'm-lenient', role: 'user', parts: [{ kind: 'text', text }] } },
  });

async function answer(body: string | Buffer, contentType: string): Promise<{ status: number; code?: number; reason?: string; message?: string }> {
  const res = await fetch(`${proxy.url}/a2a/jsonrpc`, { method: 'POST', headers: { 'content-type': contentType }, body });
  const json = (await res.json()) as { error?: { code: number; message: string; data?: { reason?: string }[] } };
  return { status: res.status, code: json.error?.code, reason: json.error?.data?.[0]?.reason, message: json.error?.message };
}

const small = lenientSpellings(message('harmless'));
const large = lenientSpellings(message(`harmless ${'1 '.repeat(150_000)}`));

test.each(large.map(([name, body], i) => [name, body, small[i]?.[1] as string | Buffer] as const))('%s', async (_name, body, smallBody) => {
  const guardianCalls = s.guardian.calls().length;
  for (const contentType of ['application/json', 'text/plain']) {
    const got = await answer(body, contentType);
    expect(got).toMatchObject({ status: 200, code: expect.any(Number) });
    // Refused as the same spelling of a small body is: the same code and words.
    expect(got).toEqual(await answer(smallBody, contentType));
  }
  expect(s.guardian.calls().length).toBe(guardianCalls);
  expect(s.agent.received.filter((r) => r.method === 'POST')).toEqual([]);
});
