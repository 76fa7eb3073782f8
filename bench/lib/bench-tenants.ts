import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AlmanacError, type AlmanacClient, type BuiltInKindPayloads, createAdminClient, createClient, type CreateJobRequest } from '@almanac/client';

/** A minute per request: a 1,000-job batch on a loaded machine is slow, not lost. */
const TIMEOUT_MS = 60_000;
/** Jobs per POST /v1/jobs/batch. */
const BATCH = 1000;

export interface BenchTenant { id: number; name: string; client: AlmanacClient }
export type JobBody = CreateJobRequest<BuiltInKindPayloads>;

/** A tenant made through the admin API of a cluster the bench started, with a client on its key. */
export async function createBenchTenant(apiUrl: string, adminToken: string, name: string): Promise<BenchTenant> {
  const t = await createAdminClient({ baseUrl: apiUrl, adminToken, timeoutMs: TIMEOUT_MS }).tenants.create({ name });
  return { id: t.id, name, client: createClient({ baseUrl: apiUrl, apiKey: t.apiKey, timeoutMs: TIMEOUT_MS }) };
}

/**
 * POSTs the jobs through /v1/jobs/batch, 1,000 per request, `connections` requests at once; fails
 * on any refused job. A batch shed with 503 goes again after its Retry-After, as a producer's
 * would (a tenant holds all but one of a replica's batch slots: its 4th lane waits).
 */
export async function postInBatches(tenant: BenchTenant, jobs: JobBody[], connections: number): Promise<void> {
  let next = 0;
  const send = async (batch: JobBody[]) => {
    for (;;) {
      try {
        return await tenant.client.jobs.batch(batch);
      } catch (err) {
        if (!(err instanceof AlmanacError && err.status === 503 && err.retryAfterMs !== undefined)) throw err;
        await new Promise((r) => setTimeout(r, err.retryAfterMs));
      }
    }
  };
  const lane = async (): Promise<void> => {
    for (let i = next++ * BATCH; i < jobs.length; i = next++ * BATCH) {
      const batch = jobs.slice(i, i + BATCH);
      const r = await send(batch);
      if (r.created !== batch.length) throw new Error(`POST /v1/jobs/batch for ${tenant.name} created ${r.created} of ${batch.length}: ${JSON.stringify(r.results.find((x) => x.error)).slice(0, 500)}`);
    }
  };
  await Promise.all(Array.from({ length: connections }, lane));
}

/** The checkout a bench ran: its commit, and whether apps/ or libs/ had uncommitted changes. */
export function checkoutInfo(root: string): { commit: string; dirty: boolean | null } {
  try {
    const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', '--', 'apps', 'libs'], { encoding: 'utf8' }).trim() !== '';
    return { commit, dirty };
  } catch {
    // An exported tree (git archive): the commit written beside it, if any (bench/README.md).
    const noted = existsSync(join(root, '.bench-commit')) ? readFileSync(join(root, '.bench-commit'), 'utf8').trim() : 'not a git checkout';
    return { commit: noted, dirty: null };
  }
}
