/**
 * Every JSON-RPC refusal of classification carries the caller's id wherever the body could be read far
 * enough to find it: refusals for a header, a media type, a charset, the version, a member name, a body
 * over the depth or value bounds. Only a body that is not JSON (or not an object) answers `"id": null`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { classify, MAX_JSON_DEPTH, MAX_JSON_VALUES, type ClassifyOptions } from '../../../src/a2a/classify';
import { A2A_OPTIONS, expectRefusal } from '../../helpers/classify';

const V1: IncomingHttpHeaders = { 'content-type': 'application/json', 'a2a-version': '1.0' };
const send = (id: unknown, extra = ''): string =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}${extra}}`;

function refusedId(body: string, headers: IncomingHttpHeaders = V1, path = '/a2a/jsonrpc', opts: ClassifyOptions = A2A_OPTIONS, verb = 'POST'): unknown {
  const c = classify({ verb, path, headers, body: Buffer.from(body, 'utf8') }, opts);
  if (c.kind !== 'reject') throw new Error(`expected a refusal, got ${c.kind}`);
  expect(c.binding).toBe('jsonrpc');
  return c.id;
}

describe("JSON-RPC refusals carry the caller's id", () => {
  const deep = `${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`;
  const many = `[${'0,'.repeat(MAX_JSON_VALUES)}0]`;
  test.each<[string, string, IncomingHttpHeaders, string]>([
    ['a media type the binding does not take', send('a'), { ...V1, 'content-type': 'text/plain' }, '/a2a/jsonrpc'],
    ['no media type', send('a'), { 'a2a-version': '1.0' }, '/a2a/jsonrpc'],
    ['a charset other than UTF-8', send('a'), { ...V1, 'content-type': 'application/json; charset=utf-7' }, '/a2a/jsonrpc'],
    ['a method override header', send('a'), { ...V1, 'x-http-method-override': 'GET' }, '/a2a/jsonrpc'],
    ['a Connection header naming Content-Type', send('a'), { ...V1, connection: 'content-type' }, '/a2a/jsonrpc'],
    ['an underscore header spelling', send('a'), { ...V1, a2a_version: '1.0' }, '/a2a/jsonrpc'],
    ['two A2A-Version values', send('a'), { ...V1, 'a2a-version': '1.0, 0.3' }, '/a2a/jsonrpc'],
    ['an A2A-Version query that contradicts the header', send('a'), V1, '/a2a/jsonrpc?A2A-Version=0.3'],
    ['a query parameter', send('a'), V1, '/a2a/jsonrpc?context=x'],
    ['a member spelled another way', send('a', ',"Params":{}'), V1, '/a2a/jsonrpc'],
    ['params nested past the depth bound', send('a').replace('"params":{', `"params":{"x":${deep},`), V1, '/a2a/jsonrpc'],
    ['more values than the bound', send('a', `,"x":${many}`), V1, '/a2a/jsonrpc'],
  ])('%s', (_n, body, headers, path) => {
    expect(refusedId(body, headers, path)).toBe('a');
  });

  test('a JSON object that is not a JSON-RPC request, at the JSON-RPC endpoint (as the SDK answers it)', () => {
    expect(refusedId('{"id":5,"foo":1}')).toBe(5);
  });

  test('the id comes first, or last after a large params, or is an integer', () => {
    expect(refusedId(`{"id":9,"jsonrpc":"2.0","method":"SendMessage","params":{"x":${deep}}}`)).toBe(9);
    expect(refusedId(send(12), { ...V1, 'content-type': 'image/png' })).toBe(12);
  });

  test('a body that is not JSON, not an object, or a batch: "id": null (JSON-RPC 2.0 parse error / invalid request)', () => {
    expect(refusedId(send('a').slice(0, -1))).toBeNull();
    expect(refusedId(send('a').slice(0, -1), { ...V1, 'content-type': 'text/plain' })).toBeNull();
    expect(refusedId(`\ufeff${send('a')}`)).toBeNull();
    expect(refusedId('"x"')).toBeNull();
    expect(refusedId(`[${send('a')}]`)).toBeNull();
    expect(refusedId(send({ not: 'an id' }))).toBeNull();
  });

  test('a REST refusal has no id to carry', () => {
    const c = expectRefusal(
      classify({ verb: 'POST', path: '/a2a/rest/message:send?x=1', headers: V1, body: Buffer.from('{"message":{}}') }, A2A_OPTIONS),
      'rejected',
      'rest',
    );
    expect(c.error.message).toMatch(/query parameter x is not accepted/);
  });
});
