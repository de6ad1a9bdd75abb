/*
 * laoi.c: the Lua 5.4 module "aoi", a binding of the public API only.
 *
 * A world is a full userdata (struct lworld) holding the aoi_world, a
 * move buffer that aoi_move_many reuses, a query buffer, the delivery
 * buffers (below, "kept events"), and as its user values the event
 * reader and the kept view: one userdata each per world, reused for
 * every watcher of every delivery, so that delivering allocates nothing
 * in Lua's heap per event or per watcher. The reader points at the
 * watcher's events only while the Lua callback runs; outside it, every
 * access raises an error instead of reading freed memory.
 *
 * Delivery and Lua errors: aoi_deliver must not be left by a longjmp (it
 * would leave the world's delivery state claimed for good), so the C
 * delivery callback runs the Lua function under lua_pcall and pushes
 * nothing that may raise. The first error is kept, the remaining
 * watchers are still delivered (each under its own lua_pcall), and the
 * error is raised again once aoi_deliver has returned: no watcher's
 * events are lost and the world stays usable.
 *
 * Ids and tags are uint64_t; a Lua 5.4 integer holds them by bit pattern
 * (ids above 2^63 - 1 read as negative integers). Errors from the library
 * are raised as strings starting with the code's name ("AOI_ENOENT: ...").
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_sigmask */

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "aoi.h"

#define WORLD_META "aoi.world"
#define READER_META "aoi.events"
#define KEPT_META "aoi.kept"

#if defined(__GNUC__)
#define LAOI_EXPORT __attribute__((visibility("default")))
#else
#define LAOI_EXPORT
#endif

LAOI_EXPORT int luaopen_aoi(lua_State *L);

struct lcrew;

typedef struct lrecord {
  uint64_t watcher, tag;
  size_t first, count; /* in the buffer's events */
} lrecord;

/* Events copied out of the engine, kept until the next deliver: one
   buffer a delivery segment, and a last one for ev:keep's copies. */
typedef struct lbuf {
  aoi_event *events;
  size_t used, room;
  lrecord *records;
  size_t records_used, records_room;
  size_t base; /* its first event's index in the kept view, less 1 */
} lbuf;

typedef struct lworld {
  aoi_world *world;        /* NULL once closed */
  struct lcrew *crew;      /* the delivery helpers, once started */
  int own;                 /* run = "own": may start delivery helpers */
  lbuf *bufs;              /* segments + 1 of them, once needed */
  unsigned nbufs;
  int copying;             /* the helpers are filling the buffers */
  aoi_move_op *moves;      /* move_many's buffer, reused */
  size_t moves_room;
  uint64_t *ids;           /* the queries' buffer, reused */
  size_t ids_room;
  int delivering;          /* a deliver or drain callback may run: every
                              method refuses with AOI_EBUSY */
} lworld;

typedef struct lreader {
  const aoi_event *events; /* borrowed, valid during the callback only */
  size_t count;
  lworld *lw;
  size_t kept;             /* the events' index in the kept view, or 0 */
} lreader;

/* State of one deliver call, handed to the C delivery callback. The Lua
   function, the reader and the first error sit at fixed stack slots. */
typedef struct ldelivery {
  lua_State *L;
  lreader *reader;
  int fn, reader_slot, error_slot;
  int failed;
} ldelivery;

/* ---- helpers ------------------------------------------------------------ */

/* Raises "AOI_E...: meaning (what)". */
static int raise_code(lua_State *L, int rc, const char *what)
{
  return luaL_error(L, "%s (%s)", aoi_strerror(rc), what);
}

static void check_rc(lua_State *L, int rc, const char *what)
{
  if (rc != 0)
    raise_code(L, rc, what);
}

static lworld *check_open(lua_State *L, int index)
{
  lworld *lw = luaL_checkudata(L, index, WORLD_META);
  if (lw->world == NULL)
    luaL_error(L, "AOI_EINVAL: the world is closed");
  /* Rule 4 of aoi.h, kept here too: aoi_deliver refuses such calls
     itself, but aoi_drain does not, and a tick or remove would free the
     events its callback is reading. */
  if (lw->delivering)
    luaL_error(L, "AOI_EBUSY: the world is delivering "
                  "(a call from its deliver or drain callback)");
  return lw;
}

static uint64_t check_id(lua_State *L, int index)
{
  return (uint64_t)luaL_checkinteger(L, index);
}

static uint32_t check_u32(lua_State *L, int index)
{
  lua_Integer v = luaL_checkinteger(L, index);
  luaL_argcheck(L, v >= 0 && v <= (lua_Integer)UINT32_MAX, index,
                "not in 0 .. 0xffffffff");
  return (uint32_t)v;
}

static uint32_t opt_u32(lua_State *L, int index, uint32_t def)
{
  return lua_isnoneornil(L, index) ? def : check_u32(L, index);
}

/* A number as the library's float; values beyond float's range become
   infinities, which the library refuses (AOI_ECOORD, AOI_ERADIUS). */
static float to_float(lua_Number n)
{
  if (n > 3.4028234663852886e38)
    return INFINITY;
  if (n < -3.4028234663852886e38)
    return -INFINITY;
  return (float)n;
}

static float check_float(lua_State *L, int index)
{
  return to_float(luaL_checknumber(L, index));
}

/* Grows the query buffer to `room` ids; raises on failure. */
static void ids_reserve(lua_State *L, lworld *lw, size_t room)
{
  if (room <= lw->ids_room)
    return;
  uint64_t *p = realloc(lw->ids, room * sizeof(*p));
  if (p == NULL)
    raise_code(L, AOI_ENOMEM, "query buffer");
  lw->ids = p;
  lw->ids_room = room;
}

