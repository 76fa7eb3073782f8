import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The kind registry: what each worker pool runs, registered by its workers at boot. The API
 * accepts exactly these kinds and checks payloads against their schemas at ingest; the
 * dispatcher routes them to their pools. `registered_at` is the last registration (a worker
 * boot), `registered_by` the worker that made it.
 */
export class JobKinds1764400035000 implements MigrationInterface {
  name = 'JobKinds1764400035000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE job_kinds (
      kind text PRIMARY KEY,
      pool text NOT NULL,
      timeout_ms integer NOT NULL CHECK (timeout_ms > 0),
      payload_schema jsonb,
      registered_by text NOT NULL,
      registered_at timestamptz NOT NULL
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE job_kinds`);
  }
}
