// @ts-check
// Analytics: counts of sent, delivered, bounced, complained, opened and
// clicked mail over a chosen range, live or test mail (by default, the mode
// of the key signed in), for every domain or one, as totals with their rates,
// a chart and the buckets behind it.
import { api, keyMode } from '../api.js';
import { may } from '../access.js';
import { hashOf, navigate } from '../nav.js';
import { attach, errorBox, fill, formatTime, h, labelled, loading, table } from '../ui.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/** @typedef {{ sent: number, delivered: number, bounced: number, complained: number, opened: number, clicked: number, unique_opened: number, unique_clicked: number, failed: number, delayed: number }} Counts */
/** @typedef {Counts & { start: string, end: string }} Bucket */
/** @typedef {{ id: string, name: string, open_tracking: boolean, click_tracking: boolean }} Domain */

const SERIES = /** @type {const} */ (['sent', 'delivered', 'bounced', 'complained', 'opened', 'clicked']);
/** A card's name: sent counts emails, and says so; the others count recipients, said under their number. */
const CARD_LABELS = { sent: 'Emails sent', delivered: 'Delivered', bounced: 'Bounced', complained: 'Complained', opened: 'Opened', clicked: 'Clicked' };
/** The cards whose rate means nothing while no domain tracks what they count, and the setting that turns it on. */
const TRACKED = /** @type {const} */ ({ opened: ['open_tracking', 'opens', 'Open tracking'], clicked: ['click_tracking', 'clicks', 'Click tracking'] });
/** One colour per series, told apart by more than hue: each line also has its own dash. */
const STYLE = {
  sent: { color: '#2454c5', dash: [] },
  delivered: { color: '#17803d', dash: [10, 4] },
  bounced: { color: '#b3261e', dash: [6, 3] },
  complained: { color: '#8a5a00', dash: [2, 3] },
  opened: { color: '#6b2d8f', dash: [8, 3, 2, 3] },
  clicked: { color: '#0e7c86', dash: [4, 4] },
};
const RANGES = [['24h', 'Last 24 hours', 24, 'hour'], ['7d', 'Last 7 days', 7 * 24, 'day'], ['30d', 'Last 30 days', 30 * 24, 'day']];
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const CHART_HEIGHT = 260;
/** Counts are whole: the y axis steps by 1, 2, 5, 10, 20, 50… and never draws 0.5. */
const COUNT_STEPS = Array.from({ length: 10 }, (_, e) => [1, 2, 5].map((m) => m * 10 ** e)).flat();

/**
 * Where a rate becomes a warning: mailbox providers' bulk-sender rules ask for complaints under 0.1% of the mail
 * delivered (Gmail's and Yahoo's), and sending services review an account whose bounces pass about 4%.
 */
const COMPLAINT_RATE_LIMIT = 0.001;
const BOUNCE_RATE_LIMIT = 0.04;

/**
 * Each card's rate, of the recipients it is a share of: delivered and bounced of those whose delivery is settled
 * (delivered, bounced or failed), complaints, unique opens and unique clicks of those delivered. Sent counts emails,
 * so it has none. Over a range, an open may count an email delivered before it began: the rates are a guide.
 * @type {Partial<Record<typeof SERIES[number], (c: Counts) => { part: number, of: number, what: string, limit?: number }>>}
 */
const RATES = {
  delivered: (c) => ({ part: c.delivered, of: c.delivered + c.bounced + c.failed, what: 'delivered' }),
  bounced: (c) => ({ part: c.bounced, of: c.delivered + c.bounced + c.failed, what: 'bounce rate', limit: BOUNCE_RATE_LIMIT }),
  complained: (c) => ({ part: c.complained, of: c.delivered, what: 'complaint rate', limit: COMPLAINT_RATE_LIMIT }),
  opened: (c) => ({ part: c.unique_opened, of: c.delivered, what: 'open rate' }),
  clicked: (c) => ({ part: c.unique_clicked, of: c.delivered, what: 'click rate' }),
};

/** A share as a percentage, to a tenth where that says something ("0.3%", "25%"). @param {number} share */
const percent = (share) => `${(share * 100).toLocaleString(undefined, { maximumFractionDigits: share < 0.1 ? 2 : 1 })}%`;

/**
 * A card's rate line, in the danger colour past its limit; nothing where there is nothing to take a share of. An open
 * or click rate says "tracking off" instead when none of `domains` tracks them: its 0% would be no measure at all.
 * @param {typeof SERIES[number]} series @param {Counts} totals @param {Domain[] | null} domains  the domains counted,
 *   null when the key may not read them
 */
