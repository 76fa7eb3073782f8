import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `retired_keys.result_digest`: 16 bytes of the removed job's result (statements/result-digest),
 * so a replay with `"replay": "result"` can answer what the job produced without keeping the
 * result itself. Nullable (no result, or removed before this column): adding it rewrites nothing.
 */
export class RetiredKeyResultDigest1764400120000 implements MigrationInterface {
  name = 'RetiredKeyResultDigest1764400120000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE retired_keys ADD COLUMN result_digest bytea`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE retired_keys DROP COLUMN result_digest`);
  }
}
