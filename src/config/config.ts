/**
 * Configuration: environment variables only (design section 8), parsed once at start with the rules
 * of src/config/env-rules.ts (plain code; each rule also has its zod form, the reference the tests hold it to).
 * Every bad variable yields one line naming it; the caller prints them and exits 2.
 */
import type * as Z from 'zod';
import { pathSegments } from '../a2a/target';
import { looksLikeRest } from '../a2a/rest';
import { looksLikeGrpc } from '../a2a/bindings/grpc/methods';
import { Rule, v, type Issue, type Out } from './env-rules';
import { lookupEnv, serviceLinkHint, type EnvValue } from '../core/env';
import { HELD_COPIES } from '../core/bounded';
import type { ConfigFile } from './file';
import { ROLES } from '../aos/hook-points';
import { DEFAULT_POLICY_FILE } from '../runtime/version';
import type { ObservedAgentOverrides } from '../aos/identity';

const bool = (def: boolean) =>
  v
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .default(def ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (def: number, min: number, max: number) =>
  v
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .default(String(def))
    .transform(Number)
    .pipe(v.int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
/** A whole number without a default (an optional variable whose absence means something). */
const whole = (min: number, max: number) =>
  v
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(v.int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
const httpUrl = v.string().refine((u) => /^https?:\/\//i.test(u) && URL.canParse(u), 'must be an absolute http(s) URL');
const optional = <T>(r: Rule<T>) => r.optional();
const file = v.string().min(1).optional();
/** Comma-separated list of non-empty items. */
const list = v.string().transform((v) =>
  v
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== ''),
);

/** A comma-separated list of absolute, plain paths ('/health,/metrics') as decoded segments. */
function pathList(v: string, problem: (message: string) => void): string[][] {
  const out: string[][] = [];
  for (const raw of v
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    const segs = pathSegments(raw);
    if (!raw.startsWith('/') || segs === undefined) problem(`"${raw}" is not an absolute plain path`);
    else out.push(segs);
  }
  return out;
}

/** A2A_VERSIONS, A2A_EXTENSIONS: values without spaces; an empty list would refuse every call, so it is a problem. */
function tokenList(v: string, what: string, problem: (message: string) => void): string[] {
  const out = v
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  for (const t of out) if (!/^[\x21-\x7e]+$/.test(t)) problem(`"${t}" is not a ${what}`);
  if (out.length === 0) problem(`lists no ${what}`);
  return out;
}

/** UPGRADE_PATHS: a prefix that reads as an A2A route could only ever be refused at run time: said at start. */
function upgradePathList(v: string, problem: (message: string) => void): string[][] {
  const out = pathList(v, problem);
  for (const segs of out) if (looksLikeRest(segs) || looksLikeGrpc(segs)) problem(`"/${segs.join('/')}" reads as an A2A route, which is never upgraded`);
  return out;
}

/**
 * CARD_PATHS: exact paths (no query) where the agent serves an agent card besides the standard one. A path
 * that some router reads as an A2A REST route or gRPC method would be served as a public card, unjudged
 * (`/v1/card` is the extended card, a judged call): refused at start.
 */
function cardPathList(v: string, problem: (message: string) => void): string[][] {
  const out: string[][] = [];
  for (const raw of v
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    const segs = pathSegments(raw);
    if (!raw.startsWith('/') || raw.includes('?') || segs === undefined || segs.length === 0) problem(`"${raw}" is not an absolute plain path without a query`);
    else if (looksLikeRest(segs) || looksLikeGrpc(segs)) problem(`"${raw}" reads as an A2A route, which is judged, never served as a card`);
    else out.push(segs);
  }
  return out;
}

const OTLP_PROTOCOL = v.enum(['http/protobuf', 'http/json']);
const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
const READINESS_PARTS = ['guardian', 'upstream'] as const;

/**
 * Every variable, its default and its meaning, once: `--help` and `--check` are derived from it
 * (describeVariables), and the README table lists the same names (a test keeps them in step).
 */
const VARIABLES = {
  PORT: int(8080, 0, 65535).describe('port the proxy listens on'),
  HOST: v.string().min(1).default('0.0.0.0').describe('listen address'),
  UPSTREAM_URL: httpUrl.describe('the A2A agent the proxy forwards to (a path prefix is kept)'),
  GUARDIAN_URL: optional(httpUrl).describe('AOS guardian endpoint; unset = the embedded reference guardian with POLICY_FILE'),
  GUARDIAN_TOKEN: optional(v.string().min(1, 'must not be empty when set')).describe('sent as Authorization: Bearer to the guardian; never logged'),
  GUARDIAN_TIMEOUT_MS: int(5000, 1, 600_000).describe('time budget per guardian call (retry included)'),
  ROLE: v.enum(ROLES).default('server').describe('client, server or both'),
  FAIL_MODE: v
    .enum(['closed', 'open'])
    .default('closed')
    .describe('without a valid guardian answer: closed refuses (-31503), open forwards marked and counted'),
  INSPECT_RESPONSES: bool(false).describe('run response hooks on unary answers and on every stream event'),
  INSPECT_CARDS: v
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .optional()
    .describe(
      "show every agent card the proxy serves (public, extended, a remote agent's) to the guardian as an `agent/card` hook before it is served; default: INSPECT_RESPONSES",
    ),
  STREAM_INSPECT_WINDOW: int(16, 1, 1024).describe(
    'stream events judged by the guardian at once, per stream (1 = one at a time); released to the caller in order regardless',
  ),
  GUARDIAN_CALL_CONNECTIONS: int(256, 1, 65_536).describe(
    'connections to the guardian for the checks of each call: request hooks, unary answers (pings have two of their own); lowered at start to fit the file descriptors the process may open',
  ),
  GUARDIAN_STREAM_CONNECTIONS: int(256, 1, 65_536).describe(
    'connections to the guardian for stream events: a budget of their own, so request checks never wait behind stream events; lowered at start to fit the file descriptors the process may open',
  ),
  REASONING_HEADER: v
    .string()
    .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be a valid HTTP header name')
    .default('x-aos-reasoning')
    .transform((h) => h.toLowerCase())
    .describe("request header carrying the agent's reasoning (removed before forwarding)"),
  OBSERVED_AGENT_NAME: v.string().optional().describe("the observed agent's name (default: from its agent card)"),
  OBSERVED_AGENT_ID: v.string().optional().describe("the observed agent's id"),
  OBSERVED_AGENT_URL: v.string().optional().describe("the observed agent's URL"),
  OBSERVED_AGENT_VERSION: v.string().optional().describe("the observed agent's version"),
  OBSERVED_AGENT_DESCRIPTION: v.string().optional().describe("the observed agent's description"),
  OBSERVED_AGENT_INSTRUCTIONS: v.string().optional().describe("the observed agent's instructions"),
  OBSERVED_AGENT_PROVIDER_NAME: v.string().optional().describe("the observed agent's provider name"),
  OBSERVED_AGENT_PROVIDER_URL: v.string().optional().describe("the observed agent's provider URL"),
  OBSERVED_AGENT_CARD_URL: optional(httpUrl).describe("ROLE=client/both: where the observed client agent's own card is"),
  PUBLIC_URL: optional(httpUrl).describe('URL clients use to reach this proxy (agent card rewrite); default: scheme + Host of the request'),
  MAX_BODY_BYTES: int(10 * 1024 * 1024, 1, 1024 * 1024 * 1024).describe(
    'larger requests are refused (-31400 / HTTP 413); also the limit for inspected answers',
  ),
  MAX_JSON_DEPTH: int(64, 1, 10_000).describe('JSON request bodies nested deeper are refused (-31400 / HTTP 400) before they are parsed'),
  MAX_JSON_VALUES: int(100_000, 1, 100_000_000).describe(
    'JSON request bodies with more members and elements in all (a member counts twice) are refused before they are parsed',
  ),
  MAX_JSON_OBJECT_MEMBERS: int(10_000, 1, 100_000_000).describe(
    'JSON request bodies with an object of more members are refused before they are parsed (V8 builds a wide object slowly, holding every call)',
  ),
  BODY_TIMEOUT_MS: int(30_000, 1, 3_600_000).describe('a request body must arrive within this time'),
  CARD_TTL_MS: int(300_000, 0, 86_400_000).describe('how long a fetched agent card is cached'),
  CARD_SIGNATURES: v
    .enum(['strip', 'keep', 'require'])
    .default('strip')
    .describe(
      "the agent's JWS card signatures: strip, keep (they no longer verify), or require one that verifies with CARD_TRUST_JWKS_FILE (else the card is refused)",
    ),
  CARD_SIGNING_KEY_FILE: file.describe(
    "private key (JWK or PEM) the proxy signs every card it serves with, replacing the agent's signatures; public keys at /.well-known/a2a-guard/jwks.json; needs PUBLIC_URL",
  ),
  CARD_SIGNING_KEY_ID: optional(v.string().regex(/^[\x21-\x7e]{1,128}$/, 'must be 1-128 printable ASCII characters')).describe(
    "key id of card signatures (default: the JWK's kid or thumbprint)",
  ),
  CARD_TRUST_JWKS_FILE: file.describe("CARD_SIGNATURES=require: public keys (JWKS) the agent's card signatures must verify with"),
  CARD_PATHS: v
    .string()
    .default('')
    .transform((v, problem) => cardPathList(v, problem))
    .describe(
      'comma-separated paths where the agent serves its card besides /.well-known/agent-card.json (/.well-known/my-agent/agent-card.json): served rewritten, as the standard card',
    ),
  PASSTHROUGH_PATHS: v
    .string()
    .default('')
    .transform((v, problem) => pathList(v, problem))
    .describe('comma-separated path prefixes of non-A2A routes the agent serves, forwarded unjudged (counted, logged)'),
  REST_BASE_PATHS: v
    .string()
    .optional()
    .transform((v, problem) => (v === undefined ? undefined : pathList(v, problem)))
    .describe("comma-separated REST bases of the agent, instead of its card's HTTP+JSON interface URLs"),
  NON_A2A: v.enum(['refuse', 'forward']).default('refuse').describe('refuse everything that is not A2A (and not in PASSTHROUGH_PATHS), or forward it unjudged'),
  MAX_INFLIGHT_BODY_BYTES: int(256 * 1024 * 1024, 1, 64 * 1024 * 1024 * 1024).describe(
    'bytes held across all calls at once (request bodies, answers and stream events held for the guardian); beyond it new calls get -31429',
  ),
  // Fair shares per caller (README "Limits and fairness"): a caller is its verified identity, else its address.
  MAX_INFLIGHT_BODY_BYTES_PER_CALLER: optional(whole(1, 64 * 1024 * 1024 * 1024)).describe(
    `bytes one caller may hold of MAX_INFLIGHT_BODY_BYTES (default: 32 MiB, at least ${HELD_COPIES} x MAX_BODY_BYTES: a request is held ${HELD_COPIES} times while judged); beyond it its calls get 429 (-31429) and nobody else's do`,
  ),
  BODY_MIN_BYTES_PER_SECOND: int(1024, 0, 1024 * 1024 * 1024).describe(
    'past its first 5 s a request body must arrive at this average rate, else it is cut (408); 0 = no rate rule',
  ),
  CALLER_IPV6_PREFIX: int(64, 1, 128).describe(
    'an unverified caller is its address; an IPv6 one is counted by this many leading bits (one host usually holds a whole /64 and could otherwise be 2^64 callers); 128 = per address; IPv4 is always per address',
  ),
  MAX_CALLS_PER_CALLER: int(256, 0, 1_000_000).describe(
    'calls (streams included) one caller may have in flight; more wait for one of its places (CALL_WAIT_MS), then get 429 (-31429); 0 = no bound',
  ),
  CALL_WAIT_MS: int(5000, 0, 600_000).describe(
    "how long at most a call past MAX_CALLS_PER_CALLER waits, unread, in its caller's own line for a place (each waits between half of it and all of it; at most MAX_CALLS_PER_CALLER wait; more get 429 at once); then 429 (-31429) with Retry-After between 1 s and this; 0 = 429 at once",
  ),
  GUARDIAN_CALLS_PER_CALLER: optional(whole(0, 65_536)).describe(
    'guardian calls (request hooks, unary answers) one caller may have in flight (default: a quarter of GUARDIAN_CALL_CONNECTIONS); more wait in its own line; 0 = no bound',
  ),
  RATE_LIMIT_PER_SECOND: int(0, 0, 1_000_000).describe(
    'calls per second per caller (token bucket; shared by replicas through TASK_STORE_URL when set); over it 429 (-31429) with Retry-After; 0 = no rate limit',
  ),
  RATE_LIMIT_BURST: optional(whole(1, 10_000_000)).describe('calls a caller may make at once before RATE_LIMIT_PER_SECOND applies (default: one second of it)'),
  FAIR_QUEUE_PER_CALLER: int(256, 0, 1_000_000).describe(
    "requests of one caller that may wait for a turn of the proxy's CPU while others are served (turns go round-robin across callers); more get 429 (-31429); 0 = first come, first served",
  ),
  MAX_CONNECTIONS: int(8192, 16, 1_000_000).describe(
    "connections open at once on the listeners (HTTP and gRPC), all callers together, and to the agent (each counts twice in the file descriptors; lowered at start to fit them with the guardian's and the push deliveries' connections, the largest first); past it the caller (address) holding the most gives up its oldest idle connection for the new one, or is refused it when none of its connections is idle; one caller holds at most half of it",
  ),
  FAIR_SLICE_MS: int(5, 1, 1000).describe('milliseconds of CPU work the proxy runs at once before polling for new requests while callers wait for turns'),
  EXPOSE_GUARDIAN_REASONING: bool(false).describe("include the guardian's reasoning in errors sent to callers"),
  ADMIN_PORT: int(9090, 0, 65535).describe('admin server port: /healthz, /readyz, /metrics'),
  ADMIN_HOST: v.string().min(1).default('0.0.0.0').describe('admin server listen address'),
  DRAIN_TIMEOUT_MS: int(10_000, 0, 600_000).describe(
    'after the listener closes: in-flight calls may finish until then; open streams then end with an error event',
  ),
  SHADOW_MODE: bool(false).describe('ask the guardian, log and count what it would have done, always forward'),
  ALLOW_WEBSOCKETS: bool(false).describe('forward HTTP upgrades (uninspected) to the UPGRADE_PATHS prefixes instead of refusing them; needs UPGRADE_PATHS'),
  A2A_VERSIONS: optional(v.string().transform((v, problem) => tokenList(v, 'version', problem))).describe(
    'comma-separated A2A versions callers may use (a call without A2A-Version is 0.3); others get VersionNotSupportedError (default: any)',
  ),
  A2A_EXTENSIONS: optional(v.string().transform((v, problem) => tokenList(v, 'extension URI', problem))).describe(
    'comma-separated extension URIs callers may request (A2A-Extensions); others get invalid params (default: any)',
  ),
  UPGRADE_PATHS: v
    .string()
    .default('')
    .transform((v, problem) => upgradePathList(v, problem))
    .describe(
      'comma-separated path prefixes where a WebSocket upgrade is forwarded (needs ALLOW_WEBSOCKETS=true); A2A routes and cards below them stay refused',
    ),
  // Push deliveries through the proxy (docs/guides/push-deliveries.md)
  PUSH_DELIVERIES: optional(v.enum(['relay', 'direct'])).describe(
    "relay: webhooks callers configure are rewritten to the proxy's push relay, every delivery judged and sent on by the proxy; direct: the agent posts to them unjudged (default: relay with INSPECT_RESPONSES=true and ROLE server or both)",
  ),
  PUSH_RELAY_PORT: int(8090, 0, 65535).describe('port of the push relay, where the agent delivers notifications (0 = any free port)'),
  PUSH_RELAY_HOST: v.string().min(1).default('127.0.0.1').describe('listen address of the push relay (only the agent needs to reach it)'),
  PUSH_RELAY_URL: optional(httpUrl).describe('URL the agent uses to reach the push relay (default: http://PUSH_RELAY_HOST:PUSH_RELAY_PORT)'),
  PUSH_ALLOW_PRIVATE_WEBHOOKS: bool(false).describe(
    'deliver to webhooks that resolve to loopback, private or link-local addresses (metadata addresses stay refused)',
  ),
  PUSH_QUEUE_PER_CALLER: int(64, 1, 100_000).describe('push deliveries one caller may have waiting or retrying; more are refused (the agent gets 429)'),
  PUSH_RETRIES: int(3, 0, 20).describe('retries of a push delivery the webhook failed (5xx, 429, no connection), with doubling back-off from 500 ms'),
  PUSH_CONFIGS_PER_CALLER: int(1000, 1, 1_000_000).describe('rewritten webhook configs one caller may hold; more push configs are refused (-31429)'),
  POLICY_FILE: v
    .string()
    .min(1)
    .optional()
    .describe("policy of the embedded guardian (GUARDIAN_URL unset); unset: the package's demo policy, config/policy.json"),
  LOG_LEVEL: v.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('pino level'),
  // Task ownership (README "Task ownership")
  TASK_OWNERSHIP: optional(v.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes')).describe(
    'only the verified caller that created a task may use it (default: on with ROLE=server and IDENTITY_POLICY=required)',
  ),
  TASK_STORE_URL: optional(v.string().refine((u) => /^rediss?:\/\//i.test(u) && URL.canParse(u), 'must be a redis:// or rediss:// URL')).describe(
    'redis:// or rediss:// URL of the owner store shared by replicas (default: in memory); never logged',
  ),
  TASK_STORE_PREFIX: v.string().min(1).max(256).default('a2a-guard:tasks:').describe('prefix of every Redis key of the owner store'),
  TASK_STORE_TIMEOUT_MS: int(250, 1, 60_000).describe('an owner-store read or write that takes longer fails and follows FAIL_MODE'),
  TASK_STORE_MAX_ENTRIES: int(100_000, 100, 100_000_000).describe("in-memory owner store: bindings kept (past it the largest holder's oldest is evicted)"),
  TASK_STORE_MAX_BYTES: int(32 * 1024 * 1024, 64 * 1024, 64 * 1024 * 1024 * 1024).describe(
    "in-memory owner store: accounted bytes of its bindings (past it the largest holder's oldest is evicted)",
  ),
  TASK_STORE_MAX_PER_CALLER: int(50_000, 10, 100_000_000).describe(
    "bindings one caller may hold; past it the caller's new messages are refused (-31429) until some expire",
  ),
  TASK_STORE_ALLOW_EVICTION: bool(false).describe('start with a Redis whose maxmemory-policy evicts keys (an evicted binding is a lost task)'),
  TASK_OWNERSHIP_TTL_SECONDS: int(7 * 24 * 3600, 60, 366 * 24 * 3600).describe('how long a task stays bound to its owner'),
  // Verified identities (README "Identity")
  IDENTITY_POLICY: v
    .enum(['required', 'optional', 'claims'])
    .default('optional')
    .describe('ROLE=server, a caller without a verified identity: required (refused), optional (from is unknown), claims (believe X-AOS-Agent-*)'),
  ASSERTION_SIGNING_KEY_FILE: file.describe('ROLE=client/both: private key to sign identity assertions with'),
  ASSERTION_SIGNING_KEY_ID: optional(v.string().regex(/^[\x21-\x7e]{1,128}$/, 'must be 1-128 printable ASCII characters')).describe(
    "key id put in the assertion header (default: the JWK's kid or thumbprint)",
  ),
  ASSERTION_TTL_SECONDS: int(30, 1, 60).describe('assertion lifetime, 1-60 seconds'),
  ASSERTION_TRUST_JWKS_FILE: file.describe('ROLE=server: public keys whose assertions are trusted (JWKS file)'),
  ASSERTION_TRUST_JWKS_URL: optional(httpUrl).describe('the same, fetched from a URL'),
  ASSERTION_AUDIENCE: optional(list.pipe(v.array(httpUrl).min(1, 'must name at least one URL'))).describe(
    'ROLE=server: the URL(s) callers reach it by (assertions must name one); ROLE=client: the audience it signs for',
  ),
  ASSERTION_REPLAY_CACHE_SIZE: int(100_000, 100, 10_000_000).describe('assertion ids remembered until they expire'),
  OIDC_ISSUER: optional(httpUrl).describe('ROLE=server: accept OAuth2/OIDC bearer tokens from this issuer'),
  OIDC_AUDIENCE: optional(list.pipe(v.array(v.string()).min(1, 'must name at least one audience'))).describe('accepted token audience(s), comma-separated'),
  OIDC_JWKS_URL: optional(httpUrl).describe("the issuer's keys (default: from its openid-configuration)"),
  OIDC_CLAIMS: v
    .string()
    .default('id=sub,name=azp|client_id|sub')
    .transform((text, problem): ClaimMap => {
      const map = parseClaimMap(text);
      if (typeof map !== 'string') return map;
      problem(map);
      // Not read: a transform's problem fails the parse.
      return undefined as never;
    })
    .describe('token claims -> AOS agent fields (id, name, url, version)'),
  CREDENTIALS_REFRESH_MS: int(30_000, 100, 3_600_000).describe('how often key, certificate, token and JWKS files are re-read'),
  // TLS: the proxy's own listener, and towards the guardian and the upstream agent
  TLS_CERT_FILE: file.describe('the proxy listens over HTTPS with this certificate chain'),
  TLS_KEY_FILE: file.describe("the HTTPS listener's private key"),
  TLS_CLIENT_CA_FILE: file.describe('ask callers for a client certificate signed by this CA (mutual TLS)'),
  TLS_CLIENT_CERT: v.enum(['required', 'optional']).default('required').describe('with a client CA: required or optional'),
  GUARDIAN_TOKEN_FILE: file.describe("file holding the guardian's bearer token (re-read when it changes); never logged"),
  GUARDIAN_CA_FILE: file.describe("CA bundle to verify the guardian's certificate"),
  GUARDIAN_CERT_FILE: file.describe('client certificate presented to the guardian (mutual TLS)'),
  GUARDIAN_KEY_FILE: file.describe('key of that client certificate'),
  GUARDIAN_SERVER_NAME: optional(v.string().min(1)).describe("the name the guardian's certificate must carry (and SNI)"),
  UPSTREAM_CA_FILE: file.describe("CA bundle to verify the agent's certificate"),
  UPSTREAM_CERT_FILE: file.describe('client certificate presented to the agent (mutual TLS)'),
  UPSTREAM_KEY_FILE: file.describe('key of that client certificate'),
  UPSTREAM_SERVER_NAME: optional(v.string().min(1)).describe("the name the agent's certificate must carry (and SNI)"),
  // Observability and operations (README "Observability and operations")
  SHUTDOWN_DELAY_MS: int(5000, 0, 600_000).describe('on SIGTERM: keep accepting calls this long with /readyz already 503, then close the listener'),
  TERMINATION_GRACE_PERIOD_SECONDS: whole(1, 86_400)
    .optional()
    .describe("the pod's terminationGracePeriodSeconds: when set, the drain deadline is what is left of it after SHUTDOWN_DELAY_MS, less 1 s"),
  READINESS_REQUIRES: v
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== ''),
    )
    .pipe(v.array(v.enum(READINESS_PARTS, `lists guardian and/or upstream, comma-separated`)))
    .describe('what /readyz also requires besides "listening, configured, not draining": guardian and/or upstream (comma-separated); default none'),
  POLICY_WATCH: bool(true).describe("reload the embedded guardian's policy when POLICY_FILE changes (SIGHUP reloads it too)"),
  DECISION_LOG_FILE: v.string().min(1).optional().describe("append every call's audit record to this file as a hash chain (verify with --verify-log FILE)"),
  DECISION_LOG_KEY_FILE: v
    .string()
    .min(1)
    .optional()
    .describe(
      "a file holding a secret of at least 32 bytes: the decision log's hashes become HMAC-SHA256 under it, so whoever can write the log but not read the key cannot re-link a rewritten record (--verify-log reads the same variable)",
    ),
  GRPC_PORT: optional(v.string().regex(/^\d+$/, 'must be a port number').transform(Number).pipe(v.int().min(0).max(65535))).describe(
    'serve the A2A gRPC binding on this port (same HOST and TLS_* as the HTTP listener); unset = no gRPC, and gRPC interfaces are removed from served cards',
  ),
  GRPC_UPSTREAM_URL: optional(httpUrl).describe(
    "the agent's gRPC endpoint: http:// for h2c, https:// for TLS (UPSTREAM_CA_FILE etc.); default: the GRPC interface of the agent's card",
  ),
  GRPC_PUBLIC_ADDRESS: optional(v.string().regex(/^[A-Za-z0-9.\-[\]:]+:\d+$/, 'must be host:port')).describe(
    "host:port clients use to reach the proxy's gRPC listener (agent card rewrite); default: the card request's host with GRPC_PORT",
  ),
  OTEL_SDK_DISABLED: bool(false).describe('true turns tracing off whatever else is set'),
  OTEL_TRACES_EXPORTER: v
    .enum(['otlp', 'none'])
    .optional()
    .describe('otlp turns tracing on (default endpoint http://localhost:4318); none turns it off; unset: on when an OTLP endpoint is set'),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(httpUrl).describe('OTLP/HTTP collector base URL (/v1/traces is appended); setting it turns tracing on'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional(httpUrl).describe('OTLP/HTTP traces URL, used as is (wins over OTEL_EXPORTER_OTLP_ENDPOINT)'),
  OTEL_EXPORTER_OTLP_PROTOCOL: OTLP_PROTOCOL.optional().describe('http/protobuf (default) or http/json'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: OTLP_PROTOCOL.optional().describe('protocol for traces (wins over OTEL_EXPORTER_OTLP_PROTOCOL)'),
  OTEL_EXPORTER_OTLP_HEADERS: v.string().optional().describe('headers sent to the collector, key=value,...; never logged'),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: v.string().optional().describe('headers for traces only (added to OTEL_EXPORTER_OTLP_HEADERS); never logged'),
  OTEL_SERVICE_NAME: v.string().min(1).optional().describe('service.name of the spans (default: service.name of OTEL_RESOURCE_ATTRIBUTES, else a2a-guard)'),
  OTEL_RESOURCE_ATTRIBUTES: v.string().optional().describe('more resource attributes, key=value,...'),
  OTEL_TRACES_SAMPLER: v
    .enum(SAMPLERS)
    .default('parentbased_always_on')
    .describe(`sampler: ${SAMPLERS.join(', ')}`),
  OTEL_TRACES_SAMPLER_ARG: v
    .string()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'must be a ratio between 0 and 1')
    .transform(Number)
    .optional()
    .describe('ratio for the traceidratio samplers (default 1)'),
};

/** Rules between variables; each problem names the variable to change. */
function crossRules(e: Env, problem: (name: keyof Env, message: string) => void): void {
  const pair = (a: keyof typeof e, b: keyof typeof e) => {
    if ((e[a] === undefined) !== (e[b] === undefined)) problem(e[a] === undefined ? a : b, `must be set together with ${e[a] === undefined ? b : a}`);
  };
  pair('TLS_CERT_FILE', 'TLS_KEY_FILE');
  // Two switches on purpose: an upgrade is uninspected traffic, so both the opt-in and where it applies are said.
  if (e.ALLOW_WEBSOCKETS && e.UPGRADE_PATHS.length === 0)
    problem('UPGRADE_PATHS', 'is required with ALLOW_WEBSOCKETS=true: list the path prefixes where upgrades are forwarded');
  if (!e.ALLOW_WEBSOCKETS && e.UPGRADE_PATHS.length > 0) problem('ALLOW_WEBSOCKETS', 'must be true for UPGRADE_PATHS to forward upgrades');
  if (e.PUSH_DELIVERIES === 'relay' && e.ROLE === 'client')
    problem('PUSH_DELIVERIES', 'relay needs ROLE=server or both: the push relay stands next to the agent that delivers');
  pair('GUARDIAN_CERT_FILE', 'GUARDIAN_KEY_FILE');
  pair('UPSTREAM_CERT_FILE', 'UPSTREAM_KEY_FILE');
  if (e.TLS_CLIENT_CA_FILE !== undefined && e.TLS_CERT_FILE === undefined)
    problem('TLS_CLIENT_CA_FILE', 'needs TLS_CERT_FILE and TLS_KEY_FILE (client certificates need a TLS listener)');
  if (e.GUARDIAN_TOKEN !== undefined && e.GUARDIAN_TOKEN_FILE !== undefined)
    problem('GUARDIAN_TOKEN_FILE', 'set GUARDIAN_TOKEN or GUARDIAN_TOKEN_FILE, not both');
  if (e.ASSERTION_TRUST_JWKS_FILE !== undefined && e.ASSERTION_TRUST_JWKS_URL !== undefined)
    problem('ASSERTION_TRUST_JWKS_URL', 'set ASSERTION_TRUST_JWKS_FILE or ASSERTION_TRUST_JWKS_URL, not both');
  const trusts = e.ASSERTION_TRUST_JWKS_FILE !== undefined || e.ASSERTION_TRUST_JWKS_URL !== undefined;
  if (trusts && e.ROLE === 'server' && e.ASSERTION_AUDIENCE === undefined && e.PUBLIC_URL === undefined) {
    problem('ASSERTION_AUDIENCE', 'is required with a trusted JWKS (or PUBLIC_URL): the URL callers use to reach this proxy, which their assertions must name');
  }
  if (e.MAX_INFLIGHT_BODY_BYTES_PER_CALLER !== undefined && e.MAX_INFLIGHT_BODY_BYTES_PER_CALLER < HELD_COPIES * e.MAX_BODY_BYTES) {
    problem(
      'MAX_INFLIGHT_BODY_BYTES_PER_CALLER',
      `must be at least ${HELD_COPIES} x MAX_BODY_BYTES (${HELD_COPIES * e.MAX_BODY_BYTES}): a caller's largest request, held ${HELD_COPIES} times while judged, must fit its share`,
    );
  }
  if (e.OIDC_ISSUER !== undefined && e.OIDC_AUDIENCE === undefined) problem('OIDC_AUDIENCE', 'is required with OIDC_ISSUER');
  // Without it, a card's URLs come from the caller's Host: the proxy would sign a card pointing wherever a caller names.
  if (e.CARD_SIGNING_KEY_FILE !== undefined && e.PUBLIC_URL === undefined)
    problem(
      'PUBLIC_URL',
      "is required with CARD_SIGNING_KEY_FILE: signed cards name it (from the request's Host, any caller could get a card signed that points anywhere)",
    );
  if (e.CARD_SIGNATURES === 'require' && e.CARD_TRUST_JWKS_FILE === undefined) problem('CARD_TRUST_JWKS_FILE', 'is required with CARD_SIGNATURES=require');
  if (e.OIDC_ISSUER === undefined && (e.OIDC_AUDIENCE !== undefined || e.OIDC_JWKS_URL !== undefined))
    problem('OIDC_ISSUER', 'is required with OIDC_AUDIENCE / OIDC_JWKS_URL');
  if (e.IDENTITY_POLICY === 'required' && e.ROLE === 'server' && !trusts && e.TLS_CLIENT_CA_FILE === undefined && e.OIDC_ISSUER === undefined) {
    problem('IDENTITY_POLICY', 'required needs an identity source: ASSERTION_TRUST_JWKS_FILE/_URL, TLS_CLIENT_CA_FILE or OIDC_ISSUER');
  }
}

export type Env = { [K in keyof typeof VARIABLES]: Out<(typeof VARIABLES)[K]> };
const NAMES = Object.keys(VARIABLES) as (keyof Env)[];

/** One problem of the environment: the variable and zod's wording ("is required" when unset). */
export interface VariableProblem {
  readonly key: string;
  readonly message: string;
}

/**
 * The variables' values, or their problems, in zod's order: variable by variable as listed, then the
 * rules between variables, which run only when every problem so far lets zod carry on.
 */
export function parseVariables(input: Readonly<Record<string, string>>): { ok: true; env: Env } | { ok: false; problems: VariableProblem[] } {
  const out: Record<string, unknown> = {};
  const problems: (VariableProblem & Pick<Issue, 'continues'>)[] = [];
  for (const key of NAMES) {
    const issues: Issue[] = [];
    out[key] = (VARIABLES[key] as Rule<unknown>).run(input[key], issues);
    for (const i of issues) problems.push({ key, message: i.message, continues: i.continues });
  }
  if (problems.every((p) => p.continues)) crossRules(out as Env, (key, message) => problems.push({ key, message, continues: true }));
  return problems.length === 0 ? { ok: true, env: out as Env } : { ok: false, problems: problems.map(({ key, message }) => ({ key, message })) };
}

/**
 * The same rules as one zod schema: the reference of test/unit/config-rules.test.ts (nothing at start
 * builds it). zod is the caller's (`import * as z from 'zod'`): the proxy's start does not load it.
 */
export function envSchema(z: typeof Z): Z.ZodType<Env, Record<string, string>> {
  const shape = Object.fromEntries(NAMES.map((k) => [k, (VARIABLES[k] as Rule<unknown>).zod(z)]));
  return z
    .object(shape)
    .superRefine((e, ctx) => crossRules(e as Env, (name, message) => ctx.addIssue({ code: 'custom', path: [name], message }))) as unknown as Z.ZodType<
    Env,
    Record<string, string>
  >;
}

/** Which token claim (or claims, first present wins) fills each AOS agent field of an OIDC caller. */
export type ClaimMap = Readonly<Record<'id' | 'name' | 'url' | 'version', readonly string[]>>;

/** `id=sub,name=azp|client_id` -> {id: ['sub'], name: ['azp', 'client_id'], url: [], version: []}, or a problem. */
export function parseClaimMap(text: string): ClaimMap | string {
  const map: Record<'id' | 'name' | 'url' | 'version', string[]> = { id: [], name: [], url: [], version: [] };
  for (const item of text
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '')) {
    const eq = item.indexOf('=');
    const field = item.slice(0, eq).trim();
    if (eq < 0 || !(field in map)) return `"${item}": expected FIELD=claim[|claim...] with FIELD one of id, name, url, version`;
    const claims = item
      .slice(eq + 1)
      .split('|')
      .map((c) => c.trim());
    if (claims.some((c) => !/^[A-Za-z0-9_:./-]+$/.test(c))) return `"${item}": claim names are letters, digits and _ : . / -`;
    map[field as keyof typeof map] = claims;
  }
  if (map.id.length === 0) return 'must map id (e.g. id=sub)';
  return map;
}

/** The audience form both sides compare: origin + path, no trailing slash. */
export function normaliseAudience(url: string | URL): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

/** Readonly all the way down; URLs (and other class instances named here) are kept as they are. */
type DeepReadonly<T> = T extends URL | string | number | boolean | bigint | symbol | null | undefined
  ? T
  : T extends readonly (infer U)[]
    ? readonly DeepReadonly<U>[]
    : { readonly [K in keyof T]: DeepReadonly<T[K]> };

/** The configuration the proxy runs with: the type is what toConfig builds, so it is written once. */
export type Config = DeepReadonly<ReturnType<typeof toConfig>>;
export type IdentityConfig = Config['identity'];
export type TlsConfig = Config['tls'];
/** TLS towards one server: CA bundle, client certificate and key (mutual TLS), server name. */
export type OutboundTls = TlsConfig['guardian'];
export type OwnershipConfig = Config['ownership'];
export type GrpcConfig = NonNullable<Config['grpc']>;
export type OtelConfig = NonNullable<Config['otel']>;
export type { ObservedAgentOverrides } from '../aos/identity';

export type ConfigResult = { ok: true; config: Config } | { ok: false; problems: string[] };

/**
 * Parse the environment (and the --config file, which it overrides). Every variable may also be given
 * as `A2A_GUARD_<NAME>`, which wins (src/core/env.ts). Empty strings count as unset, as in most container
 * runtimes' env files.
 */
export function loadConfig(env: NodeJS.ProcessEnv, file?: ConfigFile): ConfigResult {
  const input: Record<string, string> = {};
  const found: Record<string, EnvValue> = {};
  for (const key of NAMES) {
    const found1 = lookupEnv(env, key);
    if (found1 !== undefined) {
      input[key] = found1.value;
      found[key] = found1;
    } else if (file?.values[key] !== undefined) {
      input[key] = file.values[key];
      found[key] = { value: file.values[key], from: `${file.file}: ${key}` };
    }
  }
  const misspelled = misspelledVariables(env, NAMES);
  const parsed = parseVariables(input);
  if (!parsed.ok || misspelled.length > 0) {
    return {
      ok: false,
      problems: [...misspelled, ...(parsed.ok ? [] : parsed.problems)].map((i) => {
        if (typeof i === 'string') return i;
        const name = found[i.key]?.from ?? i.key;
        // Tokens, and a store URL that may carry a password, are never echoed.
        const shown = input[i.key] === undefined ? '(unset)' : JSON.stringify(i.key === 'TASK_STORE_URL' ? '***' : maskValue(i.key, input[i.key] as string));
        return `${name}=${shown}: ${i.message}${serviceLinkHint(found[i.key], i.key)}`;
      }),
    };
  }
  const e = parsed.env;
  const config = toConfig(e);
  // A store for owners while ownership is off would leave the operator believing tasks are private.
  if (e.TASK_STORE_URL !== undefined && !config.ownership.enabled) {
    return { ok: false, problems: ['TASK_STORE_URL: set, but task ownership is off; set TASK_OWNERSHIP=true (or remove TASK_STORE_URL)'] };
  }
  if (e.DECISION_LOG_KEY_FILE !== undefined && e.DECISION_LOG_FILE === undefined) {
    return { ok: false, problems: ['DECISION_LOG_KEY_FILE: set, but DECISION_LOG_FILE is not; there is no decision log to key'] };
  }
  return { ok: true, config };
}

const url = (u: string | undefined): URL | undefined => (u === undefined ? undefined : new URL(u));

/** The parsed variables as the configuration the code reads; its return type is `Config`. */
function toConfig(e: Env) {
  return {
    port: e.PORT,
    host: e.HOST,
    upstreamUrl: new URL(e.UPSTREAM_URL),
    guardianUrl: url(e.GUARDIAN_URL),
    guardianToken: e.GUARDIAN_TOKEN,
    guardianTimeoutMs: e.GUARDIAN_TIMEOUT_MS,
    role: e.ROLE,
    failMode: e.FAIL_MODE,
    inspectResponses: e.INSPECT_RESPONSES,
    /** Cards shown to the guardian (`agent/card` hooks) before they are served. */
    inspectCards: e.INSPECT_CARDS === undefined ? e.INSPECT_RESPONSES : ['true', '1', 'yes'].includes(e.INSPECT_CARDS),
    /** Stream events judged by the guardian at once, per stream. */
    streamInspectWindow: e.STREAM_INSPECT_WINDOW,
    /** Guardian connections for the checks of calls (request hooks, unary answers), and apart from them for stream events. */
    guardianCallConnections: e.GUARDIAN_CALL_CONNECTIONS,
    guardianStreamConnections: e.GUARDIAN_STREAM_CONNECTIONS,
    reasoningHeader: e.REASONING_HEADER,
    observedAgent: observedAgent(e),
    observedAgentCardUrl: url(e.OBSERVED_AGENT_CARD_URL),
    publicUrl: url(e.PUBLIC_URL),
    maxBodyBytes: e.MAX_BODY_BYTES,
    /** Bounds on a JSON request body's shape, checked before it is parsed (a2a/json-shape.ts). */
    jsonLimits: { depth: e.MAX_JSON_DEPTH, values: e.MAX_JSON_VALUES, objectMembers: e.MAX_JSON_OBJECT_MEMBERS },
    bodyTimeoutMs: e.BODY_TIMEOUT_MS,
    cardTtlMs: e.CARD_TTL_MS,
    cardSignatures: e.CARD_SIGNATURES,
    /** Card signing (CARD_SIGNING_KEY_FILE) and the agent's signatures checked (CARD_TRUST_JWKS_FILE). */
    cardSigning: { keyFile: e.CARD_SIGNING_KEY_FILE, keyId: e.CARD_SIGNING_KEY_ID, trustJwksFile: e.CARD_TRUST_JWKS_FILE },
    /** More card paths (decoded segments), served and rewritten as the standard card. */
    cardPaths: e.CARD_PATHS,
    /** Path prefixes (decoded segments) of non-A2A routes forwarded unjudged. */
    passthroughPaths: e.PASSTHROUGH_PATHS,
    /** REST bases (decoded segments) that override the agent card's HTTP+JSON interfaces. */
    restBasePaths: e.REST_BASE_PATHS,
    nonA2A: e.NON_A2A,
    maxInflightBodyBytes: e.MAX_INFLIGHT_BODY_BYTES,
    maxConnections: e.MAX_CONNECTIONS,
    perCaller: perCallerConfig(e),
    exposeGuardianReasoning: e.EXPOSE_GUARDIAN_REASONING,
    adminPort: e.ADMIN_PORT,
    adminHost: e.ADMIN_HOST,
    drainTimeoutMs: e.DRAIN_TIMEOUT_MS,
    shutdownDelayMs: e.SHUTDOWN_DELAY_MS,
    /** The pod's termination grace period in ms, when the operator gave it. */
    terminationGraceMs: e.TERMINATION_GRACE_PERIOD_SECONDS === undefined ? undefined : e.TERMINATION_GRACE_PERIOD_SECONDS * 1000,
    readinessRequires: { guardian: e.READINESS_REQUIRES.includes('guardian'), upstream: e.READINESS_REQUIRES.includes('upstream') },
    shadowMode: e.SHADOW_MODE,
    allowWebSockets: e.ALLOW_WEBSOCKETS,
    upgradePaths: e.UPGRADE_PATHS,
    a2aVersions: e.A2A_VERSIONS,
    a2aExtensions: e.A2A_EXTENSIONS,
    policyFile: e.POLICY_FILE ?? DEFAULT_POLICY_FILE,
    policyWatch: e.POLICY_WATCH,
    decisionLogFile: e.DECISION_LOG_FILE,
    decisionLogKeyFile: e.DECISION_LOG_KEY_FILE,
    logLevel: e.LOG_LEVEL,
    /** OpenTelemetry tracing, or undefined when it is off (nothing of it is loaded then). */
    otel: otelConfig(e),
    guardianTokenFile: e.GUARDIAN_TOKEN_FILE,
    identity: identityConfig(e),
    tls: {
      /** The proxy's own listener over TLS, with optional client certificates (mutual TLS). */
      listener:
        e.TLS_CERT_FILE === undefined || e.TLS_KEY_FILE === undefined
          ? undefined
          : { certFile: e.TLS_CERT_FILE, keyFile: e.TLS_KEY_FILE, clientCaFile: e.TLS_CLIENT_CA_FILE, clientCert: e.TLS_CLIENT_CERT },
      guardian: outboundTls(e.GUARDIAN_CA_FILE, e.GUARDIAN_CERT_FILE, e.GUARDIAN_KEY_FILE, e.GUARDIAN_SERVER_NAME),
      upstream: outboundTls(e.UPSTREAM_CA_FILE, e.UPSTREAM_CERT_FILE, e.UPSTREAM_KEY_FILE, e.UPSTREAM_SERVER_NAME),
    },
    push: pushConfig(e),
    ownership: ownershipConfig(e),
    /** The gRPC binding (GRPC_PORT), or undefined when off (nothing of it is loaded then). */
    grpc:
      e.GRPC_PORT === undefined
        ? undefined
        : {
            port: e.GRPC_PORT,
            /** The agent's gRPC endpoint; undefined: from its card's GRPC interface. */
            upstreamUrl: url(e.GRPC_UPSTREAM_URL),
            /** host:port advertised in served cards; undefined: the card request's host with the listener's port. */
            publicAddress: e.GRPC_PUBLIC_ADDRESS,
          },
  };
}

/** A caller's share of the guardian's call connections when GUARDIAN_CALLS_PER_CALLER is unset: a quarter. */
export function defaultGuardianCalls(callConnections: number): number {
  return Math.max(1, Math.floor(callConnections / 4));
}

/** What one caller may hold of what every caller shares (proxy/callers.ts). */
function perCallerConfig(e: Env) {
  return {
    inflightBodyBytes: Math.min(e.MAX_INFLIGHT_BODY_BYTES_PER_CALLER ?? Math.max(32 * 1024 * 1024, HELD_COPIES * e.MAX_BODY_BYTES), e.MAX_INFLIGHT_BODY_BYTES),
    bodyMinBytesPerSecond: e.BODY_MIN_BYTES_PER_SECOND,
    /** Leading bits of an IPv6 address that name an unverified caller (proxy/callers.ts callerKey). */
    ipv6Prefix: e.CALLER_IPV6_PREFIX,
    maxCalls: e.MAX_CALLS_PER_CALLER,
    /** How long a call past maxCalls waits for a place of its caller (0: refused at once). */
    callWaitMs: e.CALL_WAIT_MS,
    guardianCalls: e.GUARDIAN_CALLS_PER_CALLER ?? defaultGuardianCalls(e.GUARDIAN_CALL_CONNECTIONS),
    /** GUARDIAN_CALLS_PER_CALLER was set (else guardianCalls follows the guardian's call connections in use). */
    guardianCallsSet: e.GUARDIAN_CALLS_PER_CALLER !== undefined,
    /** Calls per second and burst; undefined = no rate limit. */
    rate: e.RATE_LIMIT_PER_SECOND === 0 ? undefined : { perSecond: e.RATE_LIMIT_PER_SECOND, burst: e.RATE_LIMIT_BURST ?? Math.max(1, e.RATE_LIMIT_PER_SECOND) },
    /** Turns of the CPU stages waiting per caller (0: no fair queue) and the slice run at once. */
    fairQueue: e.FAIR_QUEUE_PER_CALLER,
    fairSliceMs: e.FAIR_SLICE_MS,
  };
}

/** Caller identity: assertions signed and verified between proxies, OIDC tokens. */
function identityConfig(e: Env) {
  return {
    /** What a caller without a verified identity gets (ROLE=server). */
    policy: e.IDENTITY_POLICY,
    signingKeyFile: e.ASSERTION_SIGNING_KEY_FILE,
    signingKeyId: e.ASSERTION_SIGNING_KEY_ID,
    assertionTtlSeconds: e.ASSERTION_TTL_SECONDS,
    trustJwksFile: e.ASSERTION_TRUST_JWKS_FILE,
    trustJwksUrl: url(e.ASSERTION_TRUST_JWKS_URL),
    /**
     * ROLE=server: the audiences this proxy accepts in assertions (ASSERTION_AUDIENCE, else PUBLIC_URL).
     * ROLE=client/both: ASSERTION_AUDIENCE's first value is the audience it signs for (else UPSTREAM_URL).
     * Normalised: origin + path without trailing slash.
     */
    audiences: (e.ASSERTION_AUDIENCE ?? (e.PUBLIC_URL === undefined ? [] : [e.PUBLIC_URL])).map(normaliseAudience),
    replayCacheSize: e.ASSERTION_REPLAY_CACHE_SIZE,
    oidc:
      e.OIDC_ISSUER === undefined
        ? undefined
        : { issuer: e.OIDC_ISSUER, audiences: e.OIDC_AUDIENCE ?? [], jwksUrl: url(e.OIDC_JWKS_URL), claims: e.OIDC_CLAIMS },
    /** How often key, certificate, token and JWKS files are re-read; the maximum age of a fetched JWKS. */
    refreshMs: e.CREDENTIALS_REFRESH_MS,
  };
}

/** Push deliveries: relayed through the proxy (judged), or direct from the agent (unjudged). */
function pushConfig(e: Env) {
  return {
    relay: (e.PUSH_DELIVERIES ?? (e.INSPECT_RESPONSES && e.ROLE !== 'client' ? 'relay' : 'direct')) === 'relay',
    port: e.PUSH_RELAY_PORT,
    host: e.PUSH_RELAY_HOST,
    url: url(e.PUSH_RELAY_URL),
    allowPrivate: e.PUSH_ALLOW_PRIVATE_WEBHOOKS,
    queuePerCaller: e.PUSH_QUEUE_PER_CALLER,
    retries: e.PUSH_RETRIES,
    configsPerCaller: e.PUSH_CONFIGS_PER_CALLER,
    /** Connections to webhooks open at once (64 destinations kept, 4 each, and 256 deliveries in flight: push/deliver.ts); lowered within the file descriptors (proxy/connections.ts). */
    connections: 512,
  };
}

/** Task ownership and the store of task owners. */
function ownershipConfig(e: Env) {
  return {
    /**
     * Calls naming a task are checked against the task's owner (the verified caller that created it).
     * On by default where every caller is verified (ROLE=server with IDENTITY_POLICY=required).
     */
    enabled: e.TASK_OWNERSHIP ?? (e.IDENTITY_POLICY === 'required' && e.ROLE === 'server'),
    /** redis:// URL of the store shared by replicas; undefined: in memory. */
    storeUrl: e.TASK_STORE_URL,
    prefix: e.TASK_STORE_PREFIX,
    timeoutMs: e.TASK_STORE_TIMEOUT_MS,
    maxEntries: e.TASK_STORE_MAX_ENTRIES,
    maxBytes: e.TASK_STORE_MAX_BYTES,
    maxPerCaller: e.TASK_STORE_MAX_PER_CALLER,
    allowEviction: e.TASK_STORE_ALLOW_EVICTION,
    ttlSeconds: e.TASK_OWNERSHIP_TTL_SECONDS,
  };
}

/** OBSERVED_AGENT_*, only those set (an unset one is learned from the agent's card). */
function observedAgent(e: Env): ObservedAgentOverrides {
  const all: Record<keyof ObservedAgentOverrides, string | undefined> = {
    id: e.OBSERVED_AGENT_ID,
    name: e.OBSERVED_AGENT_NAME,
    url: e.OBSERVED_AGENT_URL,
    version: e.OBSERVED_AGENT_VERSION,
    description: e.OBSERVED_AGENT_DESCRIPTION,
    instructions: e.OBSERVED_AGENT_INSTRUCTIONS,
    providerName: e.OBSERVED_AGENT_PROVIDER_NAME,
    providerUrl: e.OBSERVED_AGENT_PROVIDER_URL,
  };
  return Object.fromEntries(Object.entries(all).filter(([, v]) => v !== undefined));
}

/** TLS towards one server: CA bundle, client certificate and key (mutual TLS), server name. */
function outboundTls(caFile: string | undefined, certFile: string | undefined, keyFile: string | undefined, serverName: string | undefined) {
  return { caFile, certFile, keyFile, serverName };
}

/**
 * Well-known variables of other software that sit within a typo of one of ours. OpenSSL, curl, Python
 * and most CI images set SSL_CERT_FILE/SSL_CERT_DIR; flagging them would stop the proxy from starting
 * in an ordinary environment. Found by checking ~200 common variable names (shell, Node, npm, TLS
 * tools, proxies, CI, Kubernetes service links, OTEL_*, cloud SDKs) against our names.
 */
export const FOREIGN_VARIABLES: ReadonlySet<string> = new Set(['SSL_CERT_FILE', 'SSL_CERT_DIR', 'SSL_KEY_FILE', 'LOGLEVEL']);

/**
 * Variables that are not ours but within a typo of one of ours (GAURDIAN_URL): a misspelling must
 * not silently leave the proxy weaker (here: the embedded demo policy deciding instead of the
 * guardian). Damerau distance 1 for names up to 6 characters, 2 above, so HOME is not HOST. Other
 * software's well-known names are not typos, unless written with our prefix.
 */
export function misspelledVariables(env: NodeJS.ProcessEnv, known: readonly string[]): string[] {
  const out: string[] = [];
  const knownSet = new Set(known);
  // The characters of each name as a set of 32 bits, code mod 32 (names are mostly A-Z, 0-9 and _;
  // characters that share a bit only let more pairs through to editDistance). Computed in this
  // function's own loops, not a helper: V8 compiles a small function called ~100 times with
  // TurboFan at once, which cost more CPU than the whole check (9-17 ms, --trace-opt).
  const knownChars: number[] = [];
  for (const k of known) {
    let bits = 0;
    for (let j = 0; j < k.length; j++) bits |= 1 << (k.charCodeAt(j) & 31);
    knownChars.push(bits);
  }
  for (const name of Object.keys(env)) {
    if (knownSet.has(name) || env[name] === undefined || FOREIGN_VARIABLES.has(name)) continue;
    // A2A_GUARD_<NAME> is the prefixed form of <NAME> (src/core/env.ts): check the name behind the prefix.
    const prefixed = name.startsWith('A2A_GUARD_');
    if (prefixed && knownSet.has(name.slice('A2A_GUARD_'.length))) continue;
    const upper = (prefixed ? name.slice('A2A_GUARD_'.length) : name).toUpperCase();
    let chars = 0;
    for (let j = 0; j < upper.length; j++) chars |= 1 << (upper.charCodeAt(j) & 31);
    // A loop, not known.find: V8 compiled that small callback with TurboFan during the start too.
    for (let i = 0; i < known.length; i++) {
      const k = known[i] as string;
      const most = k.length <= 6 ? 1 : 2;
      const longer = upper.length - k.length;
      if (upper !== k && (longer > most || longer < -most || !fewEdits(chars, knownChars[i] as number, most) || editDistance(upper, k) > most)) continue;
      out.push(`${name}: unknown variable; did you mean ${k}?`);
      break;
    }
  }
  return out;
}

/**
 * Each edit brings in or takes out at most one character: more characters found on one side only
 * than edits allowed means further apart, without computing the distance. With it the check costs
 * ~1-2 ms of a start's CPU instead of ~10 ms, plus 8-60 ms of TurboFan compiling editDistance, hot
 * from ~3,600 calls (39 variables x 92 names, --trace-opt on the bench machine).
 */
function fewEdits(a: number, b: number, most: number): boolean {
  let onlyA = 0;
  for (let x = a & ~b; x !== 0; x &= x - 1) onlyA++;
  let onlyB = 0;
  for (let x = b & ~a; x !== 0; x &= x - 1) onlyB++;
  return onlyA <= most && onlyB <= most;
}

/**
 * Optimal-string-alignment distance (a swap of two neighbours counts as one edit), exact up to 2;
 * 3 means "more than 2". Start-up compares every variable of the environment with every name, in
 * code not yet optimised: the full table cost ~40 ms for 40 variables (Kubernetes adds service
 * links by the hundred), so only the band |i - j| <= 2 is computed, in reused rows, and the walk
 * stops at the first row where every cell is past 2 (no alignment can come back under it).
 */
function editDistance(a: string, b: string): number {
  const MAX = 2;
  const FAR = MAX + 1;
  if (Math.abs(a.length - b.length) > MAX) return FAR;
  const width = b.length + 1;
  if (distanceRows[0].length < width) distanceRows = [new Uint8Array(width), new Uint8Array(width), new Uint8Array(width)];
  let [older, prev, row] = distanceRows;
  for (let j = 0; j < width; j++) prev[j] = Math.min(j, FAR);
  for (let i = 1; i <= a.length; i++) {
    row.fill(FAR, 0, width);
    row[0] = Math.min(i, FAR);
    let best = row[0] as number;
    const hi = Math.min(b.length, i + MAX);
    for (let j = Math.max(1, i - MAX); j <= hi; j++) {
      let d = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (older[j - 2] as number) + 1);
      row[j] = Math.min(d, FAR);
      if (d < best) best = d;
    }
    if (best > MAX) return FAR;
    [older, prev, row] = [prev, row, older];
  }
  return prev[b.length] as number;
}
let distanceRows: [Uint8Array, Uint8Array, Uint8Array] = [new Uint8Array(64), new Uint8Array(64), new Uint8Array(64)];

type OtelKey = Extract<keyof Env, `OTEL_${string}`>;
/** Tracing is on when an OTLP endpoint is given or OTEL_TRACES_EXPORTER=otlp, unless disabled. */
function otelConfig(e: Pick<Env, OtelKey>) {
  if (e.OTEL_SDK_DISABLED || e.OTEL_TRACES_EXPORTER === 'none') return undefined;
  const specific = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = e.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (specific === undefined && base === undefined && e.OTEL_TRACES_EXPORTER !== 'otlp') return undefined;
  const tracesUrl = specific ?? `${(base ?? 'http://localhost:4318').replace(/\/+$/, '')}/v1/traces`;
  const resourceAttributes = keyValues(e.OTEL_RESOURCE_ATTRIBUTES);
  return {
    /** Where spans go (OTLP/HTTP). */
    tracesUrl,
    protocol: e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    headers: { ...keyValues(e.OTEL_EXPORTER_OTLP_HEADERS), ...keyValues(e.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
    serviceName: e.OTEL_SERVICE_NAME ?? resourceAttributes['service.name'] ?? 'a2a-guard',
    resourceAttributes,
    sampler: e.OTEL_TRACES_SAMPLER,
    samplerRatio: e.OTEL_TRACES_SAMPLER_ARG ?? 1,
  };
}

/** The W3C Baggage-style `key=value,key2=value2` lists of the OTel variables (values percent-decoded). */
export function keyValues(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (text === undefined) return out;
  for (const pair of text.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    const key = pair.slice(0, eq).trim();
    let value = pair.slice(eq + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      /* keep it as written */
    }
    if (key !== '') out[key] = value;
  }
  return out;
}

/** Variables whose values are secrets: never printed, never logged. */
export function isSecretVariable(name: string): boolean {
  return /TOKEN|SECRET|PASSWORD|PASSPHRASE|PRIVATE|_KEY\b|_KEY_|HEADERS|CREDENTIAL/.test(name);
}

/** A value as it may be shown: secrets masked, and the password of a URL's userinfo masked. */
export function maskValue(name: string, value: string): string {
  if (isSecretVariable(name)) return '***';
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) && URL.canParse(value)) {
    const u = new URL(value);
    if (u.password !== '') {
      u.password = '***';
      return u.href;
    }
  }
  return value;
}

export interface VariableInfo {
  readonly name: string;
  readonly description: string;
  /** The default as text, 'required', or 'unset'. */
  readonly default: string;
  readonly secret: boolean;
}

/** A parsed default as the text that gives it (OIDC_CLAIMS is parsed into a map: shown as `id=sub,...`). */
function shownDefault(value: unknown): string {
  if (Array.isArray(value)) return value.join(',');
  if (typeof value !== 'object' || value === null) return String(value);
  return Object.entries(value as ClaimMap)
    .filter(([, claims]) => claims.length > 0)
    .map(([field, claims]) => `${field}=${claims.join('|')}`)
    .join(',');
}

/** Every variable of the schema with its meaning and default, for --help and --check. */
export function describeVariables(): VariableInfo[] {
  return NAMES.map((name) => {
    const rule = VARIABLES[name] as Rule<unknown>;
    const issues: Issue[] = [];
    const value = rule.run(undefined, issues);
    const def = issues.length > 0 ? 'required' : value === undefined ? 'unset' : shownDefault(value);
    return { name, description: rule.description, default: def, secret: isSecretVariable(name) };
  });
}

/** The raw values an environment (over a --config file) gives the schema's variables (src/core/env.ts: A2A_GUARD_<NAME> wins; empty counts as unset). */
export function schemaInput(env: NodeJS.ProcessEnv, file?: ConfigFile): Record<string, string> {
  const input: Record<string, string> = {};
  for (const key of NAMES) {
    const found = lookupEnv(env, key)?.value ?? file?.values[key];
    if (found !== undefined) input[key] = found;
  }
  return input;
}

/** The variables' names, in the table's order. */
export function variableNames(): readonly string[] {
  return NAMES;
}

/**
 * The JSON Schema of a --config file, from the same rules (their zod forms' input side): each name
 * with its description and default; a value may be written as the variable's text or, where the
 * rule reads one, as a YAML/JSON number, boolean or list. zod is the caller's, as for envSchema.
 */
export function configFileSchema(z: typeof Z): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const name of NAMES) {
    const rule = VARIABLES[name] as Rule<unknown>;
    const text = z.toJSONSchema(rule.zod(z), { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    delete text.$schema;
    const { description, default: def, ...asText } = text;
    const forms: Record<string, unknown>[] = [asText];
    const values = asText.enum as string[] | undefined;
    if (values?.includes('true') === true) forms.unshift({ type: 'boolean' });
    if (asText.pattern === '^\\d+$') forms.unshift({ type: 'integer', minimum: 0 });
    if (name === 'OTEL_TRACES_SAMPLER_ARG') forms.unshift({ type: 'number', minimum: 0, maximum: 1 });
    if (/comma-separated/.test(rule.description)) forms.push({ type: 'array', items: values === undefined ? { type: 'string' } : { enum: values } });
    properties[name] = { description, ...(def === undefined ? {} : { default: def }), anyOf: [...forms, { type: 'null' }] };
  }
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'a2a-guard --config file',
    description: 'The variables of a2a-guard (a2a-guard --help) as one YAML or JSON mapping; a variable set in the environment wins over the file.',
    type: 'object',
    additionalProperties: false,
    properties,
  };
}

/** Test and embedding convenience: a full config from a partial env. Throws on problems. */
export function configFrom(env: Record<string, string | undefined>): Config {
  const r = loadConfig(env);
  if (!r.ok) throw new Error(`invalid configuration:\n${r.problems.join('\n')}`);
  return r.config;
}
