import { randomBytes } from 'node:crypto';
import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The schema as it stands at the first release: one migration that reads as the design
 * (docs/architecture.md § The job row; why each choice: docs/decisions/). Later changes are new
 * migrations after this one. The example kinds' tables are not here: each kind brings its own
 * (`HandlerDefinition.migrations`), applied by the workers that register it.
 */
export class Baseline1796400000000 implements MigrationInterface {
  name = 'Baseline1796400000000';

  async up(q: QueryRunner): Promise<void> {
    const [{ old }] = (await q.query(`SELECT to_regclass('jobs') IS NOT NULL AS old`)) as { old: boolean }[];
    if (old) throw new Error('this database holds a schema from before the baseline migration (pre-release): drop it and create it again');
    const seed = randomBytes(8).readBigInt64BE(); // the job ids' secret (see almanac_job_id)
    for (const statement of SCHEMA) await q.query(typeof statement === 'string' ? statement : statement(seed));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE storage_scan, sweep_leases, workers, job_kinds, bulk_operation_chunks, bulk_operations, kind_definitions,
                   retired_keys, job_effects, schedule_payloads, schedules, job_attempts, jobs,
                   tenant_signing_secrets, tenant_keys, tenants`);
    await q.query(`DROP FUNCTION almanac_refuse_retired_keys(), almanac_hour(timestamptz), almanac_job_id()`);
    await q.query(`DROP SEQUENCE almanac_job_id_seq`);
  }
}

const SCHEMA = [
  // Job ids are time-ordered 53-bit integers: creation time is decoded from the id, not stored,
  // and ids stay exact as JavaScript numbers. No sequence cache: cached blocks let two sessions
  // make the same id in one millisecond; uncached, ids collide only beyond 4,096 in one ms.
  `CREATE SEQUENCE almanac_job_id_seq CACHE 1`,
  // The low 12 bits are the shared sequence through a bijection keyed by the millisecond and a
  // secret seed (a*s + b mod 4096, a odd): plain, two of a tenant's ids told it how many jobs every
  // tenant made between them. plpgsql, to read the clock once (+0.3 µs an id over plain SQL).
  (seed: bigint) => `CREATE FUNCTION almanac_job_id() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
     DECLARE
       ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1767225600000;
       h bigint := hashint8extended(ms, ${seed});
     BEGIN
       RETURN (ms << 12) | (((nextval('almanac_job_id_seq') % 4096) * ((h & 4095) | 1) + (h >> 12)) & 4095);
     END $$`,
  // Cold rows are indexed by their run time's UTC hour: B-tree deduplication packs an hour of
  // rows into a few posting lists (a few bytes a row instead of ~32).
  `CREATE FUNCTION almanac_hour(ts timestamptz) RETURNS timestamp LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
     SELECT date_trunc('hour', ts AT TIME ZONE 'UTC')
   $$`,

  // Tenants: limits and choices that are null or default for most, so readers skip them.
  `CREATE TABLE tenants (
     id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     created_at timestamptz NOT NULL DEFAULT now(),
     disabled_at timestamptz,
     name text NOT NULL,
     -- fair delivery: share of a busy pool, running jobs at most, {kind: {perSecond?, concurrency?}}
     weight double precision NOT NULL DEFAULT 1 CHECK (weight >= 0.01 AND weight <= 1000),
     max_concurrency integer CHECK (max_concurrency > 0),
     kind_limits jsonb,
     rate_limit_per_second integer,
     max_schedules integer,
     -- retention: how long a finished job is kept, and how long its key stays reserved after
     retention_seconds integer CHECK (retention_seconds >= 3600),
     frees_keys boolean NOT NULL DEFAULT false,
     key_reservation_seconds integer CHECK (key_reservation_seconds BETWEEN 86400 AND 315360000),
     keys_reserved_forever boolean NOT NULL DEFAULT false,
     -- stored bytes: the last finished pass of the stored-bytes sweep, and the one in progress
     max_stored_bytes bigint,
     stored_bytes bigint NOT NULL DEFAULT 0,
     stored_bytes_partial bigint NOT NULL DEFAULT 0,
     stored_bytes_at timestamptz,
     -- the http kind's receivers (scheme://host[:port]), intersected with the installation's
     http_allow_hosts text[] NOT NULL DEFAULT '{}' CONSTRAINT tenants_http_allow_hosts_max CHECK (cardinality(http_allow_hosts) <= 100),
     -- the email kind sends under the installation's From address: only for tenants the operator allowed
     email_allowed boolean NOT NULL DEFAULT false
   )`,
  // Only a key's sha256 is kept, with a short prefix to tell keys apart. Revoked keys stay.
  `CREATE TABLE tenant_keys (
     id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     tenant_id integer NOT NULL REFERENCES tenants (id),
     key_hash bytea NOT NULL UNIQUE,
     prefix text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     last_used_at timestamptz,
     revoked_at timestamptz
   )`,
  `CREATE INDEX tenant_keys_tenant ON tenant_keys (tenant_id, id)`,
  // Signing secrets apart from tenants, so a role may read tenants and never secrets. Stored as
  // is (the worker signs with them). Live: the current one (no expires_at, at most one) and any
  // whose expires_at is ahead (a rotation's overlap).
  `CREATE TABLE tenant_signing_secrets (
     id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     tenant_id integer NOT NULL REFERENCES tenants (id),
     secret text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     expires_at timestamptz
   )`,
  `CREATE INDEX tenant_signing_secrets_tenant ON tenant_signing_secrets (tenant_id, id)`,
  `CREATE UNIQUE INDEX tenant_signing_secrets_current ON tenant_signing_secrets (tenant_id) WHERE expires_at IS NULL`,

  // The job row. Ten million future rows multiply every byte (docs/decisions/2026-12-05-storage-layout.md):
  // fixed-width columns first so there is no alignment padding; `state` a one-byte code
  // (job-state.codec.ts); `payload` json (never looked into, smaller than jsonb, kept as sent);
  // no foreign key to tenants (a per-row check on ingest; tenants are never deleted).
  `CREATE TABLE jobs (
     id bigint NOT NULL DEFAULT almanac_job_id() PRIMARY KEY,
     run_at timestamptz NOT NULL,
     lease_until timestamptz,
     finished_at timestamptz,
     payload_ref bigint, -- a schedule's payload version (schedule_payloads) instead of a copy
     tenant_id integer NOT NULL,
     claimed_by integer, -- the worker that claimed a running row: the rescue's guard
     attempts smallint NOT NULL DEFAULT 0,
     max_attempts smallint NOT NULL DEFAULT 3,
     state "char" NOT NULL DEFAULT 's',
     kind text NOT NULL,
     key text COLLATE "C" NOT NULL,
     payload json,
     result jsonb,
     last_error text,
     progress jsonb, -- the handler's last ctx.progress, written with the lease renewal
     trace_parent text -- W3C traceparent of the ingest span each attempt's span links to
   ) WITH (autovacuum_vacuum_scale_factor = 0.05)`,
  `CREATE UNIQUE INDEX jobs_tenant_key ON jobs (tenant_id, key)`,
  `CREATE INDEX jobs_cold_due ON jobs (almanac_hour(run_at)) WHERE state = 's'`,
  `CREATE INDEX jobs_cold_tenant ON jobs (tenant_id, almanac_hour(run_at)) WHERE state = 's'`,
  `CREATE INDEX jobs_queued_due ON jobs (run_at, id) WHERE state = 'q'`, // pages of rows sharing a run time read just their page
  `CREATE INDEX jobs_running_lease ON jobs (lease_until) WHERE state = 'r'`,
  // Listing of everything but cold rows (those go through jobs_cold_tenant): future jobs pay for
  // no listing index.
  `CREATE INDEX jobs_tenant_list ON jobs (tenant_id, run_at, id) WHERE state <> 's'`,
  `CREATE INDEX jobs_payload_ref ON jobs (payload_ref) WHERE payload_ref IS NOT NULL`,
  `CREATE TABLE job_attempts (
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
   ) WITH (autovacuum_vacuum_scale_factor = 0.05)`,

  `CREATE TABLE schedules (
     id bigint NOT NULL DEFAULT almanac_job_id() PRIMARY KEY, -- a job's kind of id: counts nobody's
     next_run_at timestamptz,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now(),
     timing_since timestamptz, -- its cron or zone last changed (null: never); runs before it are listed from their rows
     payload_ref bigint, -- the current payload version; made when first needed, cleared on change
     tenant_id integer NOT NULL,
     version integer NOT NULL DEFAULT 1,
     max_attempts smallint NOT NULL DEFAULT 3,
     paused boolean NOT NULL DEFAULT false,
     missed text NOT NULL DEFAULT 'skip',
     kind text NOT NULL,
     key text COLLATE "C" NOT NULL,
     cron text NOT NULL,
     timezone text NOT NULL,
     payload jsonb,
     last_error text, -- why the recurring sweep set it aside (paused it)
     -- the schedule watch: runs expected to start within this many seconds, classified up to
     -- watched_through, with the latest outcome (ok, late, missed, failed) and when it was due
     expect_within_seconds integer,
     watched_through timestamptz,
     last_outcome text,
     last_outcome_at timestamptz
   )`,
  `CREATE UNIQUE INDEX schedules_tenant_key ON schedules (tenant_id, key)`,
  `CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused`,
  `CREATE INDEX schedules_watched ON schedules (coalesce(watched_through, created_at)) WHERE expect_within_seconds IS NOT NULL AND NOT paused`,
  // A large schedule payload, stored once per version; retention removes unreferenced versions.
  `CREATE TABLE schedule_payloads (
     id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     tenant_id integer NOT NULL,
     schedule_id bigint NOT NULL,
     payload json NOT NULL
   )`,
  `CREATE INDEX schedule_payloads_tenant ON schedule_payloads (tenant_id, id)`,

  // ctx.effects.once: a record claimed (committed) before a non-idempotent call, done after it.
  // Records expire by their own done_at: an effect key may be shared by several jobs.
  `CREATE TABLE job_effects (
     tenant_id integer NOT NULL,
     effect_key text NOT NULL,
     job_id bigint NOT NULL,
     claimed_at timestamptz NOT NULL,
     done_at timestamptz,
     result jsonb,
     PRIMARY KEY (tenant_id, effect_key)
   )`,
  `CREATE INDEX job_effects_done ON job_effects (tenant_id, done_at) WHERE done_at IS NOT NULL`,
  `CREATE INDEX job_effects_undone ON job_effects (tenant_id, claimed_at) WHERE done_at IS NULL`,

  // A removed job's key, kept in key order per tenant (like jobs_tenant_key) until
  // reserved_through (a UTC day; NULL: forever), with how it ended and 16 bytes of its result.
  `CREATE TABLE retired_keys (
     tenant_id integer NOT NULL,
     key text COLLATE "C" NOT NULL,
     removed_on date NOT NULL,
     reserved_through date,
     state "char" NOT NULL,
     result_digest bytea,
     PRIMARY KEY (tenant_id, key)
   )`,
  `CREATE INDEX retired_keys_expiry ON retired_keys (reserved_through) WHERE reserved_through IS NOT NULL`,
  // A statement-level AFTER INSERT check, not an anti-join in the INSERT: it runs after the
  // insert's unique checks with a snapshot of its own, so it sees a removal that committed while
  // the insert waited on the old row. Per tenant of the batch: one descent between its lowest
  // and highest key, then, only if that finds a key, a probe per key.
  `CREATE FUNCTION almanac_refuse_retired_keys() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE b record;
   BEGIN
     FOR b IN SELECT tenant_id, min(key) AS lo, max(key) AS hi, array_agg(key) AS keys FROM new_jobs GROUP BY tenant_id LOOP
       IF EXISTS (SELECT 1 FROM retired_keys WHERE tenant_id = b.tenant_id AND key >= b.lo AND key <= b.hi)
          AND EXISTS (SELECT 1 FROM retired_keys WHERE tenant_id = b.tenant_id AND key = ANY (b.keys)
                         AND (reserved_through IS NULL OR reserved_through >= (statement_timestamp() AT TIME ZONE 'UTC')::date)) THEN
         RAISE EXCEPTION 'a key names a job removed by retention' USING ERRCODE = 'AL001';
       END IF;
     END LOOP;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER jobs_refuse_retired_keys AFTER INSERT ON jobs
     REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION almanac_refuse_retired_keys()`,

  // Bulk cancel/reschedule: progress moves in the same transaction as each chunk's jobs; the
  // chunks are the ids matched at the start (a snapshot), up to 5,000 a row.
  `CREATE TABLE bulk_operations (
     id bigint NOT NULL DEFAULT almanac_job_id() PRIMARY KEY, -- a job's kind of id: counts nobody's
     tenant_id integer NOT NULL REFERENCES tenants (id),
     key text,
     action text NOT NULL CHECK (action IN ('cancel', 'reschedule')),
     filter jsonb NOT NULL,
     change jsonb,
     state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done', 'failed', 'cancelled')),
     created_at timestamptz NOT NULL DEFAULT now(),
     started_at timestamptz,
     finished_at timestamptz,
     matched integer,
     chunks integer,
     next_chunk integer NOT NULL DEFAULT 0,
     changed integer NOT NULL DEFAULT 0,
     skipped integer NOT NULL DEFAULT 0,
     -- Runs in a row whose match or chunk failed (last_failure_at: when the last one was
     -- counted); the next try waits failures x 10 s, at most 5 min. lasting_failures: the last
     -- ones in a row of a cause that recurs (a value Postgres refuses, a match too slow for the
     -- statement timeout); at 3 the sweep fails the operation. Kept here, not in a replica's
     -- memory, so a restart or another replica goes on counting.
     failures integer NOT NULL DEFAULT 0,
     lasting_failures integer NOT NULL DEFAULT 0,
     last_failure_at timestamptz,
     error text
   )`,
  `CREATE INDEX bulk_operations_open ON bulk_operations (id) WHERE state IN ('pending', 'running')`,
  `CREATE INDEX bulk_operations_tenant ON bulk_operations (tenant_id, id)`,
  // A request's optional key: a resend (after a 503 at the deadline, say) finds its operation
  // instead of making a second one that moves the same jobs again.
  `CREATE UNIQUE INDEX bulk_operations_key ON bulk_operations (tenant_id, key) WHERE key IS NOT NULL`,
  `CREATE TABLE bulk_operation_chunks (
     operation_id bigint NOT NULL REFERENCES bulk_operations (id) ON DELETE CASCADE,
     chunk integer NOT NULL,
     job_ids bigint[] NOT NULL,
     PRIMARY KEY (operation_id, chunk)
   )`,

  // The kind registry, kept by workers' assertions (at boot and every 30 s): the API accepts these kinds and checks
  // payloads against their schemas; the dispatcher routes them to their pools.
  `CREATE TABLE job_kinds (
     kind text PRIMARY KEY,
     pool text NOT NULL,
     timeout_ms integer NOT NULL CHECK (timeout_ms > 0),
     payload_schema jsonb,
     registered_by text NOT NULL,
     registered_at timestamptz NOT NULL
   )`,
  // Every definition of a kind that workers assert (a digest of its pool, timeout and schema),
  // so the registry can take the newest one still live rather than the last one registered.
  `CREATE TABLE kind_definitions (
     kind text NOT NULL,
     digest text NOT NULL,
     pool text NOT NULL,
     timeout_ms integer NOT NULL,
     payload_schema jsonb,
     first_seen_at timestamptz NOT NULL,
     asserted_at timestamptz NOT NULL,
     PRIMARY KEY (kind, digest)
   )`,
  // One row per worker process, its beat moved every second by the database's clock; the rescue
  // puts back the running jobs of a worker whose beat stopped. fillfactor 50: beats are HOT updates.
  `CREATE TABLE workers (
     id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     concurrency integer NOT NULL,
     running integer[] NOT NULL DEFAULT '{}',
     leaving boolean NOT NULL DEFAULT false,
     started_at timestamptz NOT NULL DEFAULT now(),
     beat_at timestamptz NOT NULL DEFAULT now(),
     name text NOT NULL,
     pools text[] NOT NULL
   ) WITH (fillfactor = 50)`,
  // A sweep's turn is a row with an expiry, not a session lock: a sweep may wait on Redis
  // holding neither lock nor connection, and a stalled holder loses its turn when it runs out.
  `CREATE TABLE sweep_leases (
     name text PRIMARY KEY,
     holder text NOT NULL,
     expires_at timestamptz NOT NULL
   )`,
  // Where the stored-bytes sweep's pass stands (one row).
  `CREATE TABLE storage_scan (
     single boolean PRIMARY KEY DEFAULT true CHECK (single),
     phase smallint NOT NULL DEFAULT 0,
     after_id bigint NOT NULL DEFAULT 0
   )`,
  `INSERT INTO storage_scan DEFAULT VALUES`,
];
