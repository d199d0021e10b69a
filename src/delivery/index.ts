// The outbound MTA engine: what the queue worker and the composition root use.
// No database and no API code in here; the worker that claims queue rows calls
// these functions and records what they return.

export {
  BOUNCE_RULES,
  classifyBounce,
  extractEnhancedStatus,
  matchBounceRule,
  parseReply,
  type BounceClassification,
  type BounceRule,
  type BounceSubtype,
  type BounceType,
  type RecommendedAction,
  type SmtpReply,
} from './bounce-rules.js';
export {
  deliverToDomain,
  deliverViaRelay,
  relayAddresses,
  relayOf,
  type DirectDeps,
  type DomainDelivery,
  type OutboundMessage,
  type RecipientVerdict,
  type RecipientStatus,
  type RelayDeps,
} from './deliver.js';
export { DEFAULT_SIGNED_HEADERS, DkimSigner, type DkimKey, type DkimSignerOptions } from './dkim.js';
export { composeMessage, type Address, type Attachment, type ComposedMessage, type ComposeInput } from './mime.js';
export {
  cachingMxResolver, isPublicAddress, MAX_MX_HOSTS, resolveDestination,
  type Destination, type MxCacheOptions, type MxHost, type MxResolver, type ResolveOptions,
} from './mx.js';
export { MX_PROVIDERS, providerForMx } from './provider.js';
export {
  DEFAULT_MAX_LIFETIME_MS,
  MAX_SERVER_HINT_MS,
  nextAttemptDelayMs,
  RETRY_JITTER_RATIO,
  RETRY_SCHEDULE_MS,
  retryHintMs,
} from './retry-schedule.js';
export { MessageWithdrawn, RFC5321_TIMEOUTS, SmtpPool, SmtpSession, SmtpSessionError, type SmtpPoolOptions, type SmtpTarget, type SmtpTimeouts } from './smtp-client.js';
// The queue as operators see it (the rows of queue.repo.ts), for the queue area's port.
export type { DestinationSummary, QueueItemState, RetryOutcome, WaitingItem } from './queue.repo.js';
