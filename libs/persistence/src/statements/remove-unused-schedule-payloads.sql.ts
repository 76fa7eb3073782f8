/**
 * Removes up to $2 of the tenant's stored schedule payloads that neither their schedule (as its
 * current version) nor any job row points at any more: a version the schedule moved on from,
 * once retention removed its last occurrence, or one of a deleted schedule. Returns how many.
 * Safe beside the recurring sweep: it points rows only at its schedule's current version, which
 * this statement keeps, and a version it makes is not visible here before its rows are.
 *
 * $1 int tenant · $2 int batch size.
 */
export const REMOVE_UNUSED_SCHEDULE_PAYLOADS_SQL = `
WITH unused AS (
  SELECT sp.id FROM schedule_payloads sp
   WHERE sp.tenant_id = $1
     AND NOT EXISTS (SELECT 1 FROM schedules s WHERE s.id = sp.schedule_id AND s.payload_ref = sp.id)
     AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.payload_ref = sp.id)
   ORDER BY sp.id
   LIMIT $2
   FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM schedule_payloads sp USING unused u WHERE sp.id = u.id RETURNING sp.id
)
SELECT count(*)::int AS removed FROM gone`;
