"""The store's side of the shared rate limiter: the script it runs (Lua, in Redis), the queue of turns a fleet
shares kept atomic, and how the learnt state is written there (:func:`learned_from`, :func:`fields_of`).

One script, four operations, each one round trip, each answered with the state after it:

- ``take``: a request asks to go. Not throttled, it goes (its send is logged); throttled, it takes the next turn (or
  keeps the turn it was refused on) and is told to go or how long to wait.
- ``check``: a waiting turn asks again; with the pace the asker computed from what was learnt (``_learning.py``),
  applied only if nothing was learnt since (its version).
- ``update``: what a process learnt (a refusal, headers), written only if nothing was learnt since it read the state
  (a version check), with what the queue must do about it (``_learning.QueueOp``: start, restart, rate, pause).
- ``peek``: the state, and how many requests the fleet sent in the last second (the rate a refusal came at).

The schedule is the one of ``_pace.LocalQueue``: turn k may go at ``atm + (k - at) / qr``, and no span of
``SPAN`` seconds holds more sends than the pace allows (the list of recent send times). Times are the store's own
clock (``TIME``), so hosts whose clocks differ share one schedule. A state that is gone (a flushed or restarted
store) starts afresh under a new incarnation (``e``): turns of the old one are void and their askers take new ones.
Every key expires after ``ttl`` ms without use. The learning itself is never here: it is Python's, written once.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import replace

from airflow_provider_analytics.wire._learning import DEFAULT_MAX_PAUSE, Learned
from airflow_provider_analytics.wire._pace import MIN_RATE
from airflow_provider_analytics.wire._rate_headers import MAX_WINDOW_SECONDS, Pause
from airflow_provider_analytics.wire._share import ShareOfLimit

__all__ = ["SCRIPT", "SCRIPT_SHA", "differs", "fields_of", "learned_from"]

# How the store writes "never" (no refusal yet, no request delayed yet): a float every Lua reads.
_NEVER = -1e18
# What the state read from the store is held to: no pace a platform would allow, no pause longer than an hour.
MAX_RATE = 1_000_000.0
MAX_PAUSE_HELD = 3600.0

SCRIPT = r"""
local state, sends = KEYS[1], KEYS[2]
local op, ttl = ARGV[1], tonumber(ARGV[2])
local MIN_RATE, SPAN, MAX_SENT, RECHECK = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local s = {}
local flat = redis.call('HGETALL', state)
for i = 1, #flat, 2 do s[flat[i]] = flat[i + 1] end
local changed = false
local function f(x) return string.format('%.6f', x) end
local function n(k, d) local x = tonumber(s[k]); if x == nil then return d end; return x end
local function put(k, v) s[k] = v; changed = true end
if s.e == nil then
  redis.call('DEL', sends)
  s = {e = f(now), v = '0', th = '0', r = tostring(MIN_RATE), c = '0', pf = '0', pu = '0', ea = '-1e18',
       ld = '-1e18', si = '0', nt = '0', sv = '0', at = '0', atm = '0', qr = tostring(MIN_RATE)}
  changed = true
end
-- A state written by something else, or damaged, is held to bounds: no pause and no schedule more than an hour
-- ahead, no turn served that was never taken.
local latest = now + 3600
if n('pu', 0) > latest then put('pu', f(latest)) end
if n('sv', 0) > n('nt', 0) then put('sv', s.nt or '0') end

local function qrate() return math.max(MIN_RATE, n('qr', MIN_RATE)) end
local function due(turn) return n('atm', 0) + (turn - n('at', 0)) / qrate() end
-- The first turn not yet sent is never due later than a turn after the pause's end (or now).
local head = math.max(now, n('pu', 0))
if due(n('sv', 0)) > head + 1 / qrate() + RECHECK then put('at', s.sv); put('atm', f(head)) end
local function gate()
  local rate = qrate()
  local budget = math.max(1, math.min(MAX_SENT, math.ceil(rate * SPAN - 1e-9)))
  local span = SPAN
  if budget >= MAX_SENT then span = budget / rate end
  while true do
    local first = redis.call('LINDEX', sends, 0)
    if not first or tonumber(first) > now - span then break end
    redis.call('LPOP', sends)
  end
  if redis.call('LLEN', sends) < budget then return now end
  return tonumber(redis.call('LINDEX', sends, -budget)) + span
