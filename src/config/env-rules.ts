/**
 * The rules of the configuration's variables (src/config/config.ts), each written once and readable two
 * ways: `run`, plain code the proxy parses its environment with at start, and `zod()`, the same rule
 * as the zod schema it was before, the reference `test/unit/config-rules.test.ts` holds `run` to
 * (same values, same problems, same messages). Why not zod at start: building the ~95 variables'
 * schemas and one parse cost ~55 ms of CPU (of ~370 ms from spawn to the first served call); these
 * rules cost ~2 ms. A/B in one `npm run bench` (2026-11-29, docs/performance.md): CPU to the first
 * served call 490 ms with these rules, 580 ms with zod (16 %), RSS 59.0 vs 65.1 MB.
 *
 * `run` follows zod's semantics for the parts used here: checks (min, max, regex, refine) all run and
 * their problems let the rules between variables still run ("continues"); a missing value, a value
 * not in an enum, a non-finite number and a transform's problem stop them; `transform` and `pipe`
 * run only on a value without problems; `default` short-circuits.
 */
// Types only: the zod forms get zod from their caller, so the proxy's start never loads it.
import type * as Z from 'zod';

type Zod = typeof Z;

/** One problem of one variable, worded as zod words it. */
export interface Issue {
  readonly message: string;
  /** Zod carries on after it (the rules between variables still run). */
  readonly continues: boolean;
  /** The variable is unset (reported as "is required"). */
  readonly missing?: true;
}

type Kind = 'string' | 'number' | 'array' | 'other';
/** Plain: the value (after a problem that continues: what zod would carry on with) and the problems of one input. */
type Run<O> = (input: unknown, issues: Issue[]) => O;

/** Output type of a rule. */
export type Out<R> = R extends Rule<infer O> ? O : never;

const quote = (v: string) => JSON.stringify(v);
const stop = (issues: Issue[], message: string): never => {
  issues.push({ message, continues: false });
  // The value no later step reads: transform and pipe run only without problems.
  return undefined as never;
};

export class Rule<O> {
  constructor(
    readonly run: Run<O>,
    /** The same rule as a zod schema (built on demand: only the tests and nothing at start use it). */
    readonly zod: (z: Zod) => Z.ZodType<O>,
    readonly kind: Kind = 'other',
    readonly description = '',
  ) {}

  describe(description: string): Rule<O> {
    return new Rule(this.run, (z) => this.zod(z).describe(description), this.kind, description);
  }

  /** A check: its problem continues, later checks still run. */
  private check(ok: (v: O) => boolean, message: string, zod: (z: Zod) => Z.ZodType<O>): Rule<O> {
    return new Rule(
      (input, issues) => {
        const before = issues.length;
        const v = this.run(input, issues);
        // Zod does not check a value whose type already failed.
        if (issues.slice(before).some((i) => !i.continues)) return v;
        if (!ok(v)) issues.push({ message, continues: true });
        return v;
      },
      zod,
      this.kind,
      this.description,
    );
  }

  private size(v: O): number {
    return typeof v === 'number' ? v : (v as unknown as { length: number }).length;
  }

  min(n: number, message?: string): Rule<O> {
    const what = this.kind === 'string' ? `string to have >=${n} characters` : this.kind === 'array' ? `array to have >=${n} items` : `number to be >=${n}`;
    return this.check(
      (v) => this.size(v) >= n,
      message ?? `Too small: expected ${what}`,
      (z) => (this.zod(z) as unknown as Z.ZodString).min(n, message) as unknown as Z.ZodType<O>,
    );
  }

  max(n: number, message?: string): Rule<O> {
    const what = this.kind === 'string' ? `string to have <=${n} characters` : this.kind === 'array' ? `array to have <=${n} items` : `number to be <=${n}`;
    return this.check(
      (v) => this.size(v) <= n,
      message ?? `Too big: expected ${what}`,
      (z) => (this.zod(z) as unknown as Z.ZodString).max(n, message) as unknown as Z.ZodType<O>,
    );
  }

