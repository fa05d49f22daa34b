/**
 * HTTP header facts every layer needs the same answer to. A body is read (inspected, rewritten)
 * only when it is known to be plain, so "is it encoded" must not differ between the request side,
 * the answer side and the card route.
 */

/**
 * The content codings a Content-Encoding header lists, lower-cased, `identity` and empty items
 * left out (a repeated header counts as one list, RFC 9110 section 5.3).
 */
const NONE: readonly string[] = Object.freeze([]);

export function contentCodings(header: string | readonly string[] | undefined): readonly string[] {
  if (header === undefined) return NONE;
  const text = typeof header === 'string' ? header : header.join(',');
  return text
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

/** The body is encoded (compressed): it must be decoded before anyone reads it. */
export function isEncoded(header: string | readonly string[] | undefined): boolean {
  return contentCodings(header).length > 0;
}
