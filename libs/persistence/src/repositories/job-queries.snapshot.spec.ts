import { insertJob } from '@almanac/testing/job-rows';
import { createTestDatabase, TestDatabase } from '@almanac/testing/test-db';
import type { DataSource } from 'typeorm';
import { JobListFilter, JobQueriesRepository, ListPosition, mergePages } from './job-queries.repository';
import type { JobView } from './job-view';

const H = 3600_000;
const T0 = Date.parse('2026-12-01T00:00:00Z');
type Query = (sql: string, params?: unknown[]) => Promise<unknown>;

/**
 * A DataSource (and its query runners) that runs `change`, committed on another connection,
 * right after the first statement on jobs and before any other statement on jobs starts: what a
 * retention delete or a state change landing between two statements of one list call does.
 */
function interleaving(ds: DataSource, change: () => Promise<unknown>): DataSource {
  let first: Promise<void> | null = null;
  const wrap = (run: Query): Query => async (sql, params) => {
    if (!/\bjobs\b/.test(sql)) return run(sql, params);
    if (first) return first.then(() => run(sql, params));
    let changed = () => {};
    first = new Promise<void>((r) => (changed = r));
    try {
      return await run(sql, params);
    } finally {
      await change().finally(changed);
    }
  };
  return {
    query: wrap((sql, params) => ds.query(sql, params)),
    createQueryRunner: () => {
      const runner = ds.createQueryRunner();
      runner.query = wrap(runner.query.bind(runner)) as typeof runner.query;
      return runner;
    },
  } as unknown as DataSource;
}

describe('JobQueriesRepository: one list call reads one snapshot', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(2); // the interleaved change needs a connection of its own
  });
  afterAll(() => db.drop());
  beforeEach(() => db.dataSource.query('TRUNCATE jobs'));

  async function pageAll(repo: JobQueriesRepository, filter: JobListFilter, limit: number): Promise<string[]> {
    const keys: string[] = [];
    let after: ListPosition | null = null;
    for (let i = 0; i < 20; i++) {
      const page = await repo.list(1, filter, after, limit);
      keys.push(...page.items.map((j) => j.key));
      if (!page.next) return keys;
      after = page.next;
    }
    throw new Error('did not terminate');
  }

  /** 12,000 succeeded rows a second apart (h0…), two dead among them either side of the scan cap, 100 scheduled ones before. */
  async function seed() {
    await db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state)
       SELECT 1, 'h' || g, 'noop', $1::timestamptz + g * interval '1 second', CASE WHEN g IN (9990, 10050) THEN 'x' ELSE 'd' END
         FROM generate_series(0, 11999) g
       UNION ALL SELECT 1, 's' || g, 'noop', $1::timestamptz - g * interval '1 second', 's' FROM generate_series(1, 100) g`,
      [new Date(T0)],
    );
  }

  it("answers a short filtered page with a cursor at the scan's last row", async () => {
    await seed();
    const page = await new JobQueriesRepository(db.dataSource).list(1, { state: 'dead' }, null, 10);
    const [last]: { id: string }[] = await db.dataSource.query(`SELECT id::text AS id FROM jobs WHERE key = 'h9999'`);
    expect(page.items.map((j) => j.key)).toEqual(['h9990']);
    expect(page.next).toEqual({ runAt: '2026-12-01T02:46:39.000000Z', id: last.id });
  });

  it.each([
    ['a retention delete of earlier rows', `DELETE FROM jobs WHERE key IN (SELECT 'h' || g FROM generate_series(0, 99) g)`],
    ['scheduled rows before the cursor cancelled', `UPDATE jobs SET state = 'c' WHERE state = 's'`],
  ])('pages state=dead past the scan cap, each dead row once, with %s during the call', async (_, change) => {
    await seed();
    const repo = new JobQueriesRepository(interleaving(db.dataSource, () => db.dataSource.query(change)));
    expect(await pageAll(repo, { state: 'dead' }, 10)).toEqual(['h9990', 'h10050']);
  });

  it.each([1, 2, 10])('lists a row moving from scheduled to queued during an unfiltered list exactly once (limit %i)', async (limit) => {
    await insertJob(db.dataSource, 1, 'a', T0, 'q');
    await insertJob(db.dataSource, 1, 'b', T0 + H, 's');
    await insertJob(db.dataSource, 1, 'c', T0 + 2 * H, 'q');
    const repo = new JobQueriesRepository(interleaving(db.dataSource, () => db.dataSource.query(`UPDATE jobs SET state = 'q' WHERE key = 'b'`)));
    const page = await repo.list(1, {}, null, limit);
    expect(page.items.map((j) => j.key)).toEqual(['a', 'b', 'c'].slice(0, limit));
  });

  it('merges two pages holding the same row into one row', () => {
    const row = (key: string, id: string, position: string) => ({ key, id, position }) as JobView;
    const a = { items: [row('a', '1', '2026-12-01T00:00:00.000000Z'), row('b', '2', '2026-12-01T01:00:00.000000Z')], next: null };
    const b = { items: [row('b', '2', '2026-12-01T01:00:00.000000Z'), row('c', '3', '2026-12-01T02:00:00.000000Z')], next: null };
    expect(mergePages(a, b, 10).items.map((j) => j.key)).toEqual(['a', 'b', 'c']);
    expect(mergePages(a, b, 2)).toEqual({ items: [a.items[0], a.items[1]], next: { runAt: '2026-12-01T01:00:00.000000Z', id: '2' } });
  });
});
