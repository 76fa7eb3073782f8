import { isLimited } from '@almanac/domain';
import type { LimitSlots, ReadyItem } from '@almanac/delivery';
import type { TenantShares } from './tenant-shares';

/** What the gate needs of a hand-off. */
export interface GatedItem {
  id: string;
  tenantId: number;
  kind: string;
}

/**
 * A limit that refused a tenant's kind is not asked again for this long (a slot frees when a
 * run ends, which the dispatcher does not see): one script call per held kind per 10 ms, not one
 * per pump turn (2 ms).
 */
const HELD_RECHECK_MS = 10;

/**
 * Per-tenant and per-kind limits at hand-off: a limited tenant's jobs take their slots in Redis
 * (LimitSlots, shared by every replica) before they go to a pool; a refused job stays in its
 * line, still queued, and its kind is held locally until the limit could have room again.
 */
export class LimitGate {
  private readonly heldUntil = new Map<string, number>();

  constructor(
    private readonly slots: LimitSlots,
    private readonly shares: TenantShares,
  ) {}

  limited(item: GatedItem): boolean {
    return isLimited(this.shares.of(item.tenantId), item.kind);
  }

  /** Whether the item may be tried now (its kind is not held by a recent refusal). */
  open(item: GatedItem, nowMs: number): boolean {
    const until = this.heldUntil.get(heldKey(item));
    if (until === undefined) return true;
    if (until > nowMs) return false;
    this.heldUntil.delete(heldKey(item));
    return true;
  }

  /** Takes the limited items' slots; returns the slots each granted item holds, and the refused ones. */
  async acquire<T extends GatedItem>(items: readonly T[], nowMs: number): Promise<{ granted: Map<T, ReadyItem['slots']>; refused: T[] }> {
    const granted = new Map<T, ReadyItem['slots']>();
    const refused: T[] = [];
    if (items.length === 0) return { granted, refused };
    const answers = await this.slots.acquire(items.map((i) => ({ id: i.id, tenantId: i.tenantId, kind: i.kind, share: this.shares.of(i.tenantId) })));
    items.forEach((item, n) => {
      const a = answers[n];
      if (a.granted) {
        granted.set(item, a.mask === 0 ? undefined : { tenantId: item.tenantId, kind: item.kind, mask: a.mask, token: a.token });
      } else {
        refused.push(item);
        this.heldUntil.set(heldKey(item), nowMs + Math.max(HELD_RECHECK_MS, a.retryMs));
      }
    });
    return { granted, refused };
  }
}

function heldKey(item: GatedItem): string {
  return `${item.tenantId}:${item.kind}`;
}
