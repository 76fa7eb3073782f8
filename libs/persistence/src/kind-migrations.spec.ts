import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runKindMigrations } from './kind-migrations';

class KindRows1796400099000 implements MigrationInterface {
  name = 'KindRows1796400099000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE kind_rows (id int PRIMARY KEY)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE kind_rows`);
  }
}

class KindRowsNote1796400099100 implements MigrationInterface {
  name = 'KindRowsNote1796400099100';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE kind_rows ADD COLUMN note text`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE kind_rows DROP COLUMN note`);
  }
}

describe('runKindMigrations (Postgres)', () => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await createTestDatabase(2);
  });
  afterEach(() => db.drop());

  it('applies a kind migration once when several workers boot at the same moment, and records it apart from the scheduler', async () => {
    const config = { url: db.url, poolSize: 1 };
    const runs = await Promise.all([1, 2, 3].map(() => runKindMigrations(config, [KindRows1796400099000, KindRowsNote1796400099100])));
    expect(runs.flat().sort()).toEqual(['KindRows1796400099000', 'KindRowsNote1796400099100']);
    expect(runs.filter((r) => r.length > 0)).toHaveLength(1);
    expect(await db.dataSource.query(`SELECT name FROM kind_migrations ORDER BY name`)).toEqual(
      expect.arrayContaining([{ name: 'KindRows1796400099000' }, { name: 'KindRowsNote1796400099100' }]),
    );
    expect(await db.dataSource.query(`SELECT count(*)::int AS n FROM migrations WHERE name LIKE 'KindRows%'`)).toEqual([{ n: 0 }]);
    await db.dataSource.query(`INSERT INTO kind_rows (id, note) VALUES (1, 'both ran')`);
    expect(await runKindMigrations(config, [KindRows1796400099000, KindRowsNote1796400099100])).toEqual([]);
  });

  it('applies nothing of a set that fails, and waits a bounded time for another worker applying', async () => {
    const config = { url: db.url, poolSize: 1 };
    class Broken1796400099200 implements MigrationInterface {
      name = 'Broken1796400099200';
      async up(q: QueryRunner): Promise<void> {
        await q.query(`ALTER TABLE no_such_table ADD COLUMN x int`);
      }
      async down(): Promise<void> {}
    }
    await expect(runKindMigrations(config, [KindRows1796400099000, Broken1796400099200])).rejects.toThrow(/no_such_table/);
    expect(await db.dataSource.query(`SELECT to_regclass('kind_rows') AS t`)).toEqual([{ t: null }]);

    const holder = db.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query(`SELECT pg_advisory_xact_lock(1796400001)`);
      await expect(runKindMigrations(config, [KindRows1796400099000], 200)).rejects.toThrow(/lock timeout/);
      await holder.rollbackTransaction();
    } finally {
      await holder.release();
    }
    expect(await runKindMigrations(config, [KindRows1796400099000])).toEqual(['KindRows1796400099000']);
  });
});
