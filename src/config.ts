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
        const shown = input[key] === undefined ? '(unset)' : JSON.stringify(key.includes('TOKEN') ? '***' : input[key]);
        return `${name}=${shown}: ${i.code === 'invalid_type' && input[key] === undefined ? 'is required' : i.message}${serviceLinkHint(found[key], key)}`;
      }),
    };
  }
  const e = parsed.data;
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
