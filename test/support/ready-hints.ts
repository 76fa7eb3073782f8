import type { ReadyQueues } from '@almanac/delivery';
import type { Hint } from '@almanac/domain';
import type { EnvelopeFlow } from '@almanac/platform';

/** Puts hints into their pool's flows as one envelope's hand-off would (in due order); returns how many were added. */
export function pushHints(ready: ReadyQueues, pool: string, hints: readonly Hint[]): Promise<number> {
  const flows = new Map<string, EnvelopeFlow>();
  for (const h of [...hints].sort((a, b) => a.dueMs - b.dueMs)) {
    const key = `${h.tenantId}:${h.kind}`;
    let f = flows.get(key);
    if (!f) flows.set(key, (f = { tenantId: h.tenantId, kind: h.kind, items: [] }));
    f.items.push(`${h.id}:${h.dueMs}`);
  }
  return ready.pushFlows(pool, [...flows.values()]);
}
