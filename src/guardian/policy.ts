/**
 * The reference guardian's policy file: zod schema, validation, and compilation into the
 * ready-to-run form the engine uses (regexes compiled once, method names normalised).
 *
 * File format (JSON; every section optional):
 *   messages          { allow?, modify? }  answer texts for allow / modify decisions
 *   peers             { allow?: string[], block?: string[], allowUnknown?: boolean }
 *   pushNotifications { allowHttp?: boolean, allowPrivate?: boolean, allowHosts?: string[] }
 *   serviceParameters { versions?: string[], extensions?: string[], peers?: [{ match: string[], versions?, extensions? }] }
 *   deny              DenyRule[]   patterns over every string in the A2A payload -> deny
 *   mask              MaskRule[]   keys / detectors / patterns rewritten -> modify
 *   cards             { changes?: { action: 'deny' | 'flag', message?, reasonCode? } }  card hooks (./cards)
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { operationForMethod } from '../a2a/operations';
import { CARD_METHOD, PHASES, SIDES, type Phase, type Side } from '../aos/hook-points';

export type Detector = 'email' | 'phone' | 'card' | 'nationalId';

const DETECTORS = ['email', 'card', 'nationalId', 'phone'] as const;

export { CARD_METHOD };

/** Keys whose values are protocol structure, never content: masking must not touch them. */
export const PROTECTED_KEYS: ReadonlySet<string> = new Set([
  'jsonrpc',
  'id',
  'method',
  'messageId',
  'taskId',
  'contextId',
  'kind',
  'role',
  'artifactId',
  'referenceTaskIds',
  'pushNotificationConfigId',
  'tenant',
  'state',
  'mediaType',
  'mimeType',
  'timestamp',
]);

/** Mask-rule keys are compared loosely (`normaliseKey`), so `message_id` is refused like `messageId`. */
const PROTECTED_NORMALISED: ReadonlySet<string> = new Set([...PROTECTED_KEYS].map((key) => normaliseKey(key)));

// ---------------------------------------------------------------------------------------------
// File schema (what users write)
// ---------------------------------------------------------------------------------------------

const nonEmpty = z.string().min(1, 'must be a non-empty string');
const ruleId = z.string().regex(/^[A-Za-z0-9_.:-]+$/, 'must be letters, digits, "_", ".", ":" or "-"');

const scopeFields = {
  methods: z.array(nonEmpty).min(1).optional(),
  sides: z.array(z.enum(SIDES)).min(1).optional(),
  phases: z.array(z.enum(PHASES)).min(1).optional(),
};

const DenyRuleFile = z.strictObject({
  id: ruleId,
  description: z.string().optional(),
  reasonCode: nonEmpty.optional(),
  message: nonEmpty,
  patterns: z.array(nonEmpty).min(1, 'needs at least one pattern'),
  caseSensitive: z.boolean().optional(),
  ...scopeFields,
});

const MaskRuleFile = z.strictObject({
  id: ruleId,
  description: z.string().optional(),
  reasonCode: nonEmpty.optional(),
  keys: z.array(nonEmpty).optional(),
  detectors: z.array(z.enum(DETECTORS)).optional(),
  patterns: z.array(nonEmpty).optional(),
  caseSensitive: z.boolean().optional(),
  replacement: z.string().optional(),
  ...scopeFields,
});

