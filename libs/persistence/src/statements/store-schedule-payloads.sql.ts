/**
 * Stores the current payload of each of the schedules $1 as a version of its own
 * (schedule_payloads) and points the schedule at it; returns each schedule's version. The
 * recurring sweep calls it, under the schedules' row locks, for claimed schedules whose payload
 * is large and not stored yet, so their occurrences point at one copy.
 *
 * $1 bigint[] schedules.
 */
export const STORE_SCHEDULE_PAYLOADS_SQL = `
WITH stored AS (
  INSERT INTO schedule_payloads (tenant_id, schedule_id, payload)
  SELECT tenant_id, id, payload::json FROM schedules WHERE id = ANY ($1::bigint[]) AND payload_ref IS NULL AND payload IS NOT NULL
  RETURNING id, schedule_id
), pointed AS (
  UPDATE schedules s SET payload_ref = stored.id FROM stored WHERE s.id = stored.schedule_id
)
SELECT schedule_id::text AS schedule_id, id::text AS ref FROM stored`;
