export { webhooksService, type WebhooksService } from './webhooks.service.js';
export { webhooksRoutes } from './webhooks.routes.js';
export { createDispatcher, type Dispatcher, type FollowedEvent } from './dispatcher.js';
export { resolverLookup, type ResolveHost } from './url-policy.js';
