import { DomainValidationError, describeValue } from './errors';
import { KIND_PATTERN } from './keys';

/** Caps on one tenant's jobs of one kind, across every dispatcher and worker. */
export interface KindLimit {
  /** Jobs started per second (at hand-off to a worker), with a burst of `rateBurst(perSecond)`. */
  perSecond?: number;
  /** Jobs of this kind handed to workers and not finished, at once. */
  concurrency?: number;
}

/** How a tenant shares delivery capacity with the others (tenants row; admin PATCH). */
export interface TenantShare {
  /** Share of a busy pool's capacity, relative to the other tenants waiting for it. */
  weight: number;
  /** Jobs handed to workers and not finished, at once, over all kinds and pools. */
  maxConcurrency: number | null;
  kindLimits: Readonly<Record<string, KindLimit>> | null;
  /** Suspended: its due jobs are held (parked, still queued) until it is enabled again. */
  held: boolean;
}

export const DEFAULT_SHARE: TenantShare = Object.freeze({ weight: 1, maxConcurrency: null, kindLimits: null, held: false });
export const MAX_WEIGHT = 1000;
/** The smallest weight: a tenant at 0.01 still gets one job in every 100 × (others' weight). */
export const MIN_WEIGHT = 0.01;
const MAX_RATE = 1_000_000;
const MAX_CONCURRENCY = 1_000_000;
const MAX_KIND_LIMITS = 100;

/** A tenant's limit on one kind, if any (own keys only: a kind named `constructor` is a kind). */
export function kindLimitOf(share: TenantShare, kind: string): KindLimit | undefined {
  return share.kindLimits && Object.hasOwn(share.kindLimits, kind) ? share.kindLimits[kind] : undefined;
}

/** Whether a tenant's jobs need limit bookkeeping at hand-off (most tenants: no). */
export function isLimited(share: TenantShare, kind: string): boolean {
  return share.maxConcurrency !== null || kindLimitOf(share, kind) !== undefined;
}

/**
 * A rate limit admits bursts of a tenth of a second's allowance (at least one job): smooth
 * enough that 50/s never runs 50 at once, loose enough that hand-offs batched every few ms are
 * not refused one by one.
 */
export function rateBurst(perSecond: number): number {
  return Math.max(1, Math.floor(perSecond / 10));
}

export function validateWeight(raw: unknown, field = 'weight'): number {
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw < MIN_WEIGHT || raw > MAX_WEIGHT) {
    throw new DomainValidationError(field, 'range', `${field} must be a number from ${MIN_WEIGHT} to ${MAX_WEIGHT}, got ${describeValue(raw)}`);
  }
  return raw;
}

export function validateMaxConcurrency(raw: unknown, field = 'maxConcurrency'): number | null {
  if (raw === null) return null;
  return positiveInt(raw, field, MAX_CONCURRENCY);
}

/** `{"http": {"perSecond": 50, "concurrency": 20}}`, or null to remove every kind limit. */
export function validateKindLimits(raw: unknown, field = 'kindLimits'): Record<string, KindLimit> | null {
  if (raw === null) return null;
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new DomainValidationError(field, 'type', `${field} must be an object mapping kinds to limits, or null`);
  }
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > MAX_KIND_LIMITS) throw new DomainValidationError(field, 'too_many', `${field} may name at most ${MAX_KIND_LIMITS} kinds`);
  const out: Record<string, KindLimit> = {};
  for (const [kind, limit] of entries) {
    const f = `${field}.${kind}`;
    if (!KIND_PATTERN.test(kind)) throw new DomainValidationError(f, 'pattern', `${f}: a kind is lowercase letters, digits and . _ - (${KIND_PATTERN})`);
    if (typeof limit !== 'object' || limit === null || Array.isArray(limit)) {
      throw new DomainValidationError(f, 'type', `${f} must be an object with perSecond and/or concurrency`);
    }
    const { perSecond, concurrency, ...rest } = limit as Record<string, unknown>;
    const unknown = Object.keys(rest)[0];
    if (unknown !== undefined) throw new DomainValidationError(`${f}.${unknown}`, 'unknown_field', `${f}.${unknown} is not a known field (expected perSecond, concurrency)`);
    if (perSecond === undefined && concurrency === undefined) {
      throw new DomainValidationError(f, 'required', `${f} must set perSecond, concurrency or both`);
    }
    const checked: KindLimit = {};
    if (perSecond !== undefined) {
      if (typeof perSecond !== 'number' || !Number.isFinite(perSecond) || perSecond < 0.01 || perSecond > MAX_RATE) {
        throw new DomainValidationError(`${f}.perSecond`, 'range', `${f}.perSecond must be a number from 0.01 to ${MAX_RATE}, got ${describeValue(perSecond)}`);
      }
      checked.perSecond = perSecond;
    }
    if (concurrency !== undefined) checked.concurrency = positiveInt(concurrency, `${f}.concurrency`, MAX_CONCURRENCY);
    out[kind] = checked;
  }
  return Object.keys(out).length === 0 ? null : out;
}

function positiveInt(raw: unknown, field: string, max: number): number {
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1 || raw > max) {
    throw new DomainValidationError(field, 'range', `${field} must be an integer from 1 to ${max}, got ${describeValue(raw)}`);
  }
  return raw;
}

/** A claim on part of a pool's room (a tenant's flow): its weight, and at most how many it can use. */
export interface ShareClaim {
  key: string;
  weight: number;
  cap: number;
}

/**
 * Splits `room` between tenants in proportion to their weights, none getting more than its cap,
 * what one cannot use going to the others (weighted water-filling). Every claim with room to
 * spare gets at least one while any is left, in the claims' order (callers rotate it), so a tiny
 * weight is slow, never starved.
 */
export function fairSplit(room: number, claims: readonly ShareClaim[]): Map<string, number> {
  const out = new Map<string, number>(claims.map((c) => [c.key, 0]));
  let left = Math.max(0, Math.floor(room));
  let open = claims.filter((c) => c.cap > 0);
  while (left > 0 && open.length > 0) {
    const total = open.reduce((s, c) => s + c.weight, 0);
    const round = left;
    for (const c of open) {
      if (left === 0) break;
      const has = out.get(c.key) ?? 0;
      const give = Math.min(c.cap - has, left, Math.max(1, Math.floor((round * c.weight) / total)));
      out.set(c.key, has + give);
      left -= give;
    }
    open = open.filter((c) => (out.get(c.key) ?? 0) < c.cap);
  }
  return out;
}
