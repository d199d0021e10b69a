import type { EngagementTier } from './contacts.tables.js';

// Engagement tiers, from two facts per address kept in address_engagement:
// when mail first went to it (the earliest email.sent or email.delivered
// event) and when it last engaged (the latest email.opened, email.clicked or
// email.replied).
// Events about a whole email (the hand-off, the one tracking pixel) count for
// each of the email's recipients; see engagement.repo.ts.
// The rule, with "age" measured from the last engagement, or from the first
// send for an address that never engaged:
//
//   no_data   nothing sent and no engagement recorded
//   engaged   opened, clicked or replied within the last 30 days
//   new       sent to within the last 30 days, never engaged
//   at_risk   age 30 to 90 days
//   inactive  age 90 to 180 days
//   cold      age over 180 days
//
// Opens are a weak signal (privacy proxies pre-fetch images), but a
// proxy-fetched open still means the mailbox exists and accepts our mail,
// which is what tiers are used for: deciding whom to keep sending to.
//
// The same rule is written twice: here for single contacts (creation, a
// reported event) and as SQL in engagement.repo.ts for set-based refreshes.
// A unit test runs both over the same cases.

const DAY_MS = 86_400_000;
export const ENGAGED_WITHIN_MS = 30 * DAY_MS;
export const NEW_WITHIN_MS = 30 * DAY_MS;
export const AT_RISK_WITHIN_MS = 90 * DAY_MS;
export const INACTIVE_WITHIN_MS = 180 * DAY_MS;

export const ENGAGEMENT_TIERS: readonly EngagementTier[] = ['no_data', 'new', 'engaged', 'at_risk', 'inactive', 'cold'];

/** Event types that count as mail having reached the address. */
export const SEND_EVENT_TYPES = ['email.sent', 'email.delivered'] as const;
/** Event types that count as the recipient engaging. */
export const ENGAGEMENT_EVENT_TYPES = ['email.opened', 'email.clicked', 'email.replied'] as const;

export interface EngagementFacts {
  /** Epoch ms of the first send, or null. */
  firstSentAt: number | null;
  /** Epoch ms of the latest open or click, or null. */
  lastEngagedAt: number | null;
}

export function engagementTier(f: EngagementFacts, now: number): EngagementTier {
  if (f.lastEngagedAt === null && f.firstSentAt === null) return 'no_data';
  if (f.lastEngagedAt !== null && f.lastEngagedAt >= now - ENGAGED_WITHIN_MS) return 'engaged';
  if (f.lastEngagedAt === null && f.firstSentAt! >= now - NEW_WITHIN_MS) return 'new';
  const reference = f.lastEngagedAt ?? f.firstSentAt!;
  if (reference >= now - AT_RISK_WITHIN_MS) return 'at_risk';
  if (reference >= now - INACTIVE_WITHIN_MS) return 'inactive';
  return 'cold';
}
