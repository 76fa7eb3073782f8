import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import { acquireSweepLease } from '../statements/acquire-sweep-lease.sql';
import { releaseSweepLease } from '../statements/release-sweep-lease.sql';
import { renewSweepLease } from '../statements/renew-sweep-lease.sql';

/** Sweeps that run on one replica at a time, each under its own lease row (sweep_leases). */
export type SweepLeaseName = 'overdue' | 'schedule_watch';

/**
 * A sweep lease lasts 15 s and is renewed every 5 s while its sweep runs: a holder that dies
 * holds up the other replicas for at most 15 s (a session advisory lock freed at once; 60 s, the
 * first choice, delayed rescues after a promoter SIGKILL, found in review).
 */
export const SWEEP_LEASE_TTL_MS = 15_000;

/**
 * A lease holder's name: host and pid to read in sweep_leases, and a random part that makes it
 * unique. Containers that share a host name (hostNetwork) all run as pid 1: named `host:pid`
 * alone, two promoters were the same holder and both ran the sweep.
 */
export function newLeaseHolder(): string {
  return `${hostname()}:${process.pid}:${randomUUID()}`;
}

/**
 * Runs `fn` while `holder` holds the named sweep's lease, or returns `null` at once when it is
 * held (by anyone: a second call of the same holder waits its turn too). A lease is a row with
 * an expiry, renewed every third of `ttlMs` while `fn` runs: no lock or connection is held while
 * `fn` waits on Redis. A renewal that fails (the lease taken over after a stall, or the database
 * not answering) aborts the signal `fn` is given: another replica may be running the sweep by
 * now, so `fn` stops between its batches. What it repeats meanwhile must be idempotent.
 */
export async function withSweepLease<T>(
  db: DataSource, name: SweepLeaseName, holder: string, fn: (lost: AbortSignal) => Promise<T>, ttlMs = SWEEP_LEASE_TTL_MS,
): Promise<T | null> {
  if (!(await acquireSweepLease(db, name, holder, ttlMs))) return null;
  const lost = new AbortController();
  let renewing: Promise<unknown> = Promise.resolve();
  const renew = setInterval(() => {
    renewing = renewSweepLease(db, name, holder, ttlMs).then(
      (held) => held || lost.abort(),
      () => lost.abort(), // unknown whether it is still held: assume not
    );
  }, ttlMs / 3);
  renew.unref();
  try {
    return await fn(lost.signal);
  } finally {
    clearInterval(renew);
    await renewing; // so no renewal lands after the release
    // A failed release only means the lease runs out by itself.
    await releaseSweepLease(db, name, holder).catch(() => undefined);
  }
}
