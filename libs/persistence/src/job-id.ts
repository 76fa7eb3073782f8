/**
 * Job ids are made by `almanac_job_id()` in Postgres: milliseconds since 2026-01-01T00:00Z
 * shifted left 12 bits, or'ed with a sequence. The creation time is therefore in the id and
 * is not stored again. Ids stay below 2^53 until 2095, but travel as strings in the API.
 */
export const JOB_ID_EPOCH_MS = 1767225600000;

export function createdAtFromJobId(id: string | bigint): Date {
  // Below 2^53 the float division by 4096 is exact and much cheaper than BigInt (hot path).
  const n = typeof id === 'string' ? Number(id) : Number.NaN;
  if (Number.isSafeInteger(n)) return new Date(JOB_ID_EPOCH_MS + Math.floor(n / 4096));
  return new Date(JOB_ID_EPOCH_MS + Number(BigInt(id) >> 12n));
}