static void push_ids(lua_State *L, const uint64_t *ids, size_t count)
{
  lua_createtable(L, (int)count, 0);
  for (size_t i = 0; i < count; i++) {
    lua_pushinteger(L, (lua_Integer)ids[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* ---- aoi.new -------------------------------------------------------------- */

static float field_float(lua_State *L, int t, const char *key, float def)
{
  float v = def;
  if (lua_getfield(L, t, key) != LUA_TNIL) {
    if (!lua_isnumber(L, -1))
      luaL_error(L, "AOI_EINVAL: option '%s' must be a number", key);
    v = to_float(lua_tonumber(L, -1));
  }
  lua_pop(L, 1);
  return v;
}

static unsigned field_unsigned(lua_State *L, int t, const char *key,
                               unsigned def)
{
  unsigned v = def;
  if (lua_getfield(L, t, key) != LUA_TNIL) {
    int ok;
    lua_Integer i = lua_tointegerx(L, -1, &ok);
    if (!ok || i < 0 || i > (lua_Integer)UINT32_MAX)
      luaL_error(L, "AOI_EINVAL: option '%s' must be an integer >= 0", key);
    v = (unsigned)i;
  }
  lua_pop(L, 1);
  return v;
}

static const char *const config_keys[] = {
    "threads", "shards", "min_x", "min_y", "max_x", "max_y", "max_radius",
    "hysteresis", "move_events", "shape", "cell_size", "rebalance_interval",
    "move_bands", "measure_cpu", "run", NULL};

static void read_config(lua_State *L, int t, aoi_config *c)
{
  /* Unknown keys are refused: a misspelt option would otherwise be a
     silent default. */
  lua_pushnil(L);
  while (lua_next(L, t) != 0) {
    int known = 0;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (int i = 0; config_keys[i] != NULL && !known; i++)
        known = strcmp(lua_tostring(L, -2), config_keys[i]) == 0;
    if (!known)
      luaL_error(L, "AOI_EINVAL: unknown option '%s'",
                 luaL_tolstring(L, -2, NULL));
    lua_pop(L, 1);
  }
  c->threads = field_unsigned(L, t, "threads", c->threads);
  c->shards = field_unsigned(L, t, "shards", c->shards);
  c->min_x = field_float(L, t, "min_x", c->min_x);
  c->min_y = field_float(L, t, "min_y", c->min_y);
  c->max_x = field_float(L, t, "max_x", c->max_x);
  c->max_y = field_float(L, t, "max_y", c->max_y);
  c->max_radius = field_float(L, t, "max_radius", c->max_radius);
  c->hysteresis = field_float(L, t, "hysteresis", c->hysteresis);
  c->cell_size = field_float(L, t, "cell_size", c->cell_size);
  c->rebalance_interval =
      field_unsigned(L, t, "rebalance_interval", c->rebalance_interval);
  c->measure_cpu = field_unsigned(L, t, "measure_cpu", c->measure_cpu);
  if (lua_getfield(L, t, "move_events") != LUA_TNIL)
    c->move_events = lua_isboolean(L, -1)
                         ? lua_toboolean(L, -1)
                         : (int)field_unsigned(L, t, "move_events", 1);
  lua_pop(L, 1);
  if (lua_getfield(L, t, "shape") != LUA_TNIL) {
    static const char *const shapes[] = {"circle", "square", "cells", NULL};
    c->shape = (aoi_shape)luaL_checkoption(L, -1, NULL, shapes);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, t, "run") != LUA_TNIL) {
    static const char *const runs[] = {"own", "caller", NULL};
    c->run = luaL_checkoption(L, -1, NULL, runs) == 0 ? AOI_RUN_OWN
                                                      : AOI_RUN_CALLER;
  }
  lua_pop(L, 1);
  if (lua_getfield(L, t, "move_bands") != LUA_TNIL) {
    luaL_checktype(L, -1, LUA_TTABLE);
    int bands = lua_gettop(L);
    lua_Integer n = luaL_len(L, bands);
    if (n > AOI_MAX_MOVE_BANDS)
      luaL_error(L, "AOI_EINVAL: at most %d move_bands", AOI_MAX_MOVE_BANDS);
    for (lua_Integer i = 1; i <= n; i++) {
      if (lua_rawgeti(L, bands, i) != LUA_TTABLE)
        luaL_error(L, "AOI_EINVAL: move_bands[%d] must be a table",
                   (int)i);
      int band = lua_gettop(L);
      c->move_bands[i - 1].distance = field_float(L, band, "distance", 0);
      c->move_bands[i - 1].period = field_unsigned(L, band, "period", 1);
      lua_pop(L, 1);
    }
    c->move_band_count = (unsigned)n;
  }
  lua_pop(L, 1);
}

static int l_new(lua_State *L)
{
  aoi_config config;
  aoi_config_default(&config);
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TTABLE);
    read_config(L, 1, &config);
  }
  lworld *lw = lua_newuserdatauv(L, sizeof(*lw), 2);
  memset(lw, 0, sizeof(*lw));
  luaL_setmetatable(L, WORLD_META);
  lreader *reader = lua_newuserdatauv(L, sizeof(*reader), 0);
  reader->events = NULL;
  reader->count = 0;
  reader->lw = lw;
  reader->kept = 0;
  luaL_setmetatable(L, READER_META);
  lua_setiuservalue(L, -2, 1);
  lworld **view = lua_newuserdatauv(L, sizeof(*view), 1);
  *view = lw;
  luaL_setmetatable(L, KEPT_META);
  lua_pushvalue(L, -2);
  lua_setiuservalue(L, -2, 1); /* the view keeps its world alive */
  lua_setiuservalue(L, -2, 2);
  lw->own = config.run == AOI_RUN_OWN;
  check_rc(L, aoi_create(&config, &lw->world), "new");
  return 1;
}

/* ---- lifetime ------------------------------------------------------------- */

static void crew_free(struct lcrew *c);
static void bufs_free(lworld *lw);

static void world_free(lworld *lw)
{
  crew_free(lw->crew); /* before the world its helpers deliver */
  lw->crew = NULL;
  bufs_free(lw);
  aoi_destroy(lw->world);
  lw->world = NULL;
  free(lw->moves);
  lw->moves = NULL;
  lw->moves_room = 0;
  free(lw->ids);
  lw->ids = NULL;
  lw->ids_room = 0;
}

static int l_close(lua_State *L)
{
  lworld *lw = luaL_checkudata(L, 1, WORLD_META);
  if (lw->delivering)
    return luaL_error(L, "AOI_EBUSY: the world is delivering "
                         "(a call from its deliver or drain callback)");
  world_free(lw);
  return 0;
}

static int l_gc(lua_State *L)
{
  lworld *lw = luaL_checkudata(L, 1, WORLD_META);
  world_free(lw);
  return 0;
}

static int l_closed(lua_State *L)
{
  lworld *lw = luaL_checkudata(L, 1, WORLD_META);
  lua_pushboolean(L, lw->world == NULL);
  return 1;
}

static int l_tostring(lua_State *L)
{
  lworld *lw = luaL_checkudata(L, 1, WORLD_META);
  if (lw->world == NULL)
    lua_pushstring(L, "aoi.world (closed)");
  else
    lua_pushfstring(L, "aoi.world (%p)", (void *)lw->world);
  return 1;
}

/* ---- operations ----------------------------------------------------------- */

static uint64_t field_id(lua_State *L, int t, const char *key, int required,
                         uint64_t def)
{
  uint64_t v = def;
  int type = lua_getfield(L, t, key);
  if (type != LUA_TNIL) {
    int ok;
    lua_Integer i = lua_tointegerx(L, -1, &ok);
    if (!ok)
      luaL_error(L, "bad field '%s' (integer expected)", key);
    v = (uint64_t)i;
  } else if (required) {
    luaL_error(L, "missing field '%s'", key);
  }
  lua_pop(L, 1);
  return v;
}

static float field_number(lua_State *L, int t, const char *key)
{
  lua_getfield(L, t, key);
  if (!lua_isnumber(L, -1))
    luaL_error(L, "bad field '%s' (number expected)", key);
  float v = to_float(lua_tonumber(L, -1));
  lua_pop(L, 1);
  return v;
}

static uint32_t field_mask(lua_State *L, int t, const char *key)
{
  uint64_t v = field_id(L, t, key, 0, AOI_ALL_LAYERS);
  if (v > UINT32_MAX)
    luaL_error(L, "bad field '%s' (not in 0 .. 0xffffffff)", key);
  return (uint32_t)v;
}

/* add(id, x, y, radius, flags[, tag, layers, interest]) or
   add{id=, x=, y=, radius=, flags=, tag=, layers=, interest=}; tag 0,
   layers and interest every layer when left out. */
static int l_add(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  aoi_entity e;
  if (lua_istable(L, 2)) {
    e.id = field_id(L, 2, "id", 1, 0);
    e.x = field_number(L, 2, "x");
    e.y = field_number(L, 2, "y");
    e.radius = field_number(L, 2, "radius");
    e.flags = (unsigned)field_id(L, 2, "flags", 1, 0);
    e.tag = field_id(L, 2, "tag", 0, 0);
    e.layers = field_mask(L, 2, "layers");
    e.interest = field_mask(L, 2, "interest");
  } else {
    e.id = check_id(L, 2);
    e.x = check_float(L, 3);
    e.y = check_float(L, 4);
    e.radius = check_float(L, 5);
    e.flags = (unsigned)luaL_checkinteger(L, 6);
    e.tag = (uint64_t)luaL_optinteger(L, 7, 0);
    e.layers = opt_u32(L, 8, AOI_ALL_LAYERS);
    e.interest = opt_u32(L, 9, AOI_ALL_LAYERS);
  }
  check_rc(L, aoi_add(lw->world, &e), "add");
  return 0;
}

static int l_move(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  uint64_t id = check_id(L, 2);
  float x = check_float(L, 3), y = check_float(L, 4);
  check_rc(L, aoi_move(lw->world, id, x, y), "move");
  return 0;
}

static float array_float(lua_State *L, int t, lua_Integer i)
{
  lua_rawgeti(L, t, i);
  int ok;
  lua_Number n = lua_tonumberx(L, -1, &ok);
  if (!ok)
    luaL_error(L, "move_many: element %d is not a number", (int)i);
  lua_pop(L, 1);
  return to_float(n);
}

/* move_many(ids, xs, ys[, n]): aoi_move_many of the first n (default #ids)
   moves. Fills the world's buffer first, so that a bad element submits
   nothing; then a refused move raises, the ones before it standing.
   Returns n. */
static int l_move_many(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  luaL_checktype(L, 4, LUA_TTABLE);
  lua_Integer n = lua_isnoneornil(L, 5) ? (lua_Integer)lua_rawlen(L, 2)
                                        : luaL_checkinteger(L, 5);
  luaL_argcheck(L, n >= 0, 5, "negative count");
  if ((size_t)n > lw->moves_room) {
    size_t room = lw->moves_room ? lw->moves_room : 64;
    while (room < (size_t)n)
      room *= 2;
    aoi_move_op *p = realloc(lw->moves, room * sizeof(*p));
    if (p == NULL)
      return raise_code(L, AOI_ENOMEM, "move_many buffer");
    lw->moves = p;
    lw->moves_room = room;
  }
  aoi_move_op *ops = lw->moves;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 2, i);
    int ok;
    lua_Integer id = lua_tointegerx(L, -1, &ok);
    if (!ok)
      return luaL_error(L, "move_many: ids[%d] is not an integer", (int)i);
    lua_pop(L, 1);
    ops[i - 1].id = (uint64_t)id;
    ops[i - 1].x = array_float(L, 3, i);
    ops[i - 1].y = array_float(L, 4, i);
  }
  size_t done = 0;
  int rc = aoi_move_many(lw->world, ops, (size_t)n, &done);
  if (rc != 0 && done >= (size_t)n)
    return raise_code(L, rc, "move_many");
  if (rc != 0)
    return luaL_error(L, "%s (move_many: ids[%d] = %I; %d moves stood)",
                      aoi_strerror(rc), (int)done + 1,
                      (lua_Integer)ops[done].id, (int)done);
  lua_pushinteger(L, n);
  return 1;
}

