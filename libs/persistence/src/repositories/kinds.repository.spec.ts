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

  it('registers kinds with pool, timeout and schema; a later definition wins and reports a kind that moved pool', async () => {
    const t1 = new Date('2026-12-01T10:00:00Z');
    const schema = { type: 'object', required: ['to'], properties: { to: { type: 'string' } } };
    expect(await kinds.register([{ kind: 'email', pool: 'mail', timeoutMs: 5000, payloadSchema: schema }, { kind: 'noop', pool: 'default', timeoutMs: 1000, payloadSchema: null }], 'w-1', t1)).toEqual([]);
    expect(await kinds.list()).toEqual([
      { kind: 'email', pool: 'mail', timeoutMs: 5000, payloadSchema: schema, registeredBy: 'w-1', registeredAt: t1 },
      { kind: 'noop', pool: 'default', timeoutMs: 1000, payloadSchema: null, registeredBy: 'w-1', registeredAt: t1 },
    ]);
    const t2 = new Date('2026-12-01T11:00:00Z');
    const moved = await kinds.register([{ kind: 'email', pool: 'io', timeoutMs: 9000, payloadSchema: null }], 'w-2', t2);
    expect(moved).toEqual([{ kind: 'email', previousPool: 'mail' }]);
    expect((await kinds.list())[0]).toEqual({ kind: 'email', pool: 'io', timeoutMs: 9000, payloadSchema: null, registeredBy: 'w-2', registeredAt: t2 });
  });

  it('keeps the newest definition still asserted: an old build restarting does not take a kind back, a rollback does', async () => {
    const t0 = Date.parse('2026-12-02T10:00:00Z');
    const at = (s: number) => new Date(t0 + s * 1000);
    const old = { kind: 'report', pool: 'default', timeoutMs: 1000, payloadSchema: null };
    const next = { kind: 'report', pool: 'reports', timeoutMs: 5000, payloadSchema: { type: 'object' } };
    const registry = async () => (await kinds.list()).find((k) => k.kind === 'report');

    await kinds.register([old], 'w-old-1', at(0));
    expect(await kinds.register([next], 'w-new-1', at(10))).toEqual([{ kind: 'report', previousPool: 'default' }]);
    // An old pod restarts mid-update, and the old ones keep asserting: the new definition stays.
    expect(await kinds.register([old], 'w-old-2', at(20))).toEqual([]);
    expect(await kinds.register([old], 'w-old-1', at(30))).toEqual([]);
    expect(await registry()).toMatchObject({ pool: 'reports', timeoutMs: 5000, registeredBy: 'w-new-1', registeredAt: at(10) });
    await kinds.register([next], 'w-new-1', at(40)); // unchanged: the row is not written again
    expect(await registry()).toMatchObject({ registeredBy: 'w-new-1', registeredAt: at(10) });

    // Rolled back: the new build stops asserting; past the live window the old definition wins.
    expect(await kinds.register([old], 'w-old-2', at(100))).toEqual([]);
    expect(await kinds.register([old], 'w-old-2', at(131))).toEqual([{ kind: 'report', previousPool: 'reports' }]);
    expect(await registry()).toMatchObject({ pool: 'default', registeredBy: 'w-old-2', registeredAt: at(131) });

    // Rolled forward again: a definition that reappears counts as new, so it wins at once.
    expect(await kinds.register([next], 'w-new-2', at(200))).toEqual([{ kind: 'report', previousPool: 'default' }]);
    expect(await kinds.register([old], 'w-old-2', at(210))).toEqual([]);
    expect(await registry()).toMatchObject({ pool: 'reports', registeredBy: 'w-new-2' });
  });

  it('lets two workers register the same kinds at once', async () => {
    const regs = ['a', 'b', 'c', 'd'].map((k) => ({ kind: `k-${k}`, pool: 'default', timeoutMs: 1000, payloadSchema: null }));
    await Promise.all([kinds.register(regs, 'w-a', new Date()), kinds.register([...regs].reverse(), 'w-b', new Date())]);
    expect((await kinds.list()).filter((k) => k.kind.startsWith('k-'))).toHaveLength(4);
  });
});
