export { trackingService, type TrackingService, type InstrumentRequest } from './tracking.service.js';
export { trackingRoutes } from './tracking.routes.js';
export { forgetTrackingOf } from './tracking.repo.js';
