// @ts-check
// Webhooks: endpoints (create with an event filter, enable and disable,
// rotate the signing secret, send a test, delete), each one's recent
// deliveries, and a delivery's own page: the body posted, every attempt with
// the endpoint's answer, and a replay.
import { fixedUnless, may, withheldNote } from '../access.js';
import { api } from '../api.js';
import { loadRecord, pagedTable } from '../lists.js';
import { navigate } from '../nav.js';
import { scrolledText } from '../preview.js';
import {
  actionForm, actionsColumn, badge, byId, clipped, code, copyable, details, errorSlot, fill, focusViewHeading, h, none, rowAction, table,
  time, whileBusy,
} from '../ui.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/**
 * @typedef {{ id: string, url: string, description: string | null, event_types: string[], enabled: boolean,
 *   disabled_reason: string | null, disabled_at: string | null, failing_since: string | null, created_at: string,
 *   updated_at: string, secret?: string }} Webhook
 */
/**
 * @typedef {{ attempt: number, attempted_at: string, succeeded: boolean, response_status: number | null,
 *   duration_ms: number, error: string | null, response_body: string | null }} Attempt
 */
/**
 * @typedef {{ id: string, webhook_id: string, message_id: string, event_id: string | null, event_type: string,
 *   status: string, test: boolean, attempt_count: number, next_attempt_at: string | null, last_error: string | null,
 *   replay_of: string | null, payload: Record<string, unknown>, attempts: Attempt[], created_at: string }} Delivery
 */

/** The event types an endpoint may subscribe to (the contract's WebhookEventType). */
const EVENT_TYPES = ['email.scheduled', 'email.queued', 'email.sent', 'email.delivered', 'email.delayed', 'email.bounced',
  'email.complained', 'email.failed', 'email.cancelled', 'email.opened', 'email.clicked', 'email.replied', 'email.received',
  'broadcast.sending', 'broadcast.paused', 'broadcast.sent', 'broadcast.cancelled', 'contact.unsubscribed'];
const DEFAULT_TYPES = ['email.delivered', 'email.bounced', 'email.complained', 'email.failed'];

/** The scope of every change to an endpoint, a test and a replay among them. */
const WEBHOOKS_WRITE = 'webhooks:write';

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const WEBHOOK_ROUTES = [
  [/^\/webhooks$/, showWebhooks],
  [/^\/webhooks\/([^/]+)$/, showWebhook],
  [/^\/webhooks\/([^/]+)\/deliveries\/([^/]+)$/, showDelivery],
];

/** @param {string} id */
const webhookHref = (id) => `#/webhooks/${encodeURIComponent(id)}`;
/** @param {string} id */
const webhookPath = (id) => `/v1/webhooks/${encodeURIComponent(id)}`;
/** @param {string} webhookId @param {string} id */
const deliveryHref = (webhookId, id) => `${webhookHref(webhookId)}/deliveries/${encodeURIComponent(id)}`;
/** @param {string} webhookId @param {string} id */
const deliveryPath = (webhookId, id) => `${webhookPath(webhookId)}/deliveries/${encodeURIComponent(id)}`;

/**
 * A secret shown once, as API keys are. It stays while the page is changed (a note otherwise goes with the next edit)
 * until the person says they have it: gone, it cannot be shown again.
 * @param {string} intro @param {string} secret
 */
function secretNote(intro, secret) {
  return h('div', { class: 'flash', 'data-lasting': true },
    h('p', null, intro),
    h('p', null, copyable(secret, { label: 'signing secret', className: 'token' })),
    h('p', { class: 'small' }, 'It is shown only now. Verify each POST\'s webhook-signature with it (Standard Webhooks).'),
    h('p', null, h('button', { type: 'button', class: 'secondary', onclick: () => {
      fill(byId('note'));
      focusViewHeading();
    } }, 'Done, I have copied it')));
}

