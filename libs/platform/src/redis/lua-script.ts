import { createHash } from 'node:crypto';
import type { RedisClient } from './redis';

/** A Lua script and its SHA1, by which Redis knows it once it has run. */
export interface LuaScript {
  readonly lua: string;
  readonly sha: string;
}

export function luaScript(lua: string): LuaScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/**
 * EVALSHA, else EVAL when Redis has forgotten the script (a restart, SCRIPT FLUSH): its text goes
 * over the wire then, not with every call. Not defineCommand: it copies the script onto the client,
 * and ioredis copies every such command into each pipeline it makes (BullMQ's connection carries
 * dozens), and on a cluster auto-pipelining routes a custom command by its key count, not its key.
 */
export async function runScript(redis: RedisClient, script: LuaScript, numKeys: number, args: readonly (string | number)[]): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha, numKeys, ...args);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return redis.eval(script.lua, numKeys, ...args);
  }
}
