import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Delivery v3 (issue 31): one waiting place outside the row, and a worker noticed by its beat.
 * - `workers`: one row per worker process, its pools and concurrency, and `beat_at` moved every
 *   second by the database's clock. The promoter's rescue puts back the running jobs of a worker
 *   whose beat stopped; the dispatcher's gauges read capacity here. Small and updated in place
 *   (fillfactor 50: the beats are HOT updates).
 * - `jobs.claimed_by`: the worker that claimed a running row (null otherwise, so a row at rest
 *   pays nothing for it): the rescue's guard, and the claim's own mark, so a claim whose reply
 *   was lost can be sent again and returns what it took.
 * `dispatch_backlog` is no longer read or written (due jobs wait in their pool's ready lists in
 * Redis, nowhere else); it is dropped in a later release, so roles of the release before can
 * still run beside these during a rolling update.
 */
export class DeliveryV31764400085000 implements MigrationInterface {
  name = 'DeliveryV31764400085000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE workers (
        id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        concurrency integer NOT NULL,
        running integer[] NOT NULL DEFAULT '{}',
        leaving boolean NOT NULL DEFAULT false,
        started_at timestamptz NOT NULL DEFAULT now(),
        beat_at timestamptz NOT NULL DEFAULT now(),
        name text NOT NULL,
        pools text[] NOT NULL
      ) WITH (fillfactor = 50)`);
    await q.query(`ALTER TABLE jobs ADD COLUMN claimed_by integer`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE jobs DROP COLUMN claimed_by`);
    await q.query(`DROP TABLE workers`);
  }
}
