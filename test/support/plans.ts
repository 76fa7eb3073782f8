import type { DataSource } from 'typeorm';

/**
 * The plan Postgres picks for `sql`, with seq scans off (a table of thousands of rows is cheap to
 * scan whole, ten million are not: the planner's choice at production size). Its custom plan for
 * `params`; with `generic` (the parameter types and literal arguments), the generic plan a
 * prepared statement settles on after five runs.
 */
export function planOf(ds: DataSource, sql: string, params: unknown[], generic?: { types: string; args: string }): Promise<string> {
  return ds.transaction(async (tx) => {
    await tx.query('SET LOCAL enable_seqscan = off');
    if (generic) {
      await tx.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await tx.query(`PREPARE planned (${generic.types}) AS ${sql}`);
    }
    const rows: { 'QUERY PLAN': string }[] = await tx.query(generic ? `EXPLAIN EXECUTE planned(${generic.args})` : `EXPLAIN ${sql}`, generic ? [] : params);
    if (generic) await tx.query('DEALLOCATE planned');
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}
