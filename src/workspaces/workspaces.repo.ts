import type { Db, Tx } from '../store/db.js';
import type { WorkspacesTable } from './workspaces.tables.js';
import type { Selectable } from 'kysely';
import { toIso } from '../core/clock.js';
import { lockedForUpdate } from '../store/lease.js';

export interface Workspace {
  id: string;
  name: string;
  plan: string;
  created_at: string;
}

const toWorkspace = (r: Selectable<WorkspacesTable>): Workspace =>
  ({ id: r.id, name: r.name, plan: r.plan, created_at: toIso(r.created_at) });

export async function insertWorkspace(tx: Tx, row: { id: string; name: string; plan: string; created_at: number }): Promise<Workspace> {
  await tx.insertInto('workspaces').values(row).execute();
  return toWorkspace({ ...row, pos: 0 });
}

const byIdOrName = (db: Db | Tx, idOrName: string) => db.selectFrom('workspaces').selectAll()
  .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]));

export async function findWorkspace(db: Db | Tx, idOrName: string): Promise<Workspace | undefined> {
  const row = await byIdOrName(db, idOrName).executeTakeFirst();
  return row && toWorkspace(row);
}

/** The workspace, locked until the transaction ends (on PostgreSQL; SQLite has one writer). */
export async function findWorkspaceForUpdate(tx: Tx, idOrName: string): Promise<Workspace | undefined> {
  const row = await lockedForUpdate(tx, byIdOrName(tx, idOrName)).executeTakeFirst();
  return row && toWorkspace(row);
}

export async function updateWorkspacePlan(tx: Tx, id: string, plan: string): Promise<void> {
  await tx.updateTable('workspaces').set({ plan }).where('id', '=', id).execute();
}

export async function listWorkspaces(db: Db): Promise<Workspace[]> {
  const rows = await db.selectFrom('workspaces').selectAll().orderBy('pos', 'asc').execute();
  return rows.map(toWorkspace);
}
