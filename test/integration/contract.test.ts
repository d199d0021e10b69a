import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import createClient from 'openapi-fetch';
import { describe, expect, it } from 'vitest';
import { loadContract, SCHEMA_DIR } from '../../src/contract/contract.js';
import type { paths } from '../../src/contract/api-types.js';
import { API_TYPES_FILE, generateApiTypes } from '../../scripts/generate-api-types.js';
import { startTestApp } from '../helpers/app.js';

// The contract is usable by standard tools: it lints clean under Redocly's
// recommended rules, ajv refuses any keyword it does not know, the committed
// TypeScript types are the ones schema/ generates, and a typed client made
// from them talks to a running server.

const run = promisify(execFile);
const REDOCLY = fileURLToPath(new URL('../../node_modules/.bin/redocly', import.meta.url));

describe('the contract', () => {
  it('lints without errors under Redocly\'s recommended rules, as served', async () => {
    await using t = await startTestApp();
    const served = await (await fetch(`${t.url}/v1/openapi.json`)).json();
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-contract-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(served));
      const { stdout } = await run(REDOCLY, ['lint', file, '--format=json'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off' }, timeout: 60_000 })
        .catch((err: { stdout: string }) => err);
      const problems = JSON.parse(stdout).problems as Array<{ ruleId: string; severity: string; message: string }>;
      expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
      // The one warning left is the spec's own pair of paths /contacts/by-email/{email} and /contacts/{contact_id}/unsubscribe.
      expect(problems.map((p) => p.ruleId)).toEqual(['no-ambiguous-paths']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a keyword ajv does not know, such as text that YAML turned into a key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-schema-'));
    try {
      cpSync(SCHEMA_DIR, dir, { recursive: true });
      const file = join(dir, 'paths', 'tags.yaml');
      const yaml = readFileSync(file, 'utf8');
      // A description with a comma inside a flow map: the words after the comma become a key of the schema.
      const broken = yaml.replace(/schema: \{ type: string, maxLength: 64 \}/, 'schema: { description: The id, unique., type: string, maxLength: 64 }');
      expect(broken).not.toBe(yaml);
      writeFileSync(file, broken);
      expect(() => loadContract(dir)).toThrow(/unknown keyword: "unique\."/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('compiles every response schema in strict mode', () => {
    const contract = loadContract();
    let checked = 0;
    for (const [path, item] of Object.entries(contract.document.paths as Record<string, Record<string, { operationId?: string; responses?: Record<string, unknown> }>>)) {
      for (const operation of Object.values(item)) {
        if (!operation?.operationId) continue;
        for (const status of Object.keys(operation.responses ?? {})) {
          // An empty object matches no response schema; what matters is that compiling did not throw.
          expect(() => contract.checkResponse(operation.operationId!, Number(status), {}), `${path} ${status}`).not.toThrow();
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(300);
  });

  it('has committed TypeScript types that match schema/ (npm run contract:types)', async () => {
    expect(readFileSync(API_TYPES_FILE, 'utf8')).toBe(await generateApiTypes());
  });

  it('drives a running server through a client typed from the contract', async () => {
    await using t = await startTestApp();
    await t.seed.activeDomain('typed.test');
    const client = createClient<paths>({ baseUrl: `${t.url}/v1`, headers: { Authorization: `Bearer ${t.token}` } });

    const sent = await client.POST('/emails', { body: { from: 'Ann <ann@typed.test>', to: ['bo@example.test'], subject: 'Typed', text: 'Hello.' } });
    expect(sent.response.status).toBe(201);
    const id = sent.data!.id;
    const one = await client.GET('/emails/{email_id}', { params: { path: { email_id: id } } });
    expect(one.data?.subject).toBe('Typed');
    const list = await client.GET('/emails', { params: { query: { limit: 5, subject: 'Typed' } } });
    expect(list.data?.data.map((e) => e.id)).toEqual([id]);
    const missing = await client.GET('/emails/{email_id}', { params: { path: { email_id: 'em_nope' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe('not_found');
  });
});
