/*
 * test_soak.c: the soak group of "never lose an event". One world (2 worker
 * threads and 6 shards by default, so that shard borders are many) carries a
 * churning, moving crowd of a few thousand entities for a configurable
 * stretch of wall time, and checks as it goes that nothing is lost, leaked
 * or grown:
 *
 *  - every event a watcher drains is applied to the "client picture" that
 *    watcher's client would hold: an enter must be new, a leave or a move
 *    must name something it holds, events come tick by tick in the order of
 *    docs/trace-format.md, and a fresh event carries the entity's true position.
 *    After every tick, each watcher whose outbox was drained must have a
 *    picture equal to aoi_view (so every enter was matched by exactly one
 *    leave or is still in view) that holds every entity at its current
 *    position and nothing beyond reach. Every CHECK_EVERY ticks, after
 *    draining everything, so must every watcher, and a brute-force bound
 *    holds too (within radius => seen); sampled aoi_watchers_of and
 *    aoi_query_circle answers must agree with the pictures and the host's
 *    own record of the crowd;
 *  - handles and ids do not leak: after every tick the handle high-water mark
 *    is within what the host ever had in use at once, free handles plus live
 *    entities make up the high-water mark, and the id map holds exactly the
 *    live entities;
 *  - aoi__world_valid passes every CHECK_EVERY ticks;
 *  - memory stays flat after warm-up (live bytes through the allocator hook,
 *    and the process's VmRSS / VmHWM outside sanitizer builds), and every
 *    byte comes back at aoi_destroy.
 *
 * The crowd: players (watcher + marker), NPCs (marker only, some standing
 * still) and cameras (watcher only), walking at random across shard borders,
 * now and then teleporting anywhere (outside the bounds hint too), logging
 * out and in (ids are reused), respawning under the same id within one tick,
 * changing radius and layers. Outboxes are drained every tick most of the
 * time; some watchers, and now and then the whole host, skip draining for a
 * few ticks. A few invalid calls each tick must fail with their code and
 * change nothing.
 *
 * Environment: AOI_SOAK_SECONDS (default 60, fractions allowed),
 * AOI_SOAK_TICKS (run this many ticks instead), AOI_SOAK_THREADS (2),
 * AOI_SOAK_SHARDS (6), AOI_SOAK_ENTITIES (3000), AOI_SOAK_SEED,
 * AOI_SOAK_CHECK_EVERY (50), AOI_SOAK_VERBOSE (print a line per check).
 * The operations depend only on the seed, the crowd size and the tick
 * number, so a failure at tick T replays with the same seed, layout and
 * AOI_SOAK_TICKS=T.
 *
 * Only this (the main) thread calls cmocka's asserts; the allocator hooks,
 * which the workers call too, only count with atomics.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aoi.h"
#include "support.h"
#include "internal.h" /* aoi__world_valid, handle and id map counters */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SOAK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||    \
    __has_feature(memory_sanitizer)
#define SOAK_SANITIZED 1
#endif
#endif
#ifndef SOAK_SANITIZED
#define SOAK_SANITIZED 0
#endif

#define ALL UINT32_MAX
#define WM (AOI_WATCHER | AOI_MARKER)
#define NONE UINT32_MAX

/* The map: the bounds hint (MAP_SIDE for the default crowd, scaled so that
   any crowd size has the same density: about 15 markers in a view), and how
   far outside it entities may go. */
#define MAP_MIN 0.0f
#define MAP_SIDE 1500.0
#define MAP_CROWD 3000.0
#define MAP_MAX S.map_max
#define WALK_MARGIN 300.0f    /* walkers turn back this far outside */
#define TELEPORT_MARGIN 500.0f /* teleports land up to this far outside */
#define MAX_RADIUS 100.0f
#define HYSTERESIS 8.0f

/* Warm-up: the later of WARMUP_SHARE of the run and WARMUP_TICKS ticks. The
   memory check needs at least MIN_AFTER_TICKS ticks after it. */
#define WARMUP_SHARE 0.2
#define WARMUP_TICKS 300u
#define MIN_AFTER_TICKS 100u

/*
 * Peak live bytes after warm-up may exceed the warm-up peak by at most this
 * factor. The crowd is held within +-5% of its size and every process that
 * drives it (walks, churn, skipped drains) is stationary, so the engine's
 * memory (per-handle tables, shard arrays, views, outboxes, grids, ghost and
 * handoff batches, op queues) reaches its plateau during warm-up. What can
 * still move it are the engine's doubling arrays: one of them crossing a
 * power of two when the crowd drifts to a new extreme, or an outbox that a
 * skipped drain lets grow further than any did during warm-up. Each is a few
 * per cent of the total, so 25% leaves room for them while a real leak (any
 * per-tick or per-entity allocation that is not given back) grows without
 * bound over the run and crosses it. So does a ratchet: an outbox keeps its
 * capacity across drains by design, but if it kept it across its watcher's
 * removal too, each handle would come to hold the largest backlog any of its
 * owners ever had, which grows with ticks, not with the crowd.
 */
#define MEMORY_FACTOR 1.25
/* The process's VmHWM may exceed its value at the end of warm-up by this
   factor plus RSS_SLACK_KIB (our own pictures, libc arenas): a looser net
   that also catches memory the library would take outside the hooks. */
#define RSS_FACTOR 1.5
#define RSS_SLACK_KIB (32 * 1024)

/* ---- settings ----------------------------------------------------------- */

typedef struct settings {
  double seconds;
  unsigned long ticks; /* 0: run for `seconds` */
  unsigned threads, shards;
  unsigned entities;
  uint64_t seed;
  unsigned check_every;
  int verbose;
} settings;

static double env_double(const char *name, double fallback, double lo,
                         double hi)
{
  const char *s = getenv(name);
  if (s == NULL || *s == '\0')
    return fallback;
  char *end;
  double v = strtod(s, &end);
  if (*end != '\0' || !(v >= lo && v <= hi))
    fail_msg("%s=%s: expected a number in [%g, %g]", name, s, lo, hi);
  return v;
}