export const PolicyFile = z.strictObject({
  $schema: z.string().optional(),
  description: z.string().optional(),
  version: z.literal(1).optional(),
  messages: z.strictObject({ allow: nonEmpty.optional(), modify: nonEmpty.optional() }).optional(),
  peers: z
    .strictObject({
      allow: z.array(nonEmpty).optional(),
      block: z.array(nonEmpty).optional(),
      allowUnknown: z.boolean().optional(),
    })
    .optional(),
  serviceParameters: z
    .strictObject({
      versions: z.array(nonEmpty).optional(),
      extensions: z.array(nonEmpty).optional(),
      // Per peer (globs as in peers.allow), the first that matches wins over the defaults above.
      peers: z
        .array(z.strictObject({ match: z.array(nonEmpty).min(1), versions: z.array(nonEmpty).optional(), extensions: z.array(nonEmpty).optional() }))
        .optional(),
    })
    .optional(),
  pushNotifications: z
    .strictObject({
      allowHttp: z.boolean().optional(),
      allowPrivate: z.boolean().optional(),
      allowHosts: z.array(nonEmpty).optional(),
    })
    .optional(),
  deny: z.array(DenyRuleFile).optional(),
  mask: z.array(MaskRuleFile).optional(),
  cards: z
    .strictObject({
      changes: z
        .strictObject({
          action: z.enum(['deny', 'flag']),
          message: nonEmpty.optional(),
          reasonCode: nonEmpty.optional(),
        })
        .optional(),
    })
    .optional(),
});
export type PolicyFile = z.infer<typeof PolicyFile>;

// ---------------------------------------------------------------------------------------------
// Compiled policy (what the engine runs)
// ---------------------------------------------------------------------------------------------

/** Where a rule applies; `undefined` means "everywhere" for that dimension. */
export interface RuleScope {
  readonly methods: ReadonlySet<string> | undefined; // AOS method names
  readonly sides: ReadonlySet<Side> | undefined;
  readonly phases: ReadonlySet<Phase> | undefined;
}

export interface DenyRule {
  readonly id: string;
  readonly reasonCode: string | undefined;
  readonly message: string;
  readonly patterns: readonly RegExp[]; // non-global: `test` keeps no state
  readonly scope: RuleScope;
}

export interface MaskRule {
  readonly id: string;
  readonly reasonCode: string | undefined;
  /** Normalised key names (see `normaliseKey`). */
  readonly keys: ReadonlySet<string>;
  readonly detectors: readonly Detector[];
  readonly patterns: readonly RegExp[]; // global: used with String.prototype.replace
  /** Explicit replacement; otherwise "[REDACTED]" for keys/patterns and a per-detector token. */
  readonly replacement: string | undefined;
  readonly scope: RuleScope;
}

export interface PeerPolicy {
  readonly allow: readonly RegExp[];
  readonly block: readonly RegExp[];
  readonly allowUnknown: boolean;
}

export interface PushPolicy {
  readonly allowHttp: boolean;
  readonly allowPrivate: boolean;
  readonly allowHosts: readonly RegExp[];
}

/** A2A versions and extensions a request may carry (undefined: any). */
export interface ServiceParameterRule {
  readonly versions: readonly string[] | undefined;
  readonly extensions: readonly string[] | undefined;
}

export interface ServiceParameterPolicy extends ServiceParameterRule {
  readonly peers: readonly (ServiceParameterRule & { readonly match: readonly RegExp[] })[];
}

/** A card whose skills or interfaces changed since the approved version: refused, or passed with the reason code. */
export interface CardChangeRule {
  readonly action: 'deny' | 'flag';
  readonly message: string;
  readonly reasonCode: string;
}

export interface CardPolicy {
  readonly changes: CardChangeRule | undefined;
}

export interface Policy {
  readonly messages: { readonly allow: string; readonly modify: string };
  readonly peers: PeerPolicy;
  readonly serviceParameters: ServiceParameterPolicy;
  readonly push: PushPolicy;
  readonly deny: readonly DenyRule[];
  readonly mask: readonly MaskRule[];
  readonly cards: CardPolicy;
}

export const DEFAULT_ALLOW_MESSAGE = 'Allowed by policy.';
export const DEFAULT_MODIFY_MESSAGE = 'Sensitive data was masked by policy.';

