import type { TenantShare } from '@almanac/domain';
import { TenantsRepository } from '@almanac/persistence';
import type { DeliveryHarness } from '@almanac/testing/delivery-harness';
import type { QueryRunner } from 'typeorm';
import type { HotDelivery } from './dispatcher';

/** What the fairness specs make on a delivery harness: tenants, their deliveries, a slow backlog. */
export function fairFixtures(h: DeliveryHarness) {
  const tenants = new TenantsRepository(h.ds);
  return {
    tenants,
    async tenant(name: string, share: Partial<TenantShare> = {}): Promise<number> {
      const { tenant: t } = await tenants.create(name);
      if (Object.keys(share).length > 0) await tenants.updateShare(t.id, share);
      return t.id;
    },
    /** `n` queued rows of `tenantId`, as the hot consumer would deliver them (each due 1 ms after the last). */
    async deliveries(tenantId: number, n: number, opts: { kind?: string; mayWait?: boolean } = {}): Promise<HotDelivery[]> {
      const kind = opts.kind ?? 'noop';
      const ids = await h.enqueue(Array.from({ length: n }, () => ({ kind, tenantId })));
      return ids.map((id, i) => ({ id, kind, tenantId, dueMs: Date.now() + i, mayWait: opts.mayWait ?? true }));
    },
    /** Statements of this database waiting on a lock now (INSERTs behind lockBacklog). */
    async lockWaiters(): Promise<number> {
      const [{ waiting }]: { waiting: number }[] = await h.ds.query(`SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      return waiting;
    },
    /** Resolves once `n` statements of this database wait on a lock. */
    async insertsWaiting(n: number): Promise<void> {
      for (let i = 0; i < 500; i++) {
        if ((await this.lockWaiters()) >= n) return;
        await new Promise((r) => setImmediate(r));
      }
      throw new Error(`${n} statements never waited on a lock`);
    },
    /**
     * Holds INSERTs into dispatch_backlog (a trigger waits on an advisory lock) until `release()`,
     * while reads and the refill's DELETE go on: parking that is slow to land, nothing else.
     */
    async holdParkingInserts(): Promise<{ release(): Promise<void> }> {
      await h.ds.query(`CREATE OR REPLACE FUNCTION test_hold_parking() RETURNS trigger LANGUAGE plpgsql AS $$
                          BEGIN PERFORM pg_advisory_xact_lock(4242); RETURN NULL; END $$`);
      await h.ds.query(`CREATE TRIGGER test_hold_parking BEFORE INSERT ON dispatch_backlog FOR EACH STATEMENT EXECUTE FUNCTION test_hold_parking()`);
      const holder = h.ds.createQueryRunner();
      await holder.connect();
      await holder.query('SELECT pg_advisory_lock(4242)');
      return {
        async release() {
          await holder.query('SELECT pg_advisory_unlock(4242)');
          await holder.release();
          await h.ds.query(`DROP TRIGGER test_hold_parking ON dispatch_backlog`);
        },
      };
    },
    /** Holds INSERTs into dispatch_backlog until the runner commits: a slow backlog. */
    async lockBacklog(): Promise<QueryRunner> {
      const blocker = h.ds.createQueryRunner();
      await blocker.connect();
      await blocker.startTransaction();
      await blocker.query('LOCK TABLE dispatch_backlog IN EXCLUSIVE MODE');
      return blocker;
    },
  };
}
