-- The shared rate limiter's script, run by the store (Redis) for every process of a fleet: _store_script.py says
-- what it keeps and answers, and loads it.
if redis.replicate_commands then redis.replicate_commands() end  -- Redis 5 and 6: TIME, then writes
local state, sends, gone, held, refused = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local ttl = tonumber(ARGV[1])
local MIN_RATE, SPAN, MAX_SENT, RECHECK = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local GRACE, CATCH_UP = tonumber(ARGV[7]), tonumber(ARGV[8])
-- the seconds of sends and refusals kept for what the platform accepted; the share of the pace a second must hold
local KEPT, FULL_SECOND = tonumber(ARGV[9]), tonumber(ARGV[10])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
-- A key of another type (written by something else) would fail every command on it until it expired: it goes.
local SHAPES = {[state] = 'hash', [sends] = 'list', [gone] = 'zset', [held] = 'zset', [refused] = 'hash'}
for key, shape in pairs(SHAPES) do
  local found = redis.call('TYPE', key).ok
  if found ~= shape and found ~= 'none' then redis.call('DEL', key) end
end
-- The state's fields, and nothing else: a field of another shape, or a long value, is not read, kept or answered.
local FIELDS = {'e', 'v', 'th', 'r', 'c', 'pf', 'hc', 'w', 'lr', 'pu', 'ph', 'pa', 'pau', 'pcap', 'ea', 'ld', 'si',
                'src', 'nt', 'sv', 'at', 'atm', 'qr', 'ct', 'lim'}
local KNOWN = {}
for _, k in ipairs(FIELDS) do KNOWN[k] = true end
local s = {}
local got = redis.call('HMGET', state, unpack(FIELDS))
for i, k in ipairs(FIELDS) do
  if got[i] and #got[i] <= 120 then s[k] = got[i] end
end
local dirty = {}
local function f(x) return string.format('%.6f', x) end
local function n(k, d)
  local x = tonumber(s[k])
  if x == nil or x ~= x or x == math.huge or x == -math.huge or math.abs(x) > 1e15 then return d end
  return x
end
local function put(k, v) s[k] = v; dirty[k] = true end
-- A count of the queue's: a whole number that Lua prints as digits (from 1e14 on, tostring writes '1e+14').
local function count_ok(k)
  local x = tonumber(s[k])
  return x ~= nil and x == math.floor(x) and x >= 0 and x < 1e13
end
-- A new state: none yet, a flushed store, a clock stepped back (a failover to a host behind: every time kept would
-- be in the future of the new clock), or a state no process of ours wrote (an incarnation or a version longer than
-- a process keeps, a count of turns that is not a whole number): a process could never match it again, so every
-- turn would be void, every update stale, for as long as anyone used the key.
if s.e == nil or #s.e > 40 or #(s.v or '') > 20 or #(s.ld or '') > 40 or not count_ok('v') or not count_ok('nt') or not count_ok('sv')
    or not count_ok('at') or n('ct', now) > now + 1 then
  redis.call('DEL', state, sends, gone, held, refused)
  s = {}
  local fresh = {e = f(now), v = '0', th = '0', r = tostring(MIN_RATE), c = '0', pf = '0', pu = '0', ea = '-1e18',
                 ld = '-1e18', si = '0', nt = '0', sv = '0', at = '0', atm = '0', qr = tostring(MIN_RATE)}
  for k, v in pairs(fresh) do put(k, v) end
end
put('ct', f(now))
-- A state written by something else, or damaged, is held to bounds: no pause and no schedule more than the longest
-- pause ahead, no turn served that was never taken.
local latest = now + tonumber(ARGV[6])
local pause_kept = tonumber(s.pu)  -- read as it is: n() takes a value past 1e15 for none, the Python side for one
if pause_kept == nil or pause_kept ~= pause_kept then put('pu', '0')
elseif pause_kept > latest then put('pu', f(latest)) end
if n('sv', 0) > n('nt', 0) then put('sv', tostring(n('nt', 0))) end
if n('at', 0) > n('nt', 0) then put('at', tostring(n('nt', 0))) end
-- The list of send times never holds more than MAX_SENT (a longer one was not written by this script).
if redis.call('LLEN', sends) > MAX_SENT then redis.call('LTRIM', sends, -MAX_SENT, -1) end
-- A waiting turn whose asker did not ask again when told to (its process died, was killed or stopped with its
-- waits queued) is given up, as its asker would have: its place goes to the turns after it.
local lapsed = redis.call('ZRANGEBYSCORE', held, '-inf', now, 'LIMIT', 0, 200)
for _, t in ipairs(lapsed) do
  local turn = tonumber(t)
  if turn ~= nil and turn >= n('sv', 0) and turn < n('nt', 0) then redis.call('ZADD', gone, turn, turn) end
  redis.call('ZREM', held, t)
end
if #lapsed > 0 then redis.call('PEXPIRE', gone, ttl) end

