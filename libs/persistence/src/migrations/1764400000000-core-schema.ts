import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The durable core. Every byte of a future job's row and index entries is multiplied by ten
 * million, so the jobs table is laid out on purpose (see docs/architecture.md § Storage):
 * - ids are time-ordered 53-bit integers (`almanac_job_id()`): creation time is decoded from
 *   the id instead of stored (8 B/row saved), and they stay exact as JavaScript numbers;
 * - `state` is a one-byte "char" code (mapping in job-state.codec.ts);
 * - fixed-width columns first, variable-width last, so there is no alignment padding;
 * - "next due cold rows" is a partial index on the run time's UTC hour: B-tree deduplication
 *   packs a whole hour of rows into a few posting lists (~7-10 B/row instead of ~32);
 * - no foreign key from jobs to tenants: a per-row trigger check would cost ingest throughput,
 *   and tenants are never hard-deleted;
 * - `payload` is `json`, not `jsonb`: Almanac never looks inside a payload, and the validated
 *   text is smaller than jsonb's binary form (a 100-byte payload: 101 B against ~125 B, so
 *   about 25 B/row less heap) and cheaper to accept. Measured with bench/storage.ts at 1M rows
 *   (20-char keys, 100-byte payload, 10 tenants): 287 B/job with random keys (jsonb: 312),
 *   309 B/job with per-tenant monotonic keys (jsonb: 334; jobs_tenant_key fills only half its
 *   pages there: nbtree's split-after-new-item optimisation skips tuples wider than two
 *   int8s). json also keeps the client's text as sent (key order), so a replay can be compared
 *   as text.
 */
export class CoreSchema1764400000000 implements MigrationInterface {
  name = 'CoreSchema1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE SEQUENCE almanac_job_id_seq CACHE 100`);
    await q.query(`
      CREATE FUNCTION almanac_job_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$
        SELECT ((floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1767225600000) << 12)
             | (nextval('almanac_job_id_seq') % 4096)
      $$`);
    await q.query(`
      CREATE FUNCTION almanac_hour(ts timestamptz) RETURNS timestamp LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT date_trunc('hour', ts AT TIME ZONE 'UTC')
      $$`);

    await q.query(`
      CREATE TABLE tenants (
        id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        created_at timestamptz NOT NULL DEFAULT now(),
        rate_limit_per_second integer,
        name text NOT NULL,
        api_key_hash bytea NOT NULL UNIQUE
      )`);

    await q.query(`
      CREATE TABLE jobs (
        id bigint NOT NULL DEFAULT almanac_job_id() PRIMARY KEY,
        run_at timestamptz NOT NULL,
        lease_until timestamptz,
        finished_at timestamptz,
        tenant_id integer NOT NULL,
        attempts smallint NOT NULL DEFAULT 0,
        max_attempts smallint NOT NULL DEFAULT 3,
        state "char" NOT NULL DEFAULT 's',
        kind text NOT NULL,
        key text COLLATE "C" NOT NULL,
        payload json,
        result jsonb,
        last_error text
      )`);
    await q.query(`CREATE UNIQUE INDEX jobs_tenant_key ON jobs (tenant_id, key)`);
    await q.query(`CREATE INDEX jobs_cold_due ON jobs (almanac_hour(run_at)) WHERE state = 's'`);
    await q.query(`CREATE INDEX jobs_queued_due ON jobs (run_at) WHERE state = 'q'`);
    await q.query(`CREATE INDEX jobs_running_lease ON jobs (lease_until) WHERE state = 'r'`);
    // Tenant-scoped listing of everything that is not a cold future row; cold rows are listed
    // through jobs_cold_due, so future jobs pay for no listing index.
    await q.query(`CREATE INDEX jobs_tenant_list ON jobs (tenant_id, run_at, id) WHERE state <> 's'`);

    await q.query(`
      CREATE TABLE job_attempts (
        job_id bigint NOT NULL,
        started_at timestamptz NOT NULL,
        finished_at timestamptz,
        tenant_id integer NOT NULL,
        attempt smallint NOT NULL,
        outcome text,
        worker_id text,
        error text,
        result jsonb,
        PRIMARY KEY (job_id, attempt)
      )`);

    await q.query(`
      CREATE TABLE schedules (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        next_run_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        tenant_id integer NOT NULL,
        version integer NOT NULL DEFAULT 1,
        max_attempts smallint NOT NULL DEFAULT 3,
        paused boolean NOT NULL DEFAULT false,
        missed text NOT NULL DEFAULT 'skip',
        kind text NOT NULL,
        key text COLLATE "C" NOT NULL,
        cron text NOT NULL,
        timezone text NOT NULL,
        payload jsonb
      )`);
    await q.query(`CREATE UNIQUE INDEX schedules_tenant_key ON schedules (tenant_id, key)`);
    await q.query(`CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE schedules`);
    await q.query(`DROP TABLE job_attempts`);
    await q.query(`DROP TABLE jobs`);
    await q.query(`DROP TABLE tenants`);
    await q.query(`DROP FUNCTION almanac_hour(timestamptz)`);
    await q.query(`DROP FUNCTION almanac_job_id()`);
    await q.query(`DROP SEQUENCE almanac_job_id_seq`);
  }
}
