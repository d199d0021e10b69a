// @ts-check
// Analytics: counts of sent, delivered, bounced, complained, opened and
// clicked mail over a chosen range, live or test mail, for every domain or
// one, as totals, a chart and the buckets behind it.
import { api } from '../api.js';
import { hashOf, navigate } from '../nav.js';
import { errorBox, fill, formatTime, h, labelled, loading, table } from '../ui.js';

/** @typedef {import('../nav.js').Ctx} Ctx */
/** @typedef {{ sent: number, delivered: number, bounced: number, complained: number, opened: number, clicked: number, unique_opened: number, unique_clicked: number, failed: number, delayed: number }} Counts */
/** @typedef {Counts & { start: string, end: string }} Bucket */

const SERIES = /** @type {const} */ (['sent', 'delivered', 'bounced', 'complained', 'opened', 'clicked']);
/** One colour per series, told apart by more than hue: each line also has its own dash. */
const STYLE = {
  sent: { color: '#2454c5', dash: '' },
  delivered: { color: '#17803d', dash: '10 4' },
  bounced: { color: '#b3261e', dash: '6 3' },
  complained: { color: '#8a5a00', dash: '2 3' },
  opened: { color: '#6b2d8f', dash: '8 3 2 3' },
  clicked: { color: '#0e7c86', dash: '4 4' },
};
const RANGES = [['24h', 'Last 24 hours', 24, 'hour'], ['7d', 'Last 7 days', 7 * 24, 'day'], ['30d', 'Last 30 days', 30 * 24, 'day']];
const HOUR_MS = 3_600_000;
const SVG = 'http://www.w3.org/2000/svg';

/** @type {Array<[RegExp, (ctx: Ctx) => void | Promise<void>]>} */
export const ANALYTICS_ROUTES = [[/^\/analytics$/, showAnalytics]];

/**
 * An SVG element; attributes are set as given, children appended.
 * @param {string} tag @param {Record<string, string | number>} attrs @param {...(Node | string)} children
 */
function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  el.append(...children);
  return el;
}

/**
 * A line per series over the buckets, with a y axis of counts and the bucket starts below.
 * @param {Bucket[]} buckets @param {'hour' | 'day'} granularity
 */
function chart(buckets, granularity) {
  const width = 900;
  const height = 260;
  const pad = { left: 48, right: 12, top: 12, bottom: 28 };
  const max = Math.max(1, ...buckets.flatMap((b) => SERIES.map((s) => b[s])));
  const x = (/** @type {number} */ i) => pad.left + (buckets.length <= 1 ? 0 : (i / (buckets.length - 1)) * (width - pad.left - pad.right));
  const y = (/** @type {number} */ v) => pad.top + (1 - v / max) * (height - pad.top - pad.bottom);
  const ticks = [0, Math.round(max / 2), max];
  const labelEvery = Math.max(1, Math.ceil(buckets.length / 8));
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', class: 'chart',
    'aria-label': `Counts per ${granularity}: ${SERIES.map((s) => `${s} ${buckets.reduce((n, b) => n + b[s], 0)}`).join(', ')}` });
  for (const t of ticks) {
    root.append(svg('line', { x1: pad.left, x2: width - pad.right, y1: y(t), y2: y(t), class: 'grid' }),
      svg('text', { x: pad.left - 6, y: y(t) + 4, 'text-anchor': 'end', class: 'tick' }, String(t)));
  }
  buckets.forEach((b, i) => {
    if (i % labelEvery !== 0) return;
    const when = new Date(b.start);
    const label = granularity === 'hour'
      ? `${String(when.getHours()).padStart(2, '0')}:00` : when.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
    const anchor = i === 0 ? 'start' : i === buckets.length - 1 ? 'end' : 'middle';
    root.append(svg('text', { x: x(i), y: height - 8, 'text-anchor': anchor, class: 'tick' }, label));
  });
  for (const s of SERIES) {
    const points = buckets.map((b, i) => `${x(i).toFixed(1)},${y(b[s]).toFixed(1)}`).join(' ');
    root.append(svg('polyline', { points, fill: 'none', stroke: STYLE[s].color, 'stroke-width': 2, 'stroke-dasharray': STYLE[s].dash, 'data-series': s }));
  }
  return root;
}

/**
 * A bucket's start as the table reads it: a day by its date alone ("12:00 AM" on every row said nothing).
 * @param {string} iso @param {'hour' | 'day'} granularity
 */
function bucketStart(iso, granularity) {
  return granularity === 'hour' ? formatTime(iso) : new Date(iso).toLocaleDateString(undefined, { dateStyle: 'medium' });
}

/** @param {Ctx} ctx */
async function showAnalytics({ view, query }) {
  const range = RANGES.find(([key]) => key === query.get('range')) ?? RANGES[1];
  const mode = query.get('mode') === 'test' ? 'test' : 'live';
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
    const domains = await api('GET', '/v1/domains', { query: new URLSearchParams({ limit: '100' }) });
    for (const d of domains.data) domainSelect.append(h('option', { value: d.id, selected: d.id === domainId }, d.name));
    const now = Date.now();
    const to = new Date(Math.ceil(now / HOUR_MS) * HOUR_MS);
    const from = new Date(to.getTime() - Number(range[2]) * HOUR_MS);
    const params = new URLSearchParams({ from: from.toISOString(), to: to.toISOString(), granularity: String(range[3]), mode });
    if (domainId) params.set('domain_id', domainId);
    const answer = await api('GET', '/v1/analytics', { query: params });
    /** @type {Counts} */
    const totals = answer.totals;
    /** @type {Bucket[]} */
    const series = answer.series;
    fill(body,
      h('div', { class: 'stat-cards' }, SERIES.map((s) => h('div', { class: 'stat', 'data-series': s },
        h('span', { class: 'stat-swatch', style: `background:${STYLE[s].color}` }),
        h('span', { class: 'stat-label' }, s), h('span', { class: 'stat-value' }, totals[s].toLocaleString())))),
      h('p', { class: 'muted small' }, `Unique opens ${totals.unique_opened.toLocaleString()}, unique clicks ${totals.unique_clicked.toLocaleString()}. Counts, never rates.`),
      h('div', { class: 'chart-wrap' }, chart(series, answer.granularity)),
      h('div', { class: 'legend' }, SERIES.map((s) => h('span', { class: 'legend-item' },
        svg('svg', { width: 28, height: 10, 'aria-hidden': 'true' }, svg('line', { x1: 0, x2: 28, y1: 5, y2: 5, stroke: STYLE[s].color, 'stroke-width': 2, 'stroke-dasharray': STYLE[s].dash })), s))),
      h('h2', null, range[3] === 'hour' ? 'By hour' : 'By day'),
      table([
        { header: 'From', cell: (b) => bucketStart(b.start, answer.granularity), className: 'nowrap' },
        ...SERIES.map((s) => ({ header: s, cell: (/** @type {Bucket} */ b) => b[s].toLocaleString(), className: 'num' })),
      ], [...series].reverse()));
  } catch (err) {
    fill(body, errorBox(err));
  }
}
