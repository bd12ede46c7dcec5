package redis

import goredis "github.com/redis/go-redis/v9"

// Every step that touches more than one key is one of these Lua scripts, run atomically by
// the server. Every key a script touches starts with KEYS[1], the queue's prefix
// "corral:{name}:", so all of them hash to one slot (the {name} tag) and a script works on a
// cluster node. The keys under the prefix:
//
//	s        the stream of ready jobs (one field: the job's ID), read by the group "g"
//	j:<id>   a stored job: key, body, enq, nb (ms), nbn, sb, ver, hdr, att, hist, gen, sid, st,
//	         sat, dlv, seq (st: the generation a handler started, sat: when, as JSON; hdr: the
//	         job's headers as a JSON object, "" or absent for none)
//	n        the number of stored jobs (capacity is counted here, never with MAXLEN)
//	o        stored jobs by enqueue order (score: a sequence), for DropOldest and Oldest
//	d        delayed jobs by due time (ms): NotBefore or a retry delay
//	k:<key>  the IDs of an ordering key's stored jobs in enqueue order; only the first is ever
//	         in s, d or leased, so a failing job holds its key
//	kw       waiting keyed jobs (not first of their key) with a NotBefore, by due time (Stats)
//	u        IDs taken by the dedup horizon, by expiry time (ms)
//	q:<uk>   the ID of the job holding the unique key uk: while the job is stored (its hash
//	         has uq, the key, and uqf, its period in ms), then for its period (an expiry)
//	x        the dead-letter stream; xi maps an ID to its entry
//	rl       the rate limit's window: the starts taken, by the server's time (ms)
//	cfg      the shared settings; c:<name> counters
//
// Times are the server's (TIME) in milliseconds, but for the times a job carries, which are
// the client's, in nanoseconds, as strings.

