/**
 * Unit-test fixtures for request classification (no sockets): the agent card an @a2a-js/sdk 1.3.0
 * agent serves (as test/helpers/agent.ts starts it: JSON-RPC at /a2a/jsonrpc, REST at /a2a/rest,
 * each in v1.0 and v0.3), the ClassifyOptions the proxy derives from it, and assertions on refusals
 * (the binding's code plus the proxy's ErrorInfo).
 */
import type { CardJson } from '../../src/a2a/card';
import type { ClassifyOptions, Classified } from '../../src/a2a/classify';
import { endpointsFromCard } from '../../src/a2a/endpoints';
import { errorCode, jsonRpcErrorObject, restErrorObject, restHttpStatus, type ProxyErrorKind } from '../../src/core/errors';

interface SdkInterface {
  url: string;
  protocolBinding: string;
  tenant: string;
  protocolVersion: string;
}
// The SDK's own helper builds the interface list, so the fixture follows what the agent advertises.
const { duplicateInterfacesForLegacy } = require('@a2a-js/sdk/compat/v0_3') as {
  duplicateInterfacesForLegacy: (i: SdkInterface[], bindings: string[]) => SdkInterface[];
};

export const AGENT_ORIGIN = 'http://127.0.0.1:4000';

function interfaces(origin: string): SdkInterface[] {
  return duplicateInterfacesForLegacy(
    [
      { url: `${origin}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: `${origin}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
    ],
    ['JSONRPC', 'HTTP+JSON'],
  );
}

/** The v1.0 card (what the SDK serves for `A2A-Version: 1.0`). */
export function sdkCardV1(origin = AGENT_ORIGIN): CardJson {
  return { name: 'Echo Agent', version: '1.2.3', supportedInterfaces: interfaces(origin) };
}

/**
 * The hybrid card the SDK serves without A2A-Version (legacy compat on): v0.3 `url` /
 * `preferredTransport` / `additionalInterfaces` from the 0.3 interfaces, plus the v1 list
 * (a2a-wire-reference.md 5.1, observed).
 */
export function sdkCard(origin = AGENT_ORIGIN): CardJson {
  const all = interfaces(origin);
  const legacy = all.filter((i) => i.protocolVersion === '0.3');
  const [primary, ...more] = legacy;
  return {
    name: 'Echo Agent',
    version: '1.2.3',
    protocolVersion: '0.3',
    url: primary?.url,
    preferredTransport: primary?.protocolBinding,
    additionalInterfaces: more.map((i) => ({ url: i.url, transport: i.protocolBinding })),
    supportedInterfaces: all,
  };
}

/** What the proxy uses for that agent (upstream without a base path), refusing non-A2A traffic. */
export function classifyOptions(over: Partial<ClassifyOptions> = {}): ClassifyOptions {
  return { endpoints: endpointsFromCard(sdkCard(), ''), cardKnown: true, passthrough: [], forwardNonA2A: false, ...over };
}

export const A2A_OPTIONS: ClassifyOptions = classifyOptions();
/** NON_A2A=forward. */
export const FORWARD_OPTIONS: ClassifyOptions = classifyOptions({ forwardNonA2A: true });

/** The code each refusal kind answers with in JSON-RPC (design section 5). */
export const REFUSAL_CODES: Readonly<Partial<Record<ProxyErrorKind, number>>> = {
  rejected: -31400,
  parseError: -32700,
  invalidRequest: -32600,
  invalidParams: -32602,
  methodNotFound: -32601,
  notFound: -32601,
  contentTypeNotSupported: -32005,
  upstreamUnavailable: -31502,
};

/** The HTTP status of each refusal kind in the REST form. */
export const REFUSAL_HTTP: Readonly<Partial<Record<ProxyErrorKind, number>>> = {
  rejected: 400,
  parseError: 400,
  invalidRequest: 400,
  invalidParams: 400,
  methodNotFound: 404,
  notFound: 404,
  contentTypeNotSupported: 400,
  upstreamUnavailable: 502,
};

export type Refusal = Extract<Classified, { kind: 'reject' }>;

/**
 * `c` is a refusal of `kind`, answered with that kind's code and, in the binding's wire form,
 * carrying the proxy's ErrorInfo (REQUEST_REJECTED, domain a2a-guard) so operators see who refused.
 */
export function expectRefusal(c: Classified, kind: ProxyErrorKind, binding?: 'jsonrpc' | 'rest'): Refusal {
  expect(c.kind).toBe('reject');
  if (c.kind !== 'reject') throw new Error(`expected a refusal, got ${c.kind}`);
  expect(c.error.kind).toBe(kind);
  if (binding !== undefined) expect(c.binding).toBe(binding);
  const code = REFUSAL_CODES[kind];
  if (code !== undefined) expect(errorCode(kind)).toBe(code);
  const info = expect.objectContaining({
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: kind === 'upstreamUnavailable' ? 'UPSTREAM_UNAVAILABLE' : 'REQUEST_REJECTED',
    domain: 'a2a-guard',
  });
  if (c.binding === 'jsonrpc') {
    const wire = jsonRpcErrorObject(c.error, c.id);
    expect(wire.id).toBe(c.id);
    expect(wire.error.code).toBe(errorCode(kind));
    expect(wire.error.data).toEqual(expect.arrayContaining([info]));
  } else {
    const wire = restErrorObject(c.error);
    expect(wire.error.code).toBe(REFUSAL_HTTP[kind]);
    expect(restHttpStatus(c.error)).toBe(REFUSAL_HTTP[kind]);
    expect(wire.error.details).toEqual(expect.arrayContaining([info]));
  }
  return c;
}

export type A2ACall = Extract<Classified, { kind: 'a2a' }>;

export function expectA2a(c: Classified, aosMethod: string, binding: 'jsonrpc' | 'rest' = 'jsonrpc'): A2ACall {
  if (c.kind !== 'a2a')
    throw new Error(`expected an A2A call, got ${JSON.stringify(c.kind === 'reject' ? { kind: c.error.kind, message: c.error.message } : c)}`);
  expect(c.binding).toBe(binding);
  expect(c.op.aosMethod).toBe(aosMethod);
  return c;
}

export type Forwarded = Extract<Classified, { kind: 'other' }>;

export function expectForwarded(c: Classified, why: 'passthrough' | 'non-a2a'): Forwarded {
  if (c.kind !== 'other')
    throw new Error(`expected a forwarded request, got ${JSON.stringify(c.kind === 'reject' ? { kind: c.error.kind, message: c.error.message } : c.kind)}`);
  expect(c.why).toBe(why);
  return c;
}
