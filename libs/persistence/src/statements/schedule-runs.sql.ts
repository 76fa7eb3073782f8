import { RESERVED_NOW } from './find-retired-keys.sql';

/**
 * Schedules' runs: the occurrence rows among the given (tenant, key) pairs (`schedule:<id>:<nominal>`,
 * the nominal instants the caller computed from the cron), each with when its first attempt
 * started: one statement for a page of runs or for a whole schedule-watch batch. One probe of
 * jobs_tenant_key per key, and of job_attempts' key per row.
 *
 * $1 int[] tenants · $2 text[] keys (pairwise).
 */
export const SCHEDULE_RUNS_SQL = `SELECT k.tenant_id, k.key, j.id::text AS id, j.state, j.attempts, j.finished_at, j.result, j.last_error, a.started_at
  FROM unnest($1::int[], $2::text[]) AS k(tenant_id, key)
  JOIN jobs j ON j.tenant_id = k.tenant_id AND j.key = (k.key COLLATE "C")
  LEFT JOIN job_attempts a ON a.job_id = j.id AND a.attempt = 1`;

/**
 * The keys of a schedule's occurrence rows in a key range, existing or removed by retention and
 * still reserved: the runs of a timing it no longer has, which its cron cannot compute. One range
 * scan of jobs_tenant_key and of retired_keys' primary key.
 *
 * $1 int tenant · $2 text lowest key · $3 text highest key · $4 int limit.
 */
export const scheduleRunKeysSql = (newestFirst: boolean) => `SELECT key FROM (
    SELECT key FROM jobs WHERE tenant_id = $1 AND key >= $2 AND key <= $3
    UNION
    SELECT key FROM retired_keys WHERE tenant_id = $1 AND key >= $2 AND key <= $3 AND ${RESERVED_NOW}
  ) k ORDER BY key ${newestFirst ? 'DESC' : 'ASC'} LIMIT $4`;
