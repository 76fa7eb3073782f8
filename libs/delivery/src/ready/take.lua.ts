import { CONCURRENCY_RECHECK_MS, HELD_RECHECK_MS, TAKE_AHEAD_MS, TAKE_BLOCK_MS, TAKE_WAKE_AHEAD_MS } from '@almanac/platform';
import { readyScript } from './lua-common';

/**
 * A worker's take: up to ARGV[4] items due within TAKE_AHEAD_MS for worker ARGV[5], fair between
 * tenants and within their limits, in one atomic step (docs/architecture.md, the road, step 4):
 * a flow whose head is due later waits in `blocked` until just before (delivery-timing.ts).
 * Fairness is start-time fair queueing over tenants (Goyal et al.); a run of one tenant's items
 * is taken at once as far as its tag stays at or below the next tenant's. `perSecond` is GCRA
 * with a burst of a tenth of a second; concurrency slots expire after ARGV[6] ms unless renewed.
 * First, the `<id>, <take>` pairs from ARGV[7] on are finished (see FINISH). Returns { next wake ms ('' if none, or
 * another worker keeps the timer), `<id>:<due>:<tenant>:<slots>:<kind>:<take>`... }, each into the taken hash.
 */
export const TAKE = readyScript(`
local max, worker, ttl = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local horizon = now + ${TAKE_AHEAD_MS}
local takenKey = B .. ':taken:' .. worker
finish(worker, ARGV, 7)
local V = vtime()

for _, m in ipairs(redis.call('ZRANGEBYSCORE', K.blocked, '-inf', now, 'LIMIT', 0, 256)) do
  redis.call('ZREM', K.blocked, m)
  local t, k = string.match(m, '^([^:]+):(.+)$')
  if t then
    if redis.call('LLEN', flowKey(t, k)) > 0 then flowFilled(t, k, V) end
  else
    activate(m, V)
  end
end

local shares = {}
local function shareOf(t)
  local s = shares[t]
  if s then return s end
  s = { w = 1, kinds = {} }
  local raw = redis.call('HGET', K.shares, t)
  if raw then
    local w, maxc, held, kinds = string.match(raw, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
    s.w, s.maxc, s.held = tonumber(w) or 1, tonumber(maxc), held == '1'
    for kind, rate, conc in string.gmatch(kinds, '([^=,]+)=([^/,]*)/([^,]*)') do
      s.kinds[kind] = { rate = tonumber(rate), conc = tonumber(conc) }
    end
  end
  shares[t] = s
  return s
end
local function concRoom(key, limit)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  return limit - redis.call('ZCARD', key)
end
local function rateRoom(key, perSecond)
  local interval = 1000 / perSecond
  local burst = math.max(1, math.floor(perSecond / 10))
  local tat = math.max(tonumber(redis.call('GET', key) or '0'), now)
  local allowance = interval * (burst - 1) - (tat - now)
  if allowance < 0 then return 0, now + math.ceil(-allowance), tat, interval end
  return math.floor(allowance / interval) + 1, nil, tat, interval
end

local out = { '' }
local taken, steps, take = 0, 0 -- take: this take's number (B:takes), once it takes something
local seen = {}
local expiry = string.format('%.0f', now + ttl)
while taken < max and steps < max + 256 do
  steps = steps + 1
  local top = redis.call('ZRANGE', K.tenants, 0, 1, 'WITHSCORES')
  if #top == 0 then break end
  local t, S = top[1], tonumber(top[2])
  local s = shareOf(t)
  local want = max - taken
  if top[3] then want = math.min(want, math.floor((tonumber(top[4]) - S) * s.w) + 1) end
  local blockTenant
  if s.held then
    blockTenant = now + ${HELD_RECHECK_MS}
  elseif s.maxc then
    local room = concRoom(tenantSlotsKey(t), s.maxc)
    if room <= 0 then blockTenant = now + ${CONCURRENCY_RECHECK_MS} else want = math.min(want, room) end
  end
  if blockTenant then
    redis.call('ZREM', K.tenants, t)
    redis.call('ZADD', K.blocked, blockTenant, t)
  else
    local kk = kindsKey(t)
    local k = redis.call('LMOVE', kk, kk, 'LEFT', 'RIGHT')
    local items = false
    if k then
      local kl = s.kinds[k]
      local mask = s.maxc and 1 or 0
      local blockKind, tat, interval, room
      local q = flowKey(t, k)
      local head = redis.call('LINDEX', q, 0)
      if head and dueOf(head) > horizon then
        blockKind = dueOf(head) - ${TAKE_WAKE_AHEAD_MS}
      elseif kl and kl.conc then
        room = concRoom(kindSlotsKey(t, k), kl.conc)
        if room <= 0 then blockKind = now + ${CONCURRENCY_RECHECK_MS} else want = math.min(want, room) mask = mask + 2 end
      end
      if not blockKind and kl and kl.rate then
        room, blockKind, tat, interval = rateRoom(rateKey(t, k), kl.rate)
        if room > 0 then want = math.min(want, room) end
      end
      if not blockKind and head then
        -- The due items, read 16 first: a flow holds ~150 ms of rows, and reading a take's 200 cost more than the take.
        items = redis.call('LRANGE', q, 0, math.min(want, 16) - 1)
        if #items == 16 and want > 16 and dueOf(items[16]) <= horizon then items = redis.call('LRANGE', q, 0, want - 1) end
        local n = 1
        while n < #items and dueOf(items[n + 1]) <= horizon do n = n + 1 end
        if n < #items then blockKind = dueOf(items[n + 1]) - ${TAKE_WAKE_AHEAD_MS} end
        for j = #items, n + 1, -1 do items[j] = nil end
        redis.call('LTRIM', q, n, -1)
      end
      if blockKind then redis.call('ZADD', K.blocked, blockKind, t .. ':' .. k) end
      if blockKind or redis.call('LLEN', q) == 0 then redis.call('LREM', kk, -1, k) end
      if items then
        local n = 0
        local slotArgs, takenArgs = {}, {}
        take = take or redis.call('INCR', K.takes)
        for j = 1, #items do
          local id, due = string.match(items[j], '^([^:]+):(.+)$')
          -- A second copy in one take is dropped here, one of a row the worker runs by the worker
          -- (an entry a lost reply left here must not swallow the row's repair). Their one entry
          -- keeps the slots of both: those of the run alone were else neither renewed nor freed.
          if not seen[id] then
            seen[id] = true
            n = n + 1
            local held = select(3, parseTaken(redis.call('HGET', takenKey, id) or '')) or 0
            takenArgs[2 * n - 1], takenArgs[2 * n] = id, table.concat({ due, t, bit.bor(mask, held), k, take }, ':')
            slotArgs[2 * n - 1], slotArgs[2 * n] = expiry, id .. '@' .. worker
            out[#out + 1] = id .. ':' .. takenArgs[2 * n]
          end
        end
        bulk('HSET', takenKey, takenArgs)
        if mask % 2 == 1 and n > 0 then bulk('ZADD', tenantSlotsKey(t), slotArgs) redis.call('PEXPIRE', tenantSlotsKey(t), 2 * ttl) end
        if mask >= 2 and n > 0 then bulk('ZADD', kindSlotsKey(t, k), slotArgs) redis.call('PEXPIRE', kindSlotsKey(t, k), 2 * ttl) end
        if tat then
          local after = tat + n * interval
          redis.call('SET', rateKey(t, k), string.format('%.3f', after), 'PX', math.ceil(after - now) + 1000)
        end
        V = S + (#items - 1) / s.w
        taken = taken + #items
      end
    end
    if redis.call('LLEN', kk) == 0 then
      redis.call('ZREM', K.tenants, t)
    elseif items then
      redis.call('ZADD', K.tenants, 'XX', S + #items / s.w, t)
    end
  end
end

local runnable = redis.call('ZCARD', K.tenants)
if taken > 0 then redis.call('DECRBY', K.waiting, taken) end
if #out > 1 then redis.call('PEXPIRE', takenKey, 3600000) end
redis.call('SET', K.vt, runnable == 0 and '0' or string.format('%.17g', V))
local nb = redis.call('ZRANGE', K.blocked, 0, 0, 'WITHSCORES')
-- One idle worker keeps a timer for the next opening, the rest wait for a wake token: an opening
-- costs one take, not one per idle replica. A mark lasts TAKE_BLOCK_MS past its opening; one past
-- it (its keeper late or gone) or later than the next opening is taken over.
local keeper, at = string.match(redis.call('GET', K.timer) or '', '^(.*):(.*)$')
local kept = nb[2] and keeper ~= worker and tonumber(at) and tonumber(at) >= now and tonumber(at) <= tonumber(nb[2])
if nb[2] and taken < max and not kept then
  out[1] = nb[2]
  redis.call('SET', K.timer, worker .. ':' .. nb[2], 'PX', math.max(1, math.ceil(nb[2] - now)) + ${TAKE_BLOCK_MS})
elseif keeper == worker then redis.call('DEL', K.timer) -- it will not take at the opening (full, or stopping)
end
if runnable > 0 and taken < max then out[1] = tostring(now) end -- out of steps (many flows not due): again at once
-- A full worker does not wait for the next opening: another, woken, keeps it (unless one does).
if taken >= max and (runnable > 0 or (nb[2] and not kept)) then wake() end
return out
`);