// luaCommon are the functions the scripts share.
const luaCommon = `
local P = KEYS[1]
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- ready puts job id, first of its key or keyless, into the stream or the delayed set.
local function ready(id, t)
  local nb = tonumber(redis.call('HGET', P .. 'j:' .. id, 'nb') or '0')
  if nb > t then
    redis.call('ZADD', P .. 'd', nb, id)
  else
    local sid = redis.call('XADD', P .. 's', '*', 'id', id)
    redis.call('HSET', P .. 'j:' .. id, 'sid', sid)
  end
end
-- store stores a new job and makes it ready unless its key is busy (as ready does, but with
-- the stream entry's ID written in the job's one HSET).
local function store(id, key, body, enq, nb, nbn, sb, ver, hdr, t)
  local seq = redis.call('INCR', P .. 'seq')
  local first, due, sid = true, tonumber(nb) > t, ''
  if key ~= '' then first = redis.call('RPUSH', P .. 'k:' .. key, id) == 1 end
  if first and due then
    redis.call('ZADD', P .. 'd', nb, id)
  elseif first then
    sid = redis.call('XADD', P .. 's', '*', 'id', id)
  elseif due then
    redis.call('ZADD', P .. 'kw', nb, id)
  end
  redis.call('HSET', P .. 'j:' .. id, 'key', key, 'body', body, 'enq', enq, 'nb', nb, 'nbn', nbn,
    'sb', sb, 'ver', ver, 'hdr', hdr, 'att', 0, 'hist', '', 'gen', 0, 'sid', sid, 'st', -1, 'dlv', 0, 'seq', seq, 'snz', 0)
  redis.call('ZADD', P .. 'o', seq, id)
  redis.call('INCR', P .. 'n')
end
-- unstore removes job id from every structure and hands its key to the next job; it returns
-- true if that made a job ready (or delayed). t is the time now, or nil to read it if needed.
-- (A job with a stream entry is in neither d nor kw: only the first job of a key is ever in
-- the stream or d, and never in both.)
local function unstore(id, t)
  local jk = P .. 'j:' .. id
  local key, sid, uq, uqf = unpack(redis.call('HMGET', jk, 'key', 'sid', 'uq', 'uqf'))
  if uq and uq ~= '' and redis.call('GET', P .. 'q:' .. uq) == id then
    if tonumber(uqf) > 0 then
      redis.call('SET', P .. 'q:' .. uq, id, 'PX', uqf)
    else
      redis.call('DEL', P .. 'q:' .. uq)
    end
  end
  if sid and sid ~= '' then
    redis.call('XACK', P .. 's', 'g', sid)
    redis.call('XDEL', P .. 's', sid)
  else
    redis.call('ZREM', P .. 'd', id)
    redis.call('ZREM', P .. 'kw', id)
  end
  redis.call('ZREM', P .. 'o', id)
  redis.call('DEL', jk)
  redis.call('DECR', P .. 'n')
  if key and key ~= '' then
    local kk = P .. 'k:' .. key
    local head = redis.call('LINDEX', kk, 0)
    redis.call('LREM', kk, 1, id)
    if head == id then
      local nxt = redis.call('LINDEX', kk, 0)
      if nxt then
        redis.call('ZREM', P .. 'kw', nxt)
        ready(nxt, t or now())
        return true
      end
    end
  end
  return false
end
-- bury moves job id to the dead letters with reason, keeping them within limit; it returns
-- the IDs of the dead letters evicted.
local function bury(id, reason, at, limit, t)
  local jk = P .. 'j:' .. id
  local f = redis.call('HGETALL', jk)
  local old = redis.call('HGET', P .. 'xi', id)
  if old then redis.call('XDEL', P .. 'x', old) end
  table.insert(f, 'id'); table.insert(f, id)
  table.insert(f, 'reason'); table.insert(f, reason)
  table.insert(f, 'at'); table.insert(f, at)
  local eid = redis.call('XADD', P .. 'x', '*', unpack(f))
  redis.call('HSET', P .. 'xi', id, eid)
  unstore(id, t)
  local ev = {}
  while redis.call('XLEN', P .. 'x') > limit do
    local e = redis.call('XRANGE', P .. 'x', '-', '+', 'COUNT', 1)[1]
    redis.call('XDEL', P .. 'x', e[1])
    local fs = e[2]
    for i = 1, #fs, 2 do
      if fs[i] == 'id' then
        if redis.call('HGET', P .. 'xi', fs[i+1]) == e[1] then redis.call('HDEL', P .. 'xi', fs[i+1]) end
        table.insert(ev, fs[i+1])
      end
    end
  end
  return ev
end
-- promote moves due delayed jobs to the stream, 100 at most.
local function promote(t)
  local due = redis.call('ZRANGEBYSCORE', P .. 'd', '-inf', t, 'LIMIT', 0, 100)
  for _, id in ipairs(due) do
    redis.call('ZREM', P .. 'd', id)
    local sid = redis.call('XADD', P .. 's', '*', 'id', id)
    redis.call('HSET', P .. 'j:' .. id, 'sid', sid)
  end
end
-- append returns the JSON array hist ('' for none) with the JSON object a appended.
local function append(hist, a)
  if not hist or hist == '' then return '[' .. a .. ']' end
  return string.sub(hist, 1, -2) .. ',' .. a .. ']'
end
-- reap deletes the group's consumers idle for longer than after (ms) with no pending entry.
local function reap(after)
  local ok, cs = pcall(redis.call, 'XINFO', 'CONSUMERS', P .. 's', 'g')
  if not ok then return end
  for _, c in ipairs(cs) do
    local f = {}
    for i = 1, #c, 2 do f[c[i]] = c[i+1] end
    if tonumber(f['pending']) == 0 and tonumber(f['idle']) > after then
      redis.call('XGROUP', 'DELCONSUMER', P .. 's', 'g', f['name'])
    end
  end
end
-- leased returns the job's hash key if delivery gen of job id is current, else false.
local function leased(id, gen)
  local jk = P .. 'j:' .. id
  local g, sid = unpack(redis.call('HMGET', jk, 'gen', 'sid'))
  if not g or g ~= gen or sid == '' then return false end
  return jk
end
`

