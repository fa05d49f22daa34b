/** Bodies a lenient parser would read as `good`, none of them strict JSON: the proxy refuses each (-31400), whatever its size. */
export function lenientSpellings(good: string): [string, Buffer | string][] {
  const utf16le = (s: string) => Buffer.from(s, 'utf16le');
  const utf16be = (s: string) => {
    const b = Buffer.from(s, 'utf16le');
    for (let i = 0; i + 1 < b.length; i += 2) [b[i], b[i + 1]] = [b[i + 1]!, b[i]!];
    return b;
  };
  const cases: [string, Buffer | string][] = [
    ['NaN', good.replace('"params":{', '"params":{"n":NaN,')],
    ['Infinity', good.replace('"params":{', '"params":{"n":-Infinity,')],
    ['line comment', `// hi\n${good}`],
    ['block comment', good.replace('"params"', '/* c */"params"')],
    ['trailing comma in object', good.replace(/}$/, ',}')],
    ['trailing comma in array', good.replace('}]', '},]')],
    ['BOM', `\uFEFF${good}`],
    ['single quotes', good.replace(/"/g, "'")],
    ['unquoted keys', good.replace(/"(jsonrpc|id|method|params)":/g, '$1:')],
    ['hex number id', good.replace('"id":"lenient"', '"id":0x1F')],
    ['two concatenated documents', `${good}${good}`],
    ['trailing garbage', `${good} x`],
    ['UTF-16LE with BOM', Buffer.concat([Buffer.from([0xff, 0xfe]), utf16le(good)])],
    ['UTF-16LE without BOM', utf16le(good)],
    ['UTF-16BE without BOM', utf16be(good)],
    [
      'invalid UTF-8 inside a string',
      Buffer.concat([Buffer.from(good.slice(0, good.indexOf('harmless'))), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(good.slice(good.indexOf('harmless')))]),
    ],
  ];
  return cases;
}
