/**
 * Whether a JSON text is its value's canonical serialization (`JSON.stringify(JSON.parse(text)) === text`),
 * checked a piece at a time: no whole serialization is built. Serializing a 9 MiB call whole is one ~60 ms task
 * and a 9 MiB allocation at once; here the pieces are small (long strings and keys in slices of STRING_SLICE),
 * compared in place, with a turn of the event loop (`turn`) every PIECE characters.
 */

/** Characters compared between two turns. */
const PIECE = 256 * 1024;
/** A long string is serialized this many characters at a time (a young-generation allocation, not a large object). */
const STRING_SLICE = 32 * 1024;

type Frame =
  | { readonly items: readonly unknown[]; i: number }
  | { readonly obj: Record<string, unknown>; readonly keys: readonly string[]; i: number; keyDone: boolean }
  | { readonly str: string; i: number };

/**
 * `value` must be what `JSON.parse(text)` returned (finite numbers, plain objects and arrays, no `toJSON`
 * functions): then true means `JSON.stringify(value)` is exactly `text`.
 */
export async function isCanonicalJson(text: string, value: unknown, turn: () => Promise<void>): Promise<boolean> {
  const c = new Comparison(text);
  const stack: Frame[] = [];
  if (!c.value(value, stack)) return false;
  while (stack.length > 0) {
    if (c.pending >= PIECE) {
      c.pending = 0;
      await turn();
    }
    if (!c.step(stack)) return false;
  }
  return c.at === text.length;
}

class Comparison {
  at = 0;
  pending = 0;

  constructor(private readonly text: string) {}

  /** The next piece of the text is `piece`. */
  match(piece: string): boolean {
    if (!this.text.startsWith(piece, this.at)) return false;
    this.at += piece.length;
    this.pending += piece.length;
    return true;
  }

  /** One element or member of the innermost open container, or its end. */
  step(stack: Frame[]): boolean {
    const f = stack[stack.length - 1] as Frame;
    if ('str' in f) return this.slice(f, stack);
    if ('items' in f) {
      if (f.i === f.items.length) {
        stack.pop();
        return this.match(']');
      }
      if (f.i > 0 && !this.match(',')) return false;
      return this.value(f.items[f.i++], stack);
    }
    if (f.keyDone) {
      // A long key was compared in slices: now its value.
      f.keyDone = false;
      return this.match(':') && this.value(f.obj[f.keys[f.i - 1] as string], stack);
    }
    if (f.i === f.keys.length) {
      stack.pop();
      return this.match('}');
    }
    const key = f.keys[f.i++] as string;
    if (f.i > 1 && !this.match(',')) return false;
    if (key.length > STRING_SLICE) {
      f.keyDone = true;
      return this.value(key, stack);
    }
    return this.match(JSON.stringify(key)) && this.match(':') && this.value(f.obj[key], stack);
  }

  /** A scalar compared now; a container opened (its contents come by `step`). */
  value(v: unknown, stack: Frame[]): boolean {
    if (typeof v === 'string') {
      if (v.length <= STRING_SLICE) return this.match(JSON.stringify(v));
      // A long string is compared a slice per step, so the turns come between its slices too.
      stack.push({ str: v, i: 0 });
      return this.match('"');
    }
    if (Array.isArray(v)) {
      stack.push({ items: v, i: 0 });
      return this.match('[');
    }
    if (typeof v === 'object' && v !== null) {
      const obj = v as Record<string, unknown>;
      stack.push({ obj, keys: Object.keys(obj), i: 0, keyDone: false });
      return this.match('{');
    }
    return this.match(JSON.stringify(v));
  }

  /** The next slice of a long string, or its end. */
  private slice(f: { readonly str: string; i: number }, stack: Frame[]): boolean {
    const s = f.str;
    if (f.i === s.length) {
      stack.pop();
      return this.match('"');
    }
    let end = Math.min(s.length, f.i + STRING_SLICE);
    // A surrogate pair is never cut: each half alone would be escaped (`\ud83d`), unlike the pair.
    const last = s.charCodeAt(end - 1);
    if (end < s.length && last >= 0xd800 && last <= 0xdbff) end--;
    const quoted = JSON.stringify(s.slice(f.i, end));
    f.i = end;
    return this.match(quoted.slice(1, -1));
  }
}
