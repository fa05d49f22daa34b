/**
 * Card endpoint members in one spelling, ownership binding every answer, one table of A2A member names
 * (`misspelledField` refuses members that fold onto one).
 *
 * Two halves, each test FAILS on a finding and passes when the proxy holds:
 *   - bypasses: card endpoint spellings an SDK or a case-folding decoder reads (resolved with the SDK's
 *     own card resolver, legacy compat on, and with a Go-style simple-fold reader), and request members
 *     a Go decoder folds onto A2A names (long s, Kelvin sign);
 *   - false positives: legitimate calls and answers the new rules refuse: real @a2a-js/sdk clients over
 *     every operation (JSON-RPC and REST, v1.0 and v0.3) with realistic payloads, through a proxy with
 *     task ownership and answer inspection; free-form objects of the card that are not `metadata` or
 *     `data` (an extension's `params`, OAuth scopes, security scheme names); member spellings the SDK's
 *     v0.3 REST server reads that the table lacks.
 *
 * A front between the proxy and a real SDK agent adds realistic card content (extensions with params,
 * security schemes) to the card and to extended-card answers, and lets a test answer one call itself.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BINDING_VERSIONS, collect, makeClient, sendReq, userMsg, type Client, type Part } from '../../helpers/agent';
import { startIdentities, type TestIdentities } from '../../helpers/identities';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(180_000);

const s = useStack({ extendedAgentCard: true });

/* ---------------------------------------------------------------------------------------------- */
/* The front: a real SDK agent, its cards given realistic extras, one call answerable by the test  */
/* ---------------------------------------------------------------------------------------------- */

type CardEdit = (card: Record<string, unknown>) => Record<string, unknown>;
/** Edits every card the front relays (the well-known card and extended-card results). */
let cardEdit: CardEdit = (c) => c;
/** When set and it returns an answer, the front answers the call itself. */
let override: ((path: string, body: unknown) => { status: number; body: string; type?: string } | undefined) | undefined;
let front: http.Server;
let frontOrigin = '';

const isCard = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x) && Array.isArray((x as Record<string, unknown>).skills) && 'capabilities' in x;

beforeAll(async () => {
  front = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      let json: unknown;
      try {
        json = body.length > 0 ? JSON.parse(body.toString('utf8')) : undefined;
      } catch {
        json = undefined;
      }
      const own = override?.(req.url ?? '/', json);
      if (own !== undefined) {
        res.writeHead(own.status, { 'content-type': own.type ?? 'application/json', 'content-length': Buffer.byteLength(own.body) });
        res.end(own.body);
        return;
      }
      const up = http.request(
        `${s.agent.origin}${req.url ?? '/'}`,
        { method: req.method, headers: { ...req.headers, host: new URL(s.agent.origin).host } },
        (ur) => {
          const type = String(ur.headers['content-type'] ?? '');
          if (!type.includes('json')) {
            res.writeHead(ur.statusCode ?? 502, ur.headers);
            ur.pipe(res);
            return;
          }
          const got: Buffer[] = [];
          ur.on('data', (d: Buffer) => got.push(d));
          ur.on('end', () => {
            let text = Buffer.concat(got).toString('utf8').split(s.agent.origin).join(frontOrigin);
            try {
              const v = JSON.parse(text) as unknown;
              const result = typeof v === 'object' && v !== null ? (v as Record<string, unknown>).result : undefined;
              if (isCard(v)) text = JSON.stringify(cardEdit(v));
              else if (isCard(result)) text = JSON.stringify({ ...(v as Record<string, unknown>), result: cardEdit(result) });
            } catch {
              /* not JSON: as it is */
            }
            const headers = { ...ur.headers };
            delete headers['content-length'];
            delete headers['transfer-encoding'];
            delete headers.etag;
            res.writeHead(ur.statusCode ?? 502, { ...headers, 'content-length': Buffer.byteLength(text) });
            res.end(text);
          });
        },
      );
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  frontOrigin = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => front.close(() => r()));
});

beforeEach(() => {
  cardEdit = (c) => c;
  override = undefined;
});

