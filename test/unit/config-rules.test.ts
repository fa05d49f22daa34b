/**
 * The plain rules the proxy parses its environment with at start (src/config/env-rules.ts) against their
 * zod form (the schema config.ts had before): for every environment, the same values or the same
 * problems, worded the same, in the same order.
 */
import fc from 'fast-check';
import * as z from 'zod';
import { describeVariables, envSchema, parseVariables, type VariableProblem } from '../../src/config/config';

const schema = envSchema(z);
const NAMES = describeVariables().map((d) => d.name);

/** zod's verdict in parseVariables' shape (loadConfig words an unset required variable "is required"). */
function byZod(input: Record<string, string>): ReturnType<typeof parseVariables> {
  const r = schema.safeParse(input, { jitless: true });
  if (r.success) return { ok: true, env: r.data };
  const problems: VariableProblem[] = r.error.issues.map((i) => {
    const key = String(i.path[0]);
    return { key, message: i.code === 'invalid_type' && input[key] === undefined ? 'is required' : i.message };
  });
  return { ok: false, problems };
}

const same = (input: Record<string, string>) => expect(parseVariables(input)).toEqual(byZod(input));

/** Values that reach every branch: numbers at and past the bounds, booleans, enums, URLs, lists, paths, claims, ratios. */
const POOL = [
  '0',
  '1',
  '5',
  '60',
  '100',
  '256',
  '65535',
  '65536',
  '86400',
  '86401',
  '99999999999999999999',
  '9'.repeat(400),
  '-1',
  '1.5',
  '0x10',
  ' 1',
  'true',
  'false',
  'yes',
  'no',
  'TRUE',
  'on',
  'client',
  'server',
  'both',
  'closed',
  'open',
  'strip',
  'keep',
  'refuse',
  'forward',
  'required',
  'optional',
  'claims',
  'info',
  'silent',
  'otlp',
  'none',
  'http/json',
  'http/protobuf',
  'traceidratio',
  'always_off',
  'http://agent:8080',
  'https://g.example/aos/',
  'HTTP://X',
  'ftp://x',
  'http://',
  'http://a b',
  'redis://r:6379',
  'rediss://u:p@r/0',
  'redis:/x',
  '/admin,/static/v2',
  '/',
  ',',
  'admin',
  '/a,b',
  '/%2F',
  'guardian',
  'guardian,upstream',
  'upstream,x',
  'x-aos-reasoning',
  'X-Bad Header',
  'a,b',
  'http://a,https://b',
  'http://a,nope',
  'id=sub',
  'id=sub,name=azp|client_id',
  'name=azp',
  'id=s b',
  'zz=1',
  'host:1',
  '[::1]:50051',
  'host',
  '0.5',
  '1.0',
  '1.01',
  '2',
  'k=v,k2=v2',
  'a'.repeat(257),
  'kid-1',
  '\u00e9',
  ' ',
];
const value = fc.oneof(fc.constantFrom(...POOL), fc.string({ maxLength: 12 }));

describe('the start-up rules give what the zod schema gives', () => {
  test('every variable alone, unset and with every pool value, in an otherwise valid environment', () => {
    for (const name of NAMES) {
      const base: Record<string, string> = name === 'UPSTREAM_URL' ? {} : { UPSTREAM_URL: 'http://agent:8080' };
      same(base);
      for (const v of POOL) same({ ...base, [name]: v });
    }
  });

  test('random environments (several variables wrong at once, the rules between variables)', () => {
    const env = fc.dictionary(fc.constantFrom(...NAMES), value, { maxKeys: 12 });
    fc.assert(
      fc.property(env, (e) => {
        same(e);
        same({ UPSTREAM_URL: 'http://agent:8080', ...e });
      }),
      { numRuns: 3000 },
    );
  });

  test('the rules between variables, each way round', () => {
    const files = [
      'TLS_CERT_FILE',
      'TLS_KEY_FILE',
      'TLS_CLIENT_CA_FILE',
      'GUARDIAN_CERT_FILE',
      'GUARDIAN_KEY_FILE',
      'UPSTREAM_CERT_FILE',
      'UPSTREAM_KEY_FILE',
      'GUARDIAN_TOKEN',
      'GUARDIAN_TOKEN_FILE',
      'ASSERTION_TRUST_JWKS_FILE',
      'OIDC_AUDIENCE',
    ];
    const urls = ['ASSERTION_TRUST_JWKS_URL', 'ASSERTION_AUDIENCE', 'PUBLIC_URL', 'OIDC_ISSUER', 'OIDC_JWKS_URL'];
    const env = fc.record({
      set: fc.subarray([...files, ...urls]),
      role: fc.constantFrom('client', 'server', 'both', 'bad'),
      policy: fc.constantFrom('required', 'optional', 'claims', undefined),
      port: fc.constantFrom('8080', 'x', undefined),
    });
    fc.assert(
      fc.property(env, ({ set, role, policy, port }) => {
        const e: Record<string, string> = { UPSTREAM_URL: 'http://agent:8080', ROLE: role };
        for (const k of set) e[k] = urls.includes(k) ? 'https://id.example' : '/f';
        if (policy !== undefined) e.IDENTITY_POLICY = policy;
        if (port !== undefined) e.PORT = port;
        same(e);
      }),
      { numRuns: 2000 },
    );
  });
});
