// The event types an endpoint can subscribe to are listed in the contract
// (WebhookEventType in schema/paths/webhooks.yaml), which validates them.

/** The type of the event POST /webhooks/{id}/test sends; not subscribable, always delivered to the endpoint tested. */
export const TEST_EVENT_TYPE = 'webhook.test';
