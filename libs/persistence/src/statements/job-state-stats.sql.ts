/**
 * The planner's view of the jobs table: its row estimate (pg_class.reltuples, -1 when never
 * analysed) and the state column's most common values and their frequencies (pg_stats).
 *
 * No parameters.
 */
export const JOB_STATE_STATS_SQL = `SELECT c.reltuples::float8 AS total,
              s.most_common_vals::text::text[] AS vals,
              s.most_common_freqs AS freqs
         FROM pg_class c
         LEFT JOIN pg_stats s ON s.schemaname = current_schema() AND s.tablename = 'jobs' AND s.attname = 'state'
        WHERE c.oid = 'jobs'::regclass`;
