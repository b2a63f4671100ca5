-- rlock's metrics for prometheus-redis-exporter: run it with
--   prometheus-redis-exporter -script /usr/share/rlock/rlock-metrics.lua
-- Each value comes out as redis_script_values{key="<name>"}: every INFO rlock counter and gauge
-- under its own name (rlock_acquisitions, rlock_waiters, ...), the module version as a number,
-- and, from a bounded RLOCK.SCAN of the exporter's db, the longest current holding.
-- The exporter wants a flat list of names and values, both strings.

-- The scan stops after SCAN_CALLS calls of SCAN_COUNT keys (about 1 ms of server time per
-- 1,000 keys): rlock_scan_complete is 0 when the db holds more keys than that.
local SCAN_CALLS, SCAN_COUNT = 10, 1000

local result = {}
local function put(name, value)
  result[#result + 1] = name
  result[#result + 1] = tostring(value)
end

local info = redis.call("INFO", "rlock")
for name, value in string.gmatch(info, "(rlock_[%w_]+):(%d+)\r\n") do
  put(name, value)
end
local major, minor, patch = string.match(info, "rlock_version:(%d+)%.(%d+)%.(%d+)")
if major then
  put("rlock_version_number", major * 10000 + minor * 100 + patch)
end

local cursor, calls, listed, longest = "0", 0, 0, 0
repeat
  local reply = redis.call("RLOCK.SCAN", cursor, "COUNT", SCAN_COUNT)
  cursor, calls = reply[1], calls + 1
  for _, lock in ipairs(reply[2]) do -- key, owner, holds, held, ttl, waiters
    listed = listed + 1
    if lock[4] > longest then
      longest = lock[4]
    end
  end
until cursor == "0" or calls == SCAN_CALLS
put("rlock_longest_held_ms", longest)
put("rlock_scanned_locks", listed)
put("rlock_scan_complete", cursor == "0" and 1 or 0)

return result