/** Checkboxes for the event filter. @param {string} idPrefix @param {string[]} checked */
function eventChoices(idPrefix, checked) {
  const boxes = EVENT_TYPES.map((type) => h('input', { type: 'checkbox', id: `${idPrefix}-${type}`, value: type, checked: checked.includes(type) }));
  const node = h('fieldset', { class: 'event-choices' }, h('legend', null, 'Events'),
    EVENT_TYPES.map((type, i) => h('label', { for: `${idPrefix}-${type}`, class: 'choice' }, boxes[i], type)));
  return {
    node,
    /** The checked types; none is refused here in words, as the API would refuse it in a schema's. */
    selected: () => {
      const types = boxes.filter((b) => b.checked).map((b) => b.value);
      if (types.length === 0) throw new Error('Choose at least one event to post to this endpoint.');
      return types;
    },
  };
}

/** @param {Webhook} w */
function state(w) {
  if (!w.enabled) return [badge('disabled'), w.disabled_reason && h('span', { class: 'reason' }, w.disabled_reason)];
  return w.failing_since ? [badge('failing'), h('span', { class: 'reason' }, 'since ', time(w.failing_since))] : badge('enabled');
}

/**
 * An endpoint in the list: its description, with its URL under it, as endpoints on one host differ by their paths only;
 * the URL alone when it has none.
 * @param {Webhook} w
 */
function endpointName(w) {
  if (!w.description) return clipped(w.url, { href: webhookHref(w.id), wide: true });
  return h('div', { class: 'endpoint-name' }, clipped(w.description, { href: webhookHref(w.id), wide: true }),
    h('span', { class: 'clip wide muted small', title: w.url }, w.url));
}

/** @param {Ctx} ctx */
function showWebhooks({ view, query }) {
  const url = h('input', { id: 'webhook-url', type: 'url', required: true, placeholder: 'https://example.com/hooks/mailroom' });
  const description = h('input', { id: 'webhook-description', type: 'text', placeholder: 'optional' });
  const events = eventChoices('new-event', DEFAULT_TYPES);
  const list = h('div');
  fill(view, h('h1', null, 'Webhooks'), withheldNote(WEBHOOKS_WRITE, 'adding, changing, testing and deleting endpoints'), list,
    may(WEBHOOKS_WRITE) && h('h2', null, 'Add an endpoint'),
    may(WEBHOOKS_WRITE) && actionForm({ class: 'stacked-form' }, async (errors) => {
      try {
        /** @type {Webhook} */
        const created = await api('POST', '/v1/webhooks', { body: {
          url: url.value.trim(), event_types: events.selected(), ...(description.value.trim() && { description: description.value.trim() }),
        } });
        navigate(webhookHref(created.id), secretNote(`The endpoint ${created.url} was added. Its signing secret:`, created.secret ?? ''));
      } catch (err) {
        errors.show(err);
      }
    },
    h('div', { class: 'form-grid' },
      h('label', { for: 'webhook-url' }, 'URL'), url,
      h('label', { for: 'webhook-description' }, 'Description'), description),
    events.node,
    h('button', { type: 'submit' }, 'Add endpoint')));
  /** @type {import('../ui.js').Column<Webhook>[]} */
  const columns = [
    { header: 'Endpoint', cell: endpointName, role: 'primary' },
    { header: 'Events', cell: (w) => `${w.event_types.length} type${w.event_types.length === 1 ? '' : 's'}` },
    { header: 'State', cell: state, role: 'status' },
    { header: 'Added', cell: (w) => time(w.created_at) },
  ];
  return pagedTable(list, { api: '/v1/webhooks', route: '/webhooks', query, columns, empty: may(WEBHOOKS_WRITE) ? 'No endpoints yet. Add one below to have events posted to it as they happen.' : 'No endpoints yet.' });
}

/** The last attempt's answer (its status, or why there was none) and how long it took, read as one. @param {Delivery} d */
function lastAnswer(d) {
  const last = d.attempts.at(-1);
  if (!last) return none();
  return h('span', { class: 'answer' }, last.response_status === null ? code(last.error) : code(String(last.response_status)), ' in ',
    `${last.duration_ms} ms`);
}

/**
 * Whether a pending delivery has been tried and waits for its next try: every attempt so far failed (the API calls it
 * pending either way, as it does one not tried yet).
 * @param {Delivery} d
 */
const isRetrying = (d) => d.status === 'pending' && d.attempt_count > 0;

