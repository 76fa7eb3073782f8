// The select list of the API's view of a job row (JobView, repositories/job-view.ts): the
// columns, then the keyset position. Shared by the API's reads and the RETURNING of its
// guarded updates.
import { jobPayload } from './job-payload.sql';
import { resultDigest } from './result-digest.sql';

/** The select list, its columns qualified by `alias` when one is given. */
export function columns(alias = ''): string {
  const p = alias ? `${alias}.` : '';
  return `${p}id::text AS id, ${p}tenant_id AS tenant_id, ${p}kind AS kind, ${p}key AS key, ${p}run_at AS run_at,
    ${p}state AS state, ${p}attempts AS attempts, ${p}max_attempts AS max_attempts, ${jobPayload(alias)} AS payload,
    ${p}result AS result, encode(${resultDigest(`${p}result`)}, 'hex') AS result_digest, ${p}last_error AS last_error, ${p}lease_until AS lease_until, ${p}finished_at AS finished_at, ${p}progress AS progress,
    to_char(${p}run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS position`;
}
export const COLUMNS = columns();
