// `npm run bench`: every benchmark next to a ceiling measured in the same
// run, in alternating rounds; medians and ratios, since machines are shared.
import { cpus } from 'node:os';
import { benchAuthenticatedGet } from './http-auth.bench.js';
import { fmt } from './lib.js';
import { BATCH_SIZE, benchAcceptedSends, benchBatchSends, rawSqliteInserts } from './sends.bench.js';
import { benchInbound } from './inbound.bench.js';
import { benchDelivery } from './delivery.bench.js';
import { benchEmailSearch } from './emails-search.bench.js';
import { runTemplateBenches } from './templates.bench.js';
import { benchBroadcast } from './broadcasts.bench.js';
import { writeFigures, type Figure } from './figures.js';
import { runPostgresBenches } from './postgres-rows.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const cores = cpus().length;
/** The rates issue targets name for 2 cores: single sends accepted, and messages delivered with DKIM. */
const TARGET_SENDS = 5000;
const TARGET_DELIVERIES = 2000;
/** ", N KB written to disk <per>" for a figure the kernel gave, else nothing. */
const written = (bytes: number, per: string) => (Number.isNaN(bytes) ? '' : `, ${fmt(bytes / 1024, 1)} KB written to disk ${per}`);
const rows = [];
/** Every figure of the run, next to its ceiling: printed against its target at the end and written to bench/last-run.json. */
const figures: Figure[] = [];
console.log(`Mailroom benchmarks — node ${process.version}, ${cores} cores, ${rounds} rounds each, medians\n`);

rows.push(await benchAuthenticatedGet(rounds));
rows.push(await benchAcceptedSends(rounds));
const raw = rawSqliteInserts();
const sends = rows[1];

for (const r of rows) {
  console.log(`${r.name}
  ceiling: ${fmt(r.ceiling_rps)} req/s, p99 ${fmt(r.ceiling_p99_ms, 1)} ms, ${fmt(r.ceiling_cpu_ms, 3)} ms CPU a request
  mailroom: ${fmt(r.rps)} req/s, p99 ${fmt(r.p99_ms, 1)} ms, ${fmt(r.cpu_ms, 3)} ms CPU a request${written(r.written_bytes, 'a request')}
  load generator (its own process, on the same cores): ${fmt(r.ceiling_load_cpu_ms, 3)} ms CPU a request against the ceiling, ${fmt(r.load_cpu_ms, 3)} against mailroom
  ratio: ${fmt(r.ratio * 100, 1)}% of the ceiling${r.reference ? `
  ${r.reference.label}: ${fmt(r.reference.rps)} req/s, p99 ${fmt(r.reference.p99, 1)} ms, ${fmt(r.reference.cpu, 3)} ms CPU a request` : ''}\n`);
}
console.log(`storage ceiling (raw better-sqlite3, WAL, synchronous=FULL, email-sized rows)
  one commit per row: ${fmt(raw.perRowCommit)} rows/s
  100 rows per commit: ${fmt(raw.grouped)} rows/s
  accepted sends are ${fmt((sends.rps / raw.grouped) * 100, 1)}% of the grouped ceiling and ${fmt(sends.rps / raw.perRowCommit, 1)}x the per-row-commit rate
budget of ${fmt(TARGET_SENDS)} sends/s on ${cores} cores: at the bare route's rate the load generator spent ${fmt(sends.ceiling_load_cpu_ms, 3)} ms CPU a request,
  ${fmt(TARGET_SENDS * sends.ceiling_load_cpu_ms / 1000, 2)} cores at ${fmt(TARGET_SENDS)}/s, leaving the server ${fmt((cores * 1000 - TARGET_SENDS * sends.ceiling_load_cpu_ms) / TARGET_SENDS, 3)} ms of CPU a send (it spent ${fmt(sends.cpu_ms, 3)}; the bare Koa route ${fmt(sends.ceiling_cpu_ms, 3)})\n`);