static uint64_t env_u64(const char *name, uint64_t fallback, uint64_t lo,
                        uint64_t hi)
{
  const char *s = getenv(name);
  if (s == NULL || *s == '\0')
    return fallback;
  char *end;
  unsigned long long v = strtoull(s, &end, 0);
  if (*end != '\0' || v < lo || v > hi)
    fail_msg("%s=%s: expected an integer in [%llu, %llu]", name, s,
             (unsigned long long)lo, (unsigned long long)hi);
  return v;
}

static settings read_settings(void)
{
  settings s;
  s.seconds = env_double("AOI_SOAK_SECONDS", 60, 0, 1e7);
  s.ticks = (unsigned long)env_u64("AOI_SOAK_TICKS", 0, 0, 1000000000);
  s.threads = (unsigned)env_u64("AOI_SOAK_THREADS", 2, 1, 256);
  s.shards = (unsigned)env_u64("AOI_SOAK_SHARDS", 6, 1, 4096);
  s.entities = (unsigned)env_u64("AOI_SOAK_ENTITIES", 3000, 20, 1000000);
  s.seed = env_u64("AOI_SOAK_SEED", UINT64_C(0x50a4c0ffee), 0, UINT64_MAX);
  s.check_every = (unsigned)env_u64("AOI_SOAK_CHECK_EVERY", 50, 1, 1000000);
  s.verbose = (int)env_u64("AOI_SOAK_VERBOSE", 0, 0, 1);
  return s;
}

/* ---- random numbers (splitmix64: the same stream on every compiler) ----- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
  return rng_next(&rng_state);
}

/* Uniform in [0, n); n > 0. */
static uint32_t rnd_below(uint32_t n)
{
  return (uint32_t)(((rnd() >> 32) * (uint64_t)n) >> 32);
}

/* Uniform in [0, 1). */
static double rnd_unit(void)
{
  return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0);
}

static float rnd_float(float lo, float hi)
{
  return (float)(lo + (hi - lo) * rnd_unit());
}

/* ---- a counting allocator: support.h ---------------------------------- */

static counter bytes;

/* ---- the process's memory, from /proc/self/status ---------------------- */

typedef struct rss {
  long rss_kib, hwm_kib; /* -1 when unknown */
} rss;

static rss read_rss(void)
{
  rss r = {-1, -1};
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL)
    return r;
  char line[256];
  while (fgets(line, sizeof(line), f) != NULL) {
    long v;
    if (sscanf(line, "VmRSS: %ld", &v) == 1)
      r.rss_kib = v;
    else if (sscanf(line, "VmHWM: %ld", &v) == 1)
      r.hwm_kib = v;
  }
  fclose(f);
  return r;
}

/* ---- the host's record of the crowd ------------------------------------ */

/* What one client has been told: entity id -> last told position. */
typedef struct seen {
  uint64_t id;
  float x, y;
} seen;

typedef struct picture {
  seen *items;
  size_t count, capacity;
} picture;

enum { PLAYER, NPC, STATUE, CAMERA }; /* body classes, by pool index */

typedef struct body {
  int live;      /* as submitted: added and not removed since */
  unsigned flags;
  float x, y, vx, vy, radius;
  uint32_t layers, interest;
  /* watchers: the client */
  picture pic;
  uint64_t skip_until; /* its outbox is not drained before this tick */
  uint32_t last_tick;  /* the tick of the last event it drained */
  uint64_t enters, leaves; /* drained, since it was added */
} body;

/* Ids are spread over the whole 64-bit range: id(i) = i * MULT + OFFSET,
   a bijection, inverted with MULT's inverse modulo 2^64. */
#define MULT UINT64_C(0x9e3779b97f4a7c15)
#define OFFSET UINT64_C(0x0123456789abcdef)

typedef struct soak {
  settings set;
  aoi_world *world;
  uint64_t tick;        /* ticks completed */
  uint64_t inverse;     /* MULT^-1 mod 2^64 */
  body *bodies;
  uint32_t pool;        /* ids in use are id(0) .. id(pool - 1) */
  uint32_t *order;      /* a permutation: order[0, live) are live */
  uint32_t *place;      /* place[order[k]] == k */
  uint32_t live, watchers;
  uint32_t low, high;   /* the crowd is held within [low, high] */
  float map_max;
  /* handles: what was in use at once (live plus removed this tick) */
  uint32_t removed_now;
  uint32_t removed_last; /* handles removed before the last tick wait one
                            more, until its leaves are delivered */
  uint32_t handles_bound;
  /* draining */
  uint64_t hold_all_until; /* the host drains nothing before this tick */
  uint64_t events, drained_late, skipped_drains;
  /* scratch */
  uint64_t *ids;
  size_t ids_capacity;
  uint64_t *other;
  size_t other_capacity;
} soak;

static soak S;

