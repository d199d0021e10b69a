export { eventsService, type EventsService } from './events.service.js';
export { eventsRoutes } from './events.routes.js';
// The one place that makes the events table's rows: every area appends through these, in the transaction of the
// change (a send writes eventRows' rows in the statement of its own rows, on PostgreSQL one statement for all).
export {
  appendEvent, appendEvents, appendReceivedEvents, appendWorkspaceEvent, eventRows, listEventsForEmail,
  type EmailEvent, type EmailEventKind, type NewEvent, type ReceivedEvent, type WorkspaceEventType,
} from './events.repo.js';
export {
  deleteIndexedEvents, eventsOfEmails, expiredEventsOfNoEmail, fillPostgresEventsSearch, lastPositionOfHoursBefore, sideIndexWatermark, type PositionedEvent,
} from './events-query.repo.js';
