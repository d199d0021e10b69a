export { apiKeysService, type ApiKeysService, type AuthContext } from './api-keys.service.js';
export { apiKeysRoutes } from './api-keys.routes.js';
export { anyUsableKey, type ApiKey } from './api-keys.repo.js';