// enqueueScript: ARGV id key body enq nb nbn sb horizon-ms capacity overflow deadlimit at ver
// evicted-json hdr unique unique-period-ms: evicted-json is the history entry of a job evicted
// by DropOldest (Number 0: no run). Returns {status, evicted, deadEvicted, holder}: status "ok",
// "dup", "full", "dropped", "unique" (holder holds the unique key).
var enqueueScript = goredis.NewScript(luaCommon + `
local id, key, body, enq, nb, nbn, sb = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local horizon, cap, overflow, limit, at, ver = tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10], tonumber(ARGV[11]), ARGV[12], ARGV[13]
local t = now()
redis.call('ZREMRANGEBYSCORE', P .. 'u', '-inf', t)
if redis.call('EXISTS', P .. 'j:' .. id) == 1 or redis.call('ZSCORE', P .. 'u', id) then
  return {'dup', {}, {}}
end
local unique = ARGV[16]
if unique ~= '' then
  local holder = redis.call('GET', P .. 'q:' .. unique)
  if holder then return {'unique', {}, {}, holder} end
end
local ev, dev = {}, {}
if cap > 0 and tonumber(redis.call('GET', P .. 'n') or '0') >= cap then
  if overflow == 'drop-newest' then
    redis.call('INCR', P .. 'c:dropped')
    return {'dropped', {}, {}}
  elseif overflow ~= 'drop-oldest' then
    return {'full', {}, {}}
  end
  local victim = nil
  local cur = 0
  while not victim do
    local ids = redis.call('ZRANGE', P .. 'o', cur, cur + 99)
    if #ids == 0 then break end
    for _, v in ipairs(ids) do
      local g, sid, dlv = unpack(redis.call('HMGET', P .. 'j:' .. v, 'gen', 'sid', 'dlv'))
      local pend = false
      if sid ~= '' then
        local p = redis.call('XPENDING', P .. 's', 'g', sid, sid, 1)
        pend = #p > 0
      end
      if not pend then victim = v; break end
    end
    cur = cur + 100
  end
  if not victim then return {'full', {}, {}} end
  redis.call('INCR', P .. 'c:evicted')
  local vk = P .. 'j:' .. victim
  redis.call('HSET', vk, 'hist', append(redis.call('HGET', vk, 'hist'), ARGV[14]))
  dev = bury(victim, 'evicted', at, limit, t)
  ev = {victim}
end
if horizon > 0 then redis.call('ZADD', P .. 'u', t + horizon, id) end
store(id, key, body, enq, nb, nbn, sb, ver, ARGV[15], t)
if unique ~= '' then
  redis.call('SET', P .. 'q:' .. unique, id)
  redis.call('HSET', P .. 'j:' .. id, 'uq', unique, 'uqf', ARGV[17])
end
return {'ok', ev, dev}
`)

