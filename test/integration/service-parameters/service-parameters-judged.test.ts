/**
 * A2A service parameters (A2A-Version, A2A-Extensions / X-A2A-Extensions, their gRPC metadata) are shown
 * to the guardian in params.context.serviceParameters and reach the agent exactly as approved. Oracles: what
 * the SDK handler's ServerCallContext read (requestedExtensions, requestedVersion), what the guardian saw.
 */
import type * as A2AClient from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };
import { makeClient, rawRpc, sendReq, type Client } from '../../helpers/agent';
import { grpcFailure, makeGrpcClient } from '../../helpers/grpc';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { validateAosRequest } from '../../helpers/schema';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(30_000);

const sdkClient: typeof A2AClient = require('@a2a-js/sdk/client');
const EXT_A = 'https://example.com/ext/traceability/v1';
const EXT_B = 'https://example.com/ext/payments/v1';
const withExtensions = (...uris: string[]) => ({ serviceParameters: sdkClient.ServiceParameters.create(sdkClient.withA2AExtensions(...uris)) });

const rec = handlerRecorder();
const s = useStack({ grpc: true, grpcVersions: ['1.0', '0.3'], wrapRequestHandler: rec.wrap, extensions: [EXT_A, EXT_B] });
let proxy: TestProxy;
beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0' });
});
beforeEach(() => rec.clear());

/** The request envelopes the guardian judged. */
const requests = () => s.guardian.calls().filter((e) => e.params?.payload?.method !== undefined);
const sent = () => rec.calls.filter((c) => c.method === 'sendMessage');

type Caller = { name: string; version: '1.0' | '0.3'; client: (p: TestProxy) => Promise<Client> };
const CALLERS: Caller[] = [
  { name: 'JSON-RPC 1.0', version: '1.0', client: (p) => makeClient(p.url, 'JSONRPC', '1.0') },
  { name: 'JSON-RPC 0.3', version: '0.3', client: (p) => makeClient(p.url, 'JSONRPC', '0.3') },
  { name: 'REST 1.0', version: '1.0', client: (p) => makeClient(p.url, 'HTTP+JSON', '1.0') },
  { name: 'REST 0.3', version: '0.3', client: (p) => makeClient(p.url, 'HTTP+JSON', '0.3') },
  { name: 'gRPC 1.0', version: '1.0', client: async (p) => (await makeGrpcClient(p.url)).client },
  { name: 'gRPC 0.3', version: '0.3', client: async (p) => (await makeGrpcClient(p.url, { legacy: true, only03: true })).client },
];

describe.each(CALLERS)('$name SDK client', ({ version, client }) => {
  test('the guardian sees the version and the extensions; the handler acts with exactly those', async () => {
    const c = await client(proxy);
    await c.sendMessage(sendReq('with extensions'), withExtensions(EXT_A, EXT_B));
    const [env] = requests();
    expect(env.params.context.serviceParameters).toEqual({ 'A2A-Version': version, 'A2A-Extensions': [EXT_A, EXT_B] });
    expect(validateAosRequest(env, 'message/send', { fullSide: 'to' })).toEqual([]);
    expect(sent().map((h) => [h.requestedVersion, h.requestedExtensions])).toEqual([[version, [EXT_A, EXT_B]]]);
  });

  test('a guardian modify of the extensions is what the handler gets', async () => {
    s.guardian.script((env) =>
      env.params?.payload?.method === undefined
        ? { decision: 'allow' }
        : {
            decision: 'modify',
            modifiedRequest: {
              ...env,
              params: {
                ...env.params,
                context: { ...env.params.context, serviceParameters: { ...env.params.context.serviceParameters, 'A2A-Extensions': [EXT_A] } },
              },
            },
          },
    );
    const c = await client(proxy);
    await c.sendMessage(sendReq('one extension removed'), withExtensions(EXT_A, EXT_B));
    expect(sent().map((h) => h.requestedExtensions)).toEqual([[EXT_A]]);
  });
});

