import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The Mailroom the bench measures is the one `npm start` runs: the compiled
// dist/ (the bench's npm scripts build it first), not the sources through
// tsx, whose transform names every function it makes with a call (about 3%
// of the event loop's busy time in a GET). The types are the sources'.

const DIST = new URL('../dist/', import.meta.url);

async function compiled<M>(module: string): Promise<M> {
  const url = new URL(`${module}.js`, DIST);
  if (!existsSync(fileURLToPath(url))) throw new Error(`${fileURLToPath(url)} is missing: run \`npm run build\` first (npm run bench does)`);
  return import(url.href) as Promise<M>;
}

export const { loadConfig } = await compiled<typeof import('../src/config.js')>('config');
export const { startMailroom } = await compiled<typeof import('../src/main.js')>('main');
export const { markDomainActive } = await compiled<typeof import('../src/domains/domains.repo.js')>('domains/domains.repo');
export const { openStore } = await compiled<typeof import('../src/store/db.js')>('store/db');
export const { postgresPool } = await compiled<typeof import('../src/store/postgres.js')>('store/postgres');
export const { DkimSigner } = await compiled<typeof import('../src/delivery/dkim.js')>('delivery/dkim');
export const { indexEmailSearch } = await compiled<typeof import('../src/emails/emails.repo.js')>('emails/emails.repo');
export const { htmlToPlainTextHere } = await compiled<typeof import('../src/templates/plain-text.js')>('templates/plain-text');
export const { compileSource, renderSource } = await compiled<typeof import('../src/templates/template-engine.js')>('templates/template-engine');
