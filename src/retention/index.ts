export { retentionService, type RetentionService } from './retention.service.js';