static int l_set_radius(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  uint64_t id = check_id(L, 2);
  check_rc(L, aoi_set_radius(lw->world, id, check_float(L, 3)), "set_radius");
  return 0;
}

static int l_set_appeal(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  uint64_t id = check_id(L, 2);
  check_rc(L, aoi_set_appeal(lw->world, id, check_float(L, 3)), "set_appeal");
  return 0;
}

static int l_set_layers(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  uint64_t id = check_id(L, 2);
  uint32_t layers = check_u32(L, 3), interest = check_u32(L, 4);
  check_rc(L, aoi_set_layers(lw->world, id, layers, interest), "set_layers");
  return 0;
}

static int l_set_cap(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  uint64_t id = check_id(L, 2);
  check_rc(L, aoi_set_cap(lw->world, id, check_u32(L, 3)), "set_cap");
  return 0;
}

static int l_set_tag(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  uint64_t id = check_id(L, 2);
  uint64_t tag = (uint64_t)luaL_checkinteger(L, 3);
  check_rc(L, aoi_set_tag(lw->world, id, tag), "set_tag");
  return 0;
}

static int l_remove(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  check_rc(L, aoi_remove(lw->world, check_id(L, 2)), "remove");
  return 0;
}

static int l_tick(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  check_rc(L, aoi_tick(lw->world), "tick");
  return 0;
}

