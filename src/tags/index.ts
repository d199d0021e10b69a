export { tagsService, tagKey, cleanTagName, MAX_TAG_NAME_LENGTH, type TagsService } from './tags.service.js';
export { tagsRoutes } from './tags.routes.js';
export type { Tag } from './tags.repo.js';