// receiveScript: ARGV consumer lease-ms now-json lease-expired-json reap-ms now-ns
// dead-limit start. A paused queue (the key paused) delivers nothing. A reclaimed delivery of
// a job an operator cancelled (cx, see admin.go) is buried with reason canceled. With reap-ms
// positive, it first deletes every consumer of the group idle for longer than reap-ms with no
// pending entry (reap). A reclaimed delivery whose handler had started (its Start came, and no
// settle) gets the history entry of that run: {Number: att, Start: sat, End: now, Error:
// "queue: lease expired"}. With start "1" (ReceiveStart) the delivery is started too, as
// startScript does, in the same step. Returns {"", due, more}, or {id, key, body, enq, nbn,
// sb, att, gen, dlv, ver, hdr, snz, due, more}: att the attempts before this delivery's, due
// the time (ms) until the first delayed job is due ("" if none), and more "1" if a job may be
// ready besides the one taken ("0" if none is: no entry after it in the stream, which a new
// one joins at its end, and it was not a reclaimed lease).
var receiveScript = goredis.NewScript(luaCommon + `
local consumer, lease, reapAfter = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[5])
local t = now()
if reapAfter > 0 then reap(reapAfter) end
if redis.call('EXISTS', P .. 'paused') == 1 then return {'', '', '0'} end
local nxt = redis.call('ZRANGE', P .. 'd', 0, 0, 'WITHSCORES')
if nxt[2] and tonumber(nxt[2]) <= t then
  promote(t)
  nxt = redis.call('ZRANGE', P .. 'd', 0, 0, 'WITHSCORES')
end
local due = ''
if nxt[2] then due = tostring(tonumber(nxt[2]) - t) end
local sid, id, more, reclaimed = nil, nil, '1', false
local r = redis.call('XAUTOCLAIM', P .. 's', 'g', consumer, lease, '0-0', 'COUNT', 1)
if r[2][1] then
  sid, id, reclaimed = r[2][1][1], r[2][1][2][2], true
else
  local rr = redis.call('XREADGROUP', 'GROUP', 'g', consumer, 'COUNT', 1, 'STREAMS', P .. 's', '>')
  if rr and rr[1] and rr[1][2][1] then
    sid, id = rr[1][2][1][1], rr[1][2][1][2][2]
    if #redis.call('XRANGE', P .. 's', '(' .. sid, '+', 'COUNT', 1) == 0 then more = '0' end
  end
end
if not sid then return {'', due, '0'} end
local jk = P .. 'j:' .. id
local f = redis.call('HMGET', jk, 'key', 'body', 'enq', 'nbn', 'sb', 'att', 'ver', 'hdr', 'snz', 'gen', 'dlv', 'st', 'sat', 'cx')
local g = f[10]
if not g then
  redis.call('XACK', P .. 's', 'g', sid)
  redis.call('XDEL', P .. 's', sid)
  return {'', due, '1'}
end
if reclaimed then
  if f[12] == g then
    local a = '{"Number":' .. f[6] .. ',"Start":' .. (f[13] or ARGV[3]) .. ',"End":' .. ARGV[3] .. ',"Error":' .. ARGV[4] .. '}'
    redis.call('HSET', jk, 'hist', append(redis.call('HGET', jk, 'hist'), a))
  end
  if f[14] == g then
    redis.call('INCR', P .. 'c:dead')
    bury(id, 'canceled', ARGV[6], tonumber(ARGV[7]), t)
    return {'', due, '1'}
  end
end
local gen, dlv = tostring(tonumber(g) + 1), tostring(tonumber(f[11] or '0') + 1)
if ARGV[8] == '1' then
  redis.call('HSET', jk, 'gen', gen, 'dlv', dlv, 'att', tonumber(f[6] or '0') + 1, 'st', gen, 'sat', ARGV[3])
else
  redis.call('HSET', jk, 'gen', gen, 'dlv', dlv)
end
return {id, f[1], f[2], f[3], f[4], f[5], f[6], gen, dlv, f[7] or '0', f[8] or '', f[9] or '0', due, more}
`)

// startScript: ARGV id gen start-json. Returns 1, or 0 if the lease is lost. The run's
// start (sat) is kept for its history entry, should its lease expire.
var startScript = goredis.NewScript(luaCommon + `
local jk = leased(ARGV[1], ARGV[2])
if not jk then return 0 end
redis.call('HINCRBY', jk, 'att', 1)
redis.call('HSET', jk, 'st', ARGV[2], 'sat', ARGV[3])
return 1
`)

// extendScript: ARGV id gen consumer. Resets the pending entry's idle time (XCLAIM). Returns
// 1, 0 if the lease is lost, 2 if an operator cancelled the job (nothing renewed).
var extendScript = goredis.NewScript(luaCommon + `
local jk = leased(ARGV[1], ARGV[2])
if not jk then return 0 end
if redis.call('HGET', jk, 'cx') == ARGV[2] then return 2 end
local sid = redis.call('HGET', jk, 'sid')
local r = redis.call('XCLAIM', P .. 's', 'g', ARGV[3], 0, sid, 'JUSTID')
if #r == 0 then return 0 end
return 1
`)

