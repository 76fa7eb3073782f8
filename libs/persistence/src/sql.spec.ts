import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { createDataSource } from './data-source';
import { onConnection } from './sql';

describe('onConnection: a read its caller stopped waiting for', () => {
  let db: TestDatabase;
  let ds: DataSource;
  beforeAll(async () => {
    db = await createTestDatabase(1);
    // One connection: a slot the aborted read failed to give back would stall every later call.
    ds = createDataSource({ url: db.url, poolSize: 1, acquireTimeoutMs: 2000 });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds.destroy();
    await db.drop();
  });

  /** Backends of this database still running `text` (another connection's view). */
  async function running(text: string): Promise<number> {
    const watcher = createDataSource({ url: db.url, poolSize: 1 });
    await watcher.initialize();
    try {
      // The backend sees its closed socket within a second (client_connection_check_interval), so look a few times.
      for (let i = 0; i < 50; i++) {
        const [{ n }] = await watcher.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = $1`, [text]);
        if (n === 0) return 0;
        await watcher.query('SELECT pg_sleep(0.05)');
      }
      return 1;
    } finally {
      await watcher.destroy();
    }
  }

  it('rejects with the reason at once when the signal aborts, and ends the statement instead of letting it run on', async () => {
    const stop = new AbortController();
    const why = new Error('deadline passed');
    const text = 'SELECT pg_sleep(20) /* stopped */';
    const started = Date.now();
    const read = onConnection(ds, stop.signal, (c) => c.query(text));
    setTimeout(() => stop.abort(why), 200);
    await expect(read).rejects.toBe(why);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await running(text)).toBe(0);
    // The pool's one slot is free again (the discarded connection left it).
    await expect(ds.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
  });

  it('discards the connection even when the signal aborts without a reason (pg-pool kept a client released with none)', async () => {
    const stop = new AbortController();
    const text = 'SELECT pg_sleep(20) /* stopped without a reason */';
    const read = onConnection(ds, stop.signal, (c) => c.query(text));
    const watcher = new Client({ connectionString: db.url });
    await watcher.connect();
    try {
      for (let n = 0, tries = 0; n === 0 && tries < 200; tries++) [{ n }] = (await watcher.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = $1`, [text])).rows;
    } finally {
      await watcher.end();
    }
    stop.abort(null);
    await expect(read).rejects.toBeNull();
    expect(await running(text)).toBe(0);
    // The pool's one connection is a new one, not the client whose backend was just ended.
    await expect(ds.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
  });

  it('stops waiting for a pooled connection when the signal aborts, and gives that connection back once it comes', async () => {
    const holder = ds.createQueryRunner();
    await holder.connect(); // the pool's one connection
    const stop = new AbortController();
    let ran = false;
    const started = Date.now();
    const read = onConnection(ds, stop.signal, async () => (ran = true));
    stop.abort(new Error('client gone'));
    await expect(read).rejects.toThrow('client gone');
    expect(Date.now() - started).toBeLessThan(1000); // not the pool's acquire timeout (2 s)
    await holder.release();
    await expect(ds.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]); // the abandoned wait gave it back
    expect(ran).toBe(false);
  });

  it('runs nothing when the signal has already aborted, and gives the connection back', async () => {
    const stop = new AbortController();
    stop.abort(new Error('client gone'));
    let ran = false;
    await expect(onConnection(ds, stop.signal, async () => (ran = true))).rejects.toThrow('client gone');
    expect(ran).toBe(false);
    await expect(ds.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
  });

  it('answers and gives the connection back when the signal does not abort, and a failing statement fails as it is', async () => {
    const stop = new AbortController();
    await expect(onConnection(ds, stop.signal, (c) => c.query('SELECT 2 AS two'))).resolves.toEqual([{ two: 2 }]);
    await expect(onConnection(ds, stop.signal, (c) => c.query('SELECT 1/0'))).rejects.toThrow(/division by zero/);
    stop.abort(new Error('too late to matter'));
    await expect(onConnection(ds, undefined, (c) => c.query('SELECT 3 AS three'))).resolves.toEqual([{ three: 3 }]);
  });
});