  regex(re: RegExp, message: string): Rule<O> {
    return this.check(
      (v) => re.test(v as unknown as string),
      message,
      (z) => (this.zod(z) as unknown as Z.ZodString).regex(re, message) as unknown as Z.ZodType<O>,
    );
  }

  refine(ok: (v: O) => boolean, message: string): Rule<O> {
    return this.check(ok, message, (z) => this.zod(z).refine(ok, message));
  }

  /** Unset: this value, unchecked (zod's default short-circuits). */
  default(value: O): Rule<O> {
    return new Rule(
      (input, issues) => (input === undefined ? value : this.run(input, issues)),
      (z) => (this.zod(z) as unknown as Z.ZodString).default(value as unknown as string) as unknown as Z.ZodType<O>,
      this.kind,
      this.description,
    );
  }

  optional(): Rule<O | undefined> {
    return new Rule<O | undefined>(
      (input, issues) => (input === undefined ? undefined : this.run(input, issues)),
      (z) => this.zod(z).optional(),
      this.kind,
      this.description,
    );
  }

  /** Runs only on a value without problems; its own problems stop the rules between variables. */
  transform<T>(fn: (v: O, problem: (message: string) => void) => T): Rule<T> {
    return new Rule<T>(
      (input, issues) => {
        const before = issues.length;
        const v = this.run(input, issues);
        if (issues.length > before) return v as unknown as T;
        return fn(v, (message) => issues.push({ message, continues: false }));
      },
      (z) => this.zod(z).transform((v, ctx) => fn(v, (message) => ctx.addIssue({ code: 'custom', message }))),
      'other',
      this.description,
    );
  }

  /** The next rule, on a value without problems. */
  pipe<T>(next: Rule<T>): Rule<T> {
    return new Rule<T>(
      (input, issues) => {
        const before = issues.length;
        const v = this.run(input, issues);
        return issues.length > before ? (v as unknown as T) : next.run(v, issues);
      },
      (z) => this.zod(z).pipe(next.zod(z) as Z.ZodType<T, O>),
      next.kind,
      this.description,
    );
  }
}

const isMissing = (input: unknown, issues: Issue[]): input is undefined => {
  if (input !== undefined) return false;
  issues.push({ message: 'is required', continues: false, missing: true });
  return true;
};

/** What the configuration's rules are built from (the zod names, so the table reads as before). */
export const v = {
  string: (): Rule<string> =>
    new Rule(
      (input, issues) => (isMissing(input, issues) ? (undefined as never) : (input as string)),
      (z) => z.string(),
      'string',
    ),

  enum: <const T extends string>(values: readonly T[], message?: string): Rule<T> => {
    // zod keeps the values as an object's keys: integer-like ones ('0', '1') come first.
    const listed = Object.keys(Object.fromEntries(values.map((x) => [x, x])));
    const wrong =
      message ??
      (listed.length === 1 ? `Invalid input: expected ${quote(listed[0] as string)}` : `Invalid option: expected one of ${listed.map(quote).join('|')}`);
    return new Rule<T>(
      (input, issues) => ((values as readonly unknown[]).includes(input) ? (input as T) : stop(issues, wrong)),
      (z) => z.enum(values as unknown as [T, ...T[]], message) as unknown as Z.ZodType<T>,
    );
  },

  /** A number from `Number(digits)`; `.int()` as zod's: a safe integer. */
  int: (): Rule<number> =>
    new Rule(
      (input, issues) => {
        const n = input as number;
        if (!Number.isFinite(n)) return stop(issues, `Invalid input: expected number, received ${String(n)}`);
        if (n > Number.MAX_SAFE_INTEGER) issues.push({ message: `Too big: expected int to be <=${Number.MAX_SAFE_INTEGER}`, continues: true });
        return n;
      },
      (z) => z.number().int(),
      'number',
    ),

  array: <T>(item: Rule<T>): Rule<T[]> =>
    new Rule(
      (input, issues) => (input as unknown[]).map((x) => item.run(x, issues)),
      (z) => z.array(item.zod(z)),
      'array',
    ),
};