/** Realistic card content the table's free-form rule does not know: an extension's params, security schemes and OAuth scopes. */
const realisticCard: CardEdit = (c) => ({
  ...c,
  capabilities: {
    ...(c.capabilities as Record<string, unknown>),
    extensions: [
      {
        uri: 'https://extensions.example.com/geo/v1',
        description: 'Geolocation hints',
        required: false,
        // AgentExtension.params is a google.protobuf.Struct: the extension's own configuration, any keys.
        params: { Version: '1.2', 'media-type': 'application/geo+json', Required: ['lat', 'lon'] },
      },
    ],
  },
  securitySchemes: {
    Token: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT', description: 'Access token' } },
    oauth: {
      oauth2SecurityScheme: {
        description: '',
        oauth2MetadataUrl: '',
        // Scope names are the authorization server's (a map), not A2A members.
        flows: {
          clientCredentials: {
            tokenUrl: 'https://idp.example.com/token',
            refreshUrl: '',
            scopes: { Tasks: 'read and cancel tasks', Message: 'send messages' },
          },
        },
      },
    },
  },
  securityRequirements: [{ schemes: { Token: { list: [] } } }],
});

/* ---------------------------------------------------------------------------------------------- */
/* Proxies                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

let ids: TestIdentities;
/** Task ownership (callers A, B), the guardian judging requests and answers, failing closed. */
let full: TestProxy;
/** The guardian judging requests and answers, no ownership. */
let inspected: TestProxy;
/** Task ownership only (no answer inspection). */
let ownOnly: TestProxy;

beforeAll(async () => {
  ids = await startIdentities();
  full = await s.proxy({ ROLE: 'server', UPSTREAM_URL: frontOrigin, INSPECT_RESPONSES: 'true', FAIL_MODE: 'closed', ...ids.env });
  inspected = await s.proxy({ ROLE: 'client', UPSTREAM_URL: frontOrigin, INSPECT_RESPONSES: 'true', FAIL_MODE: 'closed' });
  ownOnly = await s.proxy({ ROLE: 'server', UPSTREAM_URL: frontOrigin, INSPECT_RESPONSES: 'false', FAIL_MODE: 'closed', ...ids.env });
});
afterAll(async () => {
  await ids?.close();
});

async function rpc(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown> | undefined; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/* ---------------------------------------------------------------------------------------------- */
/* False positives: realistic SDK traffic over every operation                                    */
/* ---------------------------------------------------------------------------------------------- */

const filePart = (bytes: string): Part =>
  ({ content: { $case: 'raw', value: Buffer.from(bytes) }, metadata: undefined, filename: 'notes.txt', mediaType: 'text/plain' }) as Part;
const urlPart = (): Part =>
  ({
    content: { $case: 'url', value: 'https://files.example.com/report.pdf' },
    metadata: { Source: 'upload' },
    filename: 'report.pdf',
    mediaType: 'application/pdf',
  }) as Part;
// A data part's data is the sender's: keys that fold onto A2A names are fine there.
const dataPart = (): Part =>
  ({
    content: { $case: 'data', value: { ID: 7, TaskId: 'not-a-task', Status: 'draft', 'context-id': 'x', nested: { Message: { Parts: [] } } } },
    metadata: { 'X-Trace': 'abc' },
    filename: '',
    mediaType: 'application/json',
  }) as Part;

describe('false positives: SDK clients over every operation with realistic payloads', () => {
  for (const [binding, version] of BINDING_VERSIONS) {
    test(`${binding} ${version}: every operation succeeds through ownership + answer inspection (realistic card, parts, metadata, push auth)`, async () => {
      // The card as the SDK agent writes it (free-form card members: the tests below).
      const c: Client = await makeClient(full.url, binding, version, { fetchImpl: ids.fetchAs('A') });
      const failures: string[] = [];
      const step = async <T>(name: string, f: () => Promise<T>): Promise<T | undefined> => {
        try {
          return await f();
        } catch (err) {
          failures.push(`${name}: ${(err as Error).message.slice(0, 300)}`);
          return undefined;
        }
      };
      const meta = { 'x-request-id': 'r-1', TaskId: 'free-form', Priority: 'high', trace: { ID: 'abc', 'span-id': 'def' } };
      const msg = userMsg('hello with parts', {
        parts: [filePart('file body'), urlPart(), dataPart()],
        metadata: meta,
        extensions: ['https://extensions.example.com/geo/v1'],
      });
      const sent = (await step('sendMessage', () =>
        c.sendMessage({
          tenant: '',
          message: msg,
          metadata: { Caller: 'probe', 'request-id': 'x' },
          configuration: {
            acceptedOutputModes: ['text/plain', 'application/json'],
            taskPushNotificationConfig: undefined,
            historyLength: 5,
            returnImmediately: false,
          },
        }),
      )) as { id?: string; contextId?: string } | undefined;
      const taskId = sent?.id ?? '';
      await step('sendMessageStream', () => collect(c.sendMessageStream(sendReq('stream 3', false, { metadata: { Step: 2 } }))));
      if (taskId !== '') {
        await step('sendMessage (continue task)', () =>
          c.sendMessage(sendReq('again', false, { contextId: sent?.contextId ?? '', referenceTaskIds: [taskId] })),
        );
        await step('getTask', () => c.getTask({ tenant: '', id: taskId, historyLength: 10 }));
        await step('createTaskPushNotificationConfig', () =>
          c.createTaskPushNotificationConfig({
            tenant: '',
            id: 'cfg-1',
            taskId,
            url: 'https://hooks.example.com/a2a',
            token: 'tok-1',
            authentication: { scheme: 'Bearer', credentials: 'secret' },
          }),
        );
        await step('getTaskPushNotificationConfig', () => c.getTaskPushNotificationConfig({ tenant: '', taskId, id: 'cfg-1' }));
        await step('listTaskPushNotificationConfig', () => c.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 0, pageToken: '' }));
        await step('deleteTaskPushNotificationConfig', () => c.deleteTaskPushNotificationConfig({ tenant: '', taskId, id: 'cfg-1' }));
      } else failures.push('no task from sendMessage');
      if (version === '1.0')
        await step('listTasks', () =>
          c.listTasks({
            tenant: '',
            contextId: '',
            status: 0,
            pageSize: 10,
            pageToken: '',
            historyLength: 2,
            statusTimestampAfter: undefined,
            includeArtifacts: true,
          } as never),
        );
      const running = (await step('sendMessage (wait-for-cancel)', () => c.sendMessage(sendReq('wait-for-cancel', true)))) as { id?: string } | undefined;
      if (running?.id !== undefined) {
        await step('resubscribeTask', async () => {
          const it = c.resubscribeTask({ tenant: '', id: running.id as string });
          const first = await it.next();
          await it.return(undefined);
          return first;
        });
        await step('cancelTask', () => c.cancelTask({ tenant: '', id: running.id as string, metadata: { Reason: 'done' } }));
      }
      await step('getAgentCard (extended)', () => c.getAgentCard());
      expect(failures).toEqual([]);
    });
  }
});

