import { readyScript } from './lua-common';

/**
 * The dispatcher's hand-off: appends each flow's items (ARGV from 5: tenant, kind, count, then
 * `<id>:<due>` × count, per flow) and makes newly filled flows runnable; wakes idle workers.
 * ARGV[4] = '1' for a repair (the overdue sweep's re-hints, which may be older than a flow's
 * head): rows due before the head go to the head, in due order, the rest to the tail. Nothing is
 * left out: the sweep judged these rows hintless, and a repair split over several envelopes fills
 * the flow it repairs (leaving out rows due after the head then dropped all but the first
 * envelope's: 3,630 of 10,000 jobs never ran after a FLUSHALL). A second hint of a row is dropped
 * by the take or the claim. Returns how many items it added.
 */
export const PUSH = readyScript(`
local repair = ARGV[4] == '1'
local V = vtime()
local pushed = 0
local i = 5
while i <= #ARGV do
  local t, k, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local items = {}
  for j = 1, n do items[j] = ARGV[i + 2 + j] end
  i = i + 3 + n
  local q = flowKey(t, k)
  local before = redis.call('LLEN', q)
  if repair and before > 0 then
    local headDue = dueOf(redis.call('LINDEX', q, 0))
    local older, later = {}, {}
    for j = n, 1, -1 do
      if dueOf(items[j]) < headDue then older[#older + 1] = items[j] end
    end
    for j = 1, n do
      if dueOf(items[j]) >= headDue then later[#later + 1] = items[j] end
    end
    if #older > 0 then bulk('LPUSH', q, older) headIsDue(t, k) end
    if #later > 0 then bulk('RPUSH', q, later) end
  else
    bulk('RPUSH', q, items)
    if before == 0 then flowFilled(t, k, V) end
  end
  pushed = pushed + n
end
if pushed > 0 then
  redis.call('INCRBY', K.waiting, pushed)
  wake()
end
return pushed
`);

/**
 * A worker is done with items it took (ran, or its claim dropped them): out of its taken hash
 * (ARGV[4]), their limit slots freed, and a tenant or flow those slots held back looked at again
 * by the next take. ARGV from 5: row ids. (A worker that takes anyway sends them with its take.)
 */
export const FINISH = readyScript(`
if finish(ARGV[4], ARGV, 5) then wake() end
return 1
`);

/**
 * Items a worker took but will not run (it is stopping, or its claim failed) go back to the head
 * of their flows, in due order, their slots freed. ARGV[4] the worker, ARGV[5] = '1' for every
 * item it holds (a dead worker's rescue; its hash is then deleted), else ARGV from 6: row ids.
 * Returns the ids that went back.
 */
export const GIVE_BACK = readyScript(`
local takenKey = B .. ':taken:' .. ARGV[4]
local entries = {}
if ARGV[5] == '1' then
  local all = redis.call('HGETALL', takenKey)
  for i = 1, #all, 2 do entries[#entries + 1] = { all[i], all[i + 1] } end
else
  for i = 6, #ARGV do
    local v = redis.call('HGET', takenKey, ARGV[i])
    if v then entries[#entries + 1] = { ARGV[i], v } end
  end
end
local V = vtime()
-- Latest first, each pushed to the head: the flow ends in due order (then id order).
table.sort(entries, function(a, b)
  local da, db = tonumber(string.match(a[2], '^[^:]+')), tonumber(string.match(b[2], '^[^:]+'))
  if da ~= db then return da > db end
  if #a[1] ~= #b[1] then return #a[1] > #b[1] end
  return a[1] > b[1]
end)
local ids = {}
for i, e in ipairs(entries) do
  local id, v = e[1], e[2]
  ids[i] = id
  local due, t, mask, k = parseTaken(v)
  redis.call('HDEL', takenKey, id)
  releaseSlots(id .. '@' .. ARGV[4], t, k, mask)
  local q = flowKey(t, k)
  local before = redis.call('LLEN', q)
  redis.call('LPUSH', q, id .. ':' .. due)
  if before == 0 then flowFilled(t, k, V) else headIsDue(t, k) end
end
if ARGV[5] == '1' then redis.call('DEL', takenKey) end
if #entries > 0 then
  redis.call('INCRBY', K.waiting, #entries)
  wake()
end
return ids
`);

/** Moves the expiry of the limit slots a worker's running jobs hold (ARGV[4] worker, ARGV[5] new expiry, ids from 6). */
export const RENEW = readyScript(`
local takenKey = B .. ':taken:' .. ARGV[4]
for i = 6, #ARGV do
  local v = redis.call('HGET', takenKey, ARGV[i])
  if v then
    local _, t, mask, k = parseTaken(v)
    local member = ARGV[i] .. '@' .. ARGV[4]
    if mask % 2 == 1 then redis.call('ZADD', tenantSlotsKey(t), 'XX', ARGV[5], member) end
    if mask >= 2 then redis.call('ZADD', kindSlotsKey(t, k), 'XX', ARGV[5], member) end
  end
end
redis.call('PEXPIRE', takenKey, 3600000)
return 1
`);

/** Replaces the pool's copy of tenants' weights and limits (ARGV from 4: tenant, encoded share). */
export const SYNC_SHARES = readyScript(`
redis.call('DEL', K.shares)
local args = {}
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end
if #args > 0 then bulk('HSET', K.shares, args) end
return 1
`);