function rateLine(series, totals, domains) {
  const tracked = series === 'opened' || series === 'clicked' ? TRACKED[series] : undefined;
  if (tracked && domains && !domains.some((d) => d[tracked[0]])) {
    return h('span', { class: 'stat-rate tracking-off', title: `No domain counted here tracks ${tracked[1]}. Turn on ${tracked[2]} in a domain's settings, under Domains.` },
      'tracking off');
  }
  const rate = RATES[series]?.(totals);
  if (!rate || rate.of === 0) return null;
  const share = rate.part / rate.of;
  const over = rate.limit !== undefined && share >= rate.limit;
  return h('span', { class: over ? 'stat-rate over' : 'stat-rate', title: over ? `Above ${percent(rate.limit ?? 0)}: mailbox providers may start refusing this mail` : null },
    `${percent(share)} ${rate.what}`);
}

/** The x axis marks whole buckets, in seconds: a chart by day has no "4pm" ticks. */
const TIME_STEPS = { hour: [3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86_400], day: [86_400, 2 * 86_400, 7 * 86_400] };

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const ANALYTICS_ROUTES = [[/^\/analytics$/, showAnalytics]];

/** @typedef {typeof import('uplot')} UPlot */
/** @type {Promise<UPlot> | undefined} */
let uPlotLoaded;

/** uPlot (its IIFE build and styles, served by the dashboard), fetched with the first chart: other views never need it. */
function loadUPlot() {
  const failure = 'The chart could not be loaded; reload the page to try again.';
  uPlotLoaded ??= Promise.all([
    attach(Object.assign(document.createElement('script'), { src: '/dashboard/vendor/uplot.js' }), failure),
    attach(Object.assign(document.createElement('link'), { rel: 'stylesheet', href: '/dashboard/vendor/uplot.css' }), failure),
  ]).then(() => /** @type {{ uPlot: UPlot }} */ (/** @type {unknown} */ (window)).uPlot, (err) => {
    uPlotLoaded = undefined;
    throw err;
  });
  return uPlotLoaded;
}

/**
 * A line per series over the buckets, drawn by uPlot into `where` (on the page already, to take its width), with
 * uPlot's legend giving each series' value under the pointer. It follows the width of `where`, and is let go once
 * another view has replaced it.
 * @param {UPlot} uPlot @param {HTMLElement} where @param {Bucket[]} buckets @param {'hour' | 'day'} granularity
 */
