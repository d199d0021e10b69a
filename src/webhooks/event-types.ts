// The event types an endpoint can subscribe to: every type written to the
// events table (by sending, delivery, tracking and inbound), plus the
// synthetic test type.
export const WEBHOOK_EVENT_TYPES = [
  'email.scheduled', 'email.queued', 'email.sent', 'email.delivered', 'email.delayed', 'email.bounced',
  'email.complained', 'email.failed', 'email.cancelled', 'email.opened', 'email.clicked', 'email.received',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The type of the event POST /webhooks/{id}/test sends; not subscribable, always delivered to the endpoint tested. */
export const TEST_EVENT_TYPE = 'webhook.test';