/* ---- delivery ------------------------------------------------------------- */

/* Runs on the host thread: pushes only what cannot raise (the stack was
   reserved) and calls the Lua function protected. `kept` is the events'
   index in the kept view, or 0 where they are the engine's. */
static void call_fn(ldelivery *d, uint64_t watcher, uint64_t watcher_tag,
                    const aoi_event *events, size_t count, size_t kept)
{
  lua_State *L = d->L;
  d->reader->events = events;
  d->reader->count = count;
  d->reader->kept = kept;
  lua_pushvalue(L, d->fn);
  lua_pushinteger(L, (lua_Integer)watcher);
  lua_pushinteger(L, (lua_Integer)watcher_tag);
  lua_pushinteger(L, (lua_Integer)count);
  lua_pushvalue(L, d->reader_slot);
  if (lua_pcall(L, 4, 0, 0) != LUA_OK) {
    if (!d->failed) {
      d->failed = 1;
      lua_replace(L, d->error_slot);
    } else {
      lua_pop(L, 1);
    }
  }
  d->reader->events = NULL;
  d->reader->count = 0;
  d->reader->kept = 0;
}

/* aoi_deliver's callback where Lua reads the engine's events in place. */
static void deliver_one(void *user, uint64_t watcher, uint64_t watcher_tag,
                        const aoi_event *events, size_t count)
{
  call_fn(user, watcher, watcher_tag, events, count, 0);
}

/* ---- kept events and the delivery helpers ---------------------------------
 *
 * A world of run = "own" with more than one segment delivers in two
 * steps. First every segment's events are copied out of the engine, all
 * segments at once: the host thread copies segment 0 while a helper
 * thread a segment (1 .. segments - 1) copies its own (rule 2 of aoi.h:
 * different segments may be delivered on different threads at once).
 * Then the host thread hands the copies to Lua, segment by segment. So
 * each lane's outboxes are read on a core of their own, and Lua walks
 * ready, contiguous arrays, which stay readable until the next deliver
 * (ev:keep, w:kept).
 *
 * The buffers are the world's (malloc, not Lua's heap), kept from one
 * delivery to the next: they grow to the largest segment delivered and
 * no further. A buffer that cannot grow loses nothing: the host thread
 * calls Lua on that watcher's events in place (for a helper's, while the
 * helper waits in its aoi_deliver callback, where they are valid), and
 * so every later watcher of that segment. Lua runs on the host thread
 * only.
 */

/* ev:keep's copies have indices from here on, apart from the segments'. */
#define KEEP_BASE ((size_t)1 << 40)

/* Test hook (aoi._fail_allocs): the next n growths of a delivery buffer
   fail, as under memory exhaustion. */
static atomic_int fail_allocs;

static int grow(void **p, size_t *room, size_t need, size_t size)
{
  if (need <= *room)
    return 1;
  if (atomic_load_explicit(&fail_allocs, memory_order_relaxed) > 0 &&
      atomic_fetch_sub(&fail_allocs, 1) > 0)
    return 0;
  size_t r = *room ? *room : 256;
  while (r < need)
    r *= 2;
  void *q = realloc(*p, r * size);
  if (q == NULL)
    return 0;
  *p = q;
  *room = r;
  return 1;
}

/* Copies one watcher's events to the end of b; 0 where b cannot grow. */
static int buf_append(lbuf *b, uint64_t watcher, uint64_t watcher_tag,
                      const aoi_event *events, size_t count)
{
  if (!grow((void **)&b->events, &b->room, b->used + count,
            sizeof(aoi_event)) ||
      !grow((void **)&b->records, &b->records_room, b->records_used + 1,
            sizeof(lrecord)))
    return 0;
  memcpy(b->events + b->used, events, count * sizeof(aoi_event));
  b->records[b->records_used++] =
      (lrecord){watcher, watcher_tag, b->used, count};
  b->used += count;
  return 1;
}

/* The world's buffers, one a segment and the last for ev:keep; NULL
   where they cannot be allocated. */
static lbuf *bufs_get(lworld *lw)
{
  if (lw->bufs == NULL) {
    unsigned n = aoi_delivery_segments(lw->world) + 1;
    lw->bufs = calloc(n, sizeof(lbuf));
    if (lw->bufs == NULL)
      return NULL;
    lw->nbufs = n;
    lw->bufs[n - 1].base = KEEP_BASE;
  }
  return lw->bufs;
}

/* Forgets every kept event (a new delivery); keeps the memory. */
static void bufs_reset(lworld *lw)
{
  for (unsigned i = 0; i < lw->nbufs; i++) {
    lw->bufs[i].used = 0;
    lw->bufs[i].records_used = 0;
    lw->bufs[i].base = i + 1 == lw->nbufs ? KEEP_BASE : 0;
  }
}

