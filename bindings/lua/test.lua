-- test.lua: the Lua binding's tests, plain assertions.
--
--   LUA_CPATH='build/bindings/lua/?.so' lua5.4 bindings/lua/test.lua \
--       [build/aoi-bench [tmpdir]]
--
-- Without aoi-bench the crowd check (a 1,000-entity crowd replayed from
-- aoi-bench --dump-ops, its checksum compared with the C engine's) is
-- skipped.
local here = arg and arg[0] and arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local aoi = require "aoi"
local crowd = require "crowd"

local W, M = aoi.WATCHER, aoi.MARKER
local checks = 0

local function ok(cond, what)
  checks = checks + 1
  if not cond then error("check failed: " .. tostring(what), 2) end
end

local function eq(a, b, what)
  checks = checks + 1
  if a ~= b then
    error(string.format("%s: got %s, want %s", what, tostring(a),
                        tostring(b)), 2)
  end
end

-- Calls f(...) and checks that it raises an error starting with `prefix`.
local function raises(prefix, f, ...)
  local good, err = pcall(f, ...)
  checks = checks + 1
  if good then error("no error, want " .. prefix, 2) end
  if type(err) ~= "string" or err:sub(1, #prefix) ~= prefix then
    error(string.format("error %q, want %s...", tostring(err), prefix), 2)
  end
  return err
end

local function list(t) return table.concat(t, ",") end

-- Every event delivered now, as "watcher:kind:id" strings, sorted.
local KIND = {[aoi.LEAVE] = "leave", [aoi.ENTER] = "enter",
              [aoi.MOVE] = "move"}
local function collect(w)
  local out = {}
  w:deliver(function(watcher, _, n, ev)
    for i = 1, n do
      out[#out + 1] = string.format("%d:%s:%d", watcher, KIND[ev:kind(i)],
                                    ev:id(i))
    end
  end)
  table.sort(out)
  return list(out)
end

local function section(name) io.write(name, " ... ") io.flush() end
local function done() print("ok") end

-- ---- constants -------------------------------------------------------------
section("constants")
eq(aoi.EINVAL, -1, "EINVAL") eq(aoi.ENOMEM, -2, "ENOMEM")
eq(aoi.EEXIST, -3, "EEXIST") eq(aoi.ENOENT, -4, "ENOENT")
eq(aoi.ECOORD, -5, "ECOORD") eq(aoi.ERADIUS, -6, "ERADIUS")
eq(aoi.EFLAGS, -7, "EFLAGS") eq(aoi.ESYS, -8, "ESYS")
eq(aoi.EBUSY, -9, "EBUSY")
eq(aoi.WATCHER, 1, "WATCHER") eq(aoi.MARKER, 2, "MARKER")
eq(aoi.LEAVE, 0, "LEAVE") eq(aoi.ENTER, 1, "ENTER") eq(aoi.MOVE, 2, "MOVE")
eq(aoi.ALL_LAYERS, 0xffffffff, "ALL_LAYERS")
ok(aoi.version:match("^%d+%.%d+%.%d+$"), "version " .. aoi.version)
ok(aoi.strerror(aoi.ENOENT):match("^AOI_ENOENT: "), "strerror")
done()

-- ---- the life of a few entities ----------------------------------------------
section("operations and events")
do
  local w = aoi.new{run = "caller", max_radius = 50, min_x = 0, min_y = 0,
                    max_x = 100, max_y = 100}
  ok(tostring(w):match("^aoi.world"), "tostring")
  w:add(1, 0, 0, 10, W | M, 100)
  w:add{id = 2, x = 3, y = 0, radius = 0, flags = M, tag = 200}
  w:add{id = 3, x = 50, y = 50, radius = 5, flags = W | M, tag = 300,
        layers = 2, interest = 2}
  w:tick()
  local calls = 0
  w:deliver(function(watcher, tag, n, ev)
    calls = calls + 1
    eq(watcher, 1, "watcher") eq(tag, 100, "watcher tag")
    eq(n, 1, "n") eq(#ev, 1, "#ev")
    local id, kind, x, y, etag, tick = ev:get(1)
    eq(id, 2, "id") eq(kind, aoi.ENTER, "kind") eq(x, 3.0, "x")
    eq(y, 0.0, "y") eq(etag, 200, "tag") eq(tick, 1, "tick")
    eq(ev:id(1), 2, "ev:id") eq(ev:kind(1), aoi.ENTER, "ev:kind")
    eq(ev:x(1), 3.0, "ev:x") eq(ev:y(1), 0.0, "ev:y")
    eq(ev:tag(1), 200, "ev:tag") eq(ev:tick(1), 1, "ev:tick")
    local t = ev:table(1)
    eq(t.id, 2, "table.id") eq(t.kind, aoi.ENTER, "table.kind")
    eq(t.tag, 200, "table.tag")
    local b = ev:bytes()
    eq(#b, 32, "#ev:bytes()")
    local bid, btag, bx, by, bkind, btick = string.unpack("<I8I8ffI4I4", b)
    eq(bid, 2, "bytes id") eq(btag, 200, "bytes tag") eq(bx, 3.0, "bytes x")
    eq(by, 0.0, "bytes y") eq(bkind, aoi.ENTER, "bytes kind")
    eq(btick, 1, "bytes tick")
    ok(raises("bad argument", ev.id, ev, 2):find("event index out of range"),
       "ev:id(n + 1)")
    ok(raises("bad argument", ev.get, ev, 0):find("event index out of range"),
       "ev:get(0)")
  end)
  eq(calls, 1, "deliver calls")
  eq(collect(w), "", "outboxes emptied")
  eq(list(w:view(1)), "2", "view") -- not itself
  eq(list(w:watchers_of(2)), "1", "watchers_of")
  eq(list(w:query_circle(0, 0, 5)), "1,2", "query_circle")
  eq(list(w:query_circle(50, 50, 1, 1)), "", "query_circle other layer")
  eq(list(w:query_circle(50, 50, 1, 2)), "3", "query_circle mask")

  w:move(2, 4, 0)
  w:tick()
  eq(collect(w), "1:move:2", "move")
  w:set_tag(2, 201)
  w:move(2, 5, 0)
  w:tick()
  local tag
  w:deliver(function(_, _, _, ev) tag = ev:tag(1) end)
  eq(tag, 201, "set_tag")
  w:set_radius(1, 1)
  w:tick()
  eq(collect(w), "1:leave:2", "set_radius")
  w:set_radius(1, 10)
  w:set_layers(1, aoi.ALL_LAYERS, 1) -- watches layer 1 only
  w:set_layers(2, 4, 4)
  w:tick()
  eq(collect(w), "", "set_layers: another layer")
  w:set_layers(1, aoi.ALL_LAYERS, aoi.ALL_LAYERS)
  w:tick()
  eq(collect(w), "1:enter:2", "set_layers back")
  w:set_radius(1, 0)
  w:set_appeal(2, 20)
  w:tick()
  eq(collect(w), "", "appeal keeps it in view")
  w:set_radius(1, 10)
  w:add(4, 1, 0, 0, M)
  w:set_cap(1, 1) -- the nearest only
  w:tick()
  eq(list(w:view(1)), "4", "set_cap")
  eq(collect(w), "1:enter:4,1:leave:2", "set_cap events")
  w:remove(4)
  w:tick()
  eq(collect(w), "1:enter:2,1:leave:4", "remove")
  local s = w:stats()
  eq(s.tick, 9, "stats.tick") eq(s.entities, 3, "stats.entities")
  eq(s.watchers, 2, "stats.watchers") eq(s.segments, 1, "stats.segments")
  ok(s.tick_ns >= 0, "stats.tick_ns")
  w:close()
end
done()

-- ---- ids by bit pattern ------------------------------------------------------
section("64-bit ids")
do
  local w = aoi.new{run = "caller"}
  local big = {0, -1, math.mininteger, math.maxinteger}
  for _, id in ipairs(big) do w:add(id, 1, 1, 5, W | M, id) end
  w:tick()
  -- Ascending as uint64_t: math.ult orders them.
  eq(list(w:view(0)), list{math.maxinteger, math.mininteger, -1},
     "view, ids ascending as unsigned")
  table.sort(big)
  local seen = {}
  w:deliver(function(watcher, tag)
    eq(tag, watcher, "tag by bit pattern")
    seen[#seen + 1] = watcher
  end)
  table.sort(seen)
  eq(list(seen), list(big), "watchers by bit pattern")
  w:close()
end
done()

-- ---- errors ------------------------------------------------------------------
section("errors")
do
  local w = aoi.new{run = "caller", max_radius = 50}
  w:add(1, 0, 0, 10, W | M)
  raises("AOI_EEXIST: ", w.add, w, 1, 0, 0, 10, W)
  raises("AOI_ENOENT: ", w.move, w, 2, 0, 0)
  raises("AOI_ENOENT: ", w.remove, w, 2)
  raises("AOI_ENOENT: ", w.set_radius, w, 2, 1)
  raises("AOI_ENOENT: ", w.set_layers, w, 2, 1, 1)
  raises("AOI_ENOENT: ", w.set_appeal, w, 2, 1)
  raises("AOI_ENOENT: ", w.set_cap, w, 2, 1)
  raises("AOI_ENOENT: ", w.set_tag, w, 2, 1)
  raises("AOI_ENOENT: ", w.view, w, 2)
  raises("AOI_ENOENT: ", w.watchers_of, w, 2)
  raises("AOI_ECOORD: ", w.move, w, 1, 0 / 0, 0)
  raises("AOI_ECOORD: ", w.move, w, 1, 0, math.huge)
  raises("AOI_ECOORD: ", w.move, w, 1, 1e300, 0) -- beyond float
  raises("AOI_ECOORD: ", w.add, w, 2, 0 / 0, 0, 1, W)
  raises("AOI_ECOORD: ", w.query_circle, w, 0 / 0, 0, 1)
  raises("AOI_ERADIUS: ", w.add, w, 2, 0, 0, 51, W)
  raises("AOI_ERADIUS: ", w.add, w, 2, 0, 0, -1, W)
  raises("AOI_ERADIUS: ", w.add, w, 2, 0, 0, 0 / 0, W)
  raises("AOI_ERADIUS: ", w.set_radius, w, 1, 51)
  raises("AOI_ERADIUS: ", w.set_appeal, w, 1, -1)
  raises("AOI_ERADIUS: ", w.query_circle, w, 0, 0, 51)
  raises("AOI_EFLAGS: ", w.add, w, 2, 0, 0, 1, 0)
  raises("AOI_EFLAGS: ", w.add, w, 2, 0, 0, 1, 4)
  raises("bad argument #3 to '?' (not in 0 .. 0xffffffff)", w.set_layers, w, 1, -1, 1)
  raises("missing field 'id'", w.add, w, {x = 0, y = 0, radius = 1,
                                          flags = W})
  raises("bad argument", w.move, w, "x", 0, 0)
  raises("AOI_EINVAL: unknown option 'radius'", aoi.new, {radius = 5})
  raises("AOI_EINVAL: ", aoi.new, {run = "caller", threads = 100000})
  raises("AOI_EINVAL: ", aoi.new, {run = "caller", max_radius = -1})
  raises("bad argument", aoi.new, {shape = "hexagon"})
  -- move_many: a bad element submits nothing; a refused move raises
  -- with the ones before it standing.
  w:add(2, 0, 0, 10, W | M)
  raises("move_many: element 2 is not a number", w.move_many, w,
         {1, 2}, {5, "x"}, {5, 5})
  raises("AOI_ENOENT: no such entity (move_many: ids[2] = 9; 1 moves stood)",
         w.move_many, w, {1, 9, 2}, {5, 5, 5}, {5, 5, 5})
  w:tick()
  eq(list(w:query_circle(5, 5, 0.5)), "1", "moves before the refused one")
  -- Failed calls changed nothing: the world still works.
  w:move(2, 5, 5)
  w:tick()
  eq(list(w:query_circle(5, 5, 0.5)), "1,2", "usable after errors")
  -- Calls into the world from its deliver callback are refused.
  w:move(1, 6, 6)
  w:tick()
  local inner = {}
  w:deliver(function()
    inner[#inner + 1] = select(2, pcall(w.move, w, 1, 0, 0))
    inner[#inner + 1] = select(2, pcall(w.tick, w))
    inner[#inner + 1] = select(2, pcall(w.close, w))
    inner[#inner + 1] = select(2, pcall(w.deliver, w, print))
  end)
  ok(#inner == 8, "callbacks ran")
  for _, e in ipairs(inner) do
    ok(e:match("^AOI_EBUSY: "), "inside deliver: " .. e)
  end
  -- The event reader is only valid inside its callback.
  local kept
  w:move(1, 7, 7)
  w:tick()
  w:deliver(function(_, _, _, ev) kept = ev end)
  raises("aoi: events read outside", kept.id, kept, 1)
  eq(#kept, 0, "#ev after the callback")
  -- Closed worlds.
  w:close()
  ok(w:closed(), "closed")
  w:close() -- twice is fine
  raises("AOI_EINVAL: the world is closed", w.tick, w)
  raises("AOI_EINVAL: the world is closed", w.move, w, 1, 0, 0)
  raises("AOI_EINVAL: the world is closed", w.add, w, 5, 0, 0, 1, W)
  raises("AOI_EINVAL: the world is closed", w.deliver, w, print)
  raises("AOI_EINVAL: the world is closed", w.stats, w)
  raises("AOI_EINVAL: the world is closed", w.view, w, 1)
  eq(tostring(w), "aoi.world (closed)", "tostring closed")
end
done()

-- ---- a callback that raises ----------------------------------------------------
section("erroring callback")
-- On one segment, and on two lanes' segments (watchers in two shards).
for _, config in ipairs{{run = "caller"},
                        {threads = 2, shards = 2, min_x = 0, max_x = 11}} do
  local w = aoi.new(config)
  eq(w:stats().segments, config.threads or 1, "segments")
  for id = 1, 10 do w:add(id, id, 0, 100, W | M) end
  w:tick()
  local called, events = {}, 0
  local thrown = {"a table error"}
  local good, err = pcall(w.deliver, w, function(watcher, _, n)
    called[#called + 1] = watcher
    events = events + n
    if watcher == 3 or watcher == 7 then
      error(watcher == 3 and thrown or "second")
    end
  end)
  ok(not good, "deliver raised")
  eq(err, thrown, "the first error, as raised")
  eq(#called, 10, "every watcher still delivered")
  eq(events, 90, "no event lost") -- each sees the 9 others
  eq(collect(w), "", "nothing left behind")
  -- The world is usable: ticks and deliveries go on.
  w:move(1, 2, 0)
  w:tick()
  local after = 0
  w:deliver(function(_, _, n) after = after + n end)
  eq(after, 9, "events after the error")
  -- A string error keeps its position.
  w:move(1, 3, 0)
  w:tick()
  local err2 = raises("", w.deliver, w, function() error("boom") end)
  ok(err2:match("boom$"), "string error " .. err2)
  w:close()
end
done()

-- ---- lifetime: __close and __gc ----------------------------------------------
section("pending and drain")
do
  local w = aoi.new{run = "caller"}
  for id = 1, 3 do w:add(id, id, 0, 10, W | M, id * 10) end
  w:tick()
  eq(list(w:pending()), "1,2,3", "pending")
  local got
  w:drain(2, function(n, ev)
    eq(n, 2, "drain n") eq(#ev, 2, "drain #ev")
    got = ev:id(1) .. "," .. ev:id(2)
    raises("AOI_EBUSY: ", w.tick, w)
    raises("AOI_EBUSY: ", w.remove, w, 2)
    raises("AOI_EBUSY: ", w.close, w)
  end)
  eq(got, "1,3", "drained events")
  eq(list(w:pending()), "1,3", "pending after drain")
  local n0
  w:drain(2, function(n) n0 = n end)
  eq(n0, 0, "drain of an empty outbox")
  raises("AOI_ENOENT: ", w.drain, w, 9, print)
  raises("bad argument", w.drain, w, 1)
  local err = raises("", w.drain, w, 1, function() error("in drain") end)
  ok(err:match("in drain$"), "drain raises fn's error")
  eq(collect(w), "3:enter:1,3:enter:2", "deliver: what was not drained")
  eq(list(w:pending()), "", "nothing pending")
  w:close()
end
done()

section("configuration")
do
  -- move_events = false: no move events.
  local w = aoi.new{run = "caller", move_events = false, shape = "square",
                    hysteresis = 2, max_radius = 10}
  w:add(1, 0, 0, 5, W)
  w:add(2, 4.5, 4.5, 0, M) -- inside the square, outside the circle
  w:tick()
  eq(collect(w), "1:enter:2", "square view")
  w:move(2, 4, 4)
  w:tick()
  eq(collect(w), "", "move_events = false")
  w:move(2, 6, 0) -- beyond 5, within 5 + hysteresis
  w:tick()
  eq(collect(w), "", "hysteresis keeps it")
  w:move(2, 7.5, 0)
  w:tick()
  eq(collect(w), "1:leave:2", "beyond the hysteresis")
  w:close()
  w = aoi.new{run = "caller", shape = "cells", cell_size = 10,
              move_bands = {{distance = 3, period = 2}}, measure_cpu = 1,
              rebalance_interval = 0}
  w:add(1, 1, 1, 5, W)
  w:add(2, 8, 8, 0, M) -- the same cell
  w:tick()
  eq(collect(w), "1:enter:2", "cells view")
  local moves = 0
  for t = 1, 4 do
    w:move(2, 8, 8 + t / 4) -- beyond the band's 3, in the same cell
    w:tick()
    w:deliver(function(_, _, n) moves = moves + n end)
  end
  eq(moves, 2, "move band: every second tick")
  w:close()
  raises("AOI_EINVAL: ", aoi.new, {run = "caller", shape = "cells",
                                   cell_size = 0})
  raises("AOI_EINVAL: at most 8 move_bands", aoi.new,
         {move_bands = {{}, {}, {}, {}, {}, {}, {}, {}, {}}})
  raises("bad argument", aoi.new, {run = "pool"})
end
done()

-- ---- parallel delivery and kept events ---------------------------------------
-- Every event of a world, keyed "watcher:kind:id:x:y:tag:tick", sorted;
-- also checks ev:keep() against ev:get and ev:bytes for every watcher.
local function everything(w)
  local out, seen = {}, {}
  local kept = w:kept()
  w:deliver(function(watcher, tag, n, ev)
    ok(not seen[watcher], "one call a watcher")
    seen[watcher] = true
    local k = ev:keep()
    eq(ev:keep(), k, "keep twice")
    eq(kept:bytes(k, n), ev:bytes(), "kept:bytes")
    for i = 1, n do
      local a = table.pack(ev:get(i))
      local b = table.pack(kept:get(k + i - 1))
      for j = 1, 6 do eq(b[j], a[j], "kept:get") end
      out[#out + 1] = string.format("%d:%d:%d:%s:%s:%d:%d:%d", watcher, a[2],
                                    a[1], a[3], a[4], a[5], a[6], tag)
    end
  end)
  table.sort(out)
  return list(out)
end

-- A crowd of `n` on a 40 x 40 square, each in view of its neighbours.
local function populate(w, n)
  for id = 1, n do
    w:add(id, (id * 7) % 40, (id * 13) % 40, 6, W | M, 1000 + id)
  end
end
local function stir(w, n, t)
  for id = 1, n, 3 do w:move(id, (id * 7 + t) % 40, (id * 13) % 40) end
end

section("parallel delivery and kept events")
do
  -- The same operations on one segment, on two caller lanes (one thread),
  -- and on two and four lanes of their own (copied out by helpers): the
  -- same events, and ev:keep reads them all back.
  local configs = {{run = "caller"}, {run = "caller", threads = 2, shards = 4},
                   {threads = 2, shards = 4}, {threads = 4, shards = 8}}
  local worlds = {}
  for i, c in ipairs(configs) do
    c.min_x, c.min_y, c.max_x, c.max_y, c.max_radius = 0, 0, 40, 40, 10
    worlds[i] = aoi.new(c)
    populate(worlds[i], 300)
  end
  eq(worlds[3]:stats().segments, 2, "segments")
  for t = 1, 4 do
    local want
    for i, w in ipairs(worlds) do
      stir(w, 300, t)
      w:tick()
      local got = everything(w)
      if i == 1 then want = got else eq(got, want, "events, config " .. i) end
    end
    ok(#want > 0, "events")
  end
  -- The kept events stay until the next deliver, then are gone.
  local w = worlds[3]
  local kept, first, n = w:kept(), nil, nil
  eq(w:kept(), kept, "one kept object a world")
  stir(w, 300, 9)
  w:tick()
  w:deliver(function(_, _, count, ev)
    if not first then first, n = ev:keep(), count end
  end)
  local id = kept:get(first)
  ok(math.type(id) == "integer", "kept after the callback")
  eq(#kept:bytes(first, n), 32 * n, "kept bytes")
  eq(kept:bytes(first, 0), "", "no bytes")
  raises("aoi: kept events", kept.get, kept, 0)
  raises("aoi: kept events", kept.bytes, kept, first, 1 << 30)
  w:tick()
  w:deliver(function() end) -- nothing to deliver: nothing kept
  raises("aoi: kept events", kept.get, kept, first)
  -- Buffers: kept across deliveries, no growth once warm.
  local sizes = {}
  for t = 1, 6 do
    stir(w, 300, t)
    w:tick()
    w:deliver(function(_, _, _, ev) ev:keep() end)
    sizes[t] = w:stats().buffer_bytes
  end
  ok(sizes[3] > 0, "buffers held")
  eq(sizes[6], sizes[3], "no buffer growth once warm")
  -- drain's events can be kept too (copied then).
  stir(w, 300, 1)
  w:tick()
  local dk, dn
  w:drain(1, function(count, ev) dn, dk = count, ev:keep() end)
  ok(dn > 0, "drained")
  ok(select(1, kept:get(dk)) ~= nil, "drained and kept")
  w:deliver(function() end)
  -- ev:keep outside the callback raises; a closed world's kept too.
  local saved
  stir(w, 300, 2)
  w:tick()
  w:deliver(function(_, _, _, ev) saved = ev end)
  raises("aoi: events read outside", saved.keep, saved)
  for _, x in ipairs(worlds) do x:close() end
  raises("AOI_EINVAL: the world is closed", kept.get, kept, 1)
  raises("AOI_EINVAL: the world is closed", w.kept, w)
end
done()

section("delivery buffers out of memory")
-- A buffer that cannot grow loses nothing: those watchers' events are
-- handed to fn in place, by the host thread, also a helper's.
for _, c in ipairs{{threads = 2, shards = 4}, {threads = 4, shards = 8},
                   {run = "caller", threads = 2}} do
  c.min_x, c.min_y, c.max_x, c.max_y, c.max_radius = 0, 0, 40, 40, 10
  local a, b = aoi.new(c), aoi.new{run = "caller", max_radius = 10}
  populate(a, 300)
  populate(b, 300)
  for _, fails in ipairs{1000, 1, 3} do
    stir(a, 300, fails)
    stir(b, 300, fails)
    a:tick()
    b:tick()
    local want = collect(b)
    aoi._fail_allocs(fails)
    local got, busy = {}, 0
    local kept = a:kept()
    a:deliver(function(watcher, _, n, ev)
      local good, err = pcall(kept.get, kept, 1)
      if not good and err:match("^AOI_EBUSY: ") then busy = busy + 1 end
      for i = 1, n do
        got[#got + 1] = string.format("%d:%s:%d", watcher, KIND[ev:kind(i)],
                                      ev:id(i))
      end
    end)
    aoi._fail_allocs(0)
    table.sort(got)
    eq(list(got), want, "every event once, " .. fails .. " growths failing")
    if fails == 1000 and c.run ~= "caller" then
      ok(busy > 0, "kept is busy while the copying runs")
    end
  end
  -- ev:keep that cannot copy raises AOI_ENOMEM; the other watchers are
  -- still delivered, and what was handed over is gone.
  stir(a, 300, 7)
  stir(b, 300, 7)
  a:tick()
  b:tick()
  local want = 0
  b:deliver(function() want = want + 1 end)
  aoi._fail_allocs(1000)
  local calls, kept = 0, 0
  local good, err = pcall(a.deliver, a, function(_, _, _, ev)
    calls = calls + 1
    ev:keep()
    kept = kept + 1
  end)
  aoi._fail_allocs(0)
  ok(want > 0, "events to deliver")
  ok(not good and err:match("AOI_ENOMEM: out of memory %(keep%)$"),
     "keep without memory: " ..
     tostring(err))
  ok(calls > kept, "some keep failed")
  eq(calls, want, "every watcher called")
  eq(collect(a), "", "nothing left behind")
  a:close()
  b:close()
end
done()

section("lifetime")
do
  local kept
  do
    local w <close> = aoi.new{run = "caller"}
    w:add(1, 0, 0, 1, W)
    kept = w
  end
  ok(kept:closed(), "__close closed it")
  for _ = 1, 50 do
    local w = aoi.new{run = "own", threads = 2}
    w:add(1, 0, 0, 1, W)
    w:tick()
    w:deliver(print) -- starts the delivery helper, which __gc joins
  end
  collectgarbage()
  collectgarbage()
  ok(true, "__gc freed the worlds")
end
done()

-- ---- no Lua allocation on the hot path --------------------------------------
section("no allocation once warm")
do
  local w = aoi.new{run = "caller", max_radius = 20}
  local ids, xs, ys = {}, {}, {}
  for id = 1, 200 do
    ids[id], xs[id], ys[id] = id, (id % 20) * 3.0, (id // 20) * 3.0
    w:add(id, xs[id], ys[id], 10, W | M, id)
  end
  local sum = 0
  local function read(watcher, tag, n, ev)
    for i = 1, n do
      local id, kind, x, y, etag, tick = ev:get(i)
      sum = sum + id + kind + x + y + etag + tick + ev:id(i) + ev:x(i)
    end
    sum = sum + watcher + tag + #ev
  end
  local function frame(step)
    for i = 1, #ids do xs[i] = xs[i] + step end
    w:move_many(ids, xs, ys)
    w:tick()
    w:deliver(read)
  end
  -- The heap's growth in each of 8 frames, the collector stopped; the
  -- first frames warm up the move buffer and Lua's stack.
  local growth = {0, 0, 0, 0, 0, 0, 0, 0}
  collectgarbage()
  collectgarbage("stop")
  for t = 1, 8 do
    local before = collectgarbage("count")
    frame(t % 2 == 0 and 0.5 or -0.5)
    growth[t] = (collectgarbage("count") - before) * 1024
  end
  collectgarbage("restart")
  ok(sum > 0, "events read")
  eq(growth[4] + growth[5] + growth[6] + growth[7] + growth[8], 0,
     "Lua heap growth in frames 4-8 (bytes)")
  w:close()
end
done()

-- ---- a crowd against the C engine --------------------------------------------
local bench, tmp = arg[1], arg[2] or os.getenv("TMPDIR") or "/tmp"
if bench and bench ~= "" then
  section("1,000-entity crowd vs aoi-bench")
  local path = string.format("%s/aoi-lua-test-%d.ops", tmp, os.time())
  local want = crowd.run_bench(bench,
    "--entities 1000 --ticks 10 --threads 1", path)
  local head, ticks = crowd.read_ops(path)
  os.remove(path)
  eq(head.entities, 1000, "ops entities") eq(head.ticks, 11, "ops ticks")
  -- Two lanes and four shards: events are the same for every layout,
  -- and the binding delivers every segment.
  local w = aoi.new{threads = 2, shards = 4, min_x = 0, min_y = 0,
                    max_x = head.side, max_y = head.side,
                    max_radius = head.max_radius}
  eq(w:stats().segments, 2, "segments")
  local checksum, hash = crowd.SEED, crowd.hash_outbox
  local batch = {{}, {}, {}}
  local function fold(watcher, _, n, ev)
    checksum = checksum + hash(watcher, n, ev)
  end
  for t = 1, head.ticks do
    crowd.submit(w, ticks[t], batch)
    w:tick()
    w:deliver(fold)
  end
  w:close()
  eq(string.format("%016x", checksum), want, "checksum")
  print("ok (checksum " .. want .. ")")
else
  print("1,000-entity crowd vs aoi-bench ... skipped (no aoi-bench given)")
end

-- float_bits against string.pack, on a few awkward float values.
section("float_bits")
for _, v in ipairs{0.0, -0.0, 1.0, -2.5, 94.7416, 1e-40, 3e38, 1e-45,
                   1.1754943508222875e-38, 0.1} do
  local x = string.unpack("<f", string.pack("<f", v)) -- a float value
  local want = string.unpack("<I4", string.pack("<f", x))
  eq(crowd.float_bits(x), want, "float_bits " .. x)
end
done()

print(string.format("all %d checks passed", checks))
