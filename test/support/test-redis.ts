import { randomBytes } from 'node:crypto';
import { readSetting } from '@almanac/config';
import IORedis from 'ioredis';

export const TEST_REDIS_URL = readSetting(process.env, 'ALMANAC_TEST_REDIS_URL');

export interface TestRedis {
  /** BullMQ prefix unique to this test file; every queue key lives under it. */
  prefix: string;
  url: string;
  connection: IORedis;
  cleanup(): Promise<void>;
}

export async function createTestRedis(): Promise<TestRedis> {
  const prefix = `almanac-t-${randomBytes(6).toString('hex')}`;
  const connection = new IORedis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  return {
    prefix,
    url: TEST_REDIS_URL,
    connection,
    async cleanup() {
      let cursor = '0';
      do {
        const [next, keys] = await connection.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        if (keys.length) await connection.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      await connection.quit();
    },
  };
}

/** Redis memory (`MEMORY USAGE`) of every key under `prefix`, summed: what a structure costs. */
export async function bytesUnder(connection: IORedis, prefix: string): Promise<number> {
  let bytes = 0;
  let cursor = '0';
  do {
    const [next, keys] = await connection.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    for (const key of keys) bytes += Number(await connection.memory('USAGE', key));
    cursor = next;
  } while (cursor !== '0');
  return bytes;
}
