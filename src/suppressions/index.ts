export { suppressionsService, suppressionsPort, type SuppressionsService, type SuppressionsPort } from './suppressions.service.js';
export { suppressionsRoutes } from './suppressions.routes.js';
export type { Suppression } from './suppressions.repo.js';
