/**
 * SSE as lax readers take it: lines split as Python's str.splitlines does (httpx's LineDecoder, hence
 * httpx-sse), event names ignored, and member names matched as case-folding decoders match them.
 */

/** Python str.splitlines() line ends. */
export const SPLITLINES = /\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]/;

/** Events as a lax SSE reader gets them: blocks at empty lines, `data:` fields joined by LF, event names ignored. */
export function laxEvents(text: string, split: RegExp = SPLITLINES): string[] {
  const out: string[] = [];
  let data: string[] = [];
  for (const line of text.split(split)) {
    if (line === '') {
      if (data.length > 0) out.push(data.join('\n'));
      data = [];
      continue;
    }
    if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length > 0) out.push(data.join('\n'));
  return out;
}

/** The values of members a case-folding decoder reads as `contextId`, anywhere in `v`. */
export function contextsIn(v: unknown): unknown[] {
  if (Array.isArray(v)) return v.flatMap(contextsIn);
  if (typeof v !== 'object' || v === null) return [];
  return Object.entries(v).flatMap(([k, x]) => (k.toLowerCase().replace(/[_-]/g, '') === 'contextid' ? [x] : contextsIn(x)));
}