describe('false positives: free-form card members other than metadata and data', () => {
  // One free-form kind per case: each is refused on its own (the realistic card has all of them).
  const FREE_FORM_CASES: readonly (readonly [string, CardEdit])[] = [
    [
      'a security scheme named Token',
      (c) => ({
        ...c,
        securitySchemes: { Token: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT', description: '' } } },
        securityRequirements: [{ schemes: { Token: { list: [] } } }],
      }),
    ],
    [
      'OAuth scopes named Tasks and Message',
      (c) => ({
        ...c,
        securitySchemes: {
          oauth: {
            oauth2SecurityScheme: {
              description: '',
              oauth2MetadataUrl: '',
              flows: { clientCredentials: { tokenUrl: 'https://idp.example.com/token', refreshUrl: '', scopes: { Tasks: 'read tasks', Message: 'send' } } },
            },
          },
        },
      }),
    ],
    [
      "an extension's params with Version",
      (c) => ({
        ...c,
        capabilities: {
          ...(c.capabilities as object),
          extensions: [{ uri: 'https://extensions.example.com/geo/v1', description: '', required: false, params: { Version: '1.2' } }],
        },
      }),
    ],
    [
      "an extension's params with a kebab-case key (media-type)",
      (c) => ({
        ...c,
        capabilities: {
          ...(c.capabilities as object),
          extensions: [{ uri: 'https://extensions.example.com/geo/v1', description: '', required: false, params: { 'media-type': 'application/geo+json' } }],
        },
      }),
    ],
  ];
  for (const [what, edit] of FREE_FORM_CASES) {
    test(`GetExtendedAgentCard (JSON-RPC v1.0), card with ${what}, reaches the caller`, async () => {
      cardEdit = edit;
      const r = await rpc(`${inspected.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} });
      expect(r.json?.error).toBeUndefined();
      // The SDK agent's JSON-RPC transport answers its public card to an unauthenticated caller: a card, not a refusal.
      expect((r.json?.result as Record<string, unknown> | undefined)?.name).toMatch(/Echo Agent/);
    });
  }

  test('GetExtendedAgentCard (REST v1.0) with the realistic card reaches the caller', async () => {
    cardEdit = realisticCard;
    const res = await fetch(`${inspected.url}/a2a/rest/extendedAgentCard`, { headers: { 'a2a-version': '1.0' } });
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status).toBe(200);
    expect(body.name).toMatch(/Echo Agent/);
  });

  test('an SDK client (v0.3 REST, ownership + inspection) gets the realistic extended card', async () => {
    cardEdit = realisticCard;
    const c = await makeClient(full.url, 'HTTP+JSON', '0.3', { fetchImpl: ids.fetchAs('A') });
    const card = await c.getAgentCard();
    expect(card.name).toMatch(/Echo Agent/);
  });

  // A gateway or framework in front of the agent writes its own error bodies: AWS API Gateway {"Message": ...}, ASP.NET Web API
  // {"Message": ...}, Go services {"Code": ..., "Message": ...}. Not A2A answers, and not a 2xx: nothing to judge or bind.
  const GATEWAY = JSON.stringify({ Message: 'User is not authorized to access this resource' });
  for (const [name, proxy] of [
    ['answer inspection', () => inspected],
    ['task ownership only', () => ownOnly],
  ] as const) {
    test(`${name}: an agent 403 with a gateway's error body ({"Message": ...}) reaches the caller as the agent's error`, async () => {
      override = (path) => (path.includes('jsonrpc') ? { status: 403, body: GATEWAY } : undefined);
      const own =
        name === 'task ownership only'
          ? await rpc(
              `${proxy().url}/a2a/jsonrpc`,
              {
                jsonrpc: '2.0',
                id: 9,
                method: 'SendMessage',
                params: { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
              },
              ids.headersAs('A'),
            )
          : undefined;
      const r = own ?? (await rpc(`${proxy().url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 't-1' } }));
      // The agent's answer (403 and its body), not a proxy error made of it.
      expect({ status: r.status, text: r.text }).toEqual({ status: 403, text: GATEWAY });
    });
  }
});

