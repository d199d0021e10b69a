import type { Generated } from 'kysely';

// The rows of the tables this area writes (times are epoch milliseconds, JSON
// columns TEXT holding JSON, `pos` the internal position behind order and
// cursors), added to the store's Database type.

declare module '../store/tables.js' {
  interface Database {
    domains: DomainsTable;
  }
}

export type DomainStatus = 'unverified' | 'verifying' | 'active';

export interface DomainsTable {
  pos: Generated<number>;
  id: string;
  workspace_id: string;
  /** Lower-case A-labels, no root dot: the form DKIM d= and DNS lookups use. */
  name: string;
  status: DomainStatus;
  /** Why the status last changed for the worse (a record gone, checks given up). */
  status_reason: string | null;
  region: string;
  return_path_subdomain: string;
  /** 0 or 1. */
  open_tracking: number;
  /** 0 or 1. */
  click_tracking: number;
  tracking_subdomain: string;
  /** 0 or 1. */
  inbound_enabled: number;
  /** JSON array of { selector, algorithm, public_txt, private_key }, private_key sealed (core/seal.ts). */
  dkim_keys: string;
  /** JSON array of the last check of each record: { record, name, value, status, detail? }. */
  record_checks: string;
  last_checked_at: number | null;
  /** When the re-check task next looks at the domain; null: never on its own. */
  next_check_at: number | null;
  /** Start of the current run of automatic checks of a verifying domain. */
  verifying_since: number | null;
  /** Automatic checks made since verifying_since; picks the step of the backoff. */
  check_attempts: number;
  created_at: number;
  updated_at: number;
}
