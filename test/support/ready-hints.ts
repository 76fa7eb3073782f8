import type { ReadyQueues } from '@almanac/delivery';
import type { Hint } from '@almanac/domain';
import type { EnvelopeFlow } from '@almanac/platform';

/** Appends hints to their pool's flows as one envelope's hand-off would; returns how many were added. */
export function pushHints(ready: ReadyQueues, pool: string, hints: readonly Hint[], opts: { repair?: boolean } = {}): Promise<number> {
  const flows = new Map<string, EnvelopeFlow>();
  for (const h of hints) {
    const key = `${h.tenantId}:${h.kind}`;
    let f = flows.get(key);
    if (!f) flows.set(key, (f = { tenantId: h.tenantId, kind: h.kind, items: [] }));
    f.items.push(`${h.id}:${h.dueMs}`);
  }
  return ready.pushFlows(pool, [...flows.values()], opts);
}
