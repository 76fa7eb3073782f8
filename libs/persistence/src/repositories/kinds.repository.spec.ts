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

  it('registers kinds with pool, timeout and schema; the last registration wins and reports a kind that moved pool', async () => {
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

  it('lets two workers register the same kinds at once', async () => {
    const regs = ['a', 'b', 'c', 'd'].map((k) => ({ kind: `k-${k}`, pool: 'default', timeoutMs: 1000, payloadSchema: null }));
    await Promise.all([kinds.register(regs, 'w-a', new Date()), kinds.register([...regs].reverse(), 'w-b', new Date())]);
    expect((await kinds.list()).filter((k) => k.kind.startsWith('k-'))).toHaveLength(4);
  });
});
