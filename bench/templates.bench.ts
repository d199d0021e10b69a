import type { CompiledSource } from '../src/templates/template-engine.js';
import { compileSource, htmlToPlainTextHere, renderSource } from './product.js';
import { compare, fmt, load, median } from './lib.js';
import { startBenchSender } from './sends.bench.js';

// Templates: how fast a compiled template is personalised, next to the
// fastest way to fill the same placeholders (strings cut once at the
// placeholders and joined with each recipient's escaped values); and sends by
// template through POST /v1/emails, next to sends of the same rendered content
// given as html and text.

/** The ten variables of the template, and a recipient's values of them. */
const VARIABLES = ['first_name', 'last_name', 'company', 'plan', 'order_id', 'order_date', 'total', 'city', 'coupon', 'manage_url'] as const;
type Values = Record<(typeof VARIABLES)[number], string>;

const valuesFor = (i: number): Values => ({
  first_name: `Ann${i}`, last_name: `O'Neil-${i}`, company: `Acme & Sons ${i % 97}`, plan: i % 3 === 0 ? 'Pro' : 'Starter',
  order_id: `A-${100_000 + i}`, order_date: `2026-11-${String(1 + (i % 28)).padStart(2, '0')}`, total: `${(i % 500) + 9}.99`,
  city: `Springfield <${i % 50}>`, coupon: `SAVE${i % 40}`, manage_url: `https://app.example/account/${i}?ref=mail&id=${i}`,
});

/**
 * A receipt-and-newsletter email of about 20 KB as email builders write them:
 * nested tables, inline styles on every cell, a header, line items, five
 * article blocks and a footer, with the ten variables spread through it.
 */
