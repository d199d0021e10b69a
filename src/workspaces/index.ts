export { workspacesService, DEFAULT_WORKSPACE_NAME, type WorkspacesService } from './workspaces.service.js';
export type { Workspace } from './workspaces.repo.js';
