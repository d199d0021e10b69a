export { normaliseAddress, isValidAddress } from './email-address.js';
export { cleanByEmail as cleanContactsWithAddress } from './contacts.repo.js';
export { contactsService, type ContactsService } from './contacts.service.js';
export { contactsRoutes } from './contacts.routes.js';
export { engagementTier, ENGAGEMENT_TIERS } from './engagement.js';
export type { Contact, ContactRef } from './contacts.repo.js';
export { audiencePage, countAudience, lastContactPos, type AudienceContact, type AudienceFilter } from './audience.repo.js';
