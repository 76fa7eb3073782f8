/**
 * The queued jobs of one chunk: the ones with a copy in the hot queue, taken out before the
 * chunk is applied (a rescheduled row's new copy has the same queue id, which the old one would
 * block). `state::text`: through the primary key, never jobs_queued_due (see CLAIM_FOR_RUN_SQL).
 *
 * $1 bigint operation · $2 int chunk.
 */
export const QUEUED_IN_BULK_CHUNK_SQL = `SELECT j.id::text AS id
  FROM bulk_operation_chunks c CROSS JOIN LATERAL unnest(c.job_ids) AS u(id) JOIN jobs j ON j.id = u.id
 WHERE c.operation_id = $1 AND c.chunk = $2 AND j.state::text = 'q'`;
