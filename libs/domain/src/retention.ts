import { DomainValidationError, describeValue } from './errors';

/**
 * Retention: how long a finished job (succeeded, dead, cancelled) is kept before its row, its
 * attempts and its effect records are removed. Unfinished jobs are never removed.
 */
export const MIN_RETENTION_SECONDS = 3600;
/** Ten years: the column is an int4 and nothing longer is a retention period. */
export const MAX_RETENTION_SECONDS = 10 * 365 * 86_400;
export const DEFAULT_RETENTION_SECONDS = 30 * 86_400;

/**
 * What happens to a removed job's key. `reserved` (the default): a compact record keeps it, and
 * a replay is refused with what happened. `freed`: the key goes with the row and may name a new job.
 */
export const KEY_POLICIES = ['reserved', 'freed'] as const;
export type KeyPolicy = (typeof KEY_POLICIES)[number];

/**
 * How long a reserved key stays reserved after its job is removed: whole seconds (a day to ten
 * years, rounded up to whole days) or `forever`. Fixed for each key when it is retired: a
 * tenant's later change applies to keys removed from then on.
 */
export type KeyReservation = number | 'forever';
export const MIN_KEY_RESERVATION_SECONDS = 86_400;
export const DEFAULT_KEY_RESERVATION_SECONDS = 400 * 86_400;

/**
 * How many UTC days after its removal day a retired key stays reserved (its last day: the removal
 * day plus these); null: forever. The removal day is the database's (ingest's check goes by it).
 */
export function keyReservationDays(reservation: KeyReservation): number | null {
  return reservation === 'forever' ? null : Math.ceil(reservation / 86_400);
}

/** A finished job whose run time and finish are both before this instant is removed at `now`. */
export function retentionCutoff(now: Date, retentionSeconds: number): Date {
  return new Date(now.getTime() - retentionSeconds * 1000);
}

/**
 * How far removal is behind for one tenant, in seconds: from the run time of the oldest expired
 * job still kept (null: none known to be left) to the cutoff.
 */
export function retentionBehindSeconds(cutoff: Date, oldestLeft: Date | null): number {
  return oldestLeft === null ? 0 : Math.max(0, (cutoff.getTime() - oldestLeft.getTime()) / 1000);
}

/** The UTC day (YYYY-MM-DD) a key was retired on, as stored and reported. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** A tenant's own retention in whole seconds, or null for the installation default. */
export function validateRetentionSeconds(raw: unknown, field = 'retentionSeconds'): number | null {
  if (raw === null) return null;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < MIN_RETENTION_SECONDS || raw > MAX_RETENTION_SECONDS) {
    throw new DomainValidationError(
      field,
      'range',
      `${field} must be a whole number of seconds from ${MIN_RETENTION_SECONDS} (an hour) to ${MAX_RETENTION_SECONDS}, or null, got ${describeValue(raw)}`,
    );
  }
  return raw;
}

/** A tenant's key reservation, or null for the installation default. */
export function validateKeyReservation(raw: unknown, field = 'keyReservationSeconds'): KeyReservation | null {
  if (raw === null || raw === 'forever') return raw;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < MIN_KEY_RESERVATION_SECONDS || raw > MAX_RETENTION_SECONDS) {
    throw new DomainValidationError(
      field,
      'range',
      `${field} must be a whole number of seconds from ${MIN_KEY_RESERVATION_SECONDS} (a day) to ${MAX_RETENTION_SECONDS}, "forever", or null, got ${describeValue(raw)}`,
    );
  }
  return raw;
}

export function validateKeyPolicy(raw: unknown, field = 'keysAfterRetention'): KeyPolicy {
  if (!(KEY_POLICIES as readonly unknown[]).includes(raw)) {
    throw new DomainValidationError(field, 'enum', `${field} must be one of ${KEY_POLICIES.join(', ')}, got ${describeValue(raw)}`);
  }
  return raw as KeyPolicy;
}
