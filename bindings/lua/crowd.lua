-- crowd.lua: what test.lua and bench.lua share: reading the operations
-- file of `aoi-bench --dump-ops` (its format is in the comment above
-- dump_open in bench/aoi-bench.c), replaying a tick of it through the
-- binding, and aoi-bench's event checksum (bench/bench.h), in plain Lua
-- 5.4 integers, which wrap like uint64_t.
local crowd = {}

crowd.SEED = -3750763034362895579 -- 0xcbf29ce484222325 as a Lua integer
local PRIME = 0x100000001b3

local function hash_mix(h, v)
  h = (h ~ v) * PRIME
  return h ~ (h >> 29)
end
crowd.hash_mix = hash_mix

-- The IEEE binary32 bits of a number that is a float value (the binding
-- hands out floats widened to double, exactly), without allocating.
local floor, log = math.floor, math.log
local pow2 = {}
for e = -150, 150 do pow2[e] = 2.0 ^ e end
local function float_bits(x)
  if x == 0 then
    return 1 / x < 0 and 0x80000000 or 0
  end
  local sign = 0
  if x < 0 then
    sign, x = 0x80000000, -x
  end
  local e = floor(log(x, 2))
  if pow2[e] > x then -- log rounded up across a power of two
    e = e - 1
  elseif pow2[e + 1] <= x then
    e = e + 1
  end
  if e < -126 then -- subnormal
    return sign | floor(x * pow2[149])
  end
  return sign | ((e + 127) << 23) | floor((x * pow2[-e] - 1) * 8388608)
end
crowd.float_bits = float_bits

-- hash_outbox(SEED, watcher, events, n) of bench.h, over the binding's
-- event reader.
function crowd.hash_outbox(watcher, n, ev)
  local h = hash_mix(hash_mix(crowd.SEED, watcher), n)
  for i = 1, n do
    local id, kind, x, y, _, tick = ev:get(i)
    h = hash_mix(h, id)
    h = hash_mix(h, (kind << 32) | tick)
    h = hash_mix(h, (float_bits(x) << 32) | float_bits(y))
  end
  return h
end

-- The same hash over kept events first .. first + n - 1 (w:kept()).
function crowd.hash_kept(watcher, kept, first, n)
  local h = hash_mix(hash_mix(crowd.SEED, watcher), n)
  local get = kept.get
  for k = first, first + n - 1 do
    local id, kind, x, y, _, tick = get(kept, k)
    h = hash_mix(h, id)
    h = hash_mix(h, (kind << 32) | tick)
    h = hash_mix(h, (float_bits(x) << 32) | float_bits(y))
  end
  return h
end

-- The same hash over ev:bytes()'s string of n events (the floats' bits
-- read as they lie).
function crowd.hash_bytes(watcher, s)
  local n = #s // 32
  local h = hash_mix(hash_mix(crowd.SEED, watcher), n)
  local pos = 1
  for _ = 1, n do
    local id, _, xb, yb, kind, tick
    id, _, xb, yb, kind, tick, pos = string.unpack("<I8I8I4I4I4I4", s, pos)
    h = hash_mix(h, id)
    h = hash_mix(h, (kind << 32) | tick)
    h = hash_mix(h, (xb << 32) | yb)
  end
  return h
end

-- Reads an operations file into plain arrays: returns a header table
-- {entities, ticks, side, max_radius} and the ticks, each
-- {n, ids, xs, ys, radii, kinds, flags}.
function crowd.read_ops(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("a")
  f:close()
  assert(data:sub(1, 8) == "AOIOPS01", path .. ": not an AOIOPS01 file")
  local entities, ticks, side, max_radius, pos =
    string.unpack("<I4I4ff", data, 9)
  local out = {}
  for t = 1, ticks do
    local n
    n, pos = string.unpack("<I4", data, pos)
    local tick = {n = n, ids = {}, xs = {}, ys = {}, radii = {}, kinds = {},
                  flags = {}}
    for i = 1, n do
      tick.ids[i], tick.xs[i], tick.ys[i], tick.radii[i], tick.kinds[i],
        tick.flags[i], pos = string.unpack("<i8fffBBxx", data, pos)
    end
    out[t] = tick
  end
  assert(pos == #data + 1, path .. ": trailing bytes")
  return {entities = entities, ticks = ticks, side = side,
          max_radius = max_radius}, out
end

-- Submits one tick of operations as aoi-bench does (tag = id, every
-- layer), each run of moves through one move_many. `batch` is three
-- reused arrays {ids, xs, ys}.
function crowd.submit(world, tick, batch)
  local ids, xs, ys, kinds = tick.ids, tick.xs, tick.ys, tick.kinds
  local bids, bxs, bys = batch[1], batch[2], batch[3]
  local i, n = 1, tick.n
  while i <= n do
    local kind = kinds[i]
    if kind == 1 then
      local run = 0
      while i <= n and kinds[i] == 1 do
        run = run + 1
        bids[run], bxs[run], bys[run] = ids[i], xs[i], ys[i]
        i = i + 1
      end
      world:move_many(bids, bxs, bys, run)
    else
      if kind == 0 then
        world:add(ids[i], xs[i], ys[i], tick.radii[i], tick.flags[i], ids[i])
      else
        world:remove(ids[i])
      end
      i = i + 1
    end
  end
end

-- Runs aoi-bench with `args` and --dump-ops path; returns its JSON
-- output's checksum (16 hex digits) and frame_ms_median.
function crowd.run_bench(bench, args, path)
  local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
  local cmd = string.format("%s %s --no-baseline --json --dump-ops %s",
                            quote(bench), args, quote(path))
  local p = assert(io.popen(cmd))
  local json = p:read("a")
  assert(p:close(), cmd .. " failed")
  local checksum = assert(json:match('"checksum":"(%x+)"'), json)
  local frame = tonumber(json:match('"frame_ms_median":([%d.e+-]+)'))
  return checksum, frame
end

return crowd
