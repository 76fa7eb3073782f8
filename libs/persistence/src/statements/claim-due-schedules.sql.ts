/** Unpaused schedules due by $1 that are not of the tenants $3, earliest first, at most $2 (through schedules_due). */
const DUE_SCHEDULES = `FROM schedules
        WHERE NOT paused AND next_run_at <= $1 AND NOT (tenant_id = ANY($3::int[]))`;
const EARLIEST = `ORDER BY next_run_at
        LIMIT $2`;

/**
 * Claims (FOR UPDATE SKIP LOCKED) the due schedules, payload as JSON text (copied into the
 * occurrences, never parsed), or, when the schedule's payload has a stored version already, that
 * version's id instead (`payload_ref`; occurrences point at it), with the payload's size.
 *
 * $1 timestamptz until · $2 int limit · $3 int[] tenants to skip · $4 bigint[] only these
 * schedules (null: any; the recurring sweep's isolation of a batch Postgres refused).
 */
export const CLAIM_DUE_SCHEDULES_SQL = `SELECT id::text AS id, tenant_id, next_run_at, cron, timezone, missed, kind, max_attempts,
         CASE WHEN payload_ref IS NULL THEN payload::text END AS payload, payload_ref::text AS payload_ref
         ${DUE_SCHEDULES} AND ($4::bigint[] IS NULL OR id = ANY($4::bigint[]))
        ${EARLIEST}
        FOR UPDATE SKIP LOCKED`;

/** The same schedules, unlocked: what a batch that failed would have claimed ($1 … $3 as above). */
export const DUE_SCHEDULE_IDS_SQL = `SELECT id::text AS id, tenant_id ${DUE_SCHEDULES} ${EARLIEST}`;
