/** Every endpoint URL of an agent card as JSON (v1 supportedInterfaces, v0.3 url and additionalInterfaces) or as an SDK object. */
export function endpointUrls(card: any): string[] {
  const out: string[] = [];
  if (typeof card?.url === 'string') out.push(card.url);
  for (const key of ['supportedInterfaces', 'additionalInterfaces']) for (const i of card?.[key] ?? []) out.push(i.url);
  return out;
}
