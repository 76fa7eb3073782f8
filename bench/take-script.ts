/**
 * What one TAKE costs Redis itself, away from a loaded machine: 20,000 hints of one tenant in a
 * pool, taken 100 at a time, each take also finishing the 100 before (as a busy worker's does).
 * Prints Redis' own time per call (INFO commandstats) and the round trip seen by the client, as
 * medians of 5 drains, against a private redis-server.
 *
 *   node -r ./bench/lib/register.cjs bench/take-script.ts
 */
import { ReadyQueues, type TakenHint } from '../libs/delivery/src';
import { startPrivateRedis } from '../test/support/private-redis';

const N = 20_000;
const BATCH = 100;

async function main(): Promise<void> {
  const redis = await startPrivateRedis();
  const q = new ReadyQueues(redis.connection as never, 'take-bench');
  const serverUs: number[] = [];
  const roundTripMs: number[] = [];
  try {
    for (let run = 0; run < 5; run++) {
      const now = Date.now();
      for (let off = 0; off < N; off += 1000) {
        await q.pushFlows('default', [{ tenantId: 1, kind: 'noop', items: Array.from({ length: 1000 }, (_, i) => `${run * N + off + i + 1}:${now}`) }]);
      }
      await redis.connection.config('RESETSTAT');
      let done: TakenHint[] = [];
      let takes = 0;
      const t0 = process.hrtime.bigint();
      for (;;) {
        const take = await q.take('default', BATCH, Date.now(), '7', done);
        takes++;
        if (take.hints.length === 0) break;
        done = take.hints;
      }
      roundTripMs.push(Number(process.hrtime.bigint() - t0) / 1e6 / takes);
      const stats = await redis.connection.info('commandstats');
      serverUs.push(Number(/cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(stats)?.[1]));
    }
  } finally {
    await redis.stop();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log(`TAKE of ${BATCH} hints, finishing ${BATCH}: Redis ${median(serverUs).toFixed(0)} µs a call, round trip ${median(roundTripMs).toFixed(2)} ms (medians of 5 drains of ${N.toLocaleString('en')})`);
  console.log(JSON.stringify({ bench: 'take-script', batch: BATCH, redisUsPerCall: median(serverUs), roundTripMs: median(roundTripMs), runs: serverUs.length }));
}

void main();