figures.push(
  { name: 'authenticated GET', unit: 'req/s', value: rows[0].rps, ceiling: rows[0].ceiling_rps, target: null },
  {
    name: 'accepted sends, durable 201', unit: 'req/s', value: sends.rps, ceiling: sends.reference!.rps, target: 0.5,
    note: `p99 ${fmt(sends.p99_ms, 1)} ms at 64 connections (target under 50 ms); ceiling: a Koa route committing one row`,
  },
);

const batch = await benchBatchSends(rounds);
figures.push({
  name: 'batch of 100, durable', unit: 'emails/s', value: batch.rps * BATCH_SIZE, ceiling: raw.grouped, target: 0.15,
  note: 'ceiling: raw SQLite, 100 rows a commit',
});
console.log(`${batch.name}
  ceiling: ${fmt(batch.ceiling_rps)} req/s (${fmt(batch.ceiling_rps * BATCH_SIZE)} emails/s), p99 ${fmt(batch.ceiling_p99_ms, 1)} ms, ${fmt((batch.ceiling_cpu_ms / BATCH_SIZE) * 1000, 1)} µs CPU an email
  mailroom: ${fmt(batch.rps)} req/s, ${fmt(batch.rps * BATCH_SIZE)} emails/s accepted, p99 ${fmt(batch.p99_ms, 1)} ms, ${fmt((batch.cpu_ms / BATCH_SIZE) * 1000, 1)} µs CPU an email${written(batch.written_bytes / BATCH_SIZE, 'an email')}
  ratio: ${fmt(batch.ratio * 100, 1)}% of the ceiling; ${fmt((batch.rps * BATCH_SIZE / raw.grouped) * 100, 1)}% of the grouped storage ceiling\n`);

const broadcast = await benchBroadcast(rounds);
console.log(`broadcast: one message to ${fmt(broadcast.contacts)} contacts, personalised, made into emails by the broadcast sender (chunks of 200, each one commit); a fresh server each round
  batch sends of this run: ${fmt(batch.rps * BATCH_SIZE)} emails/s
  broadcast: ${fmt(broadcast.emailsPerSecond)} emails/s (${fmt(broadcast.seconds, 1)} s; ${fmt((broadcast.emailsPerSecond / (batch.rps * BATCH_SIZE)) * 100, 1)}% of the batch-send rate); rounds: ${broadcast.rounds.map((r) => fmt(r.emailsPerSecond)).join(', ')} emails/s
  GET /v1/emails?limit=25 while it runs, 4 connections: ${fmt(broadcast.readsRps)} req/s, p50 ${fmt(broadcast.readsP50, 1)} ms, p99 ${fmt(broadcast.readsP99, 1)} ms\n`);

figures.push({ name: 'broadcast, 100,000 contacts', unit: 'emails/s', value: broadcast.emailsPerSecond, ceiling: batch.rps * BATCH_SIZE, target: null });

await runTemplateBenches(rounds);

