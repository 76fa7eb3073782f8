/**
 * Gives back the rows a claim of unknown outcome took, recognised by the lease it set:
 * running → queued, the attempt it counted taken back. Returns the ids given back.
 *
 * $1 bigint[] ids · $2 timestamptz the claim's now · $3 int the claim's lease in ms.
 */
export const UNCLAIM_SQL = `UPDATE jobs j SET state = 'q', lease_until = NULL, attempts = j.attempts - (j.run_at <= $2::timestamptz)::int
        WHERE j.id = ANY($1::bigint[]) AND j.state = 'r'
          AND j.lease_until = $2::timestamptz + $3 * interval '1 millisecond'
       RETURNING j.id::text AS id`;