// ackScript: ARGV id gen. Returns 1, 2 if the ack made the next job of its key ready, or 0
// if the lease is lost.
var ackScript = goredis.NewScript(luaCommon + `
local jk = leased(ARGV[1], ARGV[2])
if not jk then return 0 end
local readied = unstore(ARGV[1], nil)
redis.call('INCR', P .. 'c:acked')
if readied then return 2 end
return 1
`)

// requeueScript (Nack and Release): ARGV id gen delay-ms attempt-json mode now-ns dead-limit:
// mode 0 (Nack) appends the attempt to the history, 1 (Release) gives back the attempt of a
// started delivery, 2 (a snooze: a Nack of a snoozed attempt) does both and counts the snooze
// (snz). A job an operator cancelled (cx) is buried with reason canceled instead (returns 3).
var requeueScript = goredis.NewScript(luaCommon + `
local id, gen, delay, a, release = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local jk = leased(id, gen)
if not jk then return 0 end
local t = now()
local sid, st, hist, cx = unpack(redis.call('HMGET', jk, 'sid', 'st', 'hist', 'cx'))
if cx == gen then
  if release ~= '1' then redis.call('HSET', jk, 'hist', append(hist, a)) end
  redis.call('INCR', P .. 'c:dead')
  bury(id, 'canceled', ARGV[6], tonumber(ARGV[7]), t)
  return 3
end
redis.call('XACK', P .. 's', 'g', sid)
redis.call('XDEL', P .. 's', sid)
redis.call('HSET', jk, 'sid', '')
redis.call('HINCRBY', jk, 'gen', 1)
if release ~= '0' then
  if st == gen then redis.call('HINCRBY', jk, 'att', -1) end
end
if release ~= '1' then
  redis.call('HSET', jk, 'hist', append(hist, a))
end
if release == '2' then redis.call('HINCRBY', jk, 'snz', 1) end
if delay > 0 then
  -- t is the current millisecond, begun up to 1ms ago: due at t + 1 + delay, never sooner
  -- than delay from now.
  redis.call('ZADD', P .. 'd', t + 1 + delay, id)
else
  local s = redis.call('XADD', P .. 's', '*', 'id', id)
  redis.call('HSET', jk, 'sid', s)
end
return 1
`)

// buryScript: ARGV id gen reason attempt-json at limit unstart; an empty attempt-json (an
// attempt of Number 0 and no error: nothing ran) adds no history entry. With unstart "1" (a
// delivery of ReceiveStart buried with no run) the attempt its receive counted is given back.
// Returns false if the lease is lost, else the dead letters evicted.
var buryScript = goredis.NewScript(luaCommon + `
local id, gen, reason, a, at, limit = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
local jk = leased(id, gen)
if not jk then return false end
if ARGV[7] == '1' and redis.call('HGET', jk, 'st') == gen then
  redis.call('HINCRBY', jk, 'att', -1)
  redis.call('HSET', jk, 'st', -1)
end
if a ~= '' then
  redis.call('HSET', jk, 'hist', append(redis.call('HGET', jk, 'hist'), a))
end
redis.call('INCR', P .. 'c:dead')
return bury(id, reason, at, limit, now())
`)

// redriveScript: ARGV id. Returns "ok", "missing" or "dup".
var redriveScript = goredis.NewScript(luaCommon + `
local id = ARGV[1]
local eid = redis.call('HGET', P .. 'xi', id)
if not eid then return 'missing' end
if redis.call('EXISTS', P .. 'j:' .. id) == 1 then return 'dup' end
local e = redis.call('XRANGE', P .. 'x', eid, eid)[1]
if not e then redis.call('HDEL', P .. 'xi', id); return 'missing' end
local m = {}
for i = 1, #e[2], 2 do m[e[2][i]] = e[2][i+1] end
redis.call('XDEL', P .. 'x', eid)
redis.call('HDEL', P .. 'xi', id)
redis.call('ZREM', P .. 'u', id)
store(id, m['key'] or '', m['body'] or '', m['enq'] or '0', '0', '0', m['sb'] or '0', m['ver'] or '0', m['hdr'] or '', now())
return 'ok'
`)

