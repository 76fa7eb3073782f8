import { kindLimitOf, rateBurst, type TenantShare } from '@almanac/domain';
import type IORedis from 'ioredis';
import { randomBytes } from 'node:crypto';

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

type Cmd = (numKeys: number, ...args: (string | number)[]) => Promise<unknown>;

/**
 * Per-tenant and per-kind limits, counted in Redis so that every dispatcher replica sees the
 * same counts: the dispatcher acquires as it hands a limited tenant's job to a pool, the worker
 * releases as the run ends. Tenants without limits never come here (no Redis work per job).
 */
export class LimitSlots {
  constructor(
    private readonly redis: IORedis,
    private readonly prefix: string,
  ) {}

  /**
   * Answers in request order; a refused request takes nothing. One script call per
   * ACQUIRE_BATCH requests: a call blocks Redis while it runs (~8.7 µs per request measured).
   */
  async acquire(requests: readonly SlotRequest[]): Promise<SlotAnswer[]> {
    const out: SlotAnswer[] = [];
    for (let i = 0; i < requests.length; i += ACQUIRE_BATCH) out.push(...(await this.acquireBatch(requests.slice(i, i + ACQUIRE_BATCH))));
    return out;
  }

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
    const replies = (await this.command('almanacAcquireSlots', ACQUIRE_LUA)(keys.length, ...keys, ...args)) as number[];
    return replies.map((v, i) => (v < 0 ? { granted: true, mask: masks[i], token: tokens[i] } : { granted: false, retryMs: v }));
  }

  async renew(held: readonly HeldSlots[]): Promise<void> {
    const keys: string[] = [];
    const ids: string[] = [];
    for (const h of held) {
      for (const which of slotsOf(h.mask)) {
        keys.push(this.key(h.tenantId, which, h.kind));
        ids.push(member(h.id, h.token));
      }
    }
    if (keys.length > 0) await this.command('almanacRenewSlots', RENEW_LUA)(keys.length, ...keys, SLOT_TTL_MS, ...ids);
  }

  async release(held: readonly HeldSlots[]): Promise<void> {
    const pipeline = this.redis.pipeline();
    let n = 0;
    for (const h of held) {
      for (const which of slotsOf(h.mask)) {
        pipeline.zrem(this.key(h.tenantId, which, h.kind), member(h.id, h.token));
        n++;
      }
    }
    if (n > 0) await pipeline.exec();
  }

  /** Slots held now (tests, tools). */
  async held(tenantId: number, kind?: string): Promise<number> {
    return this.redis.zcount(this.key(tenantId, kind === undefined ? TENANT_SLOT : KIND_SLOT, kind ?? ''), Date.now(), '+inf');
  }

  private key(tenantId: number, which: number, kind: string): string {
    return which === TENANT_SLOT ? `${this.prefix}:almanac:limit:${tenantId}:c` : `${this.prefix}:almanac:limit:${tenantId}:k:${kind}:c`;
  }

  private rateKey(tenantId: number, kind: string): string {
    return `${this.prefix}:almanac:limit:${tenantId}:k:${kind}:r`;
  }

  private command(name: string, lua: string): Cmd {
    const r = this.redis as unknown as Record<string, Cmd | undefined>;
    if (!r[name]) this.redis.defineCommand(name, { lua });
    return (r[name] as Cmd).bind(this.redis);
  }
}

const ACQUIRE_BATCH = 200;

function member(id: string, token: string): string {
  return `${id}.${token}`;
}

function slotsOf(mask: number): number[] {
  return [TENANT_SLOT, KIND_SLOT].filter((b) => (mask & b) !== 0);
}
