export { unsubscribeLinks, type UnsubscribeLinks, type UnsubscribeTarget } from './links.js';
export { unsubscribeRoutes } from './unsubscribe.routes.js';