static void bufs_free(lworld *lw)
{
  for (unsigned i = 0; i < lw->nbufs; i++) {
    free(lw->bufs[i].events);
    free(lw->bufs[i].records);
  }
  free(lw->bufs);
  lw->bufs = NULL;
  lw->nbufs = 0;
}

struct lcrew;

typedef struct lhelper {
  struct lcrew *crew;
  lbuf *buf;
  unsigned segment;
  pthread_t thread;
  int rc;     /* its aoi_deliver's result */
  int spill;  /* its buffer could not grow: hand the rest to the host */
  /* A watcher handed to the host thread (under the crew's mutex). */
  int handing;
  uint64_t hand_watcher, hand_tag;
  const aoi_event *hand_events;
  size_t hand_count;
} lhelper;

typedef struct lcrew {
  aoi_world *world;
  pthread_mutex_t mutex;
  pthread_cond_t cond;    /* any change below */
  unsigned long round;    /* one a delivery */
  unsigned count, done, started;
  int quit;
  lhelper helpers[];      /* segments 1 .. count */
} lcrew;

/* The helpers' aoi_deliver callback. */
static void helper_collect(void *user, uint64_t watcher, uint64_t watcher_tag,
                           const aoi_event *events, size_t count)
{
  lhelper *h = user;
  if (!h->spill && buf_append(h->buf, watcher, watcher_tag, events, count))
    return;
  /* Out of memory: the host thread calls Lua on the events here. */
  h->spill = 1;
  lcrew *c = h->crew;
  pthread_mutex_lock(&c->mutex);
  h->hand_watcher = watcher;
  h->hand_tag = watcher_tag;
  h->hand_events = events;
  h->hand_count = count;
  h->handing = 1;
  pthread_cond_broadcast(&c->cond);
  while (h->handing)
    pthread_cond_wait(&c->cond, &c->mutex);
  pthread_mutex_unlock(&c->mutex);
}

static void *helper_main(void *arg)
{
  lhelper *h = arg;
  lcrew *c = h->crew;
  unsigned long seen = 0;
  pthread_mutex_lock(&c->mutex);
  for (;;) {
    while (c->round == seen && !c->quit)
      pthread_cond_wait(&c->cond, &c->mutex);
    if (c->quit)
      break;
    seen = c->round;
    pthread_mutex_unlock(&c->mutex);
    h->rc = aoi_deliver(c->world, h->segment, helper_collect, h);
    pthread_mutex_lock(&c->mutex);
    c->done++;
    pthread_cond_broadcast(&c->cond);
  }
  pthread_mutex_unlock(&c->mutex);
  return NULL;
}

/* Stops and joins the helpers. */
static void crew_free(lcrew *c)
{
  if (c == NULL)
    return;
  pthread_mutex_lock(&c->mutex);
  c->quit = 1;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mutex);
  for (unsigned i = 0; i < c->started; i++)
    pthread_join(c->helpers[i].thread, NULL);
  pthread_cond_destroy(&c->cond);
  pthread_mutex_destroy(&c->mutex);
  free(c);
}

/* Starts a helper for each segment but the first; NULL when that fails
   (the world then delivers on the host thread alone). */
static lcrew *crew_new(lworld *lw)
{
  unsigned count = lw->nbufs - 2; /* segments - 1 */
  lcrew *c = calloc(1, sizeof(*c) + count * sizeof(lhelper));
  if (c == NULL)
    return NULL;
  c->world = lw->world;
  c->count = count;
  if (pthread_mutex_init(&c->mutex, NULL) != 0) {
    free(c);
    return NULL;
  }
  if (pthread_cond_init(&c->cond, NULL) != 0) {
    pthread_mutex_destroy(&c->mutex);
    free(c);
    return NULL;
  }
  /* Signals stay with the host's threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (unsigned i = 0; i < count; i++) {
    lhelper *h = &c->helpers[i];
    h->crew = c;
    h->buf = &lw->bufs[i + 1];
    h->segment = i + 1;
    if (pthread_create(&h->thread, NULL, helper_main, h) != 0)
      break;
    c->started++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (c->started < count) {
    crew_free(c);
    return NULL;
  }
  return c;
}

/* The host's copy of segment 0. */
typedef struct lhost {
  ldelivery *d;
  lbuf *buf;
  int spill;
} lhost;

static void host_collect(void *user, uint64_t watcher, uint64_t watcher_tag,
                         const aoi_event *events, size_t count)
{
  lhost *h = user;
  if (!h->spill && buf_append(h->buf, watcher, watcher_tag, events, count))
    return;
  h->spill = 1; /* out of memory: Lua reads them in place */
  call_fn(h->d, watcher, watcher_tag, events, count, 0);
}

/* deliver(fn) of a world with helpers (above). Returns the first failing
   aoi_deliver result. Raises nothing. */
static int deliver_parallel(lworld *lw, ldelivery *d)
{
  lcrew *c = lw->crew;
  lw->copying = 1;
  pthread_mutex_lock(&c->mutex);
  c->done = 0;
  c->round++;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mutex);

  lhost host = {d, &lw->bufs[0], 0};
  int rc = aoi_deliver(lw->world, 0, host_collect, &host);

  pthread_mutex_lock(&c->mutex);
  for (;;) {
    lhelper *h = NULL;
    for (unsigned i = 0; i < c->count && h == NULL; i++)
      if (c->helpers[i].handing)
        h = &c->helpers[i];
    if (h != NULL) {
      pthread_mutex_unlock(&c->mutex);
      call_fn(d, h->hand_watcher, h->hand_tag, h->hand_events, h->hand_count,
              0);
      pthread_mutex_lock(&c->mutex);
      h->handing = 0;
      pthread_cond_broadcast(&c->cond);
      continue;
    }
    if (c->done == c->count)
      break;
    pthread_cond_wait(&c->cond, &c->mutex);
  }
  pthread_mutex_unlock(&c->mutex);
  lw->copying = 0;

  size_t base = 0;
  for (unsigned i = 0; i + 1 < lw->nbufs; i++) {
    lw->bufs[i].base = base;
    base += lw->bufs[i].used;
  }
  for (unsigned i = 0; i + 1 < lw->nbufs; i++) {
    const lbuf *b = &lw->bufs[i];
    for (size_t k = 0; k < b->records_used; k++) {
      const lrecord *r = &b->records[k];
      call_fn(d, r->watcher, r->tag, b->events + r->first, r->count,
              b->base + r->first + 1);
    }
  }
  for (unsigned i = 0; i < c->count; i++) {
    c->helpers[i].spill = 0;
    if (rc == 0)
      rc = c->helpers[i].rc;
  }
  return rc;
}

