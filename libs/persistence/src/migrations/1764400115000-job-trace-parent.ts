import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `jobs.trace_parent`: the W3C traceparent of the span that created the job (ingest's producer
 * span), so each attempt's span links to it, however much later it runs. NULL while tracing is
 * off. Nullable and in no index: adding it rewrites nothing.
 */
export class JobTraceParent1764400115000 implements MigrationInterface {
  name = 'JobTraceParent1764400115000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE jobs ADD COLUMN trace_parent text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE jobs DROP COLUMN trace_parent`);
  }
}
