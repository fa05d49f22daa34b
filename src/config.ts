/**
 * Configuration: environment variables only (design section 8), parsed once at start with zod.
 * Every bad variable yields one line naming it; the caller prints them and exits 2.
 */
import { z } from 'zod';
import { pathSegments } from './a2a/target';
import { lookupEnv, serviceLinkHint, type EnvValue } from './env';

const bool = (def: boolean) =>
  z.enum(['true', 'false', '1', '0', 'yes', 'no']).default(def ? 'true' : 'false').transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (def: number, min: number, max: number) =>
  z.string().regex(/^\d+$/, 'must be a whole number').default(String(def)).transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
const httpUrl = z.string().refine((u) => /^https?:\/\//i.test(u) && URL.canParse(u), 'must be an absolute http(s) URL');
const optional = <T extends z.ZodType>(s: T) => s.optional();
const file = z.string().min(1).optional();
/** Comma-separated list of non-empty items. */
const list = z.string().transform((v) => v.split(',').map((x) => x.trim()).filter((x) => x !== ''));

/** A comma-separated list of absolute, plain paths ('/health,/metrics') as decoded segments. */
function pathList(v: string, ctx: z.RefinementCtx): string[][] {
  const out: string[][] = [];
  for (const raw of v.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const segs = pathSegments(raw);
    if (!raw.startsWith('/') || segs === undefined) ctx.addIssue({ code: 'custom', message: `"${raw}" is not an absolute plain path` });
    else out.push(segs);
  }
  return out;
}

const EnvSchema = z.object({
  PORT: int(8080, 0, 65535),
  HOST: z.string().min(1).default('0.0.0.0'),
  UPSTREAM_URL: httpUrl,
  GUARDIAN_URL: optional(httpUrl),
  GUARDIAN_TOKEN: optional(z.string().min(1, 'must not be empty when set')),
  GUARDIAN_TIMEOUT_MS: int(5000, 1, 600_000),
  ROLE: z.enum(['client', 'server', 'both']).default('server'),
  FAIL_MODE: z.enum(['closed', 'open']).default('closed'),
  INSPECT_RESPONSES: bool(false),
  REASONING_HEADER: z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be a valid HTTP header name').default('x-aos-reasoning').transform((h) => h.toLowerCase()),
  OBSERVED_AGENT_NAME: z.string().optional(),
  OBSERVED_AGENT_ID: z.string().optional(),
  OBSERVED_AGENT_URL: z.string().optional(),
  OBSERVED_AGENT_VERSION: z.string().optional(),
  OBSERVED_AGENT_DESCRIPTION: z.string().optional(),
  OBSERVED_AGENT_INSTRUCTIONS: z.string().optional(),
  OBSERVED_AGENT_PROVIDER_NAME: z.string().optional(),
  OBSERVED_AGENT_PROVIDER_URL: z.string().optional(),
  OBSERVED_AGENT_CARD_URL: optional(httpUrl),
  PUBLIC_URL: optional(httpUrl),
  MAX_BODY_BYTES: int(10 * 1024 * 1024, 1, 1024 * 1024 * 1024),
  BODY_TIMEOUT_MS: int(30_000, 1, 3_600_000),
  CARD_TTL_MS: int(300_000, 0, 86_400_000),
  CARD_SIGNATURES: z.enum(['strip', 'keep']).default('strip'),
  PASSTHROUGH_PATHS: z.string().default('').transform((v, ctx) => pathList(v, ctx)),
  REST_BASE_PATHS: z.string().optional().transform((v, ctx) => (v === undefined ? undefined : pathList(v, ctx))),
  NON_A2A: z.enum(['refuse', 'forward']).default('refuse'),
  MAX_INFLIGHT_BODY_BYTES: int(256 * 1024 * 1024, 1, 64 * 1024 * 1024 * 1024),
  EXPOSE_GUARDIAN_REASONING: bool(false),
  ADMIN_PORT: int(9090, 0, 65535),
  ADMIN_HOST: z.string().min(1).default('0.0.0.0'),
  DRAIN_TIMEOUT_MS: int(10_000, 0, 600_000),
  SHADOW_MODE: bool(false),
  ALLOW_WEBSOCKETS: bool(false),
  POLICY_FILE: z.string().min(1).default('config/policy.json'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // Task ownership (README "Task ownership")
  TASK_OWNERSHIP: optional(z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes')),
  TASK_STORE_URL: optional(z.string().refine((u) => /^rediss?:\/\//i.test(u) && URL.canParse(u), 'must be a redis:// or rediss:// URL')),
  TASK_STORE_PREFIX: z.string().min(1).max(256).default('a2a-guard:tasks:'),
  TASK_STORE_TIMEOUT_MS: int(250, 1, 60_000),
  TASK_STORE_MAX_ENTRIES: int(100_000, 100, 100_000_000),
  TASK_OWNERSHIP_TTL_SECONDS: int(7 * 24 * 3600, 60, 366 * 24 * 3600),
  // Verified identities (README "Identity")
  IDENTITY_POLICY: z.enum(['required', 'optional', 'claims']).default('optional'),
  ASSERTION_SIGNING_KEY_FILE: file,
  ASSERTION_SIGNING_KEY_ID: optional(z.string().regex(/^[\x21-\x7e]{1,128}$/, 'must be 1-128 printable ASCII characters')),
  ASSERTION_TTL_SECONDS: int(30, 1, 60),
  ASSERTION_TRUST_JWKS_FILE: file,
  ASSERTION_TRUST_JWKS_URL: optional(httpUrl),
  ASSERTION_AUDIENCE: optional(list.pipe(z.array(httpUrl).min(1, 'must name at least one URL'))),
  ASSERTION_REPLAY_CACHE_SIZE: int(100_000, 100, 10_000_000),
  OIDC_ISSUER: optional(httpUrl),
  OIDC_AUDIENCE: optional(list.pipe(z.array(z.string()).min(1, 'must name at least one audience'))),
  OIDC_JWKS_URL: optional(httpUrl),
  OIDC_CLAIMS: z.string().default('id=sub,name=azp|client_id|sub').transform((v, ctx) => {
    const map = parseClaimMap(v);
    if (typeof map === 'string') {
      ctx.addIssue({ code: 'custom', message: map });
      return z.NEVER;
    }
    return map;
  }),
  CREDENTIALS_REFRESH_MS: int(30_000, 100, 3_600_000),
  // TLS: the proxy's own listener, and towards the guardian and the upstream agent
  TLS_CERT_FILE: file,
  TLS_KEY_FILE: file,
  TLS_CLIENT_CA_FILE: file,
  TLS_CLIENT_CERT: z.enum(['required', 'optional']).default('required'),
  GUARDIAN_TOKEN_FILE: file,
  GUARDIAN_CA_FILE: file,
  GUARDIAN_CERT_FILE: file,
  GUARDIAN_KEY_FILE: file,
  GUARDIAN_SERVER_NAME: optional(z.string().min(1)),
  UPSTREAM_CA_FILE: file,
  UPSTREAM_CERT_FILE: file,
  UPSTREAM_KEY_FILE: file,
  UPSTREAM_SERVER_NAME: optional(z.string().min(1)),
}).superRefine((e, ctx) => {
  // Rules between variables; each problem names the variable to change.
  const problem = (name: string, message: string) => ctx.addIssue({ code: 'custom', path: [name], message });
  const pair = (a: keyof typeof e, b: keyof typeof e) => {
    if ((e[a] === undefined) !== (e[b] === undefined)) problem(e[a] === undefined ? a : b, `must be set together with ${e[a] === undefined ? b : a}`);
  };
  pair('TLS_CERT_FILE', 'TLS_KEY_FILE');
  pair('GUARDIAN_CERT_FILE', 'GUARDIAN_KEY_FILE');
  pair('UPSTREAM_CERT_FILE', 'UPSTREAM_KEY_FILE');
  if (e.TLS_CLIENT_CA_FILE !== undefined && e.TLS_CERT_FILE === undefined) problem('TLS_CLIENT_CA_FILE', 'needs TLS_CERT_FILE and TLS_KEY_FILE (client certificates need a TLS listener)');
  if (e.GUARDIAN_TOKEN !== undefined && e.GUARDIAN_TOKEN_FILE !== undefined) problem('GUARDIAN_TOKEN_FILE', 'set GUARDIAN_TOKEN or GUARDIAN_TOKEN_FILE, not both');
  if (e.ASSERTION_TRUST_JWKS_FILE !== undefined && e.ASSERTION_TRUST_JWKS_URL !== undefined) problem('ASSERTION_TRUST_JWKS_URL', 'set ASSERTION_TRUST_JWKS_FILE or ASSERTION_TRUST_JWKS_URL, not both');
  const trusts = e.ASSERTION_TRUST_JWKS_FILE !== undefined || e.ASSERTION_TRUST_JWKS_URL !== undefined;
  if (trusts && e.ROLE === 'server' && e.ASSERTION_AUDIENCE === undefined && e.PUBLIC_URL === undefined) {
    problem('ASSERTION_AUDIENCE', 'is required with a trusted JWKS (or PUBLIC_URL): the URL callers use to reach this proxy, which their assertions must name');
  }
  if (e.OIDC_ISSUER !== undefined && e.OIDC_AUDIENCE === undefined) problem('OIDC_AUDIENCE', 'is required with OIDC_ISSUER');
  if (e.OIDC_ISSUER === undefined && (e.OIDC_AUDIENCE !== undefined || e.OIDC_JWKS_URL !== undefined)) problem('OIDC_ISSUER', 'is required with OIDC_AUDIENCE / OIDC_JWKS_URL');
  if (e.IDENTITY_POLICY === 'required' && e.ROLE === 'server' && !trusts && e.TLS_CLIENT_CA_FILE === undefined && e.OIDC_ISSUER === undefined) {
    problem('IDENTITY_POLICY', 'required needs an identity source: ASSERTION_TRUST_JWKS_FILE/_URL, TLS_CLIENT_CA_FILE or OIDC_ISSUER');
  }
});

export type Env = z.infer<typeof EnvSchema>;

export interface ObservedAgentOverrides {
  readonly id?: string;
  readonly name?: string;
  readonly url?: string;
  readonly version?: string;
  readonly description?: string;
  readonly instructions?: string;
  readonly providerName?: string;
  readonly providerUrl?: string;
}

/** Which token claim (or claims, first present wins) fills each AOS agent field of an OIDC caller. */
export type ClaimMap = Readonly<Record<'id' | 'name' | 'url' | 'version', readonly string[]>>;

/** `id=sub,name=azp|client_id` -> {id: ['sub'], name: ['azp', 'client_id'], url: [], version: []}, or a problem. */
export function parseClaimMap(text: string): ClaimMap | string {
  const map: Record<'id' | 'name' | 'url' | 'version', string[]> = { id: [], name: [], url: [], version: [] };
  for (const item of text.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
    const eq = item.indexOf('=');
    const field = item.slice(0, eq).trim();
    if (eq < 0 || !(field in map)) return `"${item}": expected FIELD=claim[|claim...] with FIELD one of id, name, url, version`;
    const claims = item.slice(eq + 1).split('|').map((c) => c.trim());
    if (claims.some((c) => !/^[A-Za-z0-9_:.\/-]+$/.test(c))) return `"${item}": claim names are letters, digits and _ : . / -`;
    map[field as keyof typeof map] = claims;
  }
  if (map.id.length === 0) return 'must map id (e.g. id=sub)';
  return map;
}

/** TLS towards one server: CA bundle, client certificate and key (mutual TLS), server name. */
export interface OutboundTls {
  readonly caFile: string | undefined;
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
  readonly serverName: string | undefined;
}

export interface IdentityConfig {
  /** What a caller without a verified identity gets (ROLE=server). */
  readonly policy: 'required' | 'optional' | 'claims';
  readonly signingKeyFile: string | undefined;
  readonly signingKeyId: string | undefined;
  readonly assertionTtlSeconds: number;
  readonly trustJwksFile: string | undefined;
  readonly trustJwksUrl: URL | undefined;
  /**
   * ROLE=server: the audiences this proxy accepts in assertions (ASSERTION_AUDIENCE, else PUBLIC_URL).
   * ROLE=client/both: ASSERTION_AUDIENCE's first value is the audience it signs for (else UPSTREAM_URL).
   * Normalised: origin + path without trailing slash.
   */
  readonly audiences: readonly string[];
  readonly replayCacheSize: number;
  readonly oidc: { readonly issuer: string; readonly audiences: readonly string[]; readonly jwksUrl: URL | undefined; readonly claims: ClaimMap } | undefined;
  /** How often key, certificate, token and JWKS files are re-read; the maximum age of a fetched JWKS. */
  readonly refreshMs: number;
}

export interface TlsConfig {
  /** The proxy's own listener over TLS, with optional client certificates (mutual TLS). */
  readonly listener: { readonly certFile: string; readonly keyFile: string; readonly clientCaFile: string | undefined; readonly clientCert: 'required' | 'optional' } | undefined;
  readonly guardian: OutboundTls;
  readonly upstream: OutboundTls;
}

/** The audience form both sides compare: origin + path, no trailing slash. */
export function normaliseAudience(url: string | URL): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

export interface OwnershipConfig {
  /** Calls naming a task are checked against the task's owner (the verified caller that created it). */
  readonly enabled: boolean;
  /** redis:// URL of the store shared by replicas; undefined: in memory. */
  readonly storeUrl: string | undefined;
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly maxEntries: number;
  readonly ttlSeconds: number;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly upstreamUrl: URL;
  readonly guardianUrl: URL | undefined;
  readonly guardianToken: string | undefined;
  readonly guardianTimeoutMs: number;
  readonly role: 'client' | 'server' | 'both';
  readonly failMode: 'closed' | 'open';
  readonly inspectResponses: boolean;
  readonly reasoningHeader: string;
  readonly observedAgent: ObservedAgentOverrides;
  readonly observedAgentCardUrl: URL | undefined;
  readonly publicUrl: URL | undefined;
  readonly maxBodyBytes: number;
  readonly bodyTimeoutMs: number;
  readonly cardTtlMs: number;
  readonly cardSignatures: 'strip' | 'keep';
  /** Path prefixes (decoded segments) of non-A2A routes forwarded unjudged. */
  readonly passthroughPaths: readonly (readonly string[])[];
  /** REST bases (decoded segments) that override the agent card's HTTP+JSON interfaces. */
  readonly restBasePaths: readonly (readonly string[])[] | undefined;
  readonly nonA2A: 'refuse' | 'forward';
  readonly maxInflightBodyBytes: number;
  readonly exposeGuardianReasoning: boolean;
  readonly adminPort: number;
  readonly adminHost: string;
  readonly drainTimeoutMs: number;
  readonly shadowMode: boolean;
  readonly allowWebSockets: boolean;
  readonly policyFile: string;
  readonly logLevel: Env['LOG_LEVEL'];
  readonly guardianTokenFile: string | undefined;
  readonly identity: IdentityConfig;
  readonly tls: TlsConfig;
  readonly ownership: OwnershipConfig;
}

export type ConfigResult = { ok: true; config: Config } | { ok: false; problems: string[] };

/**
 * Parse the environment. Every variable may also be given as `A2A_GUARD_<NAME>`, which wins
 * (src/env.ts). Empty strings count as unset, as in most container runtimes' env files.
 */
export function loadConfig(env: NodeJS.ProcessEnv): ConfigResult {
  const input: Record<string, string> = {};
  const found: Record<string, EnvValue> = {};
  for (const key of Object.keys(EnvSchema.shape)) {
    const v = lookupEnv(env, key);
    if (v === undefined) continue;
    input[key] = v.value;
    found[key] = v;
  }
  const misspelled = misspelledVariables(env, Object.keys(EnvSchema.shape));
  const parsed = EnvSchema.safeParse(input);
  if (!parsed.success || misspelled.length > 0) {
    return {
      ok: false,
      problems: [...misspelled, ...(parsed.success ? [] : parsed.error.issues)].map((i) => {
        if (typeof i === 'string') return i;
        const key = String(i.path[0] ?? '?');
        const name = found[key]?.from ?? key;
        // Tokens, and a store URL that may carry a password, are never echoed.
        const shown = input[key] === undefined ? '(unset)' : JSON.stringify(key.includes('TOKEN') || key === 'TASK_STORE_URL' ? '***' : input[key]);
        return `${name}=${shown}: ${i.code === 'invalid_type' && input[key] === undefined ? 'is required' : i.message}${serviceLinkHint(found[key], key)}`;
      }),
    };
  }
  const e = parsed.data;
  // On by default where every caller is verified (ROLE=server with IDENTITY_POLICY=required).
  const ownershipEnabled = e.TASK_OWNERSHIP ?? (e.IDENTITY_POLICY === 'required' && e.ROLE === 'server');
  // A store for owners while ownership is off would leave the operator believing tasks are private.
  if (e.TASK_STORE_URL !== undefined && !ownershipEnabled) {
    return { ok: false, problems: ['TASK_STORE_URL: set, but task ownership is off; set TASK_OWNERSHIP=true (or remove TASK_STORE_URL)'] };
  }
  return {
    ok: true,
    config: {
      port: e.PORT,
      host: e.HOST,
      upstreamUrl: new URL(e.UPSTREAM_URL),
      guardianUrl: e.GUARDIAN_URL === undefined ? undefined : new URL(e.GUARDIAN_URL),
      guardianToken: e.GUARDIAN_TOKEN,
      guardianTimeoutMs: e.GUARDIAN_TIMEOUT_MS,
      role: e.ROLE,
      failMode: e.FAIL_MODE,
      inspectResponses: e.INSPECT_RESPONSES,
      reasoningHeader: e.REASONING_HEADER,
      observedAgent: dropUndefined({
        id: e.OBSERVED_AGENT_ID,
        name: e.OBSERVED_AGENT_NAME,
        url: e.OBSERVED_AGENT_URL,
        version: e.OBSERVED_AGENT_VERSION,
        description: e.OBSERVED_AGENT_DESCRIPTION,
        instructions: e.OBSERVED_AGENT_INSTRUCTIONS,
        providerName: e.OBSERVED_AGENT_PROVIDER_NAME,
        providerUrl: e.OBSERVED_AGENT_PROVIDER_URL,
      }),
      observedAgentCardUrl: e.OBSERVED_AGENT_CARD_URL === undefined ? undefined : new URL(e.OBSERVED_AGENT_CARD_URL),
      publicUrl: e.PUBLIC_URL === undefined ? undefined : new URL(e.PUBLIC_URL),
      maxBodyBytes: e.MAX_BODY_BYTES,
      bodyTimeoutMs: e.BODY_TIMEOUT_MS,
      cardTtlMs: e.CARD_TTL_MS,
      cardSignatures: e.CARD_SIGNATURES,
      passthroughPaths: e.PASSTHROUGH_PATHS,
      restBasePaths: e.REST_BASE_PATHS,
      nonA2A: e.NON_A2A,
      maxInflightBodyBytes: e.MAX_INFLIGHT_BODY_BYTES,
      exposeGuardianReasoning: e.EXPOSE_GUARDIAN_REASONING,
      adminPort: e.ADMIN_PORT,
      adminHost: e.ADMIN_HOST,
      drainTimeoutMs: e.DRAIN_TIMEOUT_MS,
      shadowMode: e.SHADOW_MODE,
      allowWebSockets: e.ALLOW_WEBSOCKETS,
      policyFile: e.POLICY_FILE,
      logLevel: e.LOG_LEVEL,
      guardianTokenFile: e.GUARDIAN_TOKEN_FILE,
      identity: {
        policy: e.IDENTITY_POLICY,
        signingKeyFile: e.ASSERTION_SIGNING_KEY_FILE,
        signingKeyId: e.ASSERTION_SIGNING_KEY_ID,
        assertionTtlSeconds: e.ASSERTION_TTL_SECONDS,
        trustJwksFile: e.ASSERTION_TRUST_JWKS_FILE,
        trustJwksUrl: e.ASSERTION_TRUST_JWKS_URL === undefined ? undefined : new URL(e.ASSERTION_TRUST_JWKS_URL),
        audiences: (e.ASSERTION_AUDIENCE ?? (e.PUBLIC_URL === undefined ? [] : [e.PUBLIC_URL])).map(normaliseAudience),
        replayCacheSize: e.ASSERTION_REPLAY_CACHE_SIZE,
        oidc: e.OIDC_ISSUER === undefined
          ? undefined
          : { issuer: e.OIDC_ISSUER, audiences: e.OIDC_AUDIENCE ?? [], jwksUrl: e.OIDC_JWKS_URL === undefined ? undefined : new URL(e.OIDC_JWKS_URL), claims: e.OIDC_CLAIMS },
        refreshMs: e.CREDENTIALS_REFRESH_MS,
      },
      tls: {
        listener: e.TLS_CERT_FILE === undefined || e.TLS_KEY_FILE === undefined
          ? undefined
          : { certFile: e.TLS_CERT_FILE, keyFile: e.TLS_KEY_FILE, clientCaFile: e.TLS_CLIENT_CA_FILE, clientCert: e.TLS_CLIENT_CERT },
        guardian: { caFile: e.GUARDIAN_CA_FILE, certFile: e.GUARDIAN_CERT_FILE, keyFile: e.GUARDIAN_KEY_FILE, serverName: e.GUARDIAN_SERVER_NAME },
        upstream: { caFile: e.UPSTREAM_CA_FILE, certFile: e.UPSTREAM_CERT_FILE, keyFile: e.UPSTREAM_KEY_FILE, serverName: e.UPSTREAM_SERVER_NAME },
      },
      ownership: {
        enabled: ownershipEnabled,
        storeUrl: e.TASK_STORE_URL,
        prefix: e.TASK_STORE_PREFIX,
        timeoutMs: e.TASK_STORE_TIMEOUT_MS,
        maxEntries: e.TASK_STORE_MAX_ENTRIES,
        ttlSeconds: e.TASK_OWNERSHIP_TTL_SECONDS,
      },
    },
  };
}

/**
 * Variables that are not ours but within a typo of one of ours (GAURDIAN_URL): a misspelling must
 * not silently leave the proxy weaker (here: the embedded demo policy deciding instead of the
 * guardian). Damerau distance 1 for names up to 6 characters, 2 above, so HOME is not HOST.
 */
export function misspelledVariables(env: NodeJS.ProcessEnv, known: readonly string[]): string[] {
  const out: string[] = [];
  const knownSet = new Set(known);
  for (const name of Object.keys(env)) {
    if (knownSet.has(name) || env[name] === undefined) continue;
    // A2A_GUARD_<NAME> is the prefixed form of <NAME> (src/env.ts): check the name behind the prefix.
    const prefixed = name.startsWith('A2A_GUARD_');
    if (prefixed && knownSet.has(name.slice('A2A_GUARD_'.length))) continue;
    const upper = (prefixed ? name.slice('A2A_GUARD_'.length) : name).toUpperCase();
    const near = known.find((k) => upper === k || editDistance(upper, k) <= (k.length <= 6 ? 1 : 2));
    if (near !== undefined) out.push(`${name}: unknown variable; did you mean ${near}?`);
  }
  return out;
}

/** Optimal-string-alignment distance (a swap of two neighbours counts as one edit). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) (d[0] as number[])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = d[i] as number[];
    const prev = d[i - 1] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** Test and embedding convenience: a full config from a partial env. Throws on problems. */
export function configFrom(env: Record<string, string | undefined>): Config {
  const r = loadConfig(env);
  if (!r.ok) throw new Error(`invalid configuration:\n${r.problems.join('\n')}`);
  return r.config;
}
