import { CompiledQuery, type KyselyPlugin, type QueryId, type RootOperationNode } from 'kysely';
import type { Db } from '../../src/store/db.js';
import { onPostgres } from './database.js';

/**
 * What `run` returned, and on PostgreSQL the plan (EXPLAIN) of each
 * statement it ran through `db` whose SQL `keep` accepts; none on SQLite,
 * nor of statements that are EXPLAINs themselves (trigrams.ts asks the
 * planner for its estimates).
 */
export async function withPlans<T>(db: Db, run: (db: Db) => Promise<T>, keep: (sql: string) => boolean = () => true): Promise<{ result: T; plans: string[] }> {
  const ran: Array<{ node: RootOperationNode; queryId: QueryId }> = [];
  const recorder: KyselyPlugin = {
    transformQuery: (args) => { ran.push(args); return args.node; },
    transformResult: async ({ result }) => result,
  };
  const result = await run(db.withPlugin(recorder));
  const plans: string[] = [];
  if (onPostgres) {
    for (const { node, queryId } of ran) {
      const query = db.getExecutor().compileQuery(node, queryId);
      if (/^explain\b/i.test(query.sql) || !keep(query.sql)) continue;
      const { rows } = await db.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`EXPLAIN ${query.sql}`, [...query.parameters]));
      plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
    }
  }
  return { result, plans };
}
