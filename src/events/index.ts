export { eventsService, type EventsService } from './events.service.js';
export { eventsRoutes } from './events.routes.js';
export type { EmailEvent } from './events.repo.js';
export type { PositionedEvent } from './events-query.repo.js';