/** A delivery's status; a retried one's in the failing colour, with how many attempts failed. @param {Delivery} d */
function deliveryStatus(d) {
  return isRetrying(d) ? [badge('retrying'), h('div', { class: 'muted small nowrap' }, `${d.attempt_count} failed`)] : badge(d.status);
}

/**
 * The attempts made, and when the next one goes while the delivery is being retried (the API's next_attempt_at; before
 * the first attempt it is due at once, and says nothing worth reading).
 * @param {Delivery} d
 */
function attemptsSoFar(d) {
  return [String(d.attempt_count), isRetrying(d) && d.next_attempt_at
    && h('div', { class: 'muted small nowrap' }, 'next try ', time(d.next_attempt_at, true))];
}

/** @param {unknown} value */
const textOf = (value) => (typeof value === 'string' && value !== '' ? value : undefined);

/** An email event's recipients ("to" is one address, or the list of an email's): the first, and how many more. @param {unknown} to */
function recipientsOf(to) {
  const list = (Array.isArray(to) ? to : [to]).filter((a) => textOf(a));
  return list.length > 1 ? `${list[0]} +${list.length - 1}` : textOf(list[0]);
}

/**
 * What a delivery's event is about, on one line under its type, so that deliveries of one type can be told apart: an
 * email's recipient and subject (a received one's sender and subject), a contact's address, a broadcast's name. The
 * payload carries the event as GET /events/{id} shows it, with these under its own data; a test's carries none of them.
 * @param {Delivery} d
 */
function eventAbout(d) {
  const event = /** @type {{ data?: Record<string, unknown> }} */ (d.payload.data ?? {});
  const data = event.data ?? {};
  const [kind] = d.event_type.split('.');
  const who = d.event_type === 'email.received' ? textOf(data.from) && `from ${data.from}` : recipientsOf(data.to);
  const about = kind === 'email' ? [who, textOf(data.subject)].filter(Boolean).join(' · ')
    : kind === 'contact' ? textOf(data.email)
      : kind === 'broadcast' ? textOf(data.name) : undefined;
  return about ? h('span', { class: 'clip event-about muted small', title: about }, about) : null;
}

/** The event a delivery carries, what it is about under it, each row told apart from those of the same type. @param {Delivery} d */
function deliveryEvent(d) {
  return h('div', { class: 'delivery-event' },
    h('div', null, h('a', { href: deliveryHref(d.webhook_id, d.id) }, d.event_type), d.test ? ' ' : null, d.test ? badge('test') : null,
      d.replay_of ? h('span', { class: 'reason' }, 'replay') : null),
    eventAbout(d));
}

/**
 * What the endpoint made of a test, for the note: its answer, or why there was none.
 * @param {Delivery} d  the test's delivery, as POST /test answers once it is over
 */
function testOutcome(d) {
  const last = d.attempts.at(-1);
  if (!last) return 'A test event was sent; its delivery is listed below.';
  const answer = last.response_status === null ? last.error ?? 'no answer' : `the endpoint answered ${last.response_status}`;
  return `A test event was sent; ${last.succeeded ? '' : 'it failed: '}${answer} in ${last.duration_ms} ms. Its delivery is listed below.`;
}

