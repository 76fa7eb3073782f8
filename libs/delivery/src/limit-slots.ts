import { kindLimitOf, rateBurst, type TenantShare } from '@almanac/domain';
import { isCluster, type RedisClient } from '@almanac/platform';
import { createHash, randomBytes } from 'node:crypto';

/** A hand-off that holds concurrency slots: released when its run ends (the worker), or by expiry. */
export interface HeldSlots {
  id: string;
  tenantId: number;
  kind: string;
  /** Which slots: TENANT_SLOT and/or KIND_SLOT (a rate limit holds nothing). */
  mask: number;
  /**
   * This hand-off's own mark: a slot is `<id>.<token>`, so a second copy of the same row (an
   * overdue-sweep copy, a requeue) takes a slot of its own and its release never frees another's.
   */
  token: string;
}

export const TENANT_SLOT = 1;
export const KIND_SLOT = 2;

/** What a limited hand-off needs: whose, what kind, and that tenant's limits. */
export interface SlotRequest {
  id: string;
  tenantId: number;
  kind: string;
  share: TenantShare;
}

/** Granted with the slots it holds, or refused: retry once a slot frees (0) or after `retryMs`. */
export type SlotAnswer = { granted: true; mask: number; token: string } | { granted: false; retryMs: number };

/**
 * A slot lives this long unless renewed: the worker renews what it runs every RENEW_EVERY_MS, so
 * a worker that dies frees its tenants' slots within this (a crash, a lost ready list).
 */
export const SLOT_TTL_MS = 30_000;
export const RENEW_EVERY_MS = 10_000;

/**
 * One script checks and takes every limit of a batch of hand-offs atomically, on Redis' clock:
 * per-tenant and per-kind concurrency are sorted sets of job ids scored by expiry (a counter
 * would leak on every crash); per-kind rate is GCRA (one number: the theoretical arrival time).
 * KEYS: the limits' keys. ARGV: ttl, item count, then per item: id, n, n × (key index, type c|r,
 * limit, burst). Answers per item: -1 granted, else ms to wait (0: until a slot frees).
 */
const ACQUIRE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local state, kinds, out, p = {}, {}, {}, 3
for i = 1, tonumber(ARGV[2]) do
  local id, n = ARGV[p], tonumber(ARGV[p + 1])
  p = p + 2
  local ok, wait, ks = true, 0, {}
  for k = 1, n do
    local ki, typ, limit, burst = tonumber(ARGV[p]), ARGV[p + 1], tonumber(ARGV[p + 2]), tonumber(ARGV[p + 3])
    p = p + 4
    ks[k] = { ki, typ, limit }
    kinds[ki] = typ
    if state[ki] == nil then
      if typ == 'c' then
        redis.call('ZREMRANGEBYSCORE', KEYS[ki], '-inf', now)
        state[ki] = redis.call('ZCARD', KEYS[ki])
      else
        state[ki] = tonumber(redis.call('GET', KEYS[ki]) or now)
      end
    end
    if typ == 'c' then
      if state[ki] >= limit then ok = false end
    else
      local interval = 1000 / limit
      local ahead = math.max(state[ki], now) - now - interval * (burst - 1)
      if ahead > 0 then
        ok = false
        wait = math.max(wait, math.ceil(ahead))
      end
    end
  end
  if ok then
    for _, k in ipairs(ks) do
      if k[2] == 'c' then
        if redis.call('ZADD', KEYS[k[1]], now + ttl, id) == 1 then state[k[1]] = state[k[1]] + 1 end
      else
        state[k[1]] = math.max(state[k[1]], now) + 1000 / k[3]
      end
    end
    out[i] = -1
  else
    out[i] = wait
  end
end
for ki, typ in pairs(kinds) do
  if typ == 'c' then
    redis.call('PEXPIRE', KEYS[ki], ttl * 2)
  else
    redis.call('SET', KEYS[ki], tostring(state[ki]), 'PX', math.ceil(state[ki] - now) + 1000)
  end
