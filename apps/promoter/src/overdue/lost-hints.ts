import type { Hint } from '@almanac/domain';
import type { ReadyQueues } from '@almanac/delivery';
import type { KindCatalog, KindRoutes } from '@almanac/kinds';

/**
 * Which overdue queued rows have lost their hint, for the overdue sweep's repair. A flow (a
 * tenant's kind in a pool) is a list in due order, so a row due at or after its flow's head may
 * be waiting behind it (a busy pool, a limit) and keeps its hint; a row due before the head, or
 * whose flow is empty, has none there. (One still in an envelope of a stopped dispatcher gets a
 * second hint, which the claim drops.) One read of the registry and one pipelined LINDEX per pool.
 */
export class LostHints {
  constructor(
    private readonly routes: KindRoutes,
    private readonly catalog: KindCatalog,
    private readonly ready: ReadyQueues,
  ) {}

  async of(rows: readonly Hint[], nowMs: number): Promise<Hint[]> {
    if (rows.length === 0) return [];
    await this.catalog.refresh(nowMs).catch(() => undefined); // the last copy routes meanwhile
    this.routes.setDeclared(new Map(this.catalog.all().map((k) => [k.kind, k.pool])));
    type Flow = { tenantId: number; kind: string; rows: Hint[] };
    const byPool = new Map<string, Map<string, Flow>>();
    for (const h of rows) {
      const pool = this.routes.pool(h.kind);
      let flows = byPool.get(pool);
      if (!flows) byPool.set(pool, (flows = new Map<string, Flow>()));
      const key = `${h.tenantId}:${h.kind}`;
      const f = flows.get(key);
      if (f) f.rows.push(h);
      else flows.set(key, { tenantId: h.tenantId, kind: h.kind, rows: [h] });
    }
    const lost: Hint[] = [];
    for (const [pool, flows] of byPool) {
      const list = [...flows.values()];
      const heads = await this.ready.heads(pool, list);
      list.forEach((f, i) => {
        const head = heads[i];
        for (const h of f.rows) if (head === null || h.dueMs < head) lost.push(h);
      });
    }
    return lost;
  }
}
