export { templatesService, type TemplatesService, type TemplatesDeps, type ContactFacts } from './templates.service.js';
export { templatesRoutes } from './templates.routes.js';
export type { Template, TemplateSummary, TemplateVersion } from './templates.repo.js';
