/**
 * `npm run config:schema`: writes config/config.schema.json, the JSON Schema of a --config file, from
 * the variables' table (src/config/config.ts). test/unit/config-file.test.ts fails when the file is not current.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import { configFileSchema } from '../src/config/config';

export const SCHEMA_FILE = path.join('config', 'config.schema.json');

export function schemaText(): string {
  return `${JSON.stringify(configFileSchema(z), null, 2)}\n`;
}

if (require.main === module) {
  const root = path.resolve(__dirname, fs.existsSync(path.resolve(__dirname, '../package.json')) ? '..' : '../..');
  fs.writeFileSync(path.join(root, SCHEMA_FILE), schemaText());
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
}
