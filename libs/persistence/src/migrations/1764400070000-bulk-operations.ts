import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Bulk cancel and reschedule by filter (issue 17 item 3).
 * - bulk_operations: one row per request, tenant-scoped; its progress (next_chunk of chunks) and
 *   counts move in the same transaction as the jobs each chunk changes, so a crash resumes at
 *   the chunk that did not commit and counts nothing twice.
 * - bulk_operation_chunks: the jobs the filter matched when the operation started, as arrays of
 *   up to 5,000 ids (a snapshot, so a reschedule never meets the rows it moved again; ~100 rows
 *   for 500,000 jobs). A finished operation's chunks are deleted with its last chunk.
 */
export class BulkOperations1764400070000 implements MigrationInterface {
  name = 'BulkOperations1764400070000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE bulk_operations (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant_id integer NOT NULL REFERENCES tenants (id),
        action text NOT NULL CHECK (action IN ('cancel', 'reschedule')),
        filter jsonb NOT NULL,
        change jsonb,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done', 'failed')),
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz,
        matched integer,
        chunks integer,
        next_chunk integer NOT NULL DEFAULT 0,
        changed integer NOT NULL DEFAULT 0,
        skipped integer NOT NULL DEFAULT 0,
        error text
      )`);
    await q.query(`CREATE INDEX bulk_operations_open ON bulk_operations (id) WHERE state IN ('pending', 'running')`);
    await q.query(`CREATE INDEX bulk_operations_tenant ON bulk_operations (tenant_id, id)`);
    await q.query(`
      CREATE TABLE bulk_operation_chunks (
        operation_id bigint NOT NULL REFERENCES bulk_operations (id) ON DELETE CASCADE,
        chunk integer NOT NULL,
        job_ids bigint[] NOT NULL,
        PRIMARY KEY (operation_id, chunk)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE bulk_operation_chunks`);
    await q.query(`DROP TABLE bulk_operations`);
  }
}
