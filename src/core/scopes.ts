import { AppError } from './errors.js';

// Scopes a key can hold. `full_access` grants everything; `sending_access`
// grants only what sending needs (as in the hosted APIs users know). Each
// operation in the routes names the one scope it requires.

export const FINE_SCOPES = [
  'emails:send', 'emails:read', 'domains:read', 'domains:write', 'events:read',
  'contacts:read', 'contacts:write', 'suppressions:read', 'suppressions:write',
  'webhooks:read', 'webhooks:write', 'inbound:read', 'analytics:read',
  'templates:read', 'templates:write', 'broadcasts:read', 'broadcasts:write', 'queue:read', 'queue:write',
  'api_keys:read', 'api_keys:write',
] as const;

export type FineScope = (typeof FINE_SCOPES)[number];
export const ALL_SCOPES = ['full_access', 'sending_access', ...FINE_SCOPES] as const;
export type Scope = (typeof ALL_SCOPES)[number];

const GRANTS: Record<'full_access' | 'sending_access', readonly FineScope[]> = {
  full_access: FINE_SCOPES,
  sending_access: ['emails:send'],
};

export function isScope(s: string): s is Scope {
  return (ALL_SCOPES as readonly string[]).includes(s);
}

/** The fine scopes a set of held scopes amounts to. */
export function expandScopes(held: readonly string[]): Set<FineScope> {
  const out = new Set<FineScope>();
  for (const s of held) {
    if (s === 'full_access' || s === 'sending_access') GRANTS[s].forEach((g) => out.add(g));
    else if ((FINE_SCOPES as readonly string[]).includes(s)) out.add(s as FineScope);
  }
  return out;
}

/**
 * Whether a key holding `held` may grant `requested`: every fine scope the
 * requested set amounts to must already be held, and `full_access` itself only
 * by a full-access key (so it cannot be assembled from parts).
 */
export function canGrant(held: readonly string[], requested: readonly string[]): boolean {
  if (requested.includes('full_access') && !held.includes('full_access')) return false;
  const have = expandScopes(held);
  return [...expandScopes(requested)].every((s) => have.has(s));
}

/**
 * The error of a key that lacks `scope` (403 forbidden, 550 5.7.1 over SMTP),
 * or undefined when it holds it. `neededFor` ends the message: 'here' for an
 * API operation, 'to send' for SMTP submission.
 */
export function missingScope(granted: ReadonlySet<string>, scope: FineScope, neededFor = 'here'): AppError | undefined {
  return granted.has(scope) ? undefined : new AppError('forbidden', `This API key lacks the '${scope}' scope needed ${neededFor}.`);
}

/** Throws missingScope's error when the key lacks `scope`. */
export function requireScope(granted: ReadonlySet<string>, scope: FineScope, neededFor = 'here'): void {
  const refusal = missingScope(granted, scope, neededFor);
  if (refusal) throw refusal;
}
