import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Job ids are (ms << 12) | (nextval % 4096). With CACHE 100 each session drew its own block of
 * sequence values, so two sessions could hand out values 4096 apart in the same millisecond and
 * make the same id: a duplicate-key failure, seen once in CI (a recurring sweep's insert). Without
 * a cache, values are handed out in one global order, and two ids of one millisecond collide
 * only beyond 4,096 ids in that millisecond (ingest runs at ~75 per ms). Cost: ~0.15 µs per id
 * (1 M nextval: 1.00-1.10 s against 0.83-0.96 s cached, one session).
 */
export class JobIdSequenceNoCache1764400030000 implements MigrationInterface {
  name = 'JobIdSequenceNoCache1764400030000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER SEQUENCE almanac_job_id_seq CACHE 1`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER SEQUENCE almanac_job_id_seq CACHE 100`);
  }
}
