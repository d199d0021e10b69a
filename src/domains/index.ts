export {
  domainsService, trackingTargetFor, RECHECK_TASK_EVERY_MS,
  type DomainsService, type Domain, type DomainSenders, type SendingDomain,
} from './domains.service.js';
export { domainsRoutes } from './domains.routes.js';
export { domainHasUnsentEmails } from './domains.repo.js';
export { normaliseDomainName } from './domain-name.js';