// purgeScript: ARGV id. Returns 1, or 0 if there is no such dead letter.
var purgeScript = goredis.NewScript(luaCommon + `
local eid = redis.call('HGET', P .. 'xi', ARGV[1])
if not eid then return 0 end
redis.call('XDEL', P .. 'x', eid)
redis.call('HDEL', P .. 'xi', ARGV[1])
return 1
`)

// statsScript returns {stored, pending, delayed, waiting-delayed, dead, oldest-enq, paused}.
var statsScript = goredis.NewScript(luaCommon + `
local t = now()
local n = tonumber(redis.call('GET', P .. 'n') or '0')
local p = redis.call('XPENDING', P .. 's', 'g')[1]
local d = redis.call('ZCARD', P .. 'd')
local kw = redis.call('ZCOUNT', P .. 'kw', '(' .. t, '+inf')
local x = redis.call('XLEN', P .. 'x')
local first = redis.call('ZRANGE', P .. 'o', 0, 0)[1]
local enq = ''
if first then enq = redis.call('HGET', P .. 'j:' .. first, 'enq') end
return {n, p, d, kw, x, enq, redis.call('EXISTS', P .. 'paused')}
`)

// leaveScript: ARGV consumer. Deletes the consumer from the group if it has no pending
// entry (an entry deleted with its consumer could never be claimed again).
var leaveScript = goredis.NewScript(luaCommon + `
if #redis.call('XPENDING', P .. 's', 'g', '-', '+', 1, ARGV[1]) == 0 then
  return redis.call('XGROUP', 'DELCONSUMER', P .. 's', 'g', ARGV[1])
end
return 0
`)

// settingsScript: ARGV capacity overflow horizon-ms deadlimit replicas. Records them if the
// queue has none (the replicas alone for a queue recorded before they were a setting), and
// returns the queue's.
var settingsScript = goredis.NewScript(luaCommon + `
local k = P .. 'cfg'
if redis.call('EXISTS', k) == 0 then
  redis.call('HSET', k, 'capacity', ARGV[1], 'overflow', ARGV[2], 'horizon', ARGV[3], 'deadlimit', ARGV[4], 'lease', '')
end
redis.call('HSETNX', k, 'replicas', ARGV[5])
pcall(redis.call, 'XGROUP', 'CREATE', P .. 's', 'g', '0', 'MKSTREAM')
return redis.call('HMGET', k, 'capacity', 'overflow', 'horizon', 'deadlimit', 'replicas')
`)

// leaseScript: ARGV lease-ms. Records the lease if the queue has none, returns the queue's.
var leaseScript = goredis.NewScript(luaCommon + `
local k = P .. 'cfg'
local l = redis.call('HGET', k, 'lease')
if not l or l == '' then redis.call('HSET', k, 'lease', ARGV[1]); return ARGV[1] end
return l
`)

// takeStartScript: ARGV n per-ms member. The rate limit's sliding window, the sorted set rl
// of the starts taken (score: the server's time in ms): it takes a start if fewer than n fall
// within the last per-ms, and returns {1, 0}; else {0, ms until one leaves the window}.
var takeStartScript = goredis.NewScript(luaCommon + `
local n, per = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = now()
local rl = P .. 'rl'
redis.call('ZREMRANGEBYSCORE', rl, '-inf', t - per)
local c = redis.call('ZCARD', rl)
if c < n then
  redis.call('ZADD', rl, t, t .. ':' .. ARGV[3])
  redis.call('PEXPIRE', rl, per)
  return {1, 0}
end
local s = redis.call('ZRANGE', rl, c - n, c - n, 'WITHSCORES')
return {0, math.max(tonumber(s[2]) + per - t, 1)}
`)
