import type { Migration } from 'kysely';
import * as m0001 from './0001_platform.js';
import * as m0002 from './0002_scheduler.js';

// Migrations are listed here rather than read from disk, so they run the same
// from src/ under tsx and from dist/. Names sort in the order they apply.
export const migrations: Record<string, Migration> = {
  '0001_platform': m0001,
  '0002_scheduler': m0002,
};
