export {
  contactData, RenderOverTime, templatesService, type CompiledContent, type ContactFacts, type ContentSource, type TemplatesDeps, type TemplatesService,
} from './templates.service.js';
export { templatesRoutes } from './templates.routes.js';
export { emptyFields } from './variables.js';
export type { Template, TemplateSummary, TemplateVersion } from './templates.repo.js';
