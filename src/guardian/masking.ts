/**
 * Mask rules over one text: detectors and patterns run on the normalised text (./normalise), one pass
 * after another (each reads what the previous left, its matches replaced), and what they matched is
 * put back onto the original text: the output is the original with the matched ranges replaced, the
 * rest unchanged. A match that covers part of a piece NFKC made from several characters (a ligature,
 * a base and its marks) masks the whole piece.
 *
 * Work: normalising is linear (NFKC lengthens a text by a bounded factor), each pass is linear in the
 * text it reads (./detectors; patterns are the operator's), and applying a pass's matches rebuilds the
 * text and its map once: linear per pass, a fixed number of passes per policy.
 */
import { DETECTOR_PASSES, work, type DetectorPass, type MatchSink } from './detectors';
import { normaliseMapped } from './normalise';
import type { Detector, MaskRule } from './policy';

export const REDACTED = '[REDACTED]';

export const DETECTOR_TOKENS: Readonly<Record<Detector, string>> = {
  email: '[EMAIL]',
  phone: '[PHONE]',
  card: '[CARD]',
  nationalId: '[NATIONAL_ID]',
};

/** A range of the original text and what replaces it. */
export interface MaskSpan {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** Ranges of `original` the rules mask, in order and not overlapping; the rules that masked something go into `changed`. */
export function findMaskSpans(original: string, rules: readonly MaskRule[], changed: Set<MaskRule>): MaskSpan[] {
  const mapped = normaliseMapped(original);
  const run = new MaskRun(original, mapped.text, mapped.from, mapped.to);
  work.maskChars += mapped.text.length;
  for (const rule of rules) {
    let applied = false;
    for (const detector of rule.detectors) {
      const replacement = rule.replacement ?? DETECTOR_TOKENS[detector];
      for (const pass of DETECTOR_PASSES[detector]) applied = run.apply(pass, replacement) || applied;
    }
    const replacement = rule.replacement ?? REDACTED;
    for (const re of rule.patterns) applied = run.apply(patternPass(re), replacement) || applied;
    if (applied) changed.add(rule);
  }
  return run.spans;
}

/** The original text with the spans replaced (the text itself when there are none). */
export function applySpans(original: string, spans: readonly MaskSpan[]): string {
  if (spans.length === 0) return original;
  let out = '';
  let from = 0;
  for (const span of spans) {
    out += original.slice(from, span.start) + span.text;
    from = span.end;
  }
  return out + original.slice(from);
}

/** Mask one text with the rules. */
export function maskText(original: string, rules: readonly MaskRule[], changed: Set<MaskRule>): string {
  return rules.length === 0 ? original : applySpans(original, findMaskSpans(original, rules, changed));
}

/** A policy pattern as a pass: its matches as `String.prototype.replace` finds them (global, an empty match steps on by one). */
const patternPasses = new WeakMap<RegExp, DetectorPass>();

function patternPass(re: RegExp): DetectorPass {
  let pass = patternPasses.get(re);
  if (pass === undefined) patternPasses.set(re, (pass = makePatternPass(re)));
  return pass;
}

function makePatternPass(re: RegExp): DetectorPass {
  return (text, out) => {
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      out.match(m.index, m.index + m[0].length);
      if (m[0].length === 0) re.lastIndex++;
    }
  };
}

/** Matches of one pass, collected. */
class Matches implements MatchSink {
  readonly starts: number[] = [];
  readonly ends: number[] = [];
  match(start: number, end: number): void {
    this.starts.push(start);
    this.ends.push(end);
  }
}

/** The text the passes read, where each of its units came from in the original, and the spans so far. */
class MaskRun {
  spans: MaskSpan[] = [];
  constructor(
    private readonly original: string,
    private text: string,
    /** Original range of each unit of `text`; undefined: unit i is original character i. */
    private from: Int32Array | undefined,
    private to: Int32Array | undefined,
  ) {}

  private startOf(i: number): number {
    if (i >= this.text.length) return this.original.length;
    return this.from === undefined ? i : this.from[i]!;
  }

  private endOf(i: number): number {
    return this.to === undefined ? i + 1 : this.to[i]!;
  }

  /** Run a pass and replace its matches; true when it changed something. */
  apply(pass: DetectorPass, replacement: string): boolean {
    const found = new Matches();
    pass(this.text, found);
    const count = found.starts.length;
    if (count === 0) return false;
    const text = this.text;
    let out = '';
    let length = 0;
    const added: MaskSpan[] = [];
    // Sized for the worst case: every match an insertion of the replacement.
    const cap = text.length + count * replacement.length;
    const from = new Int32Array(cap);
    const to = new Int32Array(cap);
    let kept = 0;
    for (let k = 0; k < count; k++) {
      const s = found.starts[k]!;
      const e = found.ends[k]!;
      // Already what the rule would write: nothing changes.
      if (e - s === replacement.length && text.startsWith(replacement, s)) continue;
      const start = this.startOf(s);
      const end = e > s ? this.endOf(e - 1) : start;
      for (let i = kept; i < s; i++, length++) {
        from[length] = this.startOf(i);
        to[length] = this.endOf(i);
      }
      out += text.slice(kept, s) + replacement;
      for (let i = 0; i < replacement.length; i++, length++) {
        from[length] = start;
        to[length] = end;
      }
      added.push({ start, end, text: replacement });
      kept = e;
    }
    if (added.length === 0) return false;
    for (let i = kept; i < text.length; i++, length++) {
      from[length] = this.startOf(i);
      to[length] = this.endOf(i);
    }
    this.text = out + text.slice(kept);
    this.from = from.subarray(0, length);
    this.to = to.subarray(0, length);
    this.spans = mergeSpans(this.spans, added);
    return true;
  }
}

/**
 * Spans so far and a pass's new ones, in order: a new span takes in the spans inside it (their text was
 * part of what it matched); spans that only share a piece are joined, their texts in order.
 */
function mergeSpans(old: readonly MaskSpan[], added: MaskSpan[]): MaskSpan[] {
  if (old.length === 0) return added;
  const out: MaskSpan[] = [];
  const isNew = new Set<MaskSpan>(added);
  const push = (span: MaskSpan): void => {
    let x = span;
    for (;;) {
      const last = out[out.length - 1];
      if (last === undefined || !(x.start < last.end || (x.start === last.start && x.end === last.end && x.start < x.end))) break;
      if (isNew.has(x) && x.start <= last.start && x.end >= last.end) {
        out.pop();
        continue;
      }
      if (isNew.has(last) && last.start <= x.start && last.end >= x.end) return;
      out.pop();
      const joinedNew = isNew.has(last) || isNew.has(x);
      x = { start: Math.min(last.start, x.start), end: Math.max(last.end, x.end), text: last.text + x.text };
      if (joinedNew) isNew.add(x);
    }
    out.push(x);
  };
  let i = 0;
  let j = 0;
  while (i < old.length || j < added.length) {
    const a = old[i];
    const b = added[j];
    if (b === undefined || (a !== undefined && (a.start < b.start || (a.start === b.start && a.end <= b.end)))) {
      push(a!);
      i++;
    } else {
      push(b);
      j++;
    }
  }
  return out;
}
