export { queueService, type QueueDestination, type QueueItem, type QueueRetryResult, type QueueService, type QueuePort } from './queue.service.js';
export { queueRoutes } from './queue.routes.js';