describe('the effective version and the two header spellings', () => {
  const v03 = (id: number, text: string) => ({
    jsonrpc: '2.0',
    id,
    method: 'message/send',
    params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
  });

  test('no A2A-Version: the guardian is shown 0.3, the version the agent uses', async () => {
    await rawRpc(`${proxy.url}/a2a/jsonrpc`, v03(1, 'no version header'), { 'X-A2A-Extensions': EXT_B });
    expect(requests()[0].params.context.serviceParameters).toEqual({ 'A2A-Version': '0.3', 'A2A-Extensions': [EXT_B] });
    expect(sent().map((h) => [h.requestedVersion, h.requestedExtensions])).toEqual([['0.3', [EXT_B]]]);
    expect(sent()[0]?.headers['a2a-version']).toBeUndefined();
  });

  test('A2A-Extensions and X-A2A-Extensions naming different lists is refused before the guardian and the agent', async () => {
    const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, v03(2, 'two lists'), { 'A2A-Extensions': EXT_A, 'X-A2A-Extensions': EXT_B });
    expect((r.json as { error: { code: number } }).error.code).toBe(-31400);
    expect(requests()).toEqual([]);
    expect(rec.calls).toEqual([]);
  });

  test('a guardian modify that changes A2A-Version is no valid answer: nothing reaches the agent', async () => {
    s.guardian.script((env) => ({
      decision: 'modify',
      modifiedRequest: {
        ...env,
        params: { ...env.params, context: { ...env.params.context, serviceParameters: { 'A2A-Version': '1.0', 'A2A-Extensions': [] } } },
      },
    }));
    const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, v03(3, 'upgrade me'), {});
    expect((r.json as { error: { code: number } }).error.code).toBe(-31503);
    expect(rec.calls).toEqual([]);
  });
});

describe('A2A_VERSIONS and A2A_EXTENSIONS refuse others in each binding', () => {
  let strict: TestProxy;
  beforeAll(async () => {
    strict = await s.proxy({ GRPC_PORT: '0', A2A_VERSIONS: '1.0', A2A_EXTENSIONS: EXT_A });
  });

  test('JSON-RPC: a 0.3 client gets VersionNotSupportedError (-32009); an unlisted extension gets invalid params (-32602)', async () => {
    const old = await makeClient(strict.url, 'JSONRPC', '0.3');
    await expect(old.sendMessage(sendReq('old version'))).rejects.toThrow(/-32009|not supported/);
    const current = await makeClient(strict.url, 'JSONRPC', '1.0');
    await expect(current.sendMessage(sendReq('unlisted'), withExtensions(EXT_B))).rejects.toThrow(/Extension not supported/);
    await current.sendMessage(sendReq('listed'), withExtensions(EXT_A));
    expect(sent().map((h) => h.requestedExtensions)).toEqual([[EXT_A]]);
    expect(requests()).toHaveLength(1);
  });

  test('REST: HTTP 400 for an unlisted version or extension', async () => {
    const old = await makeClient(strict.url, 'HTTP+JSON', '0.3');
    await expect(old.sendMessage(sendReq('old version'))).rejects.toThrow(/not supported/);
    const current = await makeClient(strict.url, 'HTTP+JSON', '1.0');
    await expect(current.sendMessage(sendReq('unlisted'), withExtensions(EXT_B))).rejects.toThrow(/Extension not supported/);
    expect(rec.calls).toEqual([]);
    expect(requests()).toEqual([]);
  });

  test('gRPC: VersionNotSupported for an unlisted version, INVALID_ARGUMENT for an unlisted extension', async () => {
    const old = (await makeGrpcClient(strict.url, { legacy: true, only03: true })).client;
    // The SDK's v0.3 client keeps the status message (its A2AError has no code).
    expect(await grpcFailure(old.sendMessage(sendReq('old version')))).toMatchObject({ message: expect.stringMatching(/version '0\.3' is not supported/) });
    const current = (await makeGrpcClient(strict.url)).client;
    expect(await grpcFailure(current.sendMessage(sendReq('unlisted'), withExtensions(EXT_B)))).toMatchObject({
      code: 3,
      message: expect.stringMatching(/Extension not supported/),
    });
    expect(rec.calls).toEqual([]);
    expect(requests()).toEqual([]);
  });
});
