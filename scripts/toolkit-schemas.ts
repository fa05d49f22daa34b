/**
 * `npm run toolkit:schema`: writes the toolkit's JSON Schemas (packages/toolkit/schemas/), generated
 * from its zod schemas, for guardian authors who do not write TypeScript:
 *
 *   envelope.schema.json  an AOS hook request as a2a-guard sends it (zod `Envelope`)
 *   answer.schema.json    the answer a2a-guard takes as a decision (zod `GuardianSuccess`)
 *
 * Read as zod reads them (`io: 'input'`): members the schemas do not name are allowed, as zod
 * allows them. test/toolkit/json-schemas.test.ts fails when the files are not current.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import { Envelope, GuardianSuccess } from '@a2a-guard/toolkit/schemas';

export const SCHEMA_DIR = path.join('packages', 'toolkit', 'schemas');

/** The one rule of an answer the zod schema leaves to serveGuardian and the proxy: a modify carries its modifiedRequest. */
const MODIFY_CARRIES_REQUEST = {
  if: { properties: { result: { properties: { decision: { const: 'modify' } }, required: ['decision'] } } },
  then: { properties: { result: { required: ['modifiedRequest'] } } },
};

function jsonSchema(schema: z.ZodType, title: string, description: string, extra: Record<string, unknown> = {}): string {
  const generated = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  const { $schema, ...rest } = generated;
  return `${JSON.stringify({ $schema, title, description, ...rest, ...extra }, null, 2)}\n`;
}

/** File name -> text. */
export function schemaFiles(): Record<string, string> {
  return {
    'envelope.schema.json': jsonSchema(
      Envelope,
      'AOS hook request (a2a-guard)',
      'The JSON-RPC request a guardian receives for each A2A call: method = the A2A operation (v0.3 name), params = {payload: the A2A request or response as it travels, reasoning?, context: {from, to, serviceParameters?}}. a2a-guard also sends `ping` (answer {status, version, timestamp}).',
    ),
    'answer.schema.json': jsonSchema(
      GuardianSuccess,
      'AOS decision answer (a2a-guard)',
      'The JSON-RPC response a guardian gives to a hook request: id = the request\'s id, result = {decision: allow | deny | modify, message, reasonCode?, reasoning?, data?, modifiedRequest?}. A modify carries modifiedRequest: the request echoed with params.payload replaced (same A2A method and id). Anything else is "no valid answer" and follows FAIL_MODE.',
      MODIFY_CARRIES_REQUEST,
    ),
  };
}

if (require.main === module) {
  const root = path.resolve(__dirname, fs.existsSync(path.resolve(__dirname, '../package.json')) ? '..' : '../..');
  fs.mkdirSync(path.join(root, SCHEMA_DIR), { recursive: true });
  for (const [name, text] of Object.entries(schemaFiles())) {
    fs.writeFileSync(path.join(root, SCHEMA_DIR, name), text);
    process.stdout.write(`wrote ${path.join(SCHEMA_DIR, name)}\n`);
  }
}
