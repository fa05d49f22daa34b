/**
 * Configuration: environment variables only (design section 8), parsed once at start with zod.
 * Every bad variable yields one line naming it; the caller prints them and exits 2.
 */
import { z } from 'zod';
import { lookupEnv, serviceLinkHint, type EnvValue } from './env';

const bool = (def: boolean) =>
  z.enum(['true', 'false', '1', '0', 'yes', 'no']).default(def ? 'true' : 'false').transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (def: number, min: number, max: number) =>
  z.string().regex(/^\d+$/, 'must be a whole number').default(String(def)).transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
const httpUrl = z.string().refine((u) => /^https?:\/\//i.test(u) && URL.canParse(u), 'must be an absolute http(s) URL');
const optional = <T extends z.ZodType>(s: T) => s.optional();

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
  UNKNOWN_METHODS: z.enum(['forward', 'deny']).default('forward'),
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
  readonly unknownMethods: 'forward' | 'deny';
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
  const parsed = EnvSchema.safeParse(input);
  if (!parsed.success) {
    return {
      ok: false,
      problems: parsed.error.issues.map((i) => {
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
      unknownMethods: e.UNKNOWN_METHODS,
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

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** Test and embedding convenience: a full config from a partial env. Throws on problems. */
export function configFrom(env: Record<string, string | undefined>): Config {
  const r = loadConfig(env);
  if (!r.ok) throw new Error(`invalid configuration:\n${r.problems.join('\n')}`);
  return r.config;
}
