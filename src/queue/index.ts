export { queueService, type QueueDestination, type QueueService, type QueuePort } from './queue.service.js';
export { queueRoutes } from './queue.routes.js';
