/** The demo's readable output, and the result types the demo and its tests share. */

export interface Check {
  readonly what: string;
  readonly ok: boolean;
}

export interface ScenarioResult {
  /** Stable key, e.g. "pii-masked" (tests look scenarios up by it). */
  readonly name: string;
  readonly title: string;
  readonly ok: boolean;
  readonly checks: readonly Check[];
  /** What happened, for tests and for the curious: answers, error codes, events, hook decisions. */
  readonly details: Record<string, unknown>;
}

export interface DemoResult {
  readonly ok: boolean;
  readonly mode: 'in-process' | 'remote';
  readonly scenarios: ScenarioResult[];
  /** The transcript, line by line (also printed unless quiet). */
  readonly transcript: string[];
}

export class Transcript {
  readonly lines: string[] = [];

  constructor(
    private readonly quiet: boolean,
    private readonly write: (text: string) => void = (text) => void process.stdout.write(text),
  ) {}

  line(text = ''): void {
    this.lines.push(text);
    if (!this.quiet) this.write(`${text}\n`);
  }

  /** "  label            text" */
  item(label: string, text: string): void {
    this.line(`  ${label.padEnd(17)} ${text}`);
  }

  heading(text: string): void {
    this.line();
    this.line(`== ${text} ${'='.repeat(Math.max(3, 76 - text.length))}`);
  }
}

/** A quoted, single-line, length-limited rendering of a text. */
export function quote(text: string, max = 110): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(one.length > max ? `${one.slice(0, max - 3)}...` : one);
}