end
local function record_send()
  redis.call('RPUSH', sends, f(now))
  if redis.call('LLEN', sends) > MAX_SENT then redis.call('LTRIM', sends, -MAX_SENT, -1) end
  redis.call('PEXPIRE', sends, ttl)
end
local function queue_op(name, a, b)
  if name == 'start' then
    put('at', s.nt); put('atm', f(a)); put('sv', s.nt); put('qr', tostring(MIN_RATE)); redis.call('DEL', sends)
  elseif name == 'restart' then
    put('at', s.sv); put('atm', f(a)); put('qr', f(math.max(MIN_RATE, b)))
  elseif name == 'rate' then
    local due_now = n('at', 0) + math.max(0, b - n('atm', 0)) * qrate()
    put('at', tostring(math.ceil(due_now))); put('atm', f(math.max(b, n('atm', 0))))
    put('qr', f(math.max(MIN_RATE, a)))
  elseif name == 'pause' then
    put('at', s.sv); put('atm', f(a))
  end
end
local function check(turn, asked_at)
  local paused = n('pu', 0)
  local g = math.max(paused, gate())
  local d = due(turn)
  if d < g and g > now and turn >= n('sv', 0) then put('at', tostring(turn)); put('atm', f(g)); d = g end
  local delay
  if paused >= d then delay = paused - now else delay = math.min(math.max(g, d) - now, RECHECK) end
  if delay > 0 then return {'wait', tostring(turn), f(delay)} end
  record_send()
  put('sv', tostring(math.max(n('sv', 0), turn + 1)))
  if now - asked_at > 1 / math.max(MIN_RATE, n('r', MIN_RATE)) then put('ld', f(now)) end
  return {'go', tostring(turn), '0'}
end

local result
if op == 'take' then
  if n('th', 0) == 0 then
    record_send()
    result = {'go', '', '0'}
  else
    local turn = tonumber(ARGV[7])
    if turn == nil or ARGV[8] ~= s.e then
      local start = math.max(now, n('pu', 0))
      if due(n('nt', 0)) < start then put('at', s.nt); put('atm', f(start)) end
      turn = n('nt', 0)
      put('nt', tostring(turn + 1))
    end
    result = check(turn, now)
  end
elseif op == 'check' then
  local turn = tonumber(ARGV[7])
  if ARGV[8] ~= s.e or turn == nil then
    result = {'void', '', '0'}
  elseif n('th', 0) == 0 then
    record_send()
    result = {'go', tostring(turn), '0'}
  else
    local hint = tonumber(ARGV[10])
    if ARGV[11] == s.v and hint ~= nil and math.abs(hint - n('r', MIN_RATE)) > 0.001 * n('r', MIN_RATE) then
      queue_op('rate', hint, now); put('r', f(math.max(MIN_RATE, hint)))
    end
    result = check(turn, tonumber(ARGV[9]) or now)
  end
elseif op == 'update' then
  if ARGV[7] ~= s.v then
    result = {'stale', '', '0'}
  else
    local pairs_count = tonumber(ARGV[8])
    local i = 9
    for _ = 1, pairs_count do put(ARGV[i], ARGV[i + 1]); i = i + 2 end
    while i <= #ARGV do
      local name = ARGV[i]
      if name == 'start' or name == 'pause' then queue_op(name, tonumber(ARGV[i + 1])); i = i + 2
      else queue_op(name, tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])); i = i + 3 end
    end
    put('v', tostring(n('v', 0) + 1))
    result = {'ok', '', '0'}
  end
else
  local recent = 0
  for _, sent in ipairs(redis.call('LRANGE', sends, 0, -1)) do
    if tonumber(sent) > now - 1 then recent = recent + 1 end
  end
  result = {'peek', '', tostring(recent)}
