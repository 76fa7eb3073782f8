/**
 * A job row's payload: its own, or for an occurrence of a schedule with a large payload the
 * version it points at (`payload_ref`, table schedule_payloads). The subquery
 * runs only for rows that point: one primary-key probe.
 */
export function jobPayload(alias = ''): string {
  const p = alias ? `${alias}.` : '';
  return `CASE WHEN ${p}payload_ref IS NULL THEN ${p}payload ELSE (SELECT sp.payload FROM schedule_payloads sp WHERE sp.id = ${p}payload_ref) END`;
}
