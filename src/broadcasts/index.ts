export { broadcastsService, type BroadcastsService, type BroadcastsDeps, type Broadcast } from './broadcasts.service.js';
export { broadcastsRoutes } from './broadcasts.routes.js';
export { unfinishedBroadcastUsing, type UnfinishedBroadcast } from './broadcasts.repo.js';