/* deliver(fn): fn(watcher, watcher_tag, n, events) for every watcher with
   events, every segment in turn. */
static int l_deliver(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  lua_getiuservalue(L, 1, 1); /* 3: the reader */
  lua_pushnil(L);             /* 4: the first error */
  luaL_checkstack(L, 8, "deliver");
  ldelivery d = {L, lua_touserdata(L, 3), 2, 3, 4, 0};
  unsigned segments = aoi_delivery_segments(lw->world);
  if (bufs_get(lw) == NULL)
    return raise_code(L, AOI_ENOMEM, "deliver");
  bufs_reset(lw);
  if (lw->own && segments > 1 && lw->crew == NULL)
    lw->crew = crew_new(lw);
  int rc = 0;
  lw->delivering = 1;
  if (lw->crew != NULL) {
    rc = deliver_parallel(lw, &d);
  } else {
    for (unsigned s = 0; s < segments && rc == 0; s++)
      rc = aoi_deliver(lw->world, s, deliver_one, &d);
  }
  lw->delivering = 0;
  if (d.failed) {
    lua_settop(L, 4);
    return lua_error(L);
  }
  check_rc(L, rc, "deliver");
  return 0;
}

/* aoi._fail_allocs(n): a test hook; the next n growths of a delivery
   buffer fail. */
static int l_fail_allocs(lua_State *L)
{
  atomic_store(&fail_allocs, (int)luaL_checkinteger(L, 1));
  return 0;
}

/* pending() -> {watchers with undelivered events, ids ascending} */
static int l_pending(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  const uint64_t *ids;
  size_t count;
  check_rc(L, aoi_pending(lw->world, &ids, &count), "pending");
  push_ids(L, ids, count);
  return 1;
}

/* drain(id, fn): takes watcher id's undelivered events and calls
   fn(n, events) with the reader, as deliver does (the reader is valid
   during the call); fn is called also when n is 0. An error in fn is
   raised after the reader is reset: the events were taken either way. */
static int l_drain(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  uint64_t id = check_id(L, 2);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  lua_settop(L, 3);
  lua_getiuservalue(L, 1, 1); /* 4: the reader */
  lreader *reader = lua_touserdata(L, 4);
  const aoi_event *events;
  size_t count;
  check_rc(L, aoi_drain(lw->world, id, &events, &count), "drain");
  reader->events = events;
  reader->count = count;
  reader->kept = 0;
  lua_pushvalue(L, 3);
  lua_pushinteger(L, (lua_Integer)count);
  lua_pushvalue(L, 4);
  lw->delivering = 1;
  int status = lua_pcall(L, 2, 0, 0);
  lw->delivering = 0;
  reader->events = NULL;
  reader->count = 0;
  if (status != LUA_OK)
    return lua_error(L);
  return 0;
}

static lreader *check_reader(lua_State *L, lua_Integer *i)
{
  lreader *r = luaL_checkudata(L, 1, READER_META);
  *i = luaL_checkinteger(L, 2);
  if (r->events == NULL)
    luaL_error(L, "aoi: events read outside their deliver callback");
  luaL_argcheck(L, *i >= 1 && (lua_Unsigned)*i <= r->count, 2,
                "event index out of range");
  return r;
}

/* ev:get(i) -> id, kind, x, y, tag, tick */
static int l_ev_get(lua_State *L)
{
  lua_Integer i;
  const aoi_event *e = &check_reader(L, &i)->events[i - 1];
  lua_pushinteger(L, (lua_Integer)e->id);
  lua_pushinteger(L, (lua_Integer)e->kind);
  lua_pushnumber(L, e->x);
  lua_pushnumber(L, e->y);
  lua_pushinteger(L, (lua_Integer)e->tag);
  lua_pushinteger(L, (lua_Integer)e->tick);
  return 6;
}

static int l_ev_id(lua_State *L)
{
  lua_Integer i;
  lua_pushinteger(L, (lua_Integer)check_reader(L, &i)->events[i - 1].id);
  return 1;
}

static int l_ev_kind(lua_State *L)
{
  lua_Integer i;
  lua_pushinteger(L, (lua_Integer)check_reader(L, &i)->events[i - 1].kind);
  return 1;
}

static int l_ev_x(lua_State *L)
{
  lua_Integer i;
  lua_pushnumber(L, check_reader(L, &i)->events[i - 1].x);
  return 1;
}

static int l_ev_y(lua_State *L)
{
  lua_Integer i;
  lua_pushnumber(L, check_reader(L, &i)->events[i - 1].y);
  return 1;
}

static int l_ev_tag(lua_State *L)
{
  lua_Integer i;
  lua_pushinteger(L, (lua_Integer)check_reader(L, &i)->events[i - 1].tag);
  return 1;
}

static int l_ev_tick(lua_State *L)
{
  lua_Integer i;
  lua_pushinteger(L, (lua_Integer)check_reader(L, &i)->events[i - 1].tick);
  return 1;
}

/* ev:bytes() -> every event of the call as one string of #ev x 32 bytes,
   each laid out as aoi_event (little-endian u64 id, u64 tag, f32 x, f32
   y, u32 kind, u32 tick; string.unpack "<I8I8ffI4I4"): what a server
   forwards to the watcher's client, one copy and one string a watcher,
   and it outlives the callback. */