end
return out`;

/**
 * Moves the expiry of slots still held (their runs go on), and the sets' own expiry with them (a
 * set whose acquires stopped would otherwise vanish under long runs). KEYS: slot sets; ARGV: ttl,
 * then one member per key.
 */
const RENEW_LUA = `
local t = redis.call('TIME')
local ttl = tonumber(ARGV[1])
local until_ = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttl
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', until_, ARGV[i + 1])
  redis.call('PEXPIRE', KEYS[i], ttl * 2)
end
return #KEYS`;

/**
 * Per-tenant and per-kind limits, counted in Redis so that every dispatcher replica sees the
 * same counts: the dispatcher acquires as it hands a limited tenant's job to a pool, the worker
 * releases as the run ends. Tenants without limits never come here (no Redis work per job).
 */
export class LimitSlots {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /**
   * Answers in request order; a refused request takes nothing. One script call per ACQUIRE_BATCH
   * requests (a call blocks Redis while it runs, ~8.7 µs per request measured). On a Redis
   * Cluster a script may only touch keys of one slot, and a tenant's keys share the tag
   * `{tenant:<id>}`: there each call takes one tenant's requests, the calls sent together (no
   * limit spans tenants, so the answers are the same). If a call fails, what the others granted
   * is released before the error is thrown.
   */
  async acquire(requests: readonly SlotRequest[]): Promise<SlotAnswer[]> {
    const groups: { indices: number[]; requests: SlotRequest[] }[] = [];
    const open = new Map<number, { indices: number[]; requests: SlotRequest[] }>();
    const cluster = isCluster(this.redis);
    requests.forEach((r, i) => {
      const by = cluster ? r.tenantId : 0;
      let g = open.get(by);
      if (!g || g.requests.length === ACQUIRE_BATCH) open.set(by, (g = groups[groups.push({ indices: [], requests: [] }) - 1]));
      g.indices.push(i);
      g.requests.push(r);
    });
    const settled = await Promise.allSettled(groups.map((g) => this.acquireBatch(g.requests)));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) {
      const granted = settled.flatMap((s, k) =>
        s.status === 'fulfilled' ? s.value.flatMap((a, j) => (a.granted ? [held(groups[k].requests[j], a)] : [])) : [],
      );
      await this.release(granted).catch(() => undefined); // best effort: unreleased slots expire
      throw failed.reason;
    }
    const out = new Array<SlotAnswer>(requests.length);
    settled.forEach((s, k) => groups[k].indices.forEach((i, j) => (out[i] = (s as PromiseFulfilledResult<SlotAnswer[]>).value[j])));
    return out;
  }

  /** One tenant's requests in one script call. */
  private async acquireBatch(requests: readonly SlotRequest[]): Promise<SlotAnswer[]> {
    const keys: string[] = [];
    const index = new Map<string, number>();
    const keyIndex = (k: string): number => {
      let i = index.get(k);
      if (i === undefined) index.set(k, (i = keys.push(k)));
      return i;
    };
    const args: (string | number)[] = [SLOT_TTL_MS, requests.length];
    const masks: number[] = [];
    const tokens: string[] = [];
    for (const r of requests) {
      const parts: (string | number)[] = [];
      let mask = 0;
      if (r.share.maxConcurrency !== null) {
        parts.push(keyIndex(this.key(r.tenantId, TENANT_SLOT, r.kind)), 'c', r.share.maxConcurrency, 1);
        mask |= TENANT_SLOT;
      }
      const limit = kindLimitOf(r.share, r.kind);
      if (limit?.concurrency !== undefined) {
        parts.push(keyIndex(this.key(r.tenantId, KIND_SLOT, r.kind)), 'c', limit.concurrency, 1);
        mask |= KIND_SLOT;
      }
      if (limit?.perSecond !== undefined) parts.push(keyIndex(this.rateKey(r.tenantId, r.kind)), 'r', limit.perSecond, rateBurst(limit.perSecond));
      const token = randomBytes(4).toString('hex');
      masks.push(mask);
      tokens.push(token);
      args.push(member(r.id, token), parts.length / 4, ...parts);
    }
    const replies = (await this.script(ACQUIRE, keys, args)) as number[];
    return replies.map((v, i) => (v < 0 ? { granted: true, mask: masks[i], token: tokens[i] } : { granted: false, retryMs: v }));
  }

  /** Moves the expiry of what `held` holds: one script call (per tenant on a cluster, sent together). */
  async renew(held: readonly HeldSlots[]): Promise<void> {
    const cluster = isCluster(this.redis);
    const groups = new Map<number, { keys: string[]; ids: string[] }>();
    for (const h of held) {
      for (const which of slotsOf(h.mask)) {
        const by = cluster ? h.tenantId : 0;
        let g = groups.get(by);
        if (!g) groups.set(by, (g = { keys: [], ids: [] }));
        g.keys.push(this.key(h.tenantId, which, h.kind));
        g.ids.push(member(h.id, h.token));
      }
    }
    await Promise.all([...groups.values()].map((g) => this.script(RENEW, g.keys, [SLOT_TTL_MS, ...g.ids])));
  }

  async release(held: readonly HeldSlots[]): Promise<void> {
    await Promise.all(held.flatMap((h) => slotsOf(h.mask).map((which) => this.redis.zrem(this.key(h.tenantId, which, h.kind), member(h.id, h.token)))));
  }

  /** Slots held now (tests, tools). */
  async held(tenantId: number, kind?: string): Promise<number> {
    return this.redis.zcount(this.key(tenantId, kind === undefined ? TENANT_SLOT : KIND_SLOT, kind ?? ''), Date.now(), '+inf');
  }

  private key(tenantId: number, which: number, kind: string): string {
    const base = limitKeyBase(this.prefix, tenantId, isCluster(this.redis));
    return which === TENANT_SLOT ? `${base}:c` : `${base}:k:${kind}:c`;
  }

  private rateKey(tenantId: number, kind: string): string {
    return `${limitKeyBase(this.prefix, tenantId, isCluster(this.redis))}:k:${kind}:r`;
  }

  /**
   * EVALSHA, falling back to EVAL once per connection that lacks the script. Not defineCommand:
   * ioredis routes a custom command by its first argument (the key count) when it auto-pipelines
   * on a cluster, which put scripts for different nodes into one pipeline; EVALSHA is routed by
   * its first key.
   */
  private async script(s: { lua: string; sha: string }, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await this.redis.evalsha(s.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return this.redis.eval(s.lua, keys.length, ...keys, ...args);
    }
  }
}

const ACQUIRE_BATCH = 200;

/** Every limit key of a tenant starts with this; on a cluster its tag keeps them in one slot. */
export function limitKeyBase(prefix: string, tenantId: number, cluster = false): string {
  return cluster ? `${prefix}:almanac:limit:{tenant:${tenantId}}` : `${prefix}:almanac:limit:${tenantId}`;
}

const ACQUIRE = { lua: ACQUIRE_LUA, sha: createHash('sha1').update(ACQUIRE_LUA).digest('hex') };
const RENEW = { lua: RENEW_LUA, sha: createHash('sha1').update(RENEW_LUA).digest('hex') };

function held(r: SlotRequest, a: { mask: number; token: string }): HeldSlots {
  return { id: r.id, tenantId: r.tenantId, kind: r.kind, mask: a.mask, token: a.token };
}

function member(id: string, token: string): string {
  return `${id}.${token}`;
}

function slotsOf(mask: number): number[] {
  return [TENANT_SLOT, KIND_SLOT].filter((b) => (mask & b) !== 0);
}
