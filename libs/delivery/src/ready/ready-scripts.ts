import { readyScript } from './lua-common';

/**
 * The dispatcher's hand-off: puts each flow's items (ARGV from 4: tenant, kind, count, then
 * `<id>:<due>` × count in due order, per flow) into the flow in due order, and makes newly
 * filled flows runnable; wakes idle workers. A take stops at a flow's first item not due, so an
 * item due before items already there goes before them: before the head (a repair's re-hint, a
 * job due now behind ~150 ms of handed-over rows), or merged from the tail (envelopes of
 * separate enqueues overlap). Nothing is left out: leaving out a repair's rows due after the
 * head dropped all but the first envelope's (3,630 of 10,000 jobs never ran after a FLUSHALL).
 * A second hint of a row is dropped by the take or the claim. Returns how many items it added.
 */
export const PUSH = readyScript(`
local V = vtime()
local pushed = 0
local i = 4
while i <= #ARGV do
  local t, k, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local items = { unpack(ARGV, i + 3, i + 2 + n) } -- at most ENVELOPE_MAX_ROWS (1,000)
  i = i + 3 + n
  local q = flowKey(t, k)
  local head, rest, older = redis.call('LINDEX', q, 0), items, {}
  if head and dueOf(items[1]) < dueOf(head) then
    for j = n, 1, -1 do if dueOf(items[j]) < dueOf(head) then older[#older + 1] = items[j] end end
    rest = {}
    for j = #older + 1, n do rest[#rest + 1] = items[j] end
    bulk('LPUSH', q, older)
    headIsDue(t, k)
  end
  -- The tail items due after the first of the rest come off and go back merged (few: envelopes overlap by ms).
  local tail, merged = {}, {}
  while #rest > 0 and dueOf(redis.call('LINDEX', q, -1) or '0:0') > dueOf(rest[1]) do tail[#tail + 1] = redis.call('RPOP', q) end
  local a, b = 1, #tail
  while a <= #rest or b >= 1 do
    if b < 1 or (a <= #rest and dueOf(rest[a]) < dueOf(tail[b])) then merged[#merged + 1], a = rest[a], a + 1 else merged[#merged + 1], b = tail[b], b - 1 end
  end
  bulk('RPUSH', q, merged)
  if not head then flowFilled(t, k, V) end
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
 * by the next take. ARGV from 5: `<row id>, <its take>` pairs. (A worker that takes anyway sends them with its take.)
 */
export const FINISH = readyScript(`
if finish(ARGV[4], ARGV, 5) then wake() end
return 1
`);

/**
 * Items a worker took but will not run (it is stopping, or its claim failed) go back to the head
 * of their flows, in due order, their slots freed. ARGV[4] the worker, ARGV[5] = '1' for every
 * item it holds (a dead worker's rescue; its hash is then deleted), '0' for `<row id>, <its take>`
 * from ARGV[6], '2' for every item but those pairs (what a take whose reply was lost took; a
 * named row's entry of another take goes back as a hint, and the entry is the named take's again).
 * Returns the ids that went back.
 */
export const GIVE_BACK = readyScript(`
local takenKey = B .. ':taken:' .. ARGV[4]
local entries, keep = {}, {}
if ARGV[5] ~= '0' then
  for i = 6, #ARGV, 2 do keep[ARGV[i]] = ARGV[i + 1] end
  local all = redis.call('HGETALL', takenKey)
  -- A kept row's entry of another take is a copy the worker never saw: back as a hint; the entry and slots stay the run's.
  for i = 1, #all, 2 do if keep[all[i]] ~= select(5, parseTaken(all[i + 1])) then entries[#entries + 1] = { all[i], all[i + 1], keep[all[i]] } end end
else
  -- That take's entry only: one landing after a later take must not push back (or free the slots of) the copy now running.
  for i = 6, #ARGV, 2 do
    local v = redis.call('HGET', takenKey, ARGV[i])
    if v and select(5, parseTaken(v)) == ARGV[i + 1] then entries[#entries + 1] = { ARGV[i], v } end
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
  local id, due, t, mask, k = e[1], parseTaken(e[2])
  ids[i] = id
  if e[3] then redis.call('HSET', takenKey, id, table.concat({ due, t, mask, k, e[3] }, ':')) else -- the kept take's again
    redis.call('HDEL', takenKey, id)
    releaseSlots(id .. '@' .. ARGV[4], t, k, mask)
  end
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

/** Moves the expiry of the limit slots a worker's running jobs hold (ARGV[4] worker, ARGV[5] new expiry, ids from 6), and the sets' own: no take renews a tenant's at its limit. */
export const RENEW = readyScript(`
local takenKey = B .. ':taken:' .. ARGV[4]
local keyTtl = 2 * math.max(1, math.ceil(tonumber(ARGV[5]) - now))
local function renewIn(slots, member)
  redis.call('ZADD', slots, 'XX', ARGV[5], member)
  if redis.call('PTTL', slots) < keyTtl then redis.call('PEXPIRE', slots, keyTtl) end
end
for i = 6, #ARGV do
  local v = redis.call('HGET', takenKey, ARGV[i])
  if v then
    local _, t, mask, k = parseTaken(v)
    local member = ARGV[i] .. '@' .. ARGV[4]
    if mask % 2 == 1 then renewIn(tenantSlotsKey(t), member) end
    if mask >= 2 then renewIn(kindSlotsKey(t, k), member) end
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
