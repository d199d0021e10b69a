// Writes src/contract/api-types.ts, the TypeScript types of the HTTP contract,
// from schema/ (openapi-typescript). `npm run contract:types` runs it; a test
// fails when the committed file and schema/ disagree.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import { loadDocument } from '../src/contract/contract.js';

export const API_TYPES_FILE = fileURLToPath(new URL('../src/contract/api-types.ts', import.meta.url));

const HEADER = `// The types of the HTTP contract, generated from schema/ by
// \`npm run contract:types\` (openapi-typescript). Do not edit: change schema/
// and run the command again.

`;

export async function generateApiTypes(): Promise<string> {
  const ast = await openapiTS(loadDocument() as OpenAPI3, { alphabetize: false, defaultNonNullable: true, emptyObjectsUnknown: true });
  return HEADER + astToString(ast);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(API_TYPES_FILE, await generateApiTypes());
  console.log(`wrote ${API_TYPES_FILE}`);
}
