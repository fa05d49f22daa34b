/**
 * The agent's A2A endpoints, from its card (a2a/endpoints.ts): REST bases (below which the path is
 * a route and the first segment may be a tenant) and JSON-RPC endpoints, in the proxy's request space.
 */
import { endpointsFromCard, NO_ENDPOINTS, withRestBases } from '../../../src/a2a/endpoints';
import { sdkCard, sdkCardV1 } from '../../helpers/classify';

describe('endpointsFromCard', () => {
  test("the SDK agent's hybrid card (v0.3 url/additionalInterfaces plus v1 supportedInterfaces): one REST base, one JSON-RPC endpoint", () => {
    expect(endpointsFromCard(sdkCard(), '')).toEqual({ rest: [['a2a', 'rest']], jsonrpc: [['a2a', 'jsonrpc']] });
  });

  test('the v1.0 card alone gives the same', () => {
    expect(endpointsFromCard(sdkCardV1(), '')).toEqual({ rest: [['a2a', 'rest']], jsonrpc: [['a2a', 'jsonrpc']] });
  });

  test('a pure v0.3 card: url defaults to JSON-RPC, additionalInterfaces carry their transport', () => {
    const card = {
      url: 'https://agent.example/rpc',
      additionalInterfaces: [
        { url: 'https://agent.example/api/v2', transport: 'HTTP+JSON' },
        { url: 'agent.example:50051', transport: 'GRPC' },
      ],
    };
    expect(endpointsFromCard(card, '')).toEqual({ rest: [['api', 'v2']], jsonrpc: [['rpc']] });
    expect(endpointsFromCard({ url: 'https://agent.example/api', preferredTransport: 'HTTP+JSON' }, '')).toEqual({ rest: [['api']], jsonrpc: [] });
  });

  test('the upstream base path is taken off (the proxy puts it back when it forwards)', () => {
    const card = sdkCard('https://agents.example/team/echo');
    expect(endpointsFromCard(card, '/team/echo')).toEqual({ rest: [['a2a', 'rest']], jsonrpc: [['a2a', 'jsonrpc']] });
    // Not under the base: kept as advertised.
    expect(endpointsFromCard(card, '/other')).toEqual({ rest: [['team', 'echo', 'a2a', 'rest']], jsonrpc: [['team', 'echo', 'a2a', 'jsonrpc']] });
  });

  test('entries are deduplicated regardless of letter case and trailing slash; paths are decoded', () => {
    const card = {
      supportedInterfaces: [
        { url: 'http://h/A2A/Rest/', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
        { url: 'http://h/a2a/rest', protocolBinding: 'http+json', protocolVersion: '0.3' },
        { url: 'http://h/caf%C3%A9', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ],
    };
    expect(endpointsFromCard(card, '')).toEqual({ rest: [['a2a', 'rest']], jsonrpc: [['café']] });
  });

  test('what cannot be an HTTP endpoint of the agent is ignored', () => {
    const card = {
      url: 42,
      supportedInterfaces: [
        { url: '/relative/path', protocolBinding: 'JSONRPC' },
        { url: 'ftp://h/x', protocolBinding: 'HTTP+JSON' },
        { url: 'http://h/a%2Fb', protocolBinding: 'HTTP+JSON' },
        { url: 'http://h/a/../b', protocolBinding: 'HTTP+JSON' },
        { url: 'grpc.example:443', protocolBinding: 'GRPC' },
        { url: 'http://h/x', protocolBinding: 'GRPC' },
        { url: 'http://h/y' },
        'not an object',
        null,
      ],
      additionalInterfaces: 'nope',
    };
    const e = endpointsFromCard(card, '');
    // "http://h/a/../b" is normalised by URL to "/b" before it is read.
    expect(e).toEqual({ rest: [['b']], jsonrpc: [] });
  });

  test('no card: no endpoints', () => {
    expect(endpointsFromCard(undefined, '')).toBe(NO_ENDPOINTS);
    expect(NO_ENDPOINTS).toEqual({ rest: [], jsonrpc: [] });
  });
});

describe('withRestBases (REST_BASE_PATHS)', () => {
  const fromCard = endpointsFromCard(sdkCard(), '');

  test("configured bases replace the card's; JSON-RPC endpoints stay", () => {
    expect(withRestBases(fromCard, [['api'], ['v2', 'rest']])).toEqual({ rest: [['api'], ['v2', 'rest']], jsonrpc: [['a2a', 'jsonrpc']] });
  });

  test('unset or empty: the card decides', () => {
    expect(withRestBases(fromCard, undefined)).toBe(fromCard);
    expect(withRestBases(fromCard, [])).toBe(fromCard);
  });
});
