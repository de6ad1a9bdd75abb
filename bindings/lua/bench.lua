-- bench.lua: the crowd benchmark through the Lua binding.
--
--   LUA_CPATH='build/bindings/lua/?.so' lua5.4 bindings/lua/bench.lua \
--       OPS_FILE [THREADS [MODE [GAP_MS]]]
--
-- Replays an `aoi-bench --dump-ops` file (read into arrays before any
-- timing) into a world of THREADS lanes (default 2), as aoi-bench does:
-- per tick, the adds and removes one by one and each run of moves with
-- one move_many, then tick, then deliver. MODE says what the delivery
-- does with the events:
--   wire   (the default) what aoi-bench does: each watcher's events are
--          kept in wire form (ev:keep: a world of several lanes has its
--          helpers copy every segment out at once, as aoi-bench copies
--          each segment into its wire buffers on a thread of its own),
--          and folded into aoi-bench's checksum from w:kept() after the
--          frame's timing, as aoi-bench times its checksum apart;
--   keep   as wire, with no checksum between the frames;
--   bytes  as wire, but each watcher's events copied into a new Lua
--          string (ev:bytes), hashed after the frame;
--   hash   every event read with ev:get and folded in, inside the frame;
--   get    every event read with ev:get, no checksum;
--   count  the events counted only.
-- GAP_MS (default 0) adds a busy loop of that many ms on the host thread
-- after each frame, as a host's own work between frames.
-- The first tick is aoi-bench's warm-up: checksummed, not timed. Prints
-- the median frame (submit + tick + deliver) in ms, its parts, and the
-- checksum.
local here = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local aoi = require "aoi"
local crowd = require "crowd"

local path = assert(arg[1], "usage: bench.lua OPS_FILE [THREADS]")
local threads = math.tointeger(tonumber(arg[2] or "2"))
local mode = arg[3] or "wire"
local gap = (tonumber(arg[4] or "0") or 0) / 1e3
local head, ticks = crowd.read_ops(path)

local world = aoi.new{threads = threads, min_x = 0, min_y = 0,
                      max_x = head.side, max_y = head.side,
                      max_radius = head.max_radius}
local checksum, hash = crowd.SEED, crowd.hash_outbox
local events = 0
local function fold(watcher, _, n, ev)
  checksum = checksum + hash(watcher, n, ev)
  events = events + n
end
local wire_ids, wire_first, wire_n, wire_bytes, wired = {}, {}, {}, {}, 0
local kept = world:kept()
if mode == "wire" or mode == "keep" then
  fold = function(watcher, _, n, ev)
    wired = wired + 1
    wire_ids[wired], wire_first[wired], wire_n[wired] = watcher, ev:keep(), n
    events = events + n
  end
elseif mode == "bytes" then
  fold = function(watcher, _, n, ev)
    wired = wired + 1
    wire_ids[wired], wire_bytes[wired] = watcher, ev:bytes()
    events = events + n
  end
elseif mode == "get" then
  fold = function(_, _, n, ev)
    for i = 1, n do ev:get(i) end
    events = events + n
  end
elseif mode == "count" then
  fold = function(_, _, n) events = events + n end
else
  assert(mode == "hash", "MODE: wire, keep, bytes, hash, get or count")
end

local clock = aoi.clock
local batch = {{}, {}, {}}
local frame, submit, tick, deliver = {}, {}, {}, {}
for t = 1, head.ticks do
  local t0 = clock()
  crowd.submit(world, ticks[t], batch)
  local t1 = clock()
  world:tick()
  local t2 = clock()
  world:deliver(fold)
  local t3 = clock()
  if t > 1 then
    frame[#frame + 1] = (t3 - t0) * 1e3
    submit[#submit + 1] = (t1 - t0) * 1e3
    tick[#tick + 1] = (t2 - t1) * 1e3
    deliver[#deliver + 1] = (t3 - t2) * 1e3
  end
  if mode == "wire" then
    for k = 1, wired do
      checksum = checksum +
        crowd.hash_kept(wire_ids[k], kept, wire_first[k], wire_n[k])
    end
  elseif mode == "bytes" then
    for k = 1, wired do
      checksum = checksum + crowd.hash_bytes(wire_ids[k], wire_bytes[k])
      wire_bytes[k] = false
    end
  end
  wired = 0
  local resume = clock() + gap
  while gap > 0 and clock() < resume do end
end
world:close()

local function median(v)
  table.sort(v)
  local n = #v
  if n % 2 == 1 then return v[(n + 1) // 2] end
  return (v[n // 2] + v[n // 2 + 1]) / 2
end

print(string.format(
  "lua frame_ms_median %.3f submit %.3f tick %.3f deliver %.3f " ..
  "events/tick %.0f checksum %s",
  median(frame), median(submit), median(tick), median(deliver),
  events / head.ticks,
  (mode == "hash" or mode == "wire" or mode == "bytes") and string.format("%016x", checksum)
    or "none"))
