// `npm run bench`: every benchmark next to a ceiling measured in the same
// run, in alternating rounds; medians and ratios, since machines are shared.
import { cpus } from 'node:os';
import { benchAuthenticatedGet } from './http-auth.bench.js';
import { fmt } from './lib.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const rows = [];
console.log(`Mailroom benchmarks — node ${process.version}, ${cpus().length} cores, ${rounds} rounds each, medians\n`);

rows.push(await benchAuthenticatedGet(rounds));

for (const r of rows) {
  console.log(`${r.name}
  ceiling: ${fmt(r.ceiling_rps)} req/s, p99 ${fmt(r.ceiling_p99_ms, 1)} ms
  mailroom: ${fmt(r.rps)} req/s, p99 ${fmt(r.p99_ms, 1)} ms
  ratio: ${fmt(r.ratio * 100, 1)}% of the ceiling\n`);
}