end
if changed then
  local out = {}
  for k, v in pairs(s) do out[#out + 1] = k; out[#out + 1] = v end
  redis.call('HSET', state, unpack(out))
end
redis.call('PEXPIRE', state, ttl)
result[#result + 1] = f(now)
for k, v in pairs(s) do result[#result + 1] = k; result[#result + 1] = v end
return result
"""

SCRIPT_SHA = hashlib.sha1(SCRIPT.encode(), usedforsecurity=False).hexdigest()


def _number(fields: Mapping[str, str], key: str, default: float) -> float:
    try:
        value = float(fields[key])
    except (KeyError, ValueError):
        return default
    return value if math.isfinite(value) else default


def _optional(fields: Mapping[str, str], key: str) -> float | None:
    value = _number(fields, key, math.nan)
    return None if math.isnan(value) else value


def learned_from(fields: Mapping[str, str], store_now: float) -> Learned:
    """The learnt state as the store keeps it (its field names are short: it is read at every round trip).

    Read as untrusted, like an answer: a value out of range (a store written by something else, or damaged) is
    brought back in range, so that it can neither stop the fleet (a pause of a year, a pace of zero) nor let it
    rush (a pace of millions).

    :param fields: the state's fields.
    :param store_now: the store's clock now.
    """
    cap = min(MAX_PAUSE_HELD, max(0.0, _number(fields, "pcap", 0.0)))
    pause_until = min(_number(fields, "pu", 0.0), store_now + max(DEFAULT_MAX_PAUSE, cap))
    paused_by = None
    if fields.get("ph"):
        paused_by = Pause(
            fields["ph"][:80],
            max(0.0, _number(fields, "pa", 0.0)),
            _number(fields, "pau", 0.0),
            pause_until,
            cap,
        )
    return Learned(
        throttled=fields.get("th") == "1",
        rate=_within(_number(fields, "r", MIN_RATE), MIN_RATE, MAX_RATE),
        ceiling=_within(_number(fields, "c", 0.0), 0.0, MAX_RATE),
        probe_from=_number(fields, "pf", 0.0),
        header_cap=_within_or_none(_optional(fields, "hc"), MIN_RATE, MAX_RATE),
        window=_within_or_none(_optional(fields, "w"), 0.001, MAX_WINDOW_SECONDS),
        last_reset=_optional(fields, "lr"),
        pause_until=pause_until,
        paused_by=paused_by,
        episode_at=_number(fields, "ea", _NEVER),
        last_delayed=_number(fields, "ld", _NEVER),
        since=_number(fields, "si", 0.0),
        source=fields.get("src", "")[:80],
        share=ShareOfLimit(learns=False),  # the fleet's own limiter: all of the token's limit is its to pace
    )


def _within(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def _within_or_none(value: float | None, low: float, high: float) -> float | None:
    return None if value is None else _within(value, low, high)


def _values(learned: Learned) -> dict[str, str]:
    """The learnt state as the store keeps it."""
    values: dict[str, str] = {
        "th": "1" if learned.throttled else "0",
        "r": f"{learned.rate:.6f}",
        "c": f"{learned.ceiling:.6f}",
        "pf": f"{learned.probe_from:.6f}",
        "hc": "" if learned.header_cap is None else f"{learned.header_cap:.6f}",
        "w": "" if learned.window is None else f"{learned.window:.6f}",
        "lr": "" if learned.last_reset is None else f"{learned.last_reset:.6f}",
        "pu": f"{learned.pause_until:.6f}",
        "ea": f"{max(_NEVER, learned.episode_at):.6f}",
        "ld": f"{max(_NEVER, learned.last_delayed):.6f}",
        "si": f"{learned.since:.6f}",
        "src": learned.source,
    }
    if learned.paused_by is not None:
        pause = learned.paused_by
        values.update(ph=pause.header, pa=f"{pause.asked:.6f}", pau=f"{pause.asked_until:.6f}", pcap=f"{pause.cap:.6f}")
    return values


def fields_of(learned: Learned, before: Learned) -> list[str]:
    """The fields of ``learned`` that differ from ``before``, as the store keeps them: name, value, name, value..."""
    previous = _values(before)
    return [item for key, value in _values(learned).items() if previous.get(key) != value for item in (key, value)]


def differs(before: Learned, after: Learned) -> bool:
    """Whether ``after`` learnt something worth a round trip (``last_delayed`` only when it moved a second)."""
    if after.last_delayed - before.last_delayed >= 1.0:
        return True
    return fields_of(replace(after, last_delayed=before.last_delayed), before) != []
