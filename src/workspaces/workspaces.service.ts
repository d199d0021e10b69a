import { AppError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { Clock } from '../core/clock.js';
import { writeCheckingUnique, type Store } from '../store/db.js';
import type { Plan } from '../config.js';
import { findWorkspace, findWorkspaceForUpdate, insertWorkspace, listWorkspaces, updateWorkspacePlan, type Workspace } from './workspaces.repo.js';
import { clearSendQuota } from './quota.js';

export const DEFAULT_WORKSPACE_NAME = 'default';

export interface WorkspacesService {
  create(input: { name: string; plan?: string }): Promise<Workspace>;
  list(): Promise<Workspace[]>;
  find(idOrName: string): Promise<Workspace | undefined>;
  /** Moves the workspace to another plan; its daily and monthly send counts start again from zero. */
  setPlan(idOrName: string, plan: string): Promise<{ workspace: Workspace; previousPlan: string }>;
  /** The workspace named `default`, created on first use. */
  ensureDefault(): Promise<Workspace>;
  plan(name: string): Plan;
}

export function workspacesService(deps: { store: Store; clock: Clock; plans: Record<string, Plan>; defaultPlan: string }): WorkspacesService {
  const { store, clock, plans } = deps;
  const service: WorkspacesService = {
    async create({ name, plan = deps.defaultPlan }) {
      const trimmed = name.trim();
      if (!/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/.test(trimmed)) {
        throw new AppError('validation_error', 'A workspace name is 1-64 letters, digits, spaces, dots, dashes or underscores.', { param: 'name' });
      }
      if (!plans[plan]) throw new AppError('validation_error', `Unknown plan '${plan}' (known: ${Object.keys(plans).join(', ')}).`, { param: 'plan' });
      return writeCheckingUnique(store, async (tx) => {
        if (await findWorkspace(tx, trimmed)) throw new AppError('already_exists', `A workspace named '${trimmed}' already exists.`, { param: 'name' });
        return insertWorkspace(tx, { id: newId('ws'), name: trimmed, plan, created_at: clock.now() });
      });
    },
    list: () => listWorkspaces(store.db),
    async setPlan(idOrName, plan) {
      if (!plans[plan]) throw new AppError('validation_error', `Unknown plan '${plan}' (known: ${Object.keys(plans).join(', ')}).`, { param: 'plan' });
      return store.write(async (tx) => {
        const ws = await findWorkspaceForUpdate(tx, idOrName);
        if (!ws) throw new AppError('not_found', `No workspace '${idOrName}'.`);
        if (ws.plan === plan) throw new AppError('invalid_state', `Workspace '${ws.name}' is already on plan '${plan}'.`, { param: 'plan' });
        await updateWorkspacePlan(tx, ws.id, plan);
        await clearSendQuota(tx, ws.id);
        return { workspace: { ...ws, plan }, previousPlan: ws.plan };
      });
    },
    find: (idOrName) => findWorkspace(store.db, idOrName),
    async ensureDefault() {
      const existing = await findWorkspace(store.db, DEFAULT_WORKSPACE_NAME);
      if (existing) return existing;
      try {
        return await service.create({ name: DEFAULT_WORKSPACE_NAME });
      } catch (err) {
        // Another process may have created it between our read and write.
        const raced = await findWorkspace(store.db, DEFAULT_WORKSPACE_NAME);
        if (raced) return raced;
        throw err;
      }
    },
    plan(name) {
      return plans[name] ?? plans[deps.defaultPlan];
    },
  };
  return service;
}
