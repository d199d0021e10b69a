import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    templates: TemplatesTable;
    template_versions: TemplateVersionsTable;
  }
}

export interface TemplatesTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  name: string;
  /** Lower-cased name, for the partial-match filter. */
  search_name: string;
  /** Unique in the workspace; usable wherever the id is. */
  alias: string | null;
  latest_version: number;
  published_version: number | null;
  created_at: number;
  updated_at: number;
}

/** One immutable version of a template: its Liquid sources and declared variables. */
export interface TemplateVersionsTable {
  template_id: string;
  /** 1, 2, … within the template. */
  version: number;
  workspace_id: string;
  subject: string;
  html: string | null;
  text_body: string | null;
  /** Default from and reply-to of sends by the version (a send's own fields win). */
  from_address: string | null;
  /** JSON array of addresses, or null. */
  reply_to_list: string | null;
  /** JSON array of { key, type, required, fallback }. */
  variables: string;
  created_at: number;
  /** When the version was last made the published one; null if never. */
  published_at: number | null;
}
