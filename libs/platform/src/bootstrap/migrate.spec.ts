import { createDataSource, MIGRATIONS, runMigrations } from '@almanac/persistence';
import { randomBytes } from 'node:crypto';
import { templateDb, urlFor, withAdmin } from '@almanac/testing/pg-admin';
import { ConfigError } from '@almanac/config';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { MigrationError, runMigrationsFromEnv } from './migrate';

/** An empty database (not cloned from the migrated template); named so global teardown drops it if we do not. */
async function emptyDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${templateDb()}_m${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}`));
  return {
    url: urlFor(name),
    drop: () => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** Runs one statement on `url` over a connection of its own; its rows. */
async function query(url: string, text: string): Promise<Record<string, unknown>[]> {
  const { Client } = await import('pg');
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text)).rows;
  } finally {
    await c.end();
  }
}

describe('runMigrationsFromEnv', () => {
  it('applies pending migrations once, then finds the schema current', async () => {
    const db = await emptyDatabase();
    try {
      const applied = await runMigrationsFromEnv({ DATABASE_URL: db.url });
      expect(applied[0]).toBe('Baseline1796400000000');
      expect(applied).toEqual(MIGRATIONS.map((m) => m.name));
      expect(await runMigrationsFromEnv({ DATABASE_URL: db.url })).toEqual([]);
    } finally {
      await db.drop();
    }
  });

  it('two runners at once on a fresh database: the second waits for the first, then finds nothing pending', async () => {
    const db = await emptyDatabase();
    try {
      const runs = await Promise.all([1, 2].map(() => runMigrationsFromEnv({ DATABASE_URL: db.url })));
      expect(runs.map((names) => names.length).sort()).toEqual([0, MIGRATIONS.length]);
      expect(await query(db.url, `SELECT name, count(*)::int AS n FROM migrations GROUP BY name ORDER BY name`)).toEqual(
        MIGRATIONS.map((m) => ({ name: m.name, n: 1 })).sort((a, b) => a.name.localeCompare(b.name)),
      );
    } finally {
      await db.drop();
    }
  });

  it('waits a bounded time for a runner that holds the migration lock, and says so', async () => {
    const db = await emptyDatabase();
    const { Client } = await import('pg');
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    const ds = createDataSource({ url: db.url, poolSize: 1 });
    try {
      await holder.query('SELECT pg_advisory_lock(1796400000)');
      await ds.initialize();
      await expect(runMigrations(ds, { lockWaitMs: 200 })).rejects.toThrow(/another runner has been applying migrations for over 200 ms/);
      await holder.query('SELECT pg_advisory_unlock_all()');
      expect(await runMigrations(ds, { lockWaitMs: 200 })).toEqual(MIGRATIONS.map((m) => m.name));
      expect(await ds.query(`SELECT current_setting('lock_timeout') AS t`)).toEqual([{ t: '0' }]);
    } finally {
      await ds.destroy().catch(() => undefined);
      await holder.end();
      await db.drop();
    }
  });

  it("bounds each lock a migration statement waits for, so it never queues the app's statements behind it for long", async () => {
    const db = await emptyDatabase();
    class AlterRows1796400098000 implements MigrationInterface {
      name = 'AlterRows1796400098000';
      async up(q: QueryRunner): Promise<void> {
        await q.query('ALTER TABLE rows ADD COLUMN note text');
      }
      async down(): Promise<void> {}
    }
    await query(db.url, 'CREATE TABLE rows (id int)');
    const { Client } = await import('pg');
    const reader = new Client({ connectionString: db.url }); // an app transaction left open
    await reader.connect();
    const ds = createDataSource({ url: db.url, poolSize: 1 }, { migrations: [AlterRows1796400098000], tableName: 'migrations' });
    try {
      await reader.query('BEGIN');
      await reader.query('SELECT * FROM rows');
      await ds.initialize();
      await expect(runMigrations(ds, { statementLockTimeoutMs: 200 })).rejects.toThrow(/lock timeout/);
      await reader.query('COMMIT');
      expect(await runMigrations(ds, { statementLockTimeoutMs: 200 })).toEqual(['AlterRows1796400098000']);
    } finally {
      await ds.destroy().catch(() => undefined);
      await reader.end();
      await db.drop();
    }
  });

  it('stops with MigrationError when a migration fails, and leaves that migration unrecorded', async () => {
    const db = await emptyDatabase();
    try {
      // A table the core migration wants to create already exists: CREATE TABLE fails.
      await query(db.url, 'CREATE TABLE tenants (id int)');
      await expect(runMigrationsFromEnv({ DATABASE_URL: db.url })).rejects.toThrow(MigrationError);
      await expect(runMigrationsFromEnv({ DATABASE_URL: db.url })).rejects.toThrow(/a migration failed on postgres:\/\/.*tenants/);
      expect(await query(db.url, `SELECT to_regclass('jobs') AS jobs`)).toEqual([{ jobs: null }]);
    } finally {
      await db.drop();
    }
  });

  it('refuses a database that holds a schema from before the baseline, saying what to do', async () => {
    const db = await emptyDatabase();
    try {
      await query(db.url, 'CREATE TABLE jobs (id bigint)');
      await expect(runMigrationsFromEnv({ DATABASE_URL: db.url })).rejects.toThrow(/before the baseline migration \(pre-release\): drop it and create it again/);
    } finally {
      await db.drop();
    }
  });

  it('names an unreachable server or a missing database, never a password', async () => {
    await expect(runMigrationsFromEnv({ DATABASE_URL: 'postgres://u:hunter2@127.0.0.1:1/x' })).rejects.toThrow(
      /^cannot connect to postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/x: .*ECONNREFUSED.*\(is Postgres running\?\)$/,
    );
    const queryPassword = runMigrationsFromEnv({ DATABASE_URL: 'postgres://u@127.0.0.1:1/x?password=hunter2' });
    await expect(queryPassword).rejects.toThrow(/^cannot connect to postgres:\/\/u@127\.0\.0\.1:1\/x\?password=\*\*\*: /);
    await expect(queryPassword).rejects.not.toThrow(/hunter2/);
    await expect(runMigrationsFromEnv({ DATABASE_URL: urlFor(`${templateDb()}_absent`) })).rejects.toThrow(
      /does not exist \(create it/,
    );
  });

  it('rejects a bad DATABASE_URL as a config error', async () => {
    await expect(runMigrationsFromEnv({ DATABASE_URL: 'mysql://x/y' })).rejects.toThrow(ConfigError);
    await expect(runMigrationsFromEnv({ DATABASE_URL: urlFor('x'), ALMANAC_MIGRATION_LOCK_TIMEOUT_MS: '5s' })).rejects.toThrow(ConfigError);
  });
});