/** @param {Ctx} ctx */
async function showWebhook({ view, id, query }) {
  /** @type {Webhook | undefined} */
  const webhook = await loadRecord(view, 'Webhook', webhookPath(id), { href: '#/webhooks', label: 'All endpoints' });
  if (!webhook) return;
  const events = eventChoices('edit-event', webhook.event_types);
  const deliveries = h('div');
  /** @param {Record<string, unknown>} body @param {string} note */
  const patch = async (body, note) => {
    await api('PATCH', webhookPath(id), { body });
    navigate(location.hash, note);
  };
  const [filterForm, filterErrors] = actionForm({ class: 'stacked-form' }, async (errors) => {
    try {
      await patch({ event_types: events.selected() }, 'The event filter was saved.');
    } catch (err) {
      errors.show(err);
    }
  }, events.node, h('button', { type: 'submit' }, 'Save the filter'));
  // Harmless, so not asked about: the endpoint gets a test event, and its answer is shown at once.
  const testErrors = errorSlot();
  const testButton = h('button', { type: 'button', class: 'secondary', onclick: () => void whileBusy(testButton, async () => {
    fill(testErrors.node);
    try {
      /** @type {Delivery} */
      const tested = await api('POST', `${webhookPath(id)}/test`);
      navigate(location.hash, testOutcome(tested));
    } catch (err) {
      testErrors.show(err);
    }
  }) }, 'Send a test');
  fill(view,
    // The URL wraps within its own part of the row; the actions stay together, beside it or under it.
    h('div', { class: 'title-row endpoint-title' },
      h('div', { class: 'endpoint-heading' }, h('h1', null, webhook.url), state(webhook)),
      may(WEBHOOKS_WRITE) && h('div', { class: 'endpoint-actions' }, testButton, testErrors.node,
      ...(webhook.enabled
        ? rowAction('Disable', { title: 'Disable this endpoint?', confirm: 'Disable', danger: true,
          message: h('p', null, 'Events are not sent to it until it is enabled again.') }, () => patch({ enabled: false }, 'The endpoint is disabled.'))
        : rowAction('Enable', { title: 'Enable this endpoint again?', confirm: 'Enable',
          message: h('p', null, 'The events its filter names are sent to it again.') }, () => patch({ enabled: true }, 'The endpoint is enabled.'))),
      // Not a danger: the old secret goes on signing beside the new one for a day, so the endpoint can switch over.
      ...rowAction('Rotate secret', { title: 'Make a new signing secret?', confirm: 'Make a new secret',
        message: h('p', null, 'For the next 24 hours each delivery is signed with both secrets, so the endpoint can switch to the new one; '
          + 'after that, with the new one only.') },
      async () => {
        /** @type {Webhook} */
        const rotated = await api('POST', `${webhookPath(id)}/rotate-secret`);
        navigate(location.hash, secretNote('The new signing secret:', rotated.secret ?? ''));
      }),
      ...rowAction('Delete', { title: 'Delete this endpoint?', confirm: 'Delete', danger: true,
        message: h('p', null, 'No more events are sent to ', h('code', null, webhook.url), '. Its deliveries go with it.') }, async () => {
        await api('DELETE', webhookPath(id));
        navigate('#/webhooks', `${webhook.url} was deleted.`);
      }))),
    h('p', null, h('a', { href: '#/webhooks' }, '← All endpoints'), ' · id ', code(webhook.id)),
    withheldNote(WEBHOOKS_WRITE, 'testing, changing, replaying to and deleting this endpoint'),
    details([
      ['Description', webhook.description ?? none()],
      ['Added', time(webhook.created_at)],
      ['Updated', time(webhook.updated_at)],
    ]),
    h('h2', null, 'Event filter'),
    fixedUnless(WEBHOOKS_WRITE, filterForm), filterErrors,
    h('h2', null, 'Recent deliveries'), deliveries);

  /** @type {import('../ui.js').Column<Delivery>[]} */
  const columns = [
    { header: 'Created', cell: (d) => time(d.created_at, true) },
    // The column that takes the width the others leave: what each event is about, cut, reads the more of itself.
    { header: 'Event', cell: deliveryEvent, role: 'primary', className: 'fills' },
    { header: 'Status', cell: deliveryStatus, role: 'status' },
    { header: 'Attempts', cell: attemptsSoFar, minor: true },
    { header: 'Last answer', cell: lastAnswer, className: 'prose' },
    ...(may(WEBHOOKS_WRITE) ? [actionsColumn((/** @type {Delivery} */ d) => replayAction(d, location.hash))] : []),
  ];
  await pagedTable(deliveries, {
    api: `${webhookPath(id)}/deliveries`, route: `/webhooks/${encodeURIComponent(id)}`, query, columns, empty: 'No deliveries yet.',
  });
}

/**
 * Sends a delivery again, as a new delivery with the same body, then shows `after` (the list, or the new delivery's page).
 * @param {Delivery} d @param {string | ((replayed: Delivery) => string)} after
 */
function replayAction(d, after) {
  return rowAction('Replay', {
    title: `Send this ${d.event_type} delivery again?`, confirm: 'Replay',
    message: h('p', null, 'It goes as a new delivery with the same body, listed beside this one.') }, async () => {
    /** @type {Delivery} */
    const replayed = await api('POST', `${deliveryPath(d.webhook_id, d.id)}/replay`);
    navigate(typeof after === 'string' ? after : after(replayed), 'The delivery was replayed.');
  });
}