describe("false positives: spellings the SDK's v0.3 REST server reads that the table lacks", () => {
  // The SDK's v0.3 REST server decodes bodies with the v0.3 proto's fromJSON, which reads each field under
  // its JSON name and its proto name: FilePart `mime_type`, TaskPushNotificationConfig `push_notification_config`.
  const v03Send = (file: Record<string, unknown>) => ({
    message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', content: [{ text: 'see file' }, { file }] },
    configuration: { blocking: true },
  });

  test('the control: a v0.3 REST message:send with camelCase mimeType is accepted', async () => {
    const res = await fetch(`${inspected.url}/a2a/rest/v1/message:send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(v03Send({ fileWithUri: 'https://files.example.com/a.pdf', mimeType: 'application/pdf' })),
    });
    expect(res.status).toBeLessThan(300);
  });

  test('a v0.3 REST message:send with the proto name mime_type (the SDK agent reads it) is not refused', async () => {
    const body = JSON.stringify(v03Send({ fileWithUri: 'https://files.example.com/a.pdf', mime_type: 'application/pdf' }));
    const direct = await fetch(`${frontOrigin}/a2a/rest/v1/message:send`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(direct.status).toBeLessThan(300);
    const res = await fetch(`${inspected.url}/a2a/rest/v1/message:send`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect({ ok: res.status < 300, text: res.status < 300 ? '' : await res.text() }).toEqual({ ok: true, text: '' });
  });

  test('a v0.3 REST push config set with the proto name push_notification_config (the SDK agent reads it) is not refused', async () => {
    const direct = (await (
      await fetch(`${frontOrigin}/a2a/rest/v1/message:send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', content: [{ text: 'wait-for-cancel' }] },
          configuration: { blocking: false },
        }),
      })
    ).json()) as { task?: { id?: string } };
    const taskId = direct.task?.id ?? '';
    expect(taskId).not.toBe('');
    const body = JSON.stringify({
      name: `tasks/${taskId}/pushNotificationConfigs/cfg-p`,
      push_notification_config: { id: 'cfg-p', url: 'https://hooks.example.com/x', token: 't' },
    });
    const agentSays = await fetch(`${frontOrigin}/a2a/rest/v1/tasks/${taskId}/pushNotificationConfigs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(agentSays.status).toBeLessThan(300);
    const res = await fetch(`${inspected.url}/a2a/rest/v1/tasks/${taskId}/pushNotificationConfigs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect({ ok: res.status < 300, text: res.status < 300 ? '' : await res.text() }).toEqual({ ok: true, text: '' });
    await fetch(`${frontOrigin}/a2a/rest/v1/tasks/${taskId}:cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Bypasses: card endpoint spellings                                                              */
/* ---------------------------------------------------------------------------------------------- */

const sdkClientModule: typeof import('@a2a-js/sdk/client', { with: { 'resolution-mode': 'import' } }) = require('@a2a-js/sdk/client');

let plain: TestProxy;
beforeAll(async () => {
  plain = await s.proxy({ ROLE: 'client', UPSTREAM_URL: frontOrigin });
});

const frontHost = (): string => new URL(frontOrigin).host;
type Iface = Record<string, unknown>;
/** The SDK agent's two v1.0 interfaces, as it writes them (at the front). */
const ifaces = (): Iface[] => [
  { url: `${frontOrigin}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
  { url: `${frontOrigin}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
];
/** A card without the members that name the agent but are not endpoints (so the oracle can be "the agent's host is nowhere"). */
const bare = (c: Record<string, unknown>): Record<string, unknown> => {
  const { provider: _p, documentationUrl: _d, iconUrl: _i, ...rest } = c;
  return rest;
};

/**
 * What a lax reader takes for endpoint members: a key is cut at a NUL (C strings), folded as Go folds it
 * (case, ſ, K) and without `_` or `-`; values are turned to text as the SDK does (String()).
 */
function readerKey(k: string): string {
  const cut = k.includes('\u0000') ? k.slice(0, k.indexOf('\u0000')) : k;
  return cut
    .replace(/\u017f/g, 's')
    .replace(/\u212a/g, 'k')
    .toLowerCase()
    .replace(/[_-]/g, '');
}
function endpointValues(card: unknown): string[] {
  const out: string[] = [];
  if (typeof card !== 'object' || card === null) return out;
  for (const [k, v] of Object.entries(card)) {
    const rk = readerKey(k);
    if (rk === 'url' && v !== undefined && v !== null) out.push(String(v));
    if ((rk === 'supportedinterfaces' || rk === 'additionalinterfaces') && typeof v === 'object' && v !== null) {
      for (const e of Object.values(v)) {
        if (typeof e !== 'object' || e === null) continue;
        for (const [ik, iv] of Object.entries(e)) if (readerKey(ik) === 'url' && iv !== undefined && iv !== null) out.push(String(iv));
      }
    }
  }
  return out;
}

const CARD_CASES: readonly (readonly [string, CardEdit])[] = [
  ['supportedInterfaces under a long-s spelling (ſupportedInterfaces), next to the real one', (c) => ({ ...bare(c), ſupportedInterfaces: ifaces() })],
  [
    'supportedInterfaces only under a long-s spelling',
    (c) => {
      const { supportedInterfaces: _s, ...rest } = bare(c);
      return { ...rest, ſupportedInterfaces: ifaces() };
    },
  ],
  [
    'interface url as URL, Url, uRl (no url)',
    (c) => ({ ...bare(c), supportedInterfaces: ifaces().map(({ url, ...i }, n) => ({ ...i, [['URL', 'Url', 'uRl'][n % 3] as string]: url })) }),
  ],
  [
    'interface url with surrounding whitespace, tab, upper-case scheme',
    (c) => ({
      ...bare(c),
      supportedInterfaces: [
        { ...ifaces()[0], url: `  ${frontOrigin}/a2a/jsonrpc\n` },
        { ...ifaces()[1], url: `\tHTTP://${frontHost()}/a2a/rest` },
      ],
    }),
  ],
  [
    'interface url with a tab inside the scheme (WHATWG strips it)',
    (c) => ({ ...bare(c), supportedInterfaces: [{ ...ifaces()[0], url: `ht\ttp://${frontHost()}/a2a/jsonrpc` }, ifaces()[1]] }),
  ],
  ['protocol-relative interface url', (c) => ({ ...bare(c), supportedInterfaces: [{ ...ifaces()[0], url: `//${frontHost()}/a2a/jsonrpc` }, ifaces()[1]] })],
  ['a lower-case grpc binding with an http url', (c) => ({ ...bare(c), supportedInterfaces: [{ ...ifaces()[0], protocolBinding: 'grpc' }, ifaces()[1]] })],
  [
    'v0.3 legacy card: url + preferredTransport grpc + additionalInterfaces',
    (c) => {
      const { supportedInterfaces: _s, ...rest } = bare(c);
      return {
        ...rest,
        protocolVersion: '0.3.0',
        url: `${frontOrigin}/a2a/jsonrpc`,
        preferredTransport: 'grpc',
        additionalInterfaces: [{ url: `${frontOrigin}/a2a/jsonrpc`, transport: 'JSONRPC' }],
      };
    },
  ],
  [
    'v0.3 legacy card under proto names (preferred_transport, additional_interfaces) and URL',
    (c) => {
      const { supportedInterfaces: _s, ...rest } = bare(c);
      return {
        ...rest,
        protocolVersion: '0.3.0',
        URL: `${frontOrigin}/a2a/jsonrpc`,
        preferred_transport: 'JSONRPC',
        additional_interfaces: [{ URL: `${frontOrigin}/a2a/rest`, TRANSPORT: 'HTTP+JSON' }],
      };
    },
  ],
  [
    'a v1 card that also has additionalInterfaces and a top-level url',
    (c) => ({ ...bare(c), url: `${frontOrigin}/a2a/jsonrpc`, additionalInterfaces: [{ url: `${frontOrigin}/a2a/rest`, transport: 'HTTP+JSON' }] }),
  ],
  [
    'an interface url that is an object or a list',
    (c) => ({
      ...bare(c),
      supportedInterfaces: [
        { ...ifaces()[0], url: { href: `${frontOrigin}/a2a/jsonrpc`, toString: 'x' } },
        { ...ifaces()[1], url: [`${frontOrigin}/a2a/rest`] },
      ],
    }),
  ],
  ['supportedInterfaces given as an object of interfaces', (c) => ({ ...bare(c), supportedInterfaces: { 0: ifaces()[0], 1: ifaces()[1], length: 2 } })],
  // A NUL ends a key for readers on C strings (cJSON, whose cJSON_GetObjectItem also ignores case).
  [
    'a v0.3 card with url<NUL> and URL<NUL>x next to url (a C-string reader takes them for url)',
    (c) => {
      const { supportedInterfaces: _s, ...rest } = bare(c);
      return {
        ...rest,
        protocolVersion: '0.3.0',
        url: `${frontOrigin}/a2a/jsonrpc`,
        'url\u0000': `${frontOrigin}/a2a/jsonrpc`,
        'URL\u0000x': `${frontOrigin}/a2a/jsonrpc`,
        preferredTransport: 'JSONRPC',
      };
    },
  ],
  ['interfaces under supportedInterfaces<NUL>', (c) => ({ ...bare(c), 'supportedInterfaces\u0000': ifaces() })],
  // No reader takes a zero-width character away: the control of the NUL cases.
  ['interfaces under supportedInterfaces<ZWSP> (no reader folds it)', (c) => ({ ...bare(c), 'supportedInterfaces\u200b': [] })],
];