static int l_ev_bytes(lua_State *L)
{
  lreader *r = luaL_checkudata(L, 1, READER_META);
  if (r->events == NULL)
    return luaL_error(L, "aoi: events read outside their deliver callback");
  lua_pushlstring(L, (const char *)r->events, r->count * sizeof(aoi_event));
  return 1;
}

/* ev:keep() -> k: the events stay readable as kept:get(k .. k + n - 1)
   and kept:bytes(k, n) (kept = w:kept()) until the next deliver. A
   delivery of several segments has copied them already (k costs
   nothing); otherwise they are copied now. */
static int l_ev_keep(lua_State *L)
{
  lreader *r = luaL_checkudata(L, 1, READER_META);
  if (r->events == NULL)
    return luaL_error(L, "aoi: events read outside their deliver callback");
  if (r->kept == 0) {
    lworld *lw = r->lw;
    if (bufs_get(lw) == NULL)
      return raise_code(L, AOI_ENOMEM, "keep");
    lbuf *b = &lw->bufs[lw->nbufs - 1];
    if (!grow((void **)&b->events, &b->room, b->used + r->count,
              sizeof(aoi_event)))
      return raise_code(L, AOI_ENOMEM, "keep");
    memcpy(b->events + b->used, r->events, r->count * sizeof(aoi_event));
    r->kept = b->base + b->used + 1;
    b->used += r->count;
  }
  lua_pushinteger(L, (lua_Integer)r->kept);
  return 1;
}

static lworld *check_kept(lua_State *L)
{
  lworld *lw = *(lworld **)luaL_checkudata(L, 1, KEPT_META);
  if (lw->world == NULL)
    luaL_error(L, "AOI_EINVAL: the world is closed");
  if (lw->copying)
    luaL_error(L, "AOI_EBUSY: the kept events are being replaced");
  return lw;
}

/* The kept events k .. k + n - 1 (n >= 1), which one buffer holds. */
static const aoi_event *kept_at(lua_State *L, lua_Integer k, lua_Integer n)
{
  lworld *lw = check_kept(L);
  if (k >= 1 && n >= 1)
    for (unsigned i = 0; i < lw->nbufs; i++) {
      const lbuf *b = &lw->bufs[i];
      size_t at = (size_t)k - 1;
      if (at >= b->base && at - b->base < b->used &&
          (size_t)n <= b->used - (at - b->base))
        return b->events + (at - b->base);
    }
  luaL_error(L, "aoi: kept events %I .. %I out of range", k, k + n - 1);
  return NULL;
}

/* kept:get(k) -> id, kind, x, y, tag, tick */
static int l_kept_get(lua_State *L)
{
  const aoi_event *e = kept_at(L, luaL_checkinteger(L, 2), 1);
  lua_pushinteger(L, (lua_Integer)e->id);
  lua_pushinteger(L, (lua_Integer)e->kind);
  lua_pushnumber(L, e->x);
  lua_pushnumber(L, e->y);
  lua_pushinteger(L, (lua_Integer)e->tag);
  lua_pushinteger(L, (lua_Integer)e->tick);
  return 6;
}

/* kept:bytes(k, n) -> the n events from k as ev:bytes() lays them out */
static int l_kept_bytes(lua_State *L)
{
  lua_Integer k = luaL_checkinteger(L, 2), n = luaL_checkinteger(L, 3);
  luaL_argcheck(L, n >= 0, 3, "negative count");
  if (n == 0)
    check_kept(L);
  const char *p = n == 0 ? "" : (const char *)kept_at(L, k, n);
  lua_pushlstring(L, p, (size_t)n * sizeof(aoi_event));
  return 1;
}

/* w:kept() -> the world's kept events (one object, the same every call) */
static int l_kept(lua_State *L)
{
  check_open(L, 1);
  lua_getiuservalue(L, 1, 2);
  return 1;
}

/* ev:table(i) -> {id=, kind=, x=, y=, tag=, tick=}: a copy that outlives
   the callback (allocates; for convenience, not the hot path). */
static int l_ev_table(lua_State *L)
{
  lua_Integer i;
  const aoi_event *e = &check_reader(L, &i)->events[i - 1];
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, (lua_Integer)e->id);
  lua_setfield(L, -2, "id");
  lua_pushinteger(L, (lua_Integer)e->kind);
  lua_setfield(L, -2, "kind");
  lua_pushnumber(L, e->x);
  lua_setfield(L, -2, "x");
  lua_pushnumber(L, e->y);
  lua_setfield(L, -2, "y");
  lua_pushinteger(L, (lua_Integer)e->tag);
  lua_setfield(L, -2, "tag");
  lua_pushinteger(L, (lua_Integer)e->tick);
  lua_setfield(L, -2, "tick");
  return 1;
}

static int l_ev_len(lua_State *L)
{
  lreader *r = luaL_checkudata(L, 1, READER_META);
  lua_pushinteger(L, (lua_Integer)r->count);
  return 1;
}

/* ---- queries and stats ---------------------------------------------------- */

typedef int (*id_query)(aoi_world *, uint64_t, uint64_t *, size_t, size_t *);

/* Runs a query into the world's buffer, growing it once if the answer
   did not fit, and returns the ids as a new table. */
static int query_ids(lua_State *L, lworld *lw, id_query q, uint64_t id,
                     const char *what)
{
  size_t count = 0;
  check_rc(L, q(lw->world, id, lw->ids, lw->ids_room, &count), what);
  if (count > lw->ids_room) {
    ids_reserve(L, lw, count);
    check_rc(L, q(lw->world, id, lw->ids, lw->ids_room, &count), what);
  }
  push_ids(L, lw->ids, count);
  return 1;
}

static int l_view(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  return query_ids(L, lw, aoi_view, check_id(L, 2), "view");
}

static int l_watchers_of(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  return query_ids(L, lw, aoi_watchers_of, check_id(L, 2), "watchers_of");
}

