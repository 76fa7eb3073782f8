import IORedis from 'ioredis';
import { startPrivateRedis } from '@almanac/testing/private-redis';
import { luaScript, runScript } from './lua-script';

/** Calls of each scripting command the server has run (INFO commandstats). */
async function scriptCalls(redis: IORedis): Promise<{ eval: number; evalsha: number }> {
  const info = await redis.info('commandstats');
  const calls = (cmd: string) => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return { eval: calls('eval'), evalsha: calls('evalsha') };
}

describe('runScript', () => {
  it('runs a script by its SHA once Redis knows it, and by its text when Redis has forgotten it', async () => {
    const server = await startPrivateRedis(); // SCRIPT FLUSH would empty the shared server's cache for every test file
    const redis = new IORedis(server.url);
    try {
      const incr = luaScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`);
      expect(await runScript(redis, incr, 1, ['n', 2])).toBe(2); // NOSCRIPT, then EVAL
      expect(await runScript(redis, incr, 1, ['n', 3])).toBe(5); // EVALSHA alone
      expect(await scriptCalls(redis)).toEqual({ evalsha: 2, eval: 1 });
      await redis.script('FLUSH');
      expect(await runScript(redis, incr, 1, ['n', 1])).toBe(6); // forgotten: EVAL again, run once
      expect(await scriptCalls(redis)).toEqual({ evalsha: 3, eval: 2 });
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