/** A policy that could not be loaded; `problems` holds one line per problem, each with its JSON path. */
export class PolicyError extends Error {
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    super(`Invalid policy (${source}):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'PolicyError';
  }
}

/** Read, validate and compile a policy file. Throws PolicyError listing every problem. */
export function loadPolicy(path: string): Policy {
  return policyFromText(readPolicyFile(path).text, path);
}

/** A policy file's text and the SHA-256 of its bytes, from one read. Throws PolicyError when it cannot be read. */
export function readPolicyFile(path: string): { readonly text: string; readonly sha256: string } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new PolicyError(path, [`cannot read the file: ${errorMessage(err)}`]);
  }
  return { text: bytes.toString('utf8'), sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** Validate and compile a policy file's text (`source` names it in problems). Throws PolicyError. */
export function policyFromText(text: string, source: string): Policy {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new PolicyError(source, [`not valid JSON: ${errorMessage(err)}`]);
  }
  return parsePolicy(json, source);
}

/** Validate and compile an already-parsed policy document. Throws PolicyError. */
export function parsePolicy(input: unknown, source = 'policy'): Policy {
  const parsed = PolicyFile.safeParse(input);
  if (!parsed.success) {
    throw new PolicyError(
      source,
      parsed.error.issues.map((i) => `${formatPath(i.path)}: ${i.message}`),
    );
  }
  const problems: string[] = [];
  const policy = compilePolicy(parsed.data, problems);
  if (problems.length > 0) throw new PolicyError(source, problems);
  return policy;
}

function compilePolicy(file: PolicyFile, problems: string[]): Policy {
  checkUniqueIds(file, problems);
  const allowList = file.peers?.allow ?? [];
  return {
    messages: {
      allow: file.messages?.allow ?? DEFAULT_ALLOW_MESSAGE,
      modify: file.messages?.modify ?? DEFAULT_MODIFY_MESSAGE,
    },
    peers: {
      allow: allowList.map((g) => globToRegExp(g)),
      block: (file.peers?.block ?? []).map((g) => globToRegExp(g)),
      // Unknown peers pass by default, but not past an explicit allow list.
      allowUnknown: file.peers?.allowUnknown ?? allowList.length === 0,
    },
    serviceParameters: {
      versions: file.serviceParameters?.versions,
      extensions: file.serviceParameters?.extensions,
      peers: (file.serviceParameters?.peers ?? []).map((p) => ({ match: p.match.map((g) => globToRegExp(g)), versions: p.versions, extensions: p.extensions })),
    },
    push: {
      allowHttp: file.pushNotifications?.allowHttp ?? false,
      allowPrivate: file.pushNotifications?.allowPrivate ?? false,
      allowHosts: (file.pushNotifications?.allowHosts ?? []).map((g) => globToRegExp(g.toLowerCase())),
    },
    deny: (file.deny ?? []).map((rule, i) => compileDenyRule(rule, `deny[${i}]`, problems)),
    mask: (file.mask ?? []).map((rule, i) => compileMaskRule(rule, `mask[${i}]`, problems)),
    cards: {
      changes:
        file.cards?.changes === undefined
          ? undefined
          : {
              action: file.cards.changes.action,
              message: file.cards.changes.message ?? 'Agent card refused: its skills or interfaces changed since the approved version.',
              reasonCode: file.cards.changes.reasonCode ?? 'CARD_CHANGED',
            },
    },
  };
}

type DenyRuleFile = z.infer<typeof DenyRuleFile>;
type MaskRuleFile = z.infer<typeof MaskRuleFile>;

function compileDenyRule(rule: DenyRuleFile, at: string, problems: string[]): DenyRule {
  const flags = rule.caseSensitive === true ? '' : 'i';
  return {
    id: rule.id,
    reasonCode: rule.reasonCode,
    message: rule.message,
    patterns: compilePatterns(rule.patterns, flags, `${at}.patterns`, problems),
    scope: compileScope(rule, at, problems),
  };
}

function compileMaskRule(rule: MaskRuleFile, at: string, problems: string[]): MaskRule {
  const keys = rule.keys ?? [];
  const patterns = rule.patterns ?? [];
  const detectors = rule.detectors ?? [];
  if (keys.length + patterns.length + detectors.length === 0) {
    problems.push(`${at}: needs at least one of "keys", "detectors", "patterns"`);
  }
  keys.forEach((key, i) => {
    if (PROTECTED_NORMALISED.has(normaliseKey(key))) problems.push(`${at}.keys[${i}]: "${key}" is protocol structure and is never masked`);
  });
  const flags = rule.caseSensitive === true ? 'g' : 'gi';
  return {
    id: rule.id,
    reasonCode: rule.reasonCode,
    keys: new Set(keys.map(normaliseKey)),
    // Canonical order: cards before phones, so a phone pattern never eats part of a card number.
    detectors: DETECTORS.filter((d) => detectors.includes(d)),
    patterns: compilePatterns(patterns, flags, `${at}.patterns`, problems),
    replacement: rule.replacement,
    scope: compileScope(rule, at, problems),
  };
}

function compileScope(
  rule: { methods?: string[] | undefined; sides?: Side[] | undefined; phases?: Phase[] | undefined },
  at: string,
  problems: string[],
): RuleScope {
  let methods: Set<string> | undefined;
  if (rule.methods !== undefined) {
    const known = new Set<string>();
    rule.methods.forEach((name, i) => {
      // v1.0 names (SendMessage) are accepted and stored as the AOS name (message/send).
      if (name === CARD_METHOD) {
        known.add(CARD_METHOD);
        return;
      }
      const op = operationForMethod(name);
      if (op === undefined) problems.push(`${at}.methods[${i}]: unknown A2A method "${name}"`);
      else known.add(op.aosMethod);
    });
    methods = known;
  }
  return {
    methods,
    sides: rule.sides === undefined ? undefined : new Set(rule.sides),
    phases: rule.phases === undefined ? undefined : new Set(rule.phases),
  };
}

function compilePatterns(sources: readonly string[], flags: string, at: string, problems: string[]): RegExp[] {
  const out: RegExp[] = [];
  sources.forEach((source, i) => {
    let re: RegExp;
    try {
      // Payload strings are NFKC-normalised before matching, so patterns are too.
      re = new RegExp(source.normalize('NFKC'), flags);
    } catch (err) {
      // V8 says "Invalid regular expression: /src/flags: reason"; keep the reason only.
      const reason = errorMessage(err).replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, '');
      problems.push(`${at}[${i}]: invalid regular expression ${JSON.stringify(source)}: ${reason}`);
      return;
    }
    // A pattern matching "" would deny everything / mask between every character.
    if (new RegExp(re.source, flags.replace('g', '')).test('')) {
      problems.push(`${at}[${i}]: pattern /${source}/ matches the empty string`);
      return;
    }
    out.push(re);
  });
  return out;
}

function checkUniqueIds(file: PolicyFile, problems: string[]): void {
  const seen = new Map<string, string>();
  const check = (id: string, at: string): void => {
    const first = seen.get(id);
    if (first !== undefined) problems.push(`${at}.id: duplicate rule id "${id}" (first used at ${first})`);
    else seen.set(id, at);
  };
  file.deny?.forEach((r, i) => check(r.id, `deny[${i}]`));
  file.mask?.forEach((r, i) => check(r.id, `mask[${i}]`));
}

/** `apiKey`, `api_key`, `API-KEY` and `apikey` name the same key. */
export function normaliseKey(key: string): string {
  return key.replace(/[\s_-]/g, '').toLowerCase();
}

/**
 * Peer names/URLs and push hosts use globs: `*` = any run of characters, `?` = one character,
 * everything else literal; the whole string must match, case-insensitively.
 */
export function globToRegExp(glob: string): RegExp {
  let source = '';
  for (const ch of glob) {
    if (ch === '*') source += '.*';
    else if (ch === '?') source += '.';
    else source += ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 'is');
}

function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

/** Duck-typed: errors from other realms (vm contexts, test sandboxes) fail `instanceof Error`. */
function errorMessage(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'message' in err && typeof err.message === 'string') return err.message;
  return String(err);
}
