import { sql, type Kysely } from 'kysely';

// Tag names are now compared in Unicode NFC, so that "Café" typed with a
// composed é or with e and a combining accent is one tag. A tag kept with a
// decomposed name gets the composed one, and the key it is found by, unless
// its workspace already has a tag of that key: merging two tags would move
// contacts and broadcast audiences between them, so both stay, each found by
// its id, and the composed one by its name.

interface TagRow {
  id: string;
  workspace_id: string;
  name: string;
  name_key: string;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<TagRow>`SELECT id, workspace_id, name, name_key FROM tags`.execute(db);
  const taken = new Set(rows.map((r) => `${r.workspace_id} ${r.name_key}`));
  for (const r of rows) {
    // As src/tags does: the name in NFC, lower-cased for the key.
    const name = r.name.normalize('NFC');
    const key = name.toLowerCase();
    if (name === r.name && key === r.name_key) continue;
    if (key !== r.name_key && taken.has(`${r.workspace_id} ${key}`)) continue;
    await sql`UPDATE tags SET name = ${name}, name_key = ${key} WHERE id = ${r.id}`.execute(db);
    taken.add(`${r.workspace_id} ${key}`);
  }
}

// Nothing to undo: a composed name is the same name.
export async function down(): Promise<void> {}
