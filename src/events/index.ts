export { eventsService, type EventsService } from './events.service.js';
export { eventsRoutes } from './events.routes.js';
// The one place that writes the events table: every area appends through these (or writes eventRows' rows with
// its own, as a send does), in the transaction of the change.
export {
  appendEvent, appendEvents, appendReceivedEvents, appendWorkspaceEvent, eventRows, listEventsForEmail,
  type EmailEvent, type EmailEventKind, type NewEvent, type ReceivedEvent, type WorkspaceEventType,
} from './events.repo.js';
export { fillPostgresEventsSearch, sideIndexWatermark, type PositionedEvent } from './events-query.repo.js';