export function realisticTemplate(): string {
  const cell = 'style="padding:12px 24px;font-family:Helvetica,Arial,sans-serif;font-size:15px;line-height:22px;color:#333333;"';
  const row = (label: string, value: string) =>
    `<tr><td ${cell} width="60%">${label}</td><td ${cell} align="right" width="40%"><strong>${value}</strong></td></tr>\n`;
  const article = (n: number) => `<tr><td ${cell}>
  <table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"><tr>
  <td width="33%" valign="top" style="padding-right:16px;"><img src="https://cdn.example/articles/${n}.jpg" width="160" alt="Article ${n}" style="display:block;border:0;border-radius:6px;"></td>
  <td valign="top" style="font-family:Helvetica,Arial,sans-serif;font-size:15px;line-height:22px;color:#333333;">
  <h3 style="margin:0 0 8px;font-size:18px;color:#111111;">What is new in ${n === 1 ? '{{ plan }}' : `part ${n}`}</h3>
  <p style="margin:0 0 12px;">${'Our team shipped improvements to reports, exports and the mobile app this month, with faster search and clearer charts. '.repeat(5)}</p>
  <a href="https://blog.example/posts/${n}?utm_source=mail&amp;utm_medium=email" style="color:#0b5cff;font-weight:bold;text-decoration:none;">Read more &rarr;</a>
  </td></tr></table></td></tr>\n`;
  const items = Array.from({ length: 28 }, (_, i) => row(`Item ${i + 1}: annual licence seat, priority support and onboarding session`, `$${(i + 1) * 7}.00`)).join('');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Your receipt {{ order_id }}</title>
<style>@media only screen and (max-width:620px){.container{width:100% !important}.stack{display:block !important;width:100% !important}}</style>
</head><body style="margin:0;padding:0;background:#f4f5f7;">
<div style="display:none;max-height:0;overflow:hidden;">Receipt {{ order_id }} for {{ company }}: thanks, {{ first_name }}.</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:#f4f5f7;"><tr><td align="center" style="padding:24px 12px;">
<table role="presentation" class="container" width="600" cellpadding="0" cellspacing="0" border="0" style="background:#ffffff;border-radius:8px;">
<tr><td style="padding:32px 24px 8px;font-family:Helvetica,Arial,sans-serif;"><img src="https://cdn.example/logo.png" width="120" alt="Example" style="display:block;border:0;"></td></tr>
<tr><td ${cell}><h1 style="margin:0;font-size:24px;line-height:32px;color:#111111;">Thanks for your order, {{ first_name }} {{ last_name }}!</h1>
<p style="margin:12px 0 0;">We received order <strong>{{ order_id }}</strong> on {{ order_date }} for {{ company }}. Your {{ plan }} plan is active, and a copy of this receipt is in your account.</p></td></tr>
<tr><td style="padding:8px 0;"><table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0">
${items}${row('Total', '${{ total }}')}</table></td></tr>
<tr><td ${cell}><p style="margin:0;">Shipping to {{ city }}. Use the code <strong>{{ coupon }}</strong> for 10% off your next order.</p></td></tr>
${[1, 2, 3, 4, 5].map(article).join('')}
<tr><td style="padding:24px;font-family:Helvetica,Arial,sans-serif;font-size:12px;line-height:18px;color:#888888;border-top:1px solid #eeeeee;">
<p style="margin:0 0 8px;">You get this email because {{ company }} has an account with Example. ${'Example Inc., 1 Market Street, Springfield. '.repeat(2)}</p>
<p style="margin:0;"><a href="{{ manage_url }}" style="color:#888888;">Manage your email preferences</a> &middot; <a href="https://example.com/privacy" style="color:#888888;">Privacy</a></p>
</td></tr></table></td></tr></table></body></html>
`;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' })[c]!);

/** The ceiling: the source cut once at its placeholders; each render joins the pieces with the values, escaped. */
function stringReplacer(source: string): (values: Values) => string {
  const pieces = source.split(/\{\{ (\w+) \}\}/);
  return (values) => {
    let out = pieces[0];
    for (let i = 1; i < pieces.length; i += 2) out += escapeHtml(values[pieces[i] as keyof Values]) + pieces[i + 1];
    return out;
  };
}

/** Renders per second of `render` over `seconds` (bounded in count too), each with the next recipient's values. */
function rate(render: (values: Values) => unknown, recipients: Values[], seconds: number): number {
  const start = performance.now();
  let n = 0;
  while (n < 2_000_000 && performance.now() - start < seconds * 1000) {
    for (let k = 0; k < 100; k++, n++) render(recipients[n % recipients.length]);
  }
  return n / ((performance.now() - start) / 1000);
}

export interface RenderBench {
  bytes: number;
  placeholders: number;
  ceiling: number;
  liquid: number;
  liquidWithText: number;
}

/**
 * Personalised renders of the 20 KB template, compiled once, against string
 * replacement of the same placeholders, in alternating rounds; and the same
 * renders with the text part derived from the HTML, as a send by a template
 * without text does.
 */
export function benchRenders(rounds: number, seconds = 1): RenderBench {
  const source = realisticTemplate();
  const parsed = compileSource({ subject: 'Receipt {{ order_id }}', html: source, text: null });
  if (!parsed.ok) throw new Error(`bench template does not compile: ${parsed.problems[0].message}`);
  const compiled: CompiledSource = parsed.compiled;
  const recipients = Array.from({ length: 1000 }, (_, i) => valuesFor(i));
  const replace = stringReplacer(source);
  const liquid = (values: Values) => renderSource(compiled, values);
  const withText = (values: Values) => htmlToPlainTextHere(renderSource(compiled, values).html!);
  // Both must write the same email.
  if (liquid(recipients[7]).html !== replace(recipients[7])) throw new Error('bench: Liquid and string replacement disagree');
  const sides = [replace, liquid, withText];
  const results: number[][] = sides.map(() => []);
  for (const side of sides) rate(side, recipients, seconds / 4);
  for (let i = 0; i < rounds; i++) sides.forEach((side, j) => results[j].push(rate(side, recipients, seconds)));
  const [ceiling, liquidRate, liquidWithText] = results.map(median);
  return {
    bytes: Buffer.byteLength(source), placeholders: (source.match(/\{\{/g) ?? []).length,
    ceiling, liquid: liquidRate, liquidWithText,
  };
}

/**
 * POST /v1/emails by template (the 20 KB template, its text derived from the
 * rendered HTML) against POST /v1/emails of the same content given as html
 * and text, on the same Mailroom, in alternating rounds; and, to read the
 * gap by, sends by the same template with a text part of its own (written as
 * html-to-text reads the source), which leave out the derivation.
 */
export async function benchTemplateSends(rounds: number) {
  const { mailroom, headers } = await startBenchSender();
  try {
    const { templates, workspaces } = mailroom.services;
    const ws = (await workspaces.ensureDefault()).id;
    const version = {
      subject: 'Your receipt {{ order_id }}', html: realisticTemplate(), from: 'Bench <bench@bench.example>',
      variables: VARIABLES.map((key) => ({ key, type: 'string' as const, required: true })),
    };
    // html-to-text capitalises headings, placeholders in them too.
    const textSource = htmlToPlainTextHere(version.html).replace(/\{\{ (\w+) \}\}/g, (p) => p.toLowerCase());
    for (const t of [{ alias: 'receipt', ...version }, { alias: 'receipt-text', ...version, text: textSource }]) {
      const created = await templates.create(ws, { name: t.alias, ...t });
      await templates.publish(ws, created.id);
    }
    const values = valuesFor(42);
    const rendered = await templates.render(ws, 'receipt', { variables: values });
    const common = { to: ['someone@example.net'], tags: ['receipt'] };
    const byTemplate = (id: string) => JSON.stringify({ ...common, template: { id, variables: values } });
    const asGiven = JSON.stringify({ ...common, from: version.from, subject: rendered.subject, html: rendered.html, text: rendered.text });
    const request = { method: 'POST', headers, connections: 64, url: `${mailroom.httpUrl}/v1/emails` };
    return await compare('sends by template: POST /v1/emails naming a 20 KB template vs the same content given as html and text', rounds,
      () => load({ ...request, body: asGiven }),
      () => load({ ...request, body: byTemplate('receipt') }),
      { label: 'by a template with a text part of its own', run: () => load({ ...request, body: byTemplate('receipt-text') }) });
  } finally {
    await mailroom.close();
  }
}

/** Both rows, measured and printed (run.ts calls this; it also runs alone). */
export async function runTemplateBenches(rounds: number): Promise<void> {
  const r = benchRenders(rounds);
  console.log(`templates: personalised renders of a ${fmt(r.bytes / 1024, 1)} KB HTML template with ${VARIABLES.length} variables (${r.placeholders} placeholders), compiled once, one thread
  ceiling (the source cut at its placeholders once, joined with each recipient's escaped values): ${fmt(r.ceiling)} renders/s
  LiquidJS: ${fmt(r.liquid)} renders/s, ${fmt(1000 / r.liquid, 3)} ms a render (${fmt((r.liquid / r.ceiling) * 100, 1)}% of the ceiling)
  LiquidJS, then the text part derived from the HTML (html-to-text), as a send by a template without text: ${fmt(r.liquidWithText)} renders/s, ${fmt(1000 / r.liquidWithText, 3)} ms a render\n`);
  const s = await benchTemplateSends(rounds);
  console.log(`${s.name}
  same content given: ${fmt(s.ceiling_rps)} req/s, p99 ${fmt(s.ceiling_p99_ms, 1)} ms, ${fmt(s.ceiling_cpu_ms, 3)} ms CPU a request
  by template, text derived from the HTML: ${fmt(s.rps)} req/s, p99 ${fmt(s.p99_ms, 1)} ms, ${fmt(s.cpu_ms, 3)} ms CPU a request (${fmt(s.ratio * 100, 1)}% of the same content given)
  ${s.reference!.label}: ${fmt(s.reference!.rps)} req/s, p99 ${fmt(s.reference!.p99, 1)} ms, ${fmt(s.reference!.cpu, 3)} ms CPU a request (${fmt((s.reference!.rps / s.ceiling_rps) * 100, 1)}% of the same content given)\n`);
}
