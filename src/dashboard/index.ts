export { dashboardRoutes, rootRedirect } from './dashboard.routes.js';
