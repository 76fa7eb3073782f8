import { KindsRepository } from '@almanac/persistence';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import pino from 'pino';
import { Writable } from 'node:stream';
import { KindAssertion } from './kind-assertion';

describe('KindAssertion (Postgres)', () => {
  let db: TestDatabase;
  beforeAll(async () => (db = await createTestDatabase()));
  afterAll(async () => db.drop());

  /** A worker build asserting `pool` for kind `report`, and the lines its log received. */
  function worker(pool: string, id: string) {
    const lines: { level: number; msg: string; kind: string; pool?: string; ownPool?: string }[] = [];
    const stream = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(JSON.parse(chunk.toString())), done()) });
    const registration = { kind: 'report', pool, timeoutMs: 1000, payloadSchema: null };
    return { assertion: new KindAssertion(new KindsRepository(db.dataSource), [registration], id, pino(stream)), lines };
  }
  /** Time passes for the registry: every definition's times move `seconds` into the past. */
  const later = (seconds: number) =>
    db.dataSource.query(`UPDATE kind_definitions SET first_seen_at = first_seen_at - $1 * interval '1 second',
                                                     asserted_at = asserted_at - $1 * interval '1 second'`, [seconds]);

  it("says once that another live build's definition is in use, and when its own is again", async () => {
    const old = worker('default', 'w-old');
    const next = worker('reports', 'w-new');
    await old.assertion.runOnce();
    await later(10);
    await next.assertion.runOnce();
    expect(next.lines).toMatchObject([{ msg: 'kind moved to another pool by this registration', kind: 'report' }]);

    await old.assertion.runOnce();
    await old.assertion.runOnce(); // still superseded: not said again
    expect(old.lines).toEqual([expect.objectContaining({ level: 40, kind: 'report', pool: 'reports', ownPool: 'default' })]);
    expect(old.lines[0].msg).toMatch(/another live worker build defines this kind differently/);

    await later(100); // the new build stopped asserting: the old definition is the live one
    await old.assertion.runOnce();
    expect(old.lines.slice(1)).toMatchObject([
      { msg: 'kind moved to another pool by this registration', kind: 'report' },
      { level: 30, msg: "this worker's definition of the kind is in use again", kind: 'report' },
    ]);
  });
});