/* query_circle(x, y, radius[, layer_mask]) -> {ids ascending} */
static int l_query_circle(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  float x = check_float(L, 2), y = check_float(L, 3), r = check_float(L, 4);
  uint32_t mask = opt_u32(L, 5, AOI_ALL_LAYERS);
  size_t count = 0;
  check_rc(L,
           aoi_query_circle(lw->world, x, y, r, mask, lw->ids, lw->ids_room,
                            &count),
           "query_circle");
  if (count > lw->ids_room) {
    ids_reserve(L, lw, count);
    check_rc(L,
             aoi_query_circle(lw->world, x, y, r, mask, lw->ids,
                              lw->ids_room, &count),
             "query_circle");
  }
  push_ids(L, lw->ids, count);
  return 1;
}

static void set_int(lua_State *L, const char *key, uint64_t v)
{
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, key);
}

static int l_stats(lua_State *L)
{
  lworld *lw = check_open(L, 1);
  aoi_stats s;
  check_rc(L, aoi_world_stats(lw->world, &s), "stats");
  lua_createtable(L, 0, 17);
  set_int(L, "tick", s.tick);
  set_int(L, "threads", s.threads);
  set_int(L, "shards", s.shards);
  set_int(L, "entities", s.entities);
  set_int(L, "watchers", s.watchers);
  set_int(L, "ghosts", s.ghosts);
  set_int(L, "handoffs", s.handoffs);
  set_int(L, "rebalances", s.rebalances);
  set_int(L, "events", s.events);
  set_int(L, "tick_ns", s.tick_ns);
  set_int(L, "apply_ns", s.phase_ns[AOI_PHASE_APPLY]);
  set_int(L, "exchange_ns", s.phase_ns[AOI_PHASE_EXCHANGE]);
  set_int(L, "compute_ns", s.phase_ns[AOI_PHASE_COMPUTE]);
  set_int(L, "work_ns", s.work_ns);
  set_int(L, "span_ns", s.span_ns);
  set_int(L, "segments", aoi_delivery_segments(lw->world));
  size_t bytes = 0;
  for (unsigned i = 0; i < lw->nbufs; i++)
    bytes += lw->bufs[i].room * sizeof(aoi_event) +
             lw->bufs[i].records_room * sizeof(lrecord);
  set_int(L, "buffer_bytes", bytes);
  return 1;
}

/* ---- the module ----------------------------------------------------------- */

static const luaL_Reg world_methods[] = {
    {"add", l_add},
    {"move", l_move},
    {"move_many", l_move_many},
    {"set_radius", l_set_radius},
    {"set_layers", l_set_layers},
    {"set_appeal", l_set_appeal},
    {"set_cap", l_set_cap},
    {"set_tag", l_set_tag},
    {"remove", l_remove},
    {"tick", l_tick},
    {"deliver", l_deliver},
    {"pending", l_pending},
    {"drain", l_drain},
    {"query_circle", l_query_circle},
    {"view", l_view},
    {"watchers_of", l_watchers_of},
    {"stats", l_stats},
    {"kept", l_kept},
    {"close", l_close},
    {"closed", l_closed},
    {NULL, NULL}};

static const luaL_Reg reader_methods[] = {
    {"get", l_ev_get},   {"id", l_ev_id},     {"kind", l_ev_kind},
    {"x", l_ev_x},       {"y", l_ev_y},       {"tag", l_ev_tag},
    {"tick", l_ev_tick}, {"table", l_ev_table}, {"bytes", l_ev_bytes},
    {"keep", l_ev_keep}, {NULL, NULL}};

static const luaL_Reg kept_methods[] = {
    {"get", l_kept_get}, {"bytes", l_kept_bytes}, {NULL, NULL}};

static int l_strerror(lua_State *L)
{
  lua_pushstring(L, aoi_strerror((int)luaL_checkinteger(L, 1)));
  return 1;
}

/* aoi.clock() -> seconds of a monotonic clock, for frame budgets and
   benchmarks (os.clock counts CPU time, the pool's threads' included). */
static int l_clock(lua_State *L)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

static const luaL_Reg module_functions[] = {
    {"new", l_new}, {"strerror", l_strerror}, {"clock", l_clock},
    {"_fail_allocs", l_fail_allocs},
    {NULL, NULL}};

static void set_const(lua_State *L, const char *name, lua_Integer v)
{
  lua_pushinteger(L, v);
  lua_setfield(L, -2, name);
}

LAOI_EXPORT int luaopen_aoi(lua_State *L)
{
  luaL_checkversion(L);
  luaL_newmetatable(L, WORLD_META);
  luaL_newlib(L, world_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, l_close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, l_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);

  luaL_newmetatable(L, READER_META);
  luaL_newlib(L, reader_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_ev_len);
  lua_setfield(L, -2, "__len");
  lua_pop(L, 1);

  luaL_newmetatable(L, KEPT_META);
  luaL_newlib(L, kept_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);

  luaL_newlib(L, module_functions);
  set_const(L, "EINVAL", AOI_EINVAL);
  set_const(L, "ENOMEM", AOI_ENOMEM);
  set_const(L, "EEXIST", AOI_EEXIST);
  set_const(L, "ENOENT", AOI_ENOENT);
  set_const(L, "ECOORD", AOI_ECOORD);
  set_const(L, "ERADIUS", AOI_ERADIUS);
  set_const(L, "EFLAGS", AOI_EFLAGS);
  set_const(L, "ESYS", AOI_ESYS);
  set_const(L, "EBUSY", AOI_EBUSY);
  set_const(L, "WATCHER", AOI_WATCHER);
  set_const(L, "MARKER", AOI_MARKER);
  set_const(L, "ALL_LAYERS", AOI_ALL_LAYERS);
  set_const(L, "LEAVE", AOI_LEAVE);
  set_const(L, "ENTER", AOI_ENTER);
  set_const(L, "MOVE", AOI_MOVE);
  lua_pushstring(L, aoi_version_string());
  lua_setfield(L, -2, "version");
  return 1;
}
