import { benchPostgresDelivery } from './delivery.bench.js';
import { benchPostgresEmailSearch } from './emails-search.bench.js';
import type { Figure } from './figures.js';
import { fmt } from './lib.js';
import { startPostgresCluster } from './postgres.js';
import { benchPostgresSends } from './sends.bench.js';

// The PostgreSQL rows of `npm run bench`: accepted sends, deliveries and the
// email search on a private, durable PostgreSQL, with one Mailroom node and
// with two on one database, each next to a ceiling of the same run and, in a
// full run, to its SQLite row.

/** The SQLite rows of the same run, which the PostgreSQL rows are set beside; none when these run alone. */
export interface SqliteRows {
  sendsPerSecond: number;
  /** 2 KB text emails, DKIM-signed, delivered a second. */
  deliveredPerSecond: number;
  /** The p99 of each search, in the order of the searches. */
  searchP99Ms: number[];
}

const DELIVERY = { messages: 2000, bytes: 2048 };
const SIDES = [['one', 'one node'], ['two', 'two nodes']] as const;

/** "Mailroom 0.512 ms CPU" for one node, "Mailroom 0.260 + 0.251 ms CPU" for two: each process's share. */
const nodesCpu = (ms: number[]) => `Mailroom ${ms.map((m) => fmt(m, 3)).join(' + ')} ms CPU`;
const databaseCost = (u: { databaseCpuMs: number; walBytes: number }) => `PostgreSQL ${fmt(u.databaseCpuMs, 3)} ms CPU and ${fmt(u.walBytes / 1024, 1)} KB of WAL`;
const digits = (unit: string) => (unit === 'ms' ? 1 : 0);
/** "; SQLite in this run: 2,762 req/s, 0.41x" — nothing when the SQLite rows did not run. */
const besideSqlite = (value: number, sqlite: number | undefined, unit: string) =>
  (sqlite === undefined ? '' : `; SQLite in this run: ${fmt(sqlite, digits(unit))} ${unit}, PostgreSQL ${fmt(value / sqlite, 2)}x that`);

/**
 * Starts a durable cluster, runs the three benchmarks on it, prints them and
 * returns their figures; the cluster is stopped whatever happens.
 */
export async function runPostgresBenches(rounds: number, sqlite?: SqliteRows): Promise<Figure[]> {
  const figures: Figure[] = [];
  const cluster = await startPostgresCluster();
  try {
    console.log(`PostgreSQL: a private cluster, durable (fsync, synchronous_commit and full_page_writes on); Mailroom nodes in processes of their own,
two of them behind the load generator on one database; beside each figure, the CPU of every Mailroom process and of the server
with its backends, and the WAL the server wrote\n`);

    const sends = await benchPostgresSends(rounds, cluster);
    console.log(`accepted sends on PostgreSQL: POST /v1/emails, 201 after the commit, 64 connections; each deployment on a database of its own
  ceiling (a Koa route committing the body as one row through Mailroom's store on the same server): ${fmt(sends.ceiling.rps)} req/s, p99 ${fmt(sends.ceiling.p99, 1)} ms,
    ${fmt(sends.ceiling.cpuMs, 3)} ms CPU a request; ${databaseCost(sends.ceiling)} a request
${SIDES.map(([side, label]) => `  ${label}: ${fmt(sends[side].rps)} req/s, p99 ${fmt(sends[side].p99, 1)} ms, ${nodesCpu(sends[side].nodesCpuMs)} a request; ${databaseCost(sends[side])} a request
    ${fmt((sends[side].rps / sends.ceiling.rps) * 100, 1)}% of the ceiling${besideSqlite(sends[side].rps, sqlite?.sendsPerSecond, 'req/s')}`).join('\n')}\n`);
    for (const [side, label] of SIDES) {
      figures.push({
        name: `accepted sends, PostgreSQL, ${label}`, unit: 'req/s', value: sends[side].rps, ceiling: sends.ceiling.rps, target: null,
        note: `ceiling: a Koa route committing one row to PostgreSQL${besideSqlite(sends[side].rps, sqlite?.sendsPerSecond, 'req/s')}`,
      });
    }

    const delivery = await benchPostgresDelivery(rounds, cluster, DELIVERY);
    console.log(`outbound delivery on PostgreSQL: ${fmt(DELIVERY.messages)} emails of ${fmt(DELIVERY.bytes / 1024)} KB of text a round, queued while their destination is held,
then released at once; DKIM-signed, MX found through dnsmasq, delivered to smtp-sink; each deployment on a database of its own
  ceiling (smtp-source -> smtp-sink): ${fmt(delivery.ceiling)} msg/s; signing alone: ${fmt(delivery.signingRate)} msg/s
${SIDES.map(([side, label]) => `  ${label}: ${fmt(delivery[side].delivered)} msg/s, ${nodesCpu(delivery[side].nodesCpuMs)} a message; ${databaseCost(delivery[side])} a message
    ${fmt((delivery[side].delivered / delivery.signingRate) * 100, 1)}% of signing alone${besideSqlite(delivery[side].delivered, sqlite?.deliveredPerSecond, 'msg/s')}`).join('\n')}\n`);
    for (const [side, label] of SIDES) {
      figures.push({
        name: `outbound delivery, 2 KB text, PostgreSQL, ${label}`, unit: 'msg/s', value: delivery[side].delivered, ceiling: delivery.signingRate, target: null,
        note: `ceiling: signing alone${besideSqlite(delivery[side].delivered, sqlite?.deliveredPerSecond, 'msg/s')}`,
      });
    }

    const search = await benchPostgresEmailSearch(rounds, cluster);
    console.log(`email search on PostgreSQL: GET /v1/emails?to=… over ${fmt(search.emails)} stored emails (filled in ${fmt(search.fillSeconds, 1)} s, then VACUUM ANALYZE),
4 connections, through one node or spread over two
  ceiling (bare Koa GET): ${fmt(search.ceiling.rps)} req/s, p99 ${fmt(search.ceiling.p99, 1)} ms
${search.searches.map((q, i) => `  to=${q.to} — ${q.label}${sqlite ? ` (SQLite in this run: p99 ${fmt(sqlite.searchP99Ms[i], 1)} ms)` : ''}
${SIDES.map(([side, label]) => `    ${label}: ${fmt(q[side].rps)} req/s, p50 ${fmt(q[side].p50, 1)} ms, p99 ${fmt(q[side].p99, 1)} ms, ${nodesCpu(q[side].nodesCpuMs)} a request; ${databaseCost(q[side])} a request`).join('\n')}`).join('\n')}\n`);
    for (const [i, q] of search.searches.entries()) {
      for (const [side, label] of SIDES) {
        figures.push({
          name: `email search p99, PostgreSQL, ${label}, to=${q.to}, ${q.label}`, unit: 'ms', value: q[side].p99, ceiling: search.ceiling.p99, target: null,
          ...(sqlite && { note: `SQLite in this run: ${fmt(sqlite.searchP99Ms[i], 1)} ms` }),
        });
      }
    }
  } finally {
    cluster.stop();
  }
  return figures;
}