const inbound = await benchInbound(rounds);
console.log(`inbound SMTP: smtp-source, ${inbound.options.sessions} sessions reusing connections, ${inbound.options.messages} messages of ${inbound.options.bytes} bytes
  ceiling (Postfix smtp-sink, accept and discard): ${fmt(inbound.ceiling)} msg/s
  ${inbound.postfix === undefined ? `Postfix accepting into its queue: not measured (${inbound.postfixError})` : `Postfix accepting into its queue (fsync'd, then discarded): ${fmt(inbound.postfix)} msg/s`}
  mailroom stored durably before 250: ${fmt(inbound.stored)} msg/s (${fmt((inbound.stored / inbound.ceiling) * 100, 1)}% of the ceiling${inbound.postfix === undefined ? '' : `, ${fmt(inbound.stored / inbound.postfix, 2)}x Postfix`})
  mailroom parsed and authenticated (end to end): ${fmt(inbound.processed)} msg/s\n`);

figures.push({
  name: 'inbound stored', unit: 'msg/s', value: inbound.stored, ceiling: inbound.postfix ?? inbound.ceiling, target: null,
  note: inbound.postfix === undefined ? 'ceiling: smtp-sink' : 'ceiling: Postfix accepting into its queue',
});

/** The 2 KB text emails' rate, which the PostgreSQL row is set beside. */
let textDelivered = NaN;
for (const o of [
  { messages: 2000, content: 'text', bytes: 2048, signing: true, destinations: 1 },
  { messages: 2000, content: 'text', bytes: 2048, signing: false, destinations: 4 },
  { messages: 1000, content: 'html', bytes: 30_000, signing: false, destinations: 1 },
] as const) {
  const out = await benchDelivery(rounds, o);
  if (o.signing) {
    textDelivered = out.delivered;
    figures.push(
      { name: 'outbound delivery, 2 KB text, DKIM RSA + Ed25519', unit: 'msg/s', value: out.delivered, ceiling: out.signingRate, target: 0.6, note: 'ceiling: signing alone' },
      {
        name: 'outbound delivery, 2 KB text, against Postfix relaying', unit: 'msg/s', value: out.delivered, ceiling: out.postfixRelay, target: 2,
        note: 'Postfix relays the same messages into the same sink, unsigned',
      },
    );
  } else if (o.destinations > 1) {
    figures.push({ name: `outbound delivery, 2 KB text, ${o.destinations} domains an email`, unit: 'msg/s', value: out.delivered, ceiling: out.ceiling, target: null });
  } else {
    figures.push({ name: 'outbound delivery, 29 KB html', unit: 'msg/s', value: out.delivered, ceiling: out.ceiling, target: 0.25, note: 'ceiling: smtp-source -> smtp-sink' });
  }
  const each = o.destinations > 1 ? ` to recipients at ${o.destinations} domains each, ${out.messages} messages in all (a message is built once an email)` : '';
  console.log(`outbound delivery: ${out.messages / o.destinations} queued emails of ${fmt(out.bytes / 1024)} KB of ${out.content}${each}, DKIM-signed, MX found through dnsmasq, to Postfix smtp-sink
  ceiling (smtp-source -> smtp-sink, 20 sessions, messages of the same size): ${fmt(out.ceiling)} msg/s
  mailroom queue -> smtp-sink: ${fmt(out.delivered)} msg/s (${fmt((out.delivered / out.ceiling) * 100, 1)}% of the ceiling), ${fmt(out.cpuMsPerMessage, 3)} ms CPU a message (every thread)${written(out.bytesWrittenPerMessage, 'a message')}${o.signing ? `
  signing alone (RSA-2048 and Ed25519 signatures of each message, a signing thread per core, nothing else running): ${fmt(out.signingRate)} msg/s
  Postfix relaying the same messages into the same sink (no DKIM): ${fmt(out.postfixRelay)} msg/s; mailroom is ${fmt(out.delivered / out.postfixRelay, 2)}x that
  RSA-2048 signatures on one core: ${fmt(out.rsaPerCore)}/s, so ${fmt(TARGET_DELIVERIES)} msg/s takes ${fmt(TARGET_DELIVERIES / out.rsaPerCore, 2)} of the ${cores} cores for that one operation alone` : ''}\n`);
}

const search = await benchEmailSearch(rounds);
console.log(`email search: GET /v1/emails?to=… over ${fmt(search.emails)} stored emails (filled in ${fmt(search.fillSeconds, 1)} s), 4 connections
  ceiling (bare Koa GET): ${fmt(search.ceiling.rps)} req/s, p99 ${fmt(search.ceiling.p99, 1)} ms
${search.searches.map((s) => `  to=${s.to} — ${s.label}: ${fmt(s.rps)} req/s, p50 ${fmt(s.p50, 1)} ms, p99 ${fmt(s.p99, 1)} ms`).join('\n')}
`);
for (const q of search.searches) {
  figures.push({ name: `email search p99, to=${q.to}, ${q.label}`, unit: 'ms', value: q.p99, ceiling: search.ceiling.p99, target: null });
}

figures.push(...await runPostgresBenches(rounds, {
  sendsPerSecond: sends.rps, deliveredPerSecond: textDelivered, searchP99Ms: search.searches.map((q) => q.p99),
}));

writeFigures(figures);