/** What became of one attempt: the endpoint's status, or why there was none. @param {Attempt} a */
function attemptAnswer(a) {
  return a.response_status === null ? h('span', { class: 'reason' }, a.error ?? 'no answer') : code(String(a.response_status));
}

/** What the endpoint answered, in a box of its own: a receiver's error page says why it refused. @param {Attempt} a */
function answerBody(a) {
  if (a.response_body === null || a.response_body === '') return none();
  return h('pre', { class: 'answer-body', tabindex: 0, 'aria-label': `Answer to attempt ${a.attempt}` }, a.response_body);
}

/**
 * One delivery: the event it carries, the body posted (as the endpoint received it, set out for reading), every attempt
 * with the endpoint's answer, and a replay.
 * @param {Ctx} ctx
 */
async function showDelivery({ view, ids: [webhookId, id] }) {
  /** @type {Delivery | undefined} */
  const delivery = await loadRecord(view, 'Webhook delivery', deliveryPath(webhookId, id),
    { href: webhookHref(webhookId), label: 'The endpoint' });
  if (!delivery) return;
  /** @type {import('../ui.js').Column<Attempt>[]} */
  const attemptColumns = [
    { header: 'Attempt', cell: (a) => String(a.attempt), className: 'nowrap' },
    { header: 'At', cell: (a) => time(a.attempted_at, true), className: 'nowrap', role: 'primary' },
    { header: 'Outcome', cell: (a) => badge(a.succeeded ? 'succeeded' : 'failed'), role: 'status' },
    { header: 'Answer', cell: (a) => [attemptAnswer(a), ' in ', `${a.duration_ms} ms`], className: 'nowrap' },
    { header: 'Body of the answer', cell: answerBody, className: 'prose' },
  ];
  const messageId = copyable(delivery.message_id, { label: 'webhook-id header' });
  // An event's deliveries (a replay among them) go with the event's id as their webhook-id: one row says both.
  /** @type {Array<[string, import('../ui.js').Children]>} */
  const ids = delivery.event_id === delivery.message_id ? [['webhook-id (the event\'s id)', messageId]] : [
    ['webhook-id', messageId],
    ['Event', delivery.event_id ? code(delivery.event_id) : h('span', { class: 'muted' }, delivery.test ? 'a test, of no event' : '—')],
  ];
  fill(view,
    h('div', { class: 'title-row' },
      h('h1', null, delivery.event_type), deliveryStatus(delivery), delivery.test && badge('test'), h('span', { class: 'spacer' }),
      may(WEBHOOKS_WRITE) && replayAction(delivery, (replayed) => deliveryHref(webhookId, replayed.id))),
    h('p', null, h('a', { href: webhookHref(webhookId) }, '← The endpoint'), ' · delivery ', code(delivery.id)),
    details([
      ['Created', time(delivery.created_at, true)],
      ['Attempts', isRetrying(delivery) && delivery.next_attempt_at
        ? [String(delivery.attempt_count), ' · next try ', time(delivery.next_attempt_at, true)] : String(delivery.attempt_count)],
      ...ids,
      ...(delivery.replay_of ? /** @type {Array<[string, import('../ui.js').Children]>} */ ([['Replay of',
        h('a', { href: deliveryHref(webhookId, delivery.replay_of) }, code(delivery.replay_of))]]) : []),
      ...(delivery.last_error && !delivery.attempts.at(-1)?.error ? /** @type {Array<[string, import('../ui.js').Children]>} */ (
        [['Last error', h('span', { class: 'reason' }, delivery.last_error)]]) : []),
    ]),
    h('h2', null, 'Body posted'),
    h('p', { class: 'muted small' }, 'The JSON the endpoint received, set out for reading. The same webhook-id comes with a replay, so a receiver can tell it has seen the event.'),
    scrolledText(JSON.stringify(delivery.payload, null, 2), 'Body posted', 'body-text payload'),
    h('h2', null, 'Attempts'),
    delivery.attempts.length === 0 ? h('p', { class: 'muted' }, 'Not tried yet: it goes out within seconds.') : table(attemptColumns, delivery.attempts));
}