function drawChart(uPlot, where, buckets, granularity) {
  const palette = getComputedStyle(document.documentElement);
  const muted = palette.getPropertyValue('--muted').trim();
  const line = palette.getPropertyValue('--line').trim();
  const axis = { stroke: muted, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 } };
  const count = (/** @type {unknown} */ _, /** @type {number | null} */ v) => (v === null ? '—' : v.toLocaleString());
  const plot = new uPlot({
    width: where.clientWidth,
    ...(granularity === 'day' && { tzDate: (/** @type {number} */ ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC') }),
    height: CHART_HEIGHT,
    scales: { y: { range: (_, __, max) => [0, Math.max(4, Math.ceil(max * 1.1))] } },
    axes: [{ ...axis, incrs: TIME_STEPS[granularity] }, { ...axis, incrs: COUNT_STEPS, values: (_, ticks) => ticks.map((t) => t.toLocaleString()) }],
    series: [
      { label: granularity === 'hour' ? 'Hour' : 'Day',
        value: (_, v) => (v === null ? '—' : bucketStart(new Date(v * 1000).toISOString(), granularity)) },
      ...SERIES.map((s) => ({ label: s, stroke: STYLE[s].color, width: 2, dash: STYLE[s].dash, value: count })),
    ],
  }, [buckets.map((b) => Date.parse(b.start) / 1000), ...SERIES.map((s) => buckets.map((b) => b[s]))], where);
  // The canvas is the image; its name says what it shows, for a screen reader (the table below has every bucket).
  plot.ctx.canvas.setAttribute('role', 'img');
  plot.ctx.canvas.setAttribute('aria-label',
    `Counts per ${granularity}: ${SERIES.map((s) => `${s} ${buckets.reduce((n, b) => n + b[s], 0)}`).join(', ')}`);
  const resized = new ResizeObserver(() => {
    if (!where.isConnected) {
      resized.disconnect();
      plot.destroy();
      return;
    }
    if (where.clientWidth !== plot.width) plot.setSize({ width: where.clientWidth, height: CHART_HEIGHT });
  });
  resized.observe(where);
}

/**
 * A bucket's start as the table reads it: a day by its date alone ("12:00 AM" on every row said nothing).
 * @param {string} iso @param {'hour' | 'day'} granularity
 */
function bucketStart(iso, granularity) {
  // Days are the API's: UTC days, named by their UTC date wherever the browser is.
  return granularity === 'hour' ? formatTime(iso) : new Date(iso).toLocaleDateString(undefined, { dateStyle: 'medium', timeZone: 'UTC' });
}

/** @param {Ctx} ctx */
async function showAnalytics({ view, query }) {
  const range = RANGES.find(([key]) => key === query.get('range')) ?? RANGES[1];
  const asked = query.get('mode');
  // Test keys send test mail: signed in with one, that is the mail to show.
  const mode = asked === 'test' || asked === 'live' ? asked : keyMode() === 'test' ? 'test' : 'live';
  const domainId = query.get('domain_id') ?? '';
  /** @param {Record<string, string>} change */
  const go = (change) => {
    const q = new URLSearchParams({ range: String(range[0]), mode, ...(domainId && { domain_id: domainId }), ...change });
    for (const [k, v] of [...q]) if (!v) q.delete(k);
    navigate(hashOf('/analytics', q));
  };
  const rangeSelect = h('select', { id: 'analytics-range', onchange: (e) => go({ range: /** @type {HTMLSelectElement} */ (e.target).value }) },
    RANGES.map(([key, label]) => h('option', { value: String(key), selected: key === range[0] }, String(label))));
  const modeSelect = h('select', { id: 'analytics-mode', onchange: (e) => go({ mode: /** @type {HTMLSelectElement} */ (e.target).value }) },
    h('option', { value: 'live', selected: mode === 'live' }, 'Live mail'), h('option', { value: 'test', selected: mode === 'test' }, 'Test mail'));
  const domainSelect = h('select', { id: 'analytics-domain', onchange: (e) => go({ domain_id: /** @type {HTMLSelectElement} */ (e.target).value }) },
    h('option', { value: '' }, 'Every domain'));
  const body = h('div', null, loading());
  fill(view, h('h1', null, 'Analytics'),
    h('div', { class: 'filters' },
      labelled('Range', rangeSelect), labelled('Mail', modeSelect), labelled('Domain', domainSelect)),
    body);

  try {
    // A key that may not list domains sees every domain's figures, without the filter.
    /** @type {Domain[] | null} the domains counted */
    let counted = null;
    if (may('domains:read')) {
      /** @type {{ data: Domain[] }} */
      const domains = await api('GET', '/v1/domains', { query: new URLSearchParams({ limit: '100' }) });
      for (const d of domains.data) domainSelect.append(h('option', { value: d.id, selected: d.id === domainId }, d.name));
      counted = domainId ? domains.data.filter((d) => d.id === domainId) : domains.data;
    } else {
      domainSelect.closest('.field')?.remove();
    }
    const now = Date.now();
    const to = new Date(Math.ceil(now / HOUR_MS) * HOUR_MS);
    // By day, whole days: today's and the days before it, each a bucket (not a sliver of the first one).
    const from = range[3] === 'day'
      ? new Date(Math.floor(now / DAY_MS) * DAY_MS - (Number(range[2]) - 24) * HOUR_MS)
      : new Date(to.getTime() - Number(range[2]) * HOUR_MS);
    const params = new URLSearchParams({ from: from.toISOString(), to: to.toISOString(), granularity: String(range[3]), mode });
    if (domainId) params.set('domain_id', domainId);
    const [answer, uPlot] = await Promise.all([api('GET', '/v1/analytics', { query: params }), loadUPlot()]);
    /** @type {Counts} */
    const totals = answer.totals;
    /** @type {Bucket[]} */
    const series = answer.series;
    const chart = h('div', { class: 'chart' });
    fill(body,
      h('div', { class: 'stat-cards' }, SERIES.map((s) => h('div', { class: 'stat', 'data-series': s },
        h('span', { class: 'stat-swatch', style: `background:${STYLE[s].color}` }),
        h('span', { class: 'stat-label' }, CARD_LABELS[s]),
        h('span', { class: 'stat-figure' }, h('span', { class: 'stat-value' }, totals[s].toLocaleString()),
          s !== 'sent' && h('span', { class: 'stat-unit' }, 'recipients')),
        rateLine(s, totals, counted)))),
      h('p', { class: 'muted small' }, `Unique opens ${totals.unique_opened.toLocaleString()}, unique clicks ${totals.unique_clicked.toLocaleString()}. `
        + 'Sent counts emails; the others count recipients (an email to three people delivered is 3), every open and click included. '
        + 'Delivered and bounced are shares of the recipients whose delivery is settled; the complaint, open and click rates, of those delivered, each recipient counted once.'),
      h('div', { class: 'chart-wrap' }, chart),
      h('h2', null, range[3] === 'hour' ? 'By hour' : 'By day'),
      table([
        { header: answer.granularity === 'hour' ? 'Hour' : 'Day (UTC)', cell: (b) => bucketStart(b.start, answer.granularity), className: 'nowrap' },
        ...SERIES.map((s) => ({ header: s, cell: (/** @type {Bucket} */ b) => b[s].toLocaleString(), className: 'num' })),
      ], [...series].reverse()));
    drawChart(uPlot, chart, series, answer.granularity);
  } catch (err) {
    fill(body, errorBox(err));
  }
}
