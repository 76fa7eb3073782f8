import { Injectable } from '@nestjs/common';
import { overLimit } from '../http/api-error';
import { TenantSlots } from '../rate-limit/tenant-slots';

/** The longest a `GET /v1/jobs/:id?waitSeconds=` holds its answer (below the server's socket timeouts). */
export const MAX_WAIT_SECONDS = 20;
/** Waits one tenant may hold at once on a replica; past them 429. */
export const WAITS_PER_TENANT = 10;
/** Waits a replica holds at once over all tenants; past them 503. */
export const WAITS_PER_REPLICA = 500;
/** How often a waiting request reads its job: from 100 ms, growing by half up to a second. */
const FIRST_LOOK_MS = 100;
const MAX_LOOK_MS = 1000;

const ENDED = new Set(['succeeded', 'dead', 'cancelled']);

/**
 * A producer waits for a job to end without polling: the request is held until the job is
 * succeeded, dead or cancelled, or `waitSeconds` ran out, then answered with the job as it is.
 * The replica reads the row (one primary-key read, no transaction or lock held between reads)
 * at 0, 100, 250, 475 and 813 ms, then 1.3 s, 2.1 s and each second after (plus each read's own
 * time): five reads in a wait's first second, about one a second later on. So WAITS_PER_REPLICA
 * waits starting together read up to 5 × WAITS_PER_REPLICA rows in that second, about
 * WAITS_PER_REPLICA a second once settled.
 * Bounded per tenant and per replica, so one tenant's waits cannot hold every connection.
 */
@Injectable()
export class JobWaits {
  private readonly slots = new TenantSlots(WAITS_PER_REPLICA, WAITS_PER_TENANT);

  /** Waits `tenantId` holds now on this replica. */
  held(tenantId: number): number {
    return this.slots.heldBy(tenantId);
  }

  /** Until the job ends, `seconds` pass, or `done` aborts (its client went away, its deadline passed): its slot is free at once. */
  async wait<J extends { state: string }>(tenantId: number, seconds: number, read: () => Promise<J>, done?: AbortSignal): Promise<J> {
    const release = this.slots.take(tenantId);
    if (release === 'share') throw overLimit(429, `more than ${WAITS_PER_TENANT} waits of this tenant at once`, 'waitSeconds', 'concurrent_waits', 1000);
    if (release === 'full') throw overLimit(503, 'too many waits on this replica', 'waitSeconds', 'concurrent_waits', 1000);
    let timer: NodeJS.Timeout | undefined;
    let wake = () => {};
    const stop = () => (clearTimeout(timer), wake());
    done?.addEventListener('abort', stop, { once: true });
    try {
      const deadline = Date.now() + seconds * 1000;
      for (let pause = FIRST_LOOK_MS; ; pause = Math.min(MAX_LOOK_MS, Math.round(pause * 1.5))) {
        const job = await read();
        const left = deadline - Date.now();
        if (ENDED.has(job.state) || left <= 0 || done?.aborted) return job;
        await new Promise<void>((r) => ((wake = r), (timer = setTimeout(r, Math.min(pause, left)))));
      }
    } finally {
      done?.removeEventListener('abort', stop);
      release();
    }
  }
}