describe("bypass: card endpoint spellings (the agent's host is nowhere in the card a caller gets, and the SDK resolves only proxy URLs)", () => {
  for (const [what, edit] of CARD_CASES) {
    test(`well-known card: ${what}`, async () => {
      cardEdit = edit;
      const res = await fetch(`${plain.url}/.well-known/agent-card.json`);
      const text = await res.text();
      if (res.status !== 200) return; // a card refused leads nowhere
      const leaked = endpointValues(JSON.parse(text)).some((u) => u.replace(/\s/g, '').toLowerCase().includes(frontHost()));
      let sdkUrls: string[] = [];
      try {
        const card = await new sdkClientModule.DefaultAgentCardResolver({ legacyCompat: { enabled: true } }).resolve(plain.url);
        sdkUrls = card.supportedInterfaces.map((i) => String(i.url));
      } catch {
        sdkUrls = [];
      }
      const wrong = sdkUrls.filter((u) => {
        try {
          return new URL(u).host !== new URL(plain.url).host;
        } catch {
          return false; // the SDK cannot call it
        }
      });
      expect({ leaked, wrong }).toEqual({ leaked: false, wrong: [] });
    });
  }

  test("extended card (JSON-RPC v1.0 GetExtendedAgentCard) under the same spellings: the agent's host is nowhere", async () => {
    const leaks: string[] = [];
    for (const [what, edit] of CARD_CASES) {
      cardEdit = edit;
      const r = await rpc(`${plain.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} });
      if (r.json?.result !== undefined && endpointValues(r.json.result).some((u) => u.replace(/\s/g, '').toLowerCase().includes(frontHost()))) leaks.push(what);
    }
    expect(leaks).toEqual([]);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Bypasses: members a Go decoder folds onto A2A names (long s, Kelvin sign)                      */
/* ---------------------------------------------------------------------------------------------- */

describe('bypass: Unicode simple folds (Go encoding/json: ſ = s, K (Kelvin) = k) in requests and answers', () => {
  let aTask = '';
  let aContext = '';
  beforeAll(async () => {
    const r = await rpc(
      `${full.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: `m-a-${Date.now()}`, role: 'ROLE_USER', parts: [{ text: 'hello' }] } } },
      ids.headersAs('A'),
    );
    const task = (r.json?.result as { task?: { id: string; contextId: string } } | undefined)?.task;
    aTask = task?.id ?? '';
    aContext = task?.contextId ?? '';
  });

  const FOLDED_NAMES: readonly (readonly [string, (t: string, c: string) => Record<string, unknown>])[] = [
    ['tas\u212AId (Kelvin)', (t) => ({ tasKId: t })],
    ['ta\u017FkId (long s)', (t) => ({ taſkId: t })],
    ["CONTEXTID (A's context)", (_t, c) => ({ CONTEXTID: c })],
    ['referenceTa\u017FkId\u017F', (t) => ({ referenceTaſkIdſ: [t] })],
    ['ta\u017Fk_id', (t) => ({ taſk_id: t })],
  ];
  for (const [what, named] of FOLDED_NAMES) {
    test(`B's SendMessage naming A's task as ${what} does not reach the agent`, async () => {
      expect(aTask).not.toBe('');
      const before = s.agent.received.length;
      const r = await rpc(
        `${full.url}/a2a/jsonrpc`,
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'SendMessage',
          params: { message: { messageId: `m-b-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'hi' }], ...named(aTask, aContext) } },
        },
        ids.headersAs('B'),
      );
      const reached = s.agent.received.slice(before).filter((q) => q.bodyText.includes(aTask) || q.bodyText.includes(aContext));
      expect({ reached: reached.length, error: r.json?.error !== undefined }).toEqual({ reached: 0, error: true });
    });
  }

  test("a tasks/list answer listing A's task under ta\u017Fk\u017F is not relayed to B", async () => {
    expect(aTask).not.toBe('');
    override = (path, body) => {
      const m = (body as { method?: string } | undefined)?.method;
      if (!path.includes('jsonrpc') || m !== 'ListTasks') return undefined;
      const id = (body as { id?: unknown }).id;
      return {
        status: 200,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          result: {
            tasks: [],
            ['ta\u017Fk\u017F']: [{ id: aTask, contextId: aContext, status: { state: 'TASK_STATE_COMPLETED' } }],
            nextPageToken: '',
            pageSize: 10,
            totalSize: 0,
          },
        }),
      };
    };
    const r = await rpc(`${full.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 3, method: 'ListTasks', params: {} }, ids.headersAs('B'));
    expect(r.text.includes(aTask)).toBe(false);
  });

  test("a tasks/get answer naming A's context under Context_Id is not relayed to B", async () => {
    const own = await rpc(
      `${full.url}/a2a/jsonrpc`,
      {
        jsonrpc: '2.0',
        id: 4,
        method: 'SendMessage',
        params: { message: { messageId: `m-b2-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'hello' }] } },
      },
      ids.headersAs('B'),
    );
    const bTask = (own.json?.result as { task?: { id: string } } | undefined)?.task?.id ?? '';
    expect(bTask).not.toBe('');
    override = (path, body) => {
      const m = (body as { method?: string } | undefined)?.method;
      if (!path.includes('jsonrpc') || m !== 'GetTask') return undefined;
      const id = (body as { id?: unknown }).id;
      return {
        status: 200,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          result: { id: bTask, contextId: 'ctx-b', Context_Id: aContext, status: { state: 'TASK_STATE_COMPLETED' } },
        }),
      };
    };
    const r = await rpc(`${full.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 5, method: 'GetTask', params: { id: bTask } }, ids.headersAs('B'));
    expect(r.text.includes(aContext)).toBe(false);
  });
});