local function qrate() return math.max(MIN_RATE, n('qr', MIN_RATE)) end
-- Turns given up (their requests' deadlines passed) take no place in the schedule: those from the anchor's on.
local function skipped(from, to)
  if to <= from then return 0 end
  return redis.call('ZCOUNT', gone, from, '(' .. to)
end
local function due(turn) return n('atm', 0) + (turn - n('at', 0) - skipped(n('at', 0), turn)) / qrate() end
-- The first turn not yet sent is never due later than a turn after the pause's end (or now).
local head = math.max(now, n('pu', 0))
if due(n('sv', 0)) > head + 1 / qrate() + RECHECK then put('at', tostring(n('sv', 0))); put('atm', f(head)) end
local function gate()
  local rate = qrate()
  -- _pace.span_budget: the pace's own count, or room for late sends to catch up
  local at_pace, caught_up = math.ceil(rate * SPAN - 1e-9), math.floor(rate * SPAN * CATCH_UP + 1e-9)
  local budget = math.max(1, math.min(MAX_SENT, math.max(at_pace, caught_up)))
  local span = SPAN
  if budget >= MAX_SENT then span = budget / rate end
  -- The list keeps its older sends (a refusal's peek reads ten seconds of them): the span holds the budget when the
  -- budget-th latest send is in it.
  local newest = tonumber(redis.call('LINDEX', sends, -1))
  if newest == nil or newest > now + 1 then redis.call('DEL', sends); return now end  -- not ours, or another clock
  local nth = tonumber(redis.call('LINDEX', sends, -budget))
  if nth == nil or nth <= now - span then return now end
  return nth + span
end
local function record_send()
  redis.call('RPUSH', sends, f(now))
  if redis.call('LLEN', sends) > MAX_SENT then redis.call('LTRIM', sends, -MAX_SENT, -1) end
  redis.call('PEXPIRE', sends, ttl)
end
local function serve(turn)
  local served = math.max(n('sv', 0), turn + 1)
  if served > n('at', 0) and redis.call('ZCARD', gone) > 0 then
    -- Turns given up that the queue now passes are dropped: the schedule is anchored past them first, so that no
    -- turn after them moves back.
    put('atm', f(due(served))); put('at', tostring(served))
    redis.call('ZREMRANGEBYSCORE', gone, '-inf', '(' .. served)
  end
  put('sv', tostring(served))
end
local function queue_op(name, a, b)
  if name == 'start' then
    put('at', tostring(n('nt', 0))); put('atm', f(a)); put('sv', tostring(n('nt', 0))); put('qr', tostring(MIN_RATE))
    -- The sends stay: the burst that started pacing is what its refusals are counted against (peek).
    redis.call('DEL', gone, held)
  elseif name == 'restart' then
    put('at', tostring(n('sv', 0))); put('atm', f(a)); put('qr', f(math.max(MIN_RATE, b)))
  elseif name == 'rate' then
    local due_now = n('at', 0) + math.max(0, b - n('atm', 0)) * qrate()
    put('at', tostring(math.min(n('nt', 0), math.ceil(due_now)))); put('atm', f(math.max(b, n('atm', 0))))
    put('qr', f(math.max(MIN_RATE, a)))
  elseif name == 'pause' then
    put('at', tostring(n('sv', 0))); put('atm', f(a))
  end
end
local function check(turn, asked_at)
  local paused = n('pu', 0)
  local g = math.max(paused, gate())
  local d = due(turn)
  if d < g and g > now and turn >= n('sv', 0) then put('at', tostring(turn)); put('atm', f(g)); d = g end
  local delay
  if paused >= d then delay = paused - now else delay = math.min(math.max(g, d) - now, RECHECK) end
  if delay > 0 then
    redis.call('ZADD', held, now + delay + GRACE, turn)
    redis.call('PEXPIRE', held, ttl)
    return {'wait', tostring(turn), f(delay)}
  end
  redis.call('ZREM', held, turn)
  record_send()
  serve(turn)
  if now - asked_at > 1 / math.max(MIN_RATE, n('r', MIN_RATE)) then put('ld', f(now)) end
  return {'go', tostring(turn), '0'}
end

-- One operation, its arguments in a (a[1] is the first); its result: status, turn, a number (a wait, a count).
local function run(op, a)
  if op == 'take' then
    if n('th', 0) == 0 then
      record_send()
      return {'go', '', '0'}
    end
    local turn = tonumber(a[1])
    if turn == nil or a[2] ~= s.e then
      local start = math.max(now, n('pu', 0))
      if due(n('nt', 0)) < start then put('at', tostring(n('nt', 0))); put('atm', f(start)) end
      turn = n('nt', 0)
      put('nt', tostring(turn + 1))
    end
    return check(turn, now)
  elseif op == 'check' then
    local turn = tonumber(a[1])
    if a[2] ~= s.e or turn == nil then return {'void', '', '0'} end
    if n('th', 0) == 0 then
      record_send()
      return {'go', tostring(turn), '0'}
    end
    local hint = tonumber(a[4])
    local moved = hint ~= nil and hint == hint and math.abs(hint - n('r', MIN_RATE)) > 0.001 * n('r', MIN_RATE)
    if a[5] == s.v and moved then
      queue_op('rate', hint, now); put('r', f(math.max(MIN_RATE, math.min(hint, 1e6))))
    end
    return check(turn, tonumber(a[3]) or now)
  elseif op == 'forget' then
    local turn = tonumber(a[1])
    if a[2] == s.e and turn ~= nil and turn >= n('sv', 0) and turn < n('nt', 0) then
      redis.call('ZADD', gone, turn, turn)
      redis.call('PEXPIRE', gone, ttl)
      redis.call('ZREM', held, turn)
    end
    return {'ok', '', '0'}
  elseif op == 'recover' then
    -- Pacing ends (when is Python's rule, _learning.Learned.recovers) only if nothing was learnt and no turn
    -- waited since the asker read the state.
    if a[1] ~= s.v or a[2] ~= (s.ld or '') or n('th', 0) == 0 then return {'stale', '', '0'} end
    put('th', '0'); put('v', tostring(n('v', 0) + 1))
    return {'ok', '', '0'}
  elseif op == 'update' then
    if a[1] ~= s.v then return {'stale', '', '0'} end
    local pairs_count = tonumber(a[2])
    local i = 3
    for _ = 1, pairs_count do
      if KNOWN[a[i]] and #a[i + 1] <= 120 then put(a[i], a[i + 1]) end
      i = i + 2
    end
    while i <= #a do
      local name = a[i]
      if name == 'start' or name == 'pause' then queue_op(name, tonumber(a[i + 1])); i = i + 2
      else queue_op(name, tonumber(a[i + 1]), tonumber(a[i + 2])); i = i + 3 end
    end
    put('v', tostring(n('v', 0) + 1))
    return {'ok', '', '0'}
  end
  -- A refusal: counted in the second its request was sent (a[1], the store's clock). The rate it came at is what the
  -- platform accepted: the most sends of one second of the last KEPT, less the refusals of that second's sends. Not the
  -- sends alone: a burst let go at once is refused over seconds, and a pause's idle seconds are no part of a rate.
  local sent_at = tonumber(a[1])
  if sent_at ~= nil and sent_at > now - KEPT and sent_at <= now + 1 then
    local field = string.format('%d', math.floor(sent_at))
    local so_far = tonumber(redis.call('HGET', refused, field))
    -- a count that is not a small whole number (damaged, or not ours) starts again: HINCRBY would fail the call
    if so_far == nil or so_far ~= math.floor(so_far) or so_far < 0 or so_far >= 1e9 then so_far = 0 end
    redis.call('HSET', refused, field, string.format('%d', so_far + 1))
    redis.call('PEXPIRE', refused, ttl)
  end
  local per_second, count, oldest = {}, 0, now
  for _, sent in ipairs(redis.call('LRANGE', sends, 0, -1)) do
    local t = tonumber(sent) or 0
    if t > now - KEPT and t <= now + 1 then
      local second = math.floor(t)
      per_second[second] = (per_second[second] or 0) + 1
      count = count + 1; oldest = math.min(oldest, t)
    end
  end
  -- While paced, only a second that held nearly the pace's sends measures the limit: after a long pause, or a burst
  -- split over two seconds, a second of a few sends would set the ceiling at those few.
  local full = 0
  if n('th', 0) ~= 0 then full = FULL_SECOND * qrate() end
  local accepted = 0
  for second, sent in pairs(per_second) do
    if sent >= full then
      local no = tonumber(redis.call('HGET', refused, string.format('%d', second))) or 0
      if no ~= no then no = 0 end
      accepted = math.max(accepted, sent - math.max(0, math.min(sent, no)))
    end
  end
  -- '1': the number counts accepted requests; else none was, and it is the rate the fleet sent at
  if accepted > 0 then return {'peek', '1', f(accepted)} end
  return {'peek', '', f(count / math.max(1, now - oldest))}
end

-- The operations, one after another on the one state: name, the count of its arguments, the arguments.
local result = {0}
local i = 11
while i <= #ARGV do
  local count = tonumber(ARGV[i + 1])
  local a = {}
  for k = 1, count do a[k] = ARGV[i + 1 + k] end
  local one = run(ARGV[i], a)
  result[1] = result[1] + 1
  result[#result + 1] = one[1]; result[#result + 1] = one[2]; result[#result + 1] = one[3]
  i = i + 2 + count
end
local out = {}
for k, _ in pairs(dirty) do
  if s[k] ~= nil then out[#out + 1] = k; out[#out + 1] = s[k] end
end
if #out > 0 then redis.call('HSET', state, unpack(out)) end
redis.call('PEXPIRE', state, ttl)
result[#result + 1] = f(now)
result[#result + 1] = 'gone'; result[#result + 1] = tostring(redis.call('ZCARD', gone))
for _, k in ipairs(FIELDS) do
  if s[k] ~= nil then result[#result + 1] = k; result[#result + 1] = s[k] end
end
return result