static void soak_fail(const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Fails the test naming the tick, the seed and the layout, for a replay. */
static void soak_fail(const char *format, ...)
{
  char message[1024];
  va_list ap;
  va_start(ap, format);
  vsnprintf(message, sizeof(message), format, ap);
  va_end(ap);
  fail_msg("tick %llu (AOI_SOAK_SEED=%llu AOI_SOAK_THREADS=%u "
           "AOI_SOAK_SHARDS=%u AOI_SOAK_ENTITIES=%u): %s",
           (unsigned long long)S.tick, (unsigned long long)S.set.seed,
           S.set.threads, S.set.shards, S.set.entities, message);
}

static void expect_rc(int got, int want, const char *what)
{
  if (got != want)
    soak_fail("%s returned %d (%s), expected %d (%s)", what, got,
              aoi_strerror(got), want, aoi_strerror(want));
}

static uint64_t id_of(uint32_t i)
{
  return (uint64_t)i * MULT + OFFSET;
}

/* The pool index of an id, or NONE when the id is no id of ours. */
static uint32_t index_of(uint64_t id)
{
  uint64_t i = (id - OFFSET) * S.inverse;
  return i < S.pool ? (uint32_t)i : NONE;
}

static int class_of(uint32_t i)
{
  unsigned k = i % 20;
  return k < 9 ? PLAYER : k < 15 ? NPC : k < 17 ? STATUE : CAMERA;
}

static void *grow(void *p, size_t *capacity, size_t need, size_t elem)
{
  if (need <= *capacity)
    return p;
  size_t c = *capacity ? *capacity : 16;
  while (c < need)
    c *= 2;
  p = realloc(p, c * elem);
  assert_non_null(p);
  *capacity = c;
  return p;
}

static void swap_places(uint32_t a, uint32_t b)
{
  uint32_t ia = S.order[a], ib = S.order[b];
  S.order[a] = ib;
  S.order[b] = ia;
  S.place[ib] = a;
  S.place[ia] = b;
}

/* A random live body, or NONE. */
static uint32_t some_live(void)
{
  return S.live ? S.order[rnd_below(S.live)] : NONE;
}

/* A random id that is not live, or NONE. */
static uint32_t some_free(void)
{
  uint32_t n = S.pool - S.live;
  return n ? S.order[S.live + rnd_below(n)] : NONE;
}

static void note_in_use(void)
{
  if (S.live + S.removed_now + S.removed_last > S.handles_bound)
    S.handles_bound = S.live + S.removed_now + S.removed_last;
}

/* ---- operations ---------------------------------------------------------- */

static void pick_velocity(body *b)
{
  double speed = 1 + 11 * rnd_unit(), angle = 6.283185307179586 * rnd_unit();
  b->vx = (float)(speed * cos(angle));
  b->vy = (float)(speed * sin(angle));
}

static float spawn_coordinate(void)
{
  if (rnd_below(50) == 0)
    return rnd_float(MAP_MIN - TELEPORT_MARGIN, MAP_MAX + TELEPORT_MARGIN);
  return rnd_float(MAP_MIN, MAP_MAX);
}

/* Fills body i as a new entity of its class (or, now and then, another). */
static void spawn(uint32_t i, int any_class)
{
  body *b = &S.bodies[i];
  int c = any_class && rnd_below(5) == 0 ? (int)rnd_below(4) : class_of(i);
  b->x = spawn_coordinate();
  b->y = spawn_coordinate();
  pick_velocity(b);
  switch (c) {
  case PLAYER:
    b->flags = WM;
    b->radius = rnd_float(40, 90);
    b->layers = 1;
    b->interest = rnd_below(10) == 0 ? 1u | 4u : ALL;
    break;
  case NPC:
  case STATUE:
    b->flags = AOI_MARKER;
    b->radius = rnd_float(0, 50);
    b->layers = rnd_below(20) == 0 ? 4u : 2u;
    b->interest = ALL;
    break;
  default:
    b->flags = AOI_WATCHER;
    b->radius = rnd_float(60, MAX_RADIUS);
    b->layers = 0;
    b->interest = rnd_below(3) == 0 ? 2u : ALL;
    break;
  }
  if (rnd_below(30) == 0)
    b->radius = rnd_below(2) ? 0 : MAX_RADIUS;
}

static void add_body(uint32_t i, int any_class)
{
  body *b = &S.bodies[i];
  assert_false(b->live);
  spawn(i, any_class);
  expect_rc(test_add(S.world, id_of(i), b->x, b->y, b->radius, b->flags,
                    b->layers, b->interest),
            0, "aoi_add");
  b->live = 1;
  b->pic.count = 0;
  b->skip_until = 0;
  b->last_tick = 0;
  b->enters = b->leaves = 0;
  swap_places(S.place[i], S.live);
  S.live++;
  if (b->flags & AOI_WATCHER)
    S.watchers++;
  note_in_use();
}

static void remove_body(uint32_t i)
{
  body *b = &S.bodies[i];
  assert_true(b->live);
  expect_rc(aoi_remove(S.world, id_of(i)), 0, "aoi_remove");
  b->live = 0;
  b->pic.count = 0; /* the client is gone; its undrained events too */
  S.live--;
  swap_places(S.place[i], S.live);
  if (b->flags & AOI_WATCHER)
    S.watchers--;
  S.removed_now++;
  note_in_use();
}

static void move_body(uint32_t i, float x, float y)
{
  body *b = &S.bodies[i];
  expect_rc(aoi_move(S.world, id_of(i), x, y), 0, "aoi_move");
  b->x = x;
  b->y = y;
}

/* One step of a walk: turn now and then, and back towards the map when
   beyond its margin. */
static void walk(uint32_t i)
{
  body *b = &S.bodies[i];
  if (rnd_below(25) == 0)
    pick_velocity(b);
  if ((b->x < MAP_MIN - WALK_MARGIN && b->vx < 0) ||
      (b->x > MAP_MAX + WALK_MARGIN && b->vx > 0))
    b->vx = -b->vx;
  if ((b->y < MAP_MIN - WALK_MARGIN && b->vy < 0) ||
      (b->y > MAP_MAX + WALK_MARGIN && b->vy > 0))
    b->vy = -b->vy;
  if (rnd_below(10) == 0)
    return; /* stands still this tick */
  if (rnd_below(200) == 0) {
    move_body(i, b->x, b->y); /* a move to where it is: no event */
    return;
  }
  move_body(i, b->x + b->vx, b->y + b->vy);
}

static uint32_t random_layers(void)
{
  static const uint32_t masks[] = {0, 1, 2, 4, 1 | 2, 2 | 4, ALL};
  return masks[rnd_below(sizeof(masks) / sizeof(masks[0]))];
}

/* Calls that must fail with their code and change nothing. */
static void invalid_call(void)
{
  uint32_t live = some_live(), free_id = some_free();
  switch (rnd_below(6)) {
  case 0:
    if (free_id != NONE)
      expect_rc(aoi_move(S.world, id_of(free_id), 1, 1), AOI_ENOENT,
                "aoi_move of a free id");
    break;
  case 1:
    if (live != NONE)
      expect_rc(test_add(S.world, id_of(live), 1, 1, 1, WM, ALL, ALL),
                AOI_EEXIST, "aoi_add of a live id");
    break;
  case 2:
    if (live != NONE)
      expect_rc(aoi_move(S.world, id_of(live), NAN, 1), AOI_ECOORD,
                "aoi_move to NaN");
    break;
  case 3:
    if (live != NONE)
      expect_rc(aoi_set_radius(S.world, id_of(live), MAX_RADIUS * 2),
                AOI_ERADIUS, "aoi_set_radius above max_radius");
    break;
  case 4:
    if (free_id != NONE)
      expect_rc(test_add(S.world, id_of(free_id), 1, 1, 1, 4, ALL, ALL),
                AOI_EFLAGS, "aoi_add with bad flags");
    break;
  default:
    if (free_id != NONE)
      expect_rc(aoi_remove(S.world, id_of(free_id)), AOI_ENOENT,
                "aoi_remove of a free id");
    break;
  }
}

/* Everything the game submits between two ticks. */
static void submit_tick(void)
{
  uint32_t n = S.set.entities;
  S.removed_last = S.removed_now;
  S.removed_now = 0;

  /* Walks and teleports. */
  for (uint32_t k = 0; k < S.live; k++) {
    uint32_t i = S.order[k];
    if (rnd_below(500) == 0)
      move_body(i, rnd_float(MAP_MIN - TELEPORT_MARGIN,
                             MAP_MAX + TELEPORT_MARGIN),
                rnd_float(MAP_MIN - TELEPORT_MARGIN,
                          MAP_MAX + TELEPORT_MARGIN));
    else if (class_of(i) != STATUE)
      walk(i);
  }

  /* Logouts and logins, balanced on average, held within [low, high]. */
  uint32_t churn = n / 400 + 1;
  uint32_t outs = rnd_below(2 * churn + 1), ins = rnd_below(2 * churn + 1);
  if (S.live > S.high)
    outs += S.live - S.high;
  for (uint32_t k = 0; k < outs && S.live > S.low; k++)
    remove_body(some_live());
  if (S.live + ins < S.low)
    ins = S.low - S.live;
  for (uint32_t k = 0; k < ins && S.live < S.high; k++) {
    uint32_t i = some_free();
    add_body(i, 0);
    if (rnd_below(5) == 0)
      walk(i); /* moved in the tick it was added */
  }

  /* Respawns: removed and added again under the same id in one tick. */
  for (uint32_t k = rnd_below(4); k > 0 && S.live > 0; k--) {
    uint32_t i = some_live();
    remove_body(i);
    add_body(i, 1);
  }

  /* Now and then an entity added and removed before any tick saw it. */
  if (rnd_below(8) == 0) {
    uint32_t i = some_free();
    if (i != NONE) {
      add_body(i, 1);
      if (rnd_below(2))
        walk(i);
      remove_body(i);
      if (rnd_below(2)) /* and again, living this time */
        add_body(i, 1);
    }
  }

  /* Radius and layer changes. */
  for (uint32_t k = rnd_below(2 * churn + 1); k > 0; k--) {
    uint32_t i = some_live();
    body *b = &S.bodies[i];
    b->radius = rnd_below(8) == 0 ? 0 : rnd_float(0, MAX_RADIUS);
    expect_rc(aoi_set_radius(S.world, id_of(i), b->radius), 0,
              "aoi_set_radius");
  }
  for (uint32_t k = rnd_below(churn + 1); k > 0; k--) {
    uint32_t i = some_live();
    body *b = &S.bodies[i];
    b->layers = random_layers();
    b->interest = rnd_below(4) == 0 ? random_layers() : ALL;
    expect_rc(aoi_set_layers(S.world, id_of(i), b->layers, b->interest), 0,
              "aoi_set_layers");
  }

  for (uint32_t k = rnd_below(3); k > 0; k--)
    invalid_call();

  /* Draining: a few watchers lag for some ticks; now and then the host
     drains nothing for a tick or three. */
  for (uint32_t k = rnd_below(n / 150 + 2); k > 0; k--) {
    uint32_t i = some_live();
    if (i != NONE && (S.bodies[i].flags & AOI_WATCHER))
      S.bodies[i].skip_until = S.tick + 2 + rnd_below(9);
  }
  if (rnd_below(40) == 0)
    S.hold_all_until = S.tick + 2 + rnd_below(3);
}

/* ---- the client side ----------------------------------------------------- */

static size_t picture_find(const picture *p, uint64_t id)
{
  for (size_t k = 0; k < p->count; k++)
    if (p->items[k].id == id)
      return k;
  return SIZE_MAX;
}

/* Applies what watcher `wi` drained, checking each event as a client would
   and against the host's record of the crowd. */
static void apply_events(uint32_t wi, const aoi_event *events, size_t count)
{
  body *a = &S.bodies[wi];
  uint64_t watcher = id_of(wi);
  uint32_t now = (uint32_t)S.tick;
  const aoi_event *prev = NULL;
  if (count > 0 && events[0].tick <= a->last_tick)
    soak_fail("watcher %llu drained an event of tick %u after one of tick %u",
              (unsigned long long)watcher, events[0].tick, a->last_tick);
  for (size_t k = 0; k < count; k++) {
    const aoi_event *e = &events[k];
    if (e->tick > now || e->tick == 0)
      soak_fail("watcher %llu: event of tick %u", (unsigned long long)watcher,
                e->tick);
    if (e->kind > AOI_MOVE)
      soak_fail("watcher %llu: event kind %u", (unsigned long long)watcher,
                e->kind);
    if (prev != NULL &&
        (e->tick < prev->tick ||
         (e->tick == prev->tick &&
          (e->kind < prev->kind ||
           (e->kind == prev->kind && e->id <= prev->id)))))
      soak_fail("watcher %llu: %s %llu (tick %u) after %s %llu (tick %u): "
                "out of order",
                (unsigned long long)watcher, kind_name(e->kind),
                (unsigned long long)e->id, e->tick, kind_name(prev->kind),
                (unsigned long long)prev->id, prev->tick);
    prev = e;
    uint32_t bi = index_of(e->id);
    if (bi == NONE || e->id == watcher)
      soak_fail("watcher %llu: %s of id %llu, which is %s",
                (unsigned long long)watcher, kind_name(e->kind),
                (unsigned long long)e->id,
                bi == NONE ? "no id of ours" : "itself");
    const body *b = &S.bodies[bi];
    if (e->tick == now) {
      /* A fresh event: the host's record is as of this very tick. */
      if (e->kind == AOI_LEAVE) {
        if (e->x != 0 || e->y != 0)
          soak_fail("watcher %llu: leave %llu at (%.9g, %.9g)",
                    (unsigned long long)watcher, (unsigned long long)e->id,
                    (double)e->x, (double)e->y);
      } else if (!b->live || !(b->flags & AOI_MARKER) || e->x != b->x ||
                 e->y != b->y) {
        soak_fail("watcher %llu: %s %llu at (%.9g, %.9g), which is %s at "
                  "(%.9g, %.9g)",
                  (unsigned long long)watcher, kind_name(e->kind),
                  (unsigned long long)e->id, (double)e->x, (double)e->y,
                  !b->live                    ? "not live"
                  : !(b->flags & AOI_MARKER)  ? "no marker"
                                              : "live",
                  (double)b->x, (double)b->y);
      }
    } else {
      S.drained_late++;
    }
    picture *p = &a->pic;
    size_t at = picture_find(p, e->id);
    switch (e->kind) {
    case AOI_ENTER:
      if (at != SIZE_MAX)
        soak_fail("watcher %llu: enter %llu (tick %u), which it already sees",
                  (unsigned long long)watcher, (unsigned long long)e->id,
                  e->tick);
      p->items = grow(p->items, &p->capacity, p->count + 1, sizeof(seen));
      p->items[p->count++] = (seen){e->id, e->x, e->y};
      a->enters++;
      break;
    case AOI_LEAVE:
      if (at == SIZE_MAX)
        soak_fail("watcher %llu: leave %llu (tick %u), which it does not see",
                  (unsigned long long)watcher, (unsigned long long)e->id,
                  e->tick);
      p->items[at] = p->items[--p->count];
      a->leaves++;
      break;
    default:
      if (at == SIZE_MAX)
        soak_fail("watcher %llu: move %llu (tick %u), which it does not see",
                  (unsigned long long)watcher, (unsigned long long)e->id,
                  e->tick);
      p->items[at].x = e->x;
      p->items[at].y = e->y;
      break;
    }
  }
  if (count > 0)
    a->last_tick = events[count - 1].tick;
  S.events += count;
}

/* Drains the pending watchers, all of them or all but the lagging ones. */
static void drain(int all)
{
  if (!all && S.hold_all_until > S.tick) {
    S.skipped_drains++;
    return;
  }
  const uint64_t *ids;
  size_t n;
  expect_rc(aoi_pending(S.world, &ids, &n), 0, "aoi_pending");
  for (size_t k = 0; k < n; k++) {
    if (k > 0 && ids[k - 1] >= ids[k])
      soak_fail("aoi_pending: %llu before %llu", (unsigned long long)ids[k - 1],
                (unsigned long long)ids[k]);
    uint32_t i = index_of(ids[k]);
    if (i == NONE || !S.bodies[i].live ||
        !(S.bodies[i].flags & AOI_WATCHER))
      soak_fail("aoi_pending lists %llu, which is no live watcher",
                (unsigned long long)ids[k]);
    if (!all && S.bodies[i].skip_until > S.tick)
      continue;
    const aoi_event *events;
    size_t count;
    expect_rc(aoi_drain(S.world, ids[k], &events, &count), 0, "aoi_drain");
    if (count == 0)
      soak_fail("aoi_pending lists %llu, which had no events",
                (unsigned long long)ids[k]);
    apply_events(i, events, count);
  }
  if (all) {
    expect_rc(aoi_pending(S.world, &ids, &n), 0, "aoi_pending");
    if (n != 0)
      soak_fail("%zu watchers still pending after draining all", n);
    S.hold_all_until = 0;
    for (uint32_t k = 0; k < S.live; k++)
      S.bodies[S.order[k]].skip_until = 0;
  }
}

/* ---- checks -------------------------------------------------------------- */

/* After every tick: stats, handles and the id map. */
static void check_counts(void)
{
  aoi_world *w = S.world;
  aoi_stats st;
  expect_rc(aoi_world_stats(w, &st), 0, "aoi_stats_get");
  if (st.tick != S.tick || st.entities != S.live || st.watchers != S.watchers)
    soak_fail("stats: tick %llu, %llu entities, %llu watchers; expected "
              "%llu, %u, %u",
              (unsigned long long)st.tick, (unsigned long long)st.entities,
              (unsigned long long)st.watchers, (unsigned long long)S.tick,
              S.live, S.watchers);
  uint64_t owned = 0;
  for (unsigned s = 0; s < st.shards; s++)
    owned += st.shard_entities[s];
  if (owned != S.live)
    soak_fail("the shards own %llu entities, %u are live",
              (unsigned long long)owned, S.live);
  if (w->limbo_count != 0)
    soak_fail("%u removed handles not freed after the tick", w->limbo_count);
  /* Handles removed before this tick wait one more (limbo_old): the leaves
     of this tick still name their ids until they are delivered. */
  if ((uint64_t)w->free_count + w->limbo_old_count + w->live !=
      w->handle_count)
    soak_fail("handles: %u free + %u waiting + %llu live != high-water %u",
              w->free_count, w->limbo_old_count, (unsigned long long)w->live,
              w->handle_count);
  if (w->live != S.live || w->ids.count != S.live)
    soak_fail("the world counts %llu live and its id map %u ids; %u are live",
              (unsigned long long)w->live, w->ids.count, S.live);
  if (w->handle_count > S.handles_bound)
    soak_fail("handle high-water %u, but at most %u were ever in use at once",
              w->handle_count, S.handles_bound);
}

static int sorted_holds(const uint64_t *ids, size_t n, uint64_t id)
{
  return bsearch(&id, ids, n, sizeof(uint64_t), compare_u64) != NULL;
}

static int within(const body *a, const body *b, double reach)
{
  double dx = (double)b->x - (double)a->x, dy = (double)b->y - (double)a->y;
  return dx * dx + dy * dy <= reach * reach;
}

/* Calls a query into S.ids, growing it until the answer fits. */
static size_t answer_view(uint64_t id, int watchers_of)
{
  size_t n;
  for (;;) {
    int rc = watchers_of ? aoi_watchers_of(S.world, id, S.ids, S.ids_capacity,
                                           &n)
                         : aoi_view(S.world, id, S.ids, S.ids_capacity, &n);
    expect_rc(rc, 0, watchers_of ? "aoi_watchers_of" : "aoi_view");
    if (n <= S.ids_capacity)
      return n;
    S.ids = grow(S.ids, &S.ids_capacity, n, sizeof(uint64_t));
  }
}

static void expect_same_ids(const char *what, uint64_t about,
                            const uint64_t *got, size_t n,
                            const uint64_t *want, size_t m)
{
  size_t k = 0;
  while (k < n && k < m && got[k] == want[k])
    k++;
  if (k == n && k == m)
    return;
  soak_fail("%s of %llu: %zu ids, %zu expected; first difference at %zu "
            "(%llu vs %llu)",
            what, (unsigned long long)about, n, m, k,
            k < n ? (unsigned long long)got[k] : 0ull,
            k < m ? (unsigned long long)want[k] : 0ull);
}

/* Watcher wi's client picture against aoi_view and the host's record, with
   its outbox empty: the picture must be the view (so every enter it got was
   matched by exactly one leave, or the entity is still in view), hold every
   entity where it is now, and nothing beyond the watcher's reach plus
   hysteresis or outside its interest. With `markers`, also the brute-force
   converse: every matching marker within its radius is in view. */
static void check_watcher(uint32_t wi, const uint32_t *markers, uint32_t nm)
{
  body *a = &S.bodies[wi];
  uint64_t watcher = id_of(wi);
  size_t n = answer_view(watcher, 0);
  picture *p = &a->pic;
  S.other = grow(S.other, &S.other_capacity, p->count + 1, sizeof(uint64_t));
  for (size_t j = 0; j < p->count; j++)
    S.other[j] = p->items[j].id;
  qsort(S.other, p->count, sizeof(uint64_t), compare_u64);
  expect_same_ids("the client picture vs aoi_view", watcher, S.other,
                  p->count, S.ids, n);
  if (a->enters - a->leaves != n)
    soak_fail("watcher %llu: %llu enters - %llu leaves != %zu in view",
              (unsigned long long)watcher, (unsigned long long)a->enters,
              (unsigned long long)a->leaves, n);
  double outer = (double)a->radius + (double)HYSTERESIS;
  for (size_t j = 0; j < p->count; j++) {
    const seen *s = &p->items[j];
    const body *b = &S.bodies[index_of(s->id)];
    if (!b->live || !(b->flags & AOI_MARKER))
      soak_fail("watcher %llu sees %llu, which is no live marker",
                (unsigned long long)watcher, (unsigned long long)s->id);
    if (s->x != b->x || s->y != b->y)
      soak_fail("watcher %llu was told %llu is at (%.9g, %.9g); it is at "
                "(%.9g, %.9g)",
                (unsigned long long)watcher, (unsigned long long)s->id,
                (double)s->x, (double)s->y, (double)b->x, (double)b->y);
    if ((a->interest & b->layers) == 0 || !within(a, b, outer))
      soak_fail("watcher %llu (radius %.9g) sees %llu beyond its reach or "
                "interest",
                (unsigned long long)watcher, (double)a->radius,
                (unsigned long long)s->id);
  }
  for (uint32_t j = 0; markers != NULL && j < nm; j++) {
    const body *b = &S.bodies[markers[j]];
    if (markers[j] == wi || (a->interest & b->layers) == 0 ||
        !within(a, b, a->radius))
      continue;
    if (!sorted_holds(S.ids, n, id_of(markers[j])))
      soak_fail("watcher %llu (radius %.9g) does not see %llu, within its "
                "radius",
                (unsigned long long)watcher, (double)a->radius,
                (unsigned long long)id_of(markers[j]));
  }
}

/* After every tick: each watcher whose outbox was drained (all but the
   lagging ones), so that a loss that the next tick would paper over (a move
   dropped, then overtaken by the next one) is still seen. */
static void check_drained(void)
{
  if (S.hold_all_until > S.tick)
    return;
  for (uint32_t k = 0; k < S.live; k++) {
    uint32_t wi = S.order[k];
    const body *a = &S.bodies[wi];
    if ((a->flags & AOI_WATCHER) && a->skip_until <= S.tick)
      check_watcher(wi, NULL, 0);
  }
}

/* Checks draw from their own random stream, so that the operations depend
   on the seed and the tick number only. */
static uint64_t check_rng_state = UINT64_C(0xc0ffee);

/* Every CHECK_EVERY ticks, with every outbox drained. */
static void check_pictures(void)
{
  uint64_t operations_rng = rng_state;
  rng_state = check_rng_state;
  /* Markers, once, for the brute-force bound. */
  uint32_t *markers = malloc(sizeof(uint32_t) * (S.live + 1));
  assert_non_null(markers);
  uint32_t nm = 0;
  for (uint32_t k = 0; k < S.live; k++)
    if (S.bodies[S.order[k]].flags & AOI_MARKER)
      markers[nm++] = S.order[k];
  /* The brute force is O(watchers x markers): past this budget, a sample. */
  double budget = 2e7, share = (double)S.watchers * nm > budget
                                   ? budget / ((double)S.watchers * nm)
                                   : 1;
  for (uint32_t k = 0; k < S.live; k++) {
    uint32_t wi = S.order[k];
    if (S.bodies[wi].flags & AOI_WATCHER)
      check_watcher(wi, share < 1 && rnd_unit() >= share ? NULL : markers,
                    nm);
  }

  /* aoi_watchers_of of a few markers: the watchers whose picture holds it. */
  for (int t = 0; t < 8 && nm > 0; t++) {
    uint32_t bi = markers[rnd_below(nm)];
    uint64_t id = id_of(bi);
    size_t m = 0;
    for (uint32_t k = 0; k < S.live; k++) {
      const body *a = &S.bodies[S.order[k]];
      if ((a->flags & AOI_WATCHER) && picture_find(&a->pic, id) != SIZE_MAX) {
        S.other = grow(S.other, &S.other_capacity, m + 1, sizeof(uint64_t));
        S.other[m++] = id_of(S.order[k]);
      }
    }
    qsort(S.other, m, sizeof(uint64_t), compare_u64);
    size_t n = answer_view(id, 1);
    expect_same_ids("aoi_watchers_of", id, S.ids, n, S.other, m);
  }

  /* aoi_query_circle at a few places: brute force over the markers. */
  for (int t = 0; t < 4; t++) {
    float x = spawn_coordinate(), y = spawn_coordinate();
    float r = rnd_float(0, MAX_RADIUS); /* a query is bounded like a view */
    uint32_t mask = rnd_below(2) ? ALL : random_layers();
    body centre = {0};
    centre.x = x;
    centre.y = y;
    size_t m = 0;
    for (uint32_t j = 0; j < nm; j++) {
      const body *b = &S.bodies[markers[j]];
      if ((b->layers & mask) != 0 && within(&centre, b, r)) {
        S.other = grow(S.other, &S.other_capacity, m + 1, sizeof(uint64_t));
        S.other[m++] = id_of(markers[j]);
      }
    }
    qsort(S.other, m, sizeof(uint64_t), compare_u64);
    size_t n;
    for (;;) {
      expect_rc(aoi_query_circle(S.world, x, y, r, mask, S.ids,
                                 S.ids_capacity, &n),
                0, "aoi_query_circle");
      if (n <= S.ids_capacity)
        break;
      S.ids = grow(S.ids, &S.ids_capacity, n, sizeof(uint64_t));
    }
    expect_same_ids("aoi_query_circle", 0, S.ids, n, S.other, m);
  }
  free(markers);

  if (!aoi__world_valid(S.world))
    soak_fail("aoi__world_valid failed");
  check_rng_state = rng_state;
  rng_state = operations_rng;
}

/* ---- the run ------------------------------------------------------------- */

/* What the engine holds for outboxes and views (capacities, in bytes): the
   two structures that grow with traffic rather than with entities, named in
   the summary so that a memory failure points at its cause. */
static double outbox_bytes(void)
{
  const aoi_world *w = S.world;
  double total = 0;
  for (uint32_t h = 0; h < w->handle_capacity; h++)
    total += (double)w->outbox[h].capacity * sizeof(aoi_event);
  return total;
}

static double view_bytes(void)
{
  const aoi_world *w = S.world;
  double total = 0;
  for (unsigned s = 0; s < w->shard_count; s++)
    for (uint32_t i = 0; i < w->shards[s].count; i++)
      total += (double)w->shards[s].entities[i].view.capacity *
               sizeof(uint32_t);
  return total;
}

static double now_seconds(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double mib(double b)
{
  return b / (1024.0 * 1024.0);
}

static void test_soak(void **state)
{
  (void)state;
  memset(&S, 0, sizeof(S));
  S.set = read_settings();
  rng_state = S.set.seed;
  S.inverse = MULT;
  for (int k = 0; k < 6; k++) /* Newton: each step doubles the good bits */
    S.inverse *= 2 - MULT * S.inverse;
  assert_true(MULT * S.inverse == 1);

  uint32_t n = S.set.entities;
  S.map_max = (float)(MAP_SIDE * sqrt(n / MAP_CROWD));
  S.pool = n + n / 4 + 64;
  S.low = n - n / 20;
  S.high = n + n / 20;
  S.bodies = calloc(S.pool, sizeof(body));
  S.order = malloc(sizeof(uint32_t) * S.pool);
  S.place = malloc(sizeof(uint32_t) * S.pool);
  assert_non_null(S.bodies);
  assert_non_null(S.order);
  assert_non_null(S.place);
  for (uint32_t i = 0; i < S.pool; i++)
    S.order[i] = S.place[i] = i;
  for (uint32_t i = 0; i < S.pool; i++)
    assert_int_equal(index_of(id_of(i)), i);

  memset(&bytes, 0, sizeof(bytes));
  aoi_allocator hooks = {counting_alloc, counting_realloc, counting_free,
                         &bytes};
  aoi_config config;
  aoi_config_default(&config);
  config.threads = S.set.threads;
  config.shards = S.set.shards;
  config.min_x = config.min_y = MAP_MIN;
  config.max_x = config.max_y = MAP_MAX;
  config.max_radius = MAX_RADIUS;
  config.hysteresis = HYSTERESIS;
  config.move_events = 1;
  config.allocator = &hooks;
  int rc = aoi_create(&config, &S.world);
  if (rc != 0)
    fail_msg("aoi_create (threads %u, shards %u): %s", S.set.threads,
             S.set.shards, aoi_strerror(rc));

  for (uint32_t k = 0; k < n; k++)
    add_body(some_free(), 0);

  double started = now_seconds(), elapsed = 0;
  int warm = 0;
  uint64_t warm_tick = 0;
  long long warm_peak = 0, warm_calls = 0;
  rss warm_rss = {-1, -1};
  double warm_outboxes = 0;
  for (;;) {
    if (S.tick > 0)
      submit_tick();
    expect_rc(aoi_tick(S.world), 0, "aoi_tick");
    S.tick++;
    check_counts();
    int full = S.tick % S.set.check_every == 0;
    drain(full);
    if (!full)
      check_drained();
    if (full) {
      check_pictures();
      if (S.set.verbose) {
        rss r = read_rss();
        printf("soak: tick %llu, %.1f s: %u live, live bytes %.2f MiB "
               "(peak %.2f; outboxes %.2f, views %.2f), %lld blocks, %lld "
               "allocator calls, VmRSS %ld kB, VmHWM %ld kB, handles %u, "
               "%llu events\n",
               (unsigned long long)S.tick, elapsed, S.live,
               mib((double)atomic_load(&bytes.live_bytes)),
               mib((double)atomic_load(&bytes.peak_bytes)), mib(outbox_bytes()),
               mib(view_bytes()), (long long)atomic_load(&bytes.live_blocks),
               (long long)atomic_load(&bytes.attempts), r.rss_kib, r.hwm_kib,
               S.world->handle_count, (unsigned long long)S.events);
        fflush(stdout);
      }
    }
    elapsed = now_seconds() - started;
    int done = S.set.ticks ? S.tick >= S.set.ticks : elapsed >= S.set.seconds;
    if (!warm && !done &&
        (S.set.ticks ? S.tick >= S.set.ticks * WARMUP_SHARE
                     : elapsed >= S.set.seconds * WARMUP_SHARE) &&
        S.tick >= WARMUP_TICKS) {
      /* The warm-up peak; from here on the peak is measured afresh. */
      warm = 1;
      warm_tick = S.tick;
      warm_peak = atomic_load(&bytes.peak_bytes);
      warm_calls = atomic_load(&bytes.attempts);
      warm_rss = read_rss();
      warm_outboxes = outbox_bytes();
      atomic_store(&bytes.peak_bytes, atomic_load(&bytes.live_bytes));
    }
    if (done)
      break;
  }

  /* A last full drain and check. */
  if (S.tick % S.set.check_every != 0) {
    drain(1);
    check_pictures();
  }
  long long after_peak = atomic_load(&bytes.peak_bytes);
  long long calls = atomic_load(&bytes.attempts);
  rss end_rss = read_rss();
  uint32_t high_water = S.world->handle_count;
  double end_outboxes = outbox_bytes();
  uint64_t after_ticks = warm ? S.tick - warm_tick : 0;

  aoi_destroy(S.world);
  S.world = NULL;
  for (uint32_t i = 0; i < S.pool; i++)
    free(S.bodies[i].pic.items);
  free(S.bodies);
  free(S.order);
  free(S.place);
  free(S.ids);
  free(S.other);

  printf("soak: %llu ticks in %.1f s (threads %u, shards %u, %u entities, "
         "seed %llu): %llu events (%llu drained late, %llu ticks undrained), ",
         (unsigned long long)S.tick, elapsed, S.set.threads, S.set.shards, n,
         (unsigned long long)S.set.seed, (unsigned long long)S.events,
         (unsigned long long)S.drained_late,
         (unsigned long long)S.skipped_drains);
  if (warm)
    printf("peak live bytes %.2f MiB warm-up / %.2f MiB after (x%.3f over "
           "%llu ticks; outbox capacity %.2f / %.2f MiB), %.1f allocator "
           "calls a tick after warm-up, VmHWM %ld kB at warm-up, ",
           mib((double)warm_peak), mib((double)after_peak),
           (double)after_peak / (double)warm_peak,
           (unsigned long long)after_ticks, mib(warm_outboxes),
           mib(end_outboxes),
           (double)(calls - warm_calls) / (double)after_ticks,
           warm_rss.hwm_kib);
  else
    printf("peak live bytes %.2f MiB (the run ended in warm-up), ",
           mib((double)after_peak));
  printf("VmHWM %ld kB at the end, handles high-water %u (in use at once "
         "<= %u)\n",
         end_rss.hwm_kib, high_water, S.handles_bound);
  fflush(stdout);

  /* Every byte back, with the sizes it was taken with. */
  if (atomic_load(&bytes.live_bytes) != 0 ||
      atomic_load(&bytes.live_blocks) != 0)
    soak_fail("after aoi_destroy: %lld bytes in %lld blocks still live",
              (long long)atomic_load(&bytes.live_bytes),
              (long long)atomic_load(&bytes.live_blocks));
  if (atomic_load(&bytes.wrong_sizes) != 0)
    soak_fail("%lld frees or reallocs gave a wrong size, the last %lld for a "
              "block of %lld bytes",
              (long long)atomic_load(&bytes.wrong_sizes),
              (long long)atomic_load(&bytes.wrong_given),
              (long long)atomic_load(&bytes.wrong_actual));

  if (after_ticks < MIN_AFTER_TICKS) {
    printf("soak: memory flatness not checked: %llu ticks after warm-up, "
           "%u needed\n",
           (unsigned long long)after_ticks, MIN_AFTER_TICKS);
    return;
  }
  if ((double)after_peak > MEMORY_FACTOR * (double)warm_peak)
    soak_fail("live bytes grew after warm-up: peak %lld bytes in the %llu "
              "ticks after tick %llu, %lld during warm-up (limit x%.2f); "
              "outbox capacity %.0f bytes at the end of warm-up, %.0f at the "
              "end",
              after_peak, (unsigned long long)after_ticks,
              (unsigned long long)warm_tick, warm_peak, MEMORY_FACTOR,
              warm_outboxes, end_outboxes);
  if (!SOAK_SANITIZED && warm_rss.hwm_kib > 0 && end_rss.hwm_kib > 0 &&
      (double)end_rss.hwm_kib >
          RSS_FACTOR * (double)warm_rss.hwm_kib + RSS_SLACK_KIB)
    soak_fail("VmHWM grew after warm-up: %ld kB at the end, %ld kB at tick "
              "%llu",
              end_rss.hwm_kib, warm_rss.hwm_kib, (unsigned long long)warm_tick);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_soak),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
