import { DomainValidationError, describeValue } from './errors';
import { KIND_PATTERN } from './keys';

/** Caps on one tenant's jobs of one kind, applied where workers take work (the take script). */
export interface KindLimit {
  /** Jobs taken per second, with a burst of a tenth of a second's allowance (at least one). */
  perSecond?: number;
  /** Jobs of this kind taken and not finished, at once. */
  concurrency?: number;
}

/** How a tenant shares delivery capacity with the others (tenants row; admin PATCH). */
export interface TenantShare {
  /** Share of a busy pool's capacity, relative to the other tenants waiting for it. */
  weight: number;
  /**
   * Jobs taken and not finished, at once, over all kinds: over all pools on one Redis server,
   * per pool on a Redis Cluster (see ReadyQueues).
   */
  maxConcurrency: number | null;
  kindLimits: Readonly<Record<string, KindLimit>> | null;
  /** Suspended: its due jobs wait in Redis, still queued, until it is enabled again. */
  held: boolean;
}

export const DEFAULT_SHARE: TenantShare = Object.freeze({ weight: 1, maxConcurrency: null, kindLimits: null, held: false });
export const MAX_WEIGHT = 1000;
/** The smallest weight: a tenant at 0.01 still gets one job in every 100 × (others' weight). */
export const MIN_WEIGHT = 0.01;
const MAX_RATE = 1_000_000;
const MAX_CONCURRENCY = 1_000_000;
const MAX_KIND_LIMITS = 100;

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
