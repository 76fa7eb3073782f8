import { type LuaScript, luaScript } from '@almanac/platform';

/**
 * What every ready-queue script shares. ARGV[1] is the pool's key base (`…:{pool:<name>}`, one
 * hash tag per pool, so on a Redis Cluster every key a script touches is in the pool's slot),
 * ARGV[2] the base of tenant-wide slot keys, ARGV[3] now (epoch ms, the caller's clock).
 *
 * Keys under the base B:
 * - `B:q:<tenant>:<kind>` a flow: list of `<row id>:<due ms>`, in due order;
 * - `B:kinds:<tenant>` the tenant's flows that have items and are not blocked, in turn order;
 * - `B:tenants` zset of tenants with a runnable flow, scored by virtual start time (SFQ);
 * - `B:vt` the pool's virtual time: the start tag of the last job taken;
 * - `B:blocked` zset of `<tenant>` and `<tenant>:<kind>` held back by a limit or a suspension,
 *   or a flow whose first item is not due yet, scored by when to look again;
 * - `B:shares` hash tenant → weight and limits (tenants off the default only; the dispatcher
 *   writes it);
 * - `B:waiting` how many items wait; `B:wake` a token idle workers block on (at most one);
 *   `B:timer` `<worker>:<ms>`: the one idle worker that takes at the next opening (see take.lua);
 * - `B:taken:<worker>` hash row id → `<due>:<tenant>:<slots>:<kind>:<take>`: what a worker took and
 *   has not reported done, so a dead worker's hints can be put back; `<take>` (counter `B:takes`);
 * - `B:limit:<tenant>:<kind>:c` / `:r` kind concurrency slots (zset `<row id>@<worker>` → expiry) /
 *   rate (GCRA); `TL<tenant>:c` the tenant's slots, alike.
 * Invariants: a flow with items is in its tenant's `kinds` list or `blocked`, never both; a
 * tenant is in `tenants` iff its `kinds` list is not empty and it is not itself `blocked`.
 */
const COMMON = `
local B, TL = ARGV[1], ARGV[2]
local now = tonumber(ARGV[3])
local K = { tenants = B .. ':tenants', blocked = B .. ':blocked', vt = B .. ':vt', shares = B .. ':shares',
  waiting = B .. ':waiting', wake = B .. ':wake', timer = B .. ':timer', takes = B .. ':takes' }
local function kindsKey(t) return B .. ':kinds:' .. t end
local function flowKey(t, k) return B .. ':q:' .. t .. ':' .. k end
local function tenantSlotsKey(t) return TL .. t .. ':c' end
local function kindSlotsKey(t, k) return B .. ':limit:' .. t .. ':' .. k .. ':c' end
local function rateKey(t, k) return B .. ':limit:' .. t .. ':' .. k .. ':r' end
local function vtime() return tonumber(redis.call('GET', K.vt) or '0') end
local function dueOf(item) return tonumber(string.match(item, ':(%d+)$')) or 0 end -- malformed: due, never a stuck pool
local function bulk(cmd, key, args)
  if #args == 0 then return end
  for i = 1, #args, 1000 do redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args))) end
end
local function activate(t, V)
  if redis.call('ZSCORE', K.blocked, t) then return end
  if redis.call('LLEN', kindsKey(t)) == 0 then return end
  redis.call('ZADD', K.tenants, 'NX', V, t)
end
local function flowFilled(t, k, V)
  if redis.call('ZSCORE', K.blocked, t .. ':' .. k) then return end
  redis.call('RPUSH', kindsKey(t), k)
  activate(t, V)
end
-- One token wakes one idle worker; a take that leaves work behind passes it on (see take.lua).
local function wake()
  redis.call('LPUSH', K.wake, '1')
  redis.call('LTRIM', K.wake, 0, 0)
end
local function releaseSlots(member, t, k, mask)
  local woke = false
  if mask % 2 == 1 then
    redis.call('ZREM', tenantSlotsKey(t), member)
    if redis.call('ZSCORE', K.blocked, t) then redis.call('ZADD', K.blocked, 'XX', 0, t) woke = true end
  end
  if mask >= 2 then
    redis.call('ZREM', kindSlotsKey(t, k), member)
    if redis.call('ZSCORE', K.blocked, t .. ':' .. k) then redis.call('ZADD', K.blocked, 'XX', 0, t .. ':' .. k) woke = true end
  end
  return woke
end
-- A due item put at the head of a flow (a repair, a give-back): if blocked, the next take looks.
local function headIsDue(t, k) redis.call('ZADD', K.blocked, 'XX', 0, t .. ':' .. k) end
local function parseTaken(v) -- no take: an entry of the release before
  local due, t, mask, k, take = string.match(v, '^([^:]+):([^:]+):([^:]+):([^:]+):?(.*)$')
  return due, t, tonumber(mask), k, take
end
-- Worker w is done with these (<row id>, <take> pairs from ids[from]): out of its taken hash, their slots freed. True if that woke a limit.
local function finish(w, ids, from)
  local takenKey = B .. ':taken:' .. w
  local woke = false
  for i = from, #ids, 2 do
    local _, t, mask, k, take = parseTaken(redis.call('HGET', takenKey, ids[i]) or '')
    -- Only the entry of the take named (or of the release before): a later copy's may be running.
    if t and (take == ids[i + 1] or take == '') then
      redis.call('HDEL', takenKey, ids[i])
      if releaseSlots(ids[i] .. '@' .. w, t, k, mask) then woke = true end
    end
  end
  return woke
end
`;

/** A ready-queue script: the shared preamble, then its own body. */
export function readyScript(body: string): LuaScript {
  return luaScript(`${COMMON}\n${body}`);
}
