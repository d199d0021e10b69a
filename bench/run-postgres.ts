// `npm run bench:postgres`: the PostgreSQL rows of `npm run bench` alone,
// without the SQLite rows they are set beside in a full run.
import { cpus } from 'node:os';
import { writeFigures } from './figures.js';
import { runPostgresBenches } from './postgres-rows.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
console.log(`Mailroom benchmarks on PostgreSQL — node ${process.version}, ${cpus().length} cores, ${rounds} rounds each, medians\n`);
writeFigures(await runPostgresBenches(rounds));
