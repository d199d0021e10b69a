export { analyticsService, type AnalyticsService } from './analytics.service.js';
export { analyticsRoutes } from './analytics.routes.js';
export { forgetFirstEngagementOf } from './analytics.repo.js';
