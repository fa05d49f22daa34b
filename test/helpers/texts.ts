/** Every string in a value that contains `marker`, sorted: the texts a guardian judged, an agent acted on or a caller read. */
export function textsWith(v: unknown, marker: string): string[] {
  const out: string[] = [];
  const walk = (x: unknown): void => {
    if (typeof x === 'string') {
      if (x.includes(marker)) out.push(x);
    } else if (Array.isArray(x)) x.forEach(walk);
    else if (typeof x === 'object' && x !== null) Object.values(x).forEach(walk);
  };
  walk(v);
  return out.sort();
}
