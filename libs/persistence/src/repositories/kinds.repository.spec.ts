import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { KindsRepository } from './kinds.repository';

describe('KindsRepository (Postgres)', () => {
  let db: TestDatabase;
  let kinds: KindsRepository;

  beforeAll(async () => {
    db = await createTestDatabase();
    kinds = new KindsRepository(db.dataSource);
  });
  afterAll(async () => db.drop());

  /** Time passes for the registry: every definition's times move `seconds` into the past. */
  const later = (seconds: number, kind: string) =>
    db.dataSource.query(`UPDATE kind_definitions SET first_seen_at = first_seen_at - $1 * interval '1 second',
                                                     asserted_at = asserted_at - $1 * interval '1 second' WHERE kind = $2`, [seconds, kind]);

  it('registers kinds with pool, timeout and schema; a later definition wins and reports a kind that moved pool', async () => {
    const schema = { type: 'object', required: ['to'], properties: { to: { type: 'string' } } };
    expect(await kinds.register([{ kind: 'email', pool: 'mail', timeoutMs: 5000, payloadSchema: schema }, { kind: 'noop', pool: 'default', timeoutMs: 1000, payloadSchema: null }], 'w-1')).toEqual({ moved: [], superseded: [] });
    expect(await kinds.list()).toEqual([
      { kind: 'email', pool: 'mail', timeoutMs: 5000, payloadSchema: schema, registeredBy: 'w-1', registeredAt: expect.any(Date) },
      { kind: 'noop', pool: 'default', timeoutMs: 1000, payloadSchema: null, registeredBy: 'w-1', registeredAt: expect.any(Date) },
    ]);
    await later(3600, 'email');
    const { moved } = await kinds.register([{ kind: 'email', pool: 'io', timeoutMs: 9000, payloadSchema: null }], 'w-2');
    expect(moved).toEqual([{ kind: 'email', previousPool: 'mail' }]);
    expect((await kinds.list())[0]).toMatchObject({ kind: 'email', pool: 'io', timeoutMs: 9000, payloadSchema: null, registeredBy: 'w-2' });
  });

  it('keeps the newest definition still asserted: an old build restarting does not take a kind back, a rollback does', async () => {
    const old = { kind: 'report', pool: 'default', timeoutMs: 1000, payloadSchema: null };
    const next = { kind: 'report', pool: 'reports', timeoutMs: 5000, payloadSchema: { type: 'object' } };
    const registry = async () => (await kinds.list()).find((k) => k.kind === 'report');
    const none = { moved: [], superseded: [] };
    const movedFrom = (pool: string) => ({ moved: [{ kind: 'report', previousPool: pool }], superseded: [] });
    /** The asserting worker is told its own definition is not the one in use. */
    const supersededBy = (pool: string) => ({ moved: [], superseded: [{ kind: 'report', pool }] });

    await kinds.register([old], 'w-old-1');
    await later(10, 'report');
    expect(await kinds.register([next], 'w-new-1')).toEqual(movedFrom('default'));
    // An old pod restarts mid-update, and the old ones keep asserting: the new definition stays.
    await later(10, 'report');
    expect(await kinds.register([old], 'w-old-2')).toEqual(supersededBy('reports'));
    expect(await kinds.register([old], 'w-old-1')).toEqual(supersededBy('reports'));
    expect(await registry()).toMatchObject({ pool: 'reports', timeoutMs: 5000, registeredBy: 'w-new-1' });
    await kinds.register([next], 'w-new-2'); // unchanged: the row is not written again
    expect(await registry()).toMatchObject({ registeredBy: 'w-new-1' });

    // An outage stops every worker for longer than the live window: the order stays, whichever
    // build asserts first after it.
    await later(200, 'report');
    expect(await kinds.register([next], 'w-new-1')).toEqual(none);
    expect(await kinds.register([old], 'w-old-1')).toEqual(supersededBy('reports'));

    // Rolled back mid-update: the new build stops asserting; past the live window the old one wins.
    await later(60, 'report');
    expect(await kinds.register([old], 'w-old-2')).toEqual(supersededBy('reports'));
    await later(31, 'report');
    expect(await kinds.register([old], 'w-old-2')).toEqual(movedFrom('reports'));
    expect(await registry()).toMatchObject({ pool: 'default', registeredBy: 'w-old-2' });

    // Rolled forward again: the new definition was first seen later, so it wins at once.
    await later(100, 'report');
    expect(await kinds.register([old], 'w-old-2')).toEqual(none);
    expect(await kinds.register([next], 'w-new-3')).toEqual(movedFrom('default'));
    expect(await kinds.register([old], 'w-old-2')).toEqual(supersededBy('reports'));
    expect(await registry()).toMatchObject({ pool: 'reports', registeredBy: 'w-new-3' });
  });

  it('forgets a definition no worker asserted for 30 days', async () => {
    const gone = { kind: 'tidy', pool: 'default', timeoutMs: 1000, payloadSchema: null };
    await kinds.register([gone], 'w-1');
    await later(31 * 86_400, 'tidy');
    await kinds.register([{ ...gone, timeoutMs: 2000 }], 'w-2');
    expect(await db.dataSource.query(`SELECT timeout_ms FROM kind_definitions WHERE kind = 'tidy'`)).toEqual([{ timeout_ms: 2000 }]);
  });

  it('lets two workers register the same kinds at once', async () => {
    const regs = ['a', 'b', 'c', 'd'].map((k) => ({ kind: `k-${k}`, pool: 'default', timeoutMs: 1000, payloadSchema: null }));
    await Promise.all([kinds.register(regs, 'w-a'), kinds.register([...regs].reverse(), 'w-b')]);
    expect((await kinds.list()).filter((k) => k.kind.startsWith('k-'))).toHaveLength(4);
  });
});
