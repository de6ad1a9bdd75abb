/*
 * test_differential.c: the engine against the brute-force model (model.c),
 * through the public API only.
 *
 * Each case is a seed, a shape and a layout (threads, shards). The seed picks
 * the rest of the config (hysteresis, moves on/off, max radius, cell size,
 * bounds hint), a population and a number of ticks, and drives a random
 * stream of operations into both an aoi_world and a model: adds, walks,
 * teleports (far outside the bounds too), moves onto and across shard
 * borders and back, removes, same-tick remove + re-add, radius and layer
 * changes, and bad calls that must fail with the same code and change
 * nothing. Every call must return what the model returns. After each tick
 * the engine's outboxes (aoi_pending, aoi_drain) must hold exactly the
 * model's events; some ticks are not drained, or only in part, so that
 * outboxes accumulate. Stats, views, watchers_of and circle queries are
 * compared too, right after ticks and between operations.
 *
 * The op-queue cases (test_coalesce_*) heap many operations on each entity
 * between two ticks, which the engine folds into one record per entity:
 * moves back and forth across shard borders, radius and layers set again
 * and again, an id removed and added twice over, entities added and removed
 * (or added, moved and removed) before any tick, on every layout of threads
 * 1-4 x the shard counts below, with ticks run on the host or on the
 * workers (the world's internal switch, internal.h) by turns.
 *
 * The policy cases (group `policies`, seeds from 1001) add the interest
 * policies of trace format v2 to the same streams: 1 to 8 move bands (7
 * cases in 10; periods 1 to 2^32 - 1, whole distances that tie with
 * quantized positions), appeals (0 again, above the radii, max_radius, bad
 * ones), caps (1, 2, a few, below the current view's size, back to 0, the
 * largest), set at add or later, in bursts with respawns (which reset
 * both), markers put on the edge of their appeal, and ties of cap keys (a
 * member at d and a newcomer at d - H, or two newcomers at d), with crowds
 * likelier. The v1 cases draw none of this: their streams are as before.
 *
 * A share of the moves (about one in three) goes through references
 * (aoi_ref_of, aoi_move_ref) instead of ids. Each slot keeps the reference
 * it last took, across ticks, removes and respawns, as a host would: a
 * move by reference of an entity removed since, or respawned since (under
 * the same id, the same tick or later), must be refused with AOI_ENOENT
 * and change nothing, whatever its coordinates; the host then takes the
 * new entity's reference and moves by it. aoi_ref_of must give back the
 * cached reference while the entity lives, and AOI_ENOENT (writing
 * nothing) for an id that is not live. Which moves take that path is drawn
 * from a generator of its own, so the stream of operations is the same as
 * without references.
 *
 * Tags: every add gives the entity test_tag(id), and from the same
 * generator as the references, about one move in twelve first sets a
 * random slot's tag (aoi_set_tag: AOI_ENOENT for one that is not live).
 * Every event must carry its entity's tag as of the tick that made it: a
 * leave of an entity removed since the last tick the last tag it was
 * given, anything else the slot's tag as of the tick.
 *
 * The pool group (rounds from 2001) runs several cases at once: a round
 * makes a pool of 1, 2, 3, 5 or 8 threads (by turns) and 2 to 9 worlds,
 * each a case of its own seed, shape and size (v1 or policy streams, some
 * op-queue ones) with its own model: most on the pool with their own
 * lanes (0, that is 1, to 8) and shards, some on the calling thread
 * (AOI_RUN_CALLER), at most one on threads of its own (AOI_RUN_OWN, pinned
 * by the seed's turn); every other round one large world (over 2048 live
 * entities, short sight: its ticks are lane tasks), and some tiny or empty
 * ones. The pool worlds run their ticks where they choose or, by turns,
 * always as lane tasks. Each tick ticks every world once, by aoi_tick_many
 * of them all, by aoi_tick_many_begin and then aoi_tick_end of each (each
 * checked while the others may still run) or aoi_tick_many_end, by
 * aoi_tick of some while the others are in flight, or by aoi_tick_begin of
 * each; and each world is checked against its model as above. At the end
 * the pool refuses aoi_pool_destroy while its last world lives.
 *
 * The operations depend on the seed and shape only, so every layout of a
 * seed replays the same stream. On a failure the stream so far is written as
 * a trace (diff-seedS-tT-sM-SHAPE.trace in the working directory) that
 * aoi-replay and model-replay can replay.
 *
 * usage: test_differential [v1|policies|pool] (default: all three groups).
 * Environment: AOI_DIFF_SEEDS=N seeds per shape (default 14 for v1 and 10
 * for the policy cases, each run on 3 layouts; the op-queue cases: 2 and
 * 1, each on every layout), or rounds of the pool group (default 50);
 * AOI_DIFF_SEED=S only seed or round S (of the group it belongs to);
 * AOI_DIFF_LAYOUT=T,M only that layout (not for the pool group);
 * AOI_DIFF_VERBOSE=1 prints one line per case (and per round);
 * AOI_DIFF_POLICIES=off runs the policy cases' streams without their
 * policy calls and bands (a check of the harness while the engine does not
 * apply the policies).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aoi.h"
#include "support.h"
#include "internal.h" /* the switch between host-run and worker-run ticks */
#include "model.h"

#define DEFAULT_SEEDS 14
/* The policy cases: seeds POLICY_SEED_BASE + 1 ... */
#define DEFAULT_POLICY_SEEDS 10
#define POLICY_SEED_BASE 1000
/* The pool group: rounds POOL_SEED_BASE + 1 ... */
#define DEFAULT_POOL_ROUNDS 50
#define POOL_SEED_BASE 2000
#define LAYOUTS_PER_SEED 3
/* Ids a case may use: its population and half as many again (make_pool),
   for the largest world of the pool group too. */
#define POOL_MAX 4096
#define SENTINEL UINT64_C(0x5e5e5e5e5e5e5e5e)

static const unsigned shard_counts[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 16};
#define SHARD_COUNTS (sizeof shard_counts / sizeof shard_counts[0])
static const unsigned border_divisors[] = {2, 3, 4, 5, 7, 8, 9, 12, 16};
#define BORDER_DIVISORS (sizeof border_divisors / sizeof border_divisors[0])
static const uint32_t masks[] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 1, 2,
                                 3, 4, 6, 0x80000000u, 0};
#define MASKS (sizeof masks / sizeof masks[0])
static const float max_radii[] = {25, 60, 120, 250, 500};
static const float hystereses[] = {0.5f, 2.5f, 10, 40};
static const float quanta[] = {0, 0.25f, 0.5f, 1};

/* ---- random numbers (rng_next, rng_below: support.h) --------------------- */

static double rng_unit(uint64_t *state) {
  return (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

static int rng_chance(uint64_t *state, double p) { return rng_unit(state) < p; }

static double rng_range(uint64_t *state, double lo, double hi) {
  return lo + (hi - lo) * rng_unit(state);
}

/* ---- one case ------------------------------------------------------------ */

typedef struct slot {
  uint64_t id;
  int live;
  unsigned flags;
  float x, y, radius;
  float appeal; /* as set since its add (the policy cases) */
  size_t live_index;
  aoi_event *outbox; /* what aoi_drain must give back */
  size_t outbox_count, outbox_capacity;
  uint32_t life;    /* successful adds of this id so far */
  aoi_ref ref;      /* the reference taken last (0: none), in ... */
  uint32_t ref_life; /* ... this life: stale unless live in the same */
  uint64_t tag;      /* as of the last tick */
  uint64_t tag_next; /* as set since, for the next tick */
  uint64_t gone_tag; /* the last tag of the entity removed since it */
  int removed;       /* an entity of this id was removed since it */
} slot;

/* An outbox drained this round: the borrowed events and where their copy
   is kept, to check that they stay valid until the next tick. */
typedef struct borrowed {
  uint64_t id;
  const aoi_event *events;
  size_t count, offset;
} borrowed;

typedef struct diff_case {
  unsigned seed, threads, shards;
  aoi_config config;
  uint64_t rng;
  uint64_t ref_rng; /* which moves go by reference: apart from the stream */
  uint64_t ref_moves, stale_refused; /* for AOI_DIFF_VERBOSE */
  aoi_world *world;
  model *m;
  slot slots[POOL_MAX]; /* sorted by id */
  size_t slot_count;
  size_t live[POOL_MAX];
  size_t live_count;
  uint32_t tick;
  int after_tick; /* checking the outcome of tick `tick` */
  unsigned population, ticks;
  float area_min_x, area_min_y, area_max_x, area_max_y;
  float quantum;
  int crowd;
  float crowd_x, crowd_y, crowd_spread;
  /* A case of short sight and a few far-sighted watchers (max_radius
     500; about one in twenty sees from 250 to 500), that teleport only
     within the area: the engine computes those from the marks
     (aoi__far_sighted) */
  int spectators;
  float borders_x[160], borders_y[160];
  size_t border_count;
  trace_text trace; /* the operations so far */
  uint64_t *got_ids, *want_ids; /* POOL_MAX + 16 each */
  borrowed borrows[POOL_MAX + 8];
  size_t borrow_count;
  aoi_event *kept; /* copies of the borrowed events */
  size_t kept_count, kept_capacity;
  uint64_t events_checked, calls_checked;
  uint64_t handoffs, ghosts; /* summed over ticks, for AOI_DIFF_VERBOSE */
  uint64_t lane_ticks; /* ticks run as lane tasks (not skipped, not inline) */
  int coalesce; /* an op-queue case: many operations per entity a tick */
  /* A policy case: appeals, caps and move bands in the stream. With
     `apply_policies` 0 (AOI_DIFF_POLICIES=off) the stream draws the same
     numbers but makes no policy call and sets no band: the harness check. */
  int policies, apply_policies;
  /* The pool group: the case's place in its round, for messages ("" for
     the other groups), and whether it is an empty world (no operation). */
  char round_note[192];
  unsigned round_seed;
  int idle;
} diff_case;

static diff_case *current; /* freed by the teardown when a case fails */

static const char *shape_name(aoi_shape shape) {
  return shape == AOI_SHAPE_CIRCLE   ? "circle"
         : shape == AOI_SHAPE_SQUARE ? "square"
                                     : "cells";
}

static const char *code_name(int code) {
  switch (code) {
  case 0:
    return "0";
  case AOI_EINVAL:
    return "AOI_EINVAL";
  case AOI_ENOMEM:
    return "AOI_ENOMEM";
  case AOI_EEXIST:
    return "AOI_EEXIST";
  case AOI_ENOENT:
    return "AOI_ENOENT";
  case AOI_ECOORD:
    return "AOI_ECOORD";
  case AOI_ERADIUS:
    return "AOI_ERADIUS";
  case AOI_EFLAGS:
    return "AOI_EFLAGS";
  case AOI_ESYS:
    return "AOI_ESYS";
  default:
    return "(unknown code)";
  }
}

/* Reports a mismatch with the case's coordinates, writes the trace so far,
   and fails the test. */
static void case_fail(diff_case *c, const char *format, ...) {
  char message[2048], path[128], shape[48];
  va_list args;

  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  snprintf(path, sizeof path, "diff-seed%u-t%u-s%u-%s.trace", c->seed,
           c->threads, c->shards, shape_name(c->config.shape));
  FILE *f = fopen(path, "w");
  if (f != NULL) {
    fprintf(f, "# test_differential seed %u threads %u shards %u: %s\n",
            c->seed, c->threads, c->shards, message);
    fwrite(c->trace.text, 1, c->trace.length, f);
    fclose(f);
  }
  if (c->config.shape == AOI_SHAPE_CELLS)
    snprintf(shape, sizeof shape, "cells %.9g", (double)c->config.cell_size);
  else
    snprintf(shape, sizeof shape, "%s", shape_name(c->config.shape));
  if (c->round_note[0] != '\0')
    fail_msg("seed %u threads %u shards %u shape %s hysteresis %.9g moves %s "
             "max_radius %.9g move bands %u, %s, %s tick %u: %s\n"
             "  trace so far: %s (aoi-replay --threads %u --shards %u %s)\n"
             "  rerun: AOI_DIFF_SEED=%u test_differential pool",
             c->seed, c->threads, c->shards, shape,
             (double)c->config.hysteresis, c->config.move_events ? "on" : "off",
             (double)c->config.max_radius, c->config.move_band_count,
             c->round_note, c->after_tick ? "after" : "in the ops before",
             c->after_tick ? c->tick : c->tick + 1, message, path, c->threads,
             c->shards, path, c->round_seed);
  fail_msg("seed %u threads %u shards %u shape %s hysteresis %.9g moves %s "
           "max_radius %.9g move bands %u, %s tick %u: %s\n"
           "  trace so far: %s (aoi-replay --threads %u --shards %u %s)\n"
           "  rerun: AOI_DIFF_SEED=%u AOI_DIFF_LAYOUT=%u,%u test_differential%s",
           c->seed, c->threads, c->shards, shape, (double)c->config.hysteresis,
           c->config.move_events ? "on" : "off", (double)c->config.max_radius,
           c->config.move_band_count,
           c->after_tick ? "after" : "in the ops before",
           c->after_tick ? c->tick : c->tick + 1, message, path, c->threads,
           c->shards, path, c->seed, c->threads, c->shards,
           c->policies ? " policies" : " v1");
}

static void check_code(diff_case *c, const char *call, int got, int want) {
  c->calls_checked++;
  if (got != want)
    case_fail(c, "%s returned %s, the model %s", call, code_name(got),
              code_name(want));
}

/* The slot of an id of the pool, or NULL. */
static slot *slot_of(diff_case *c, uint64_t id) {
  size_t lo = 0, hi = c->slot_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->slots[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < c->slot_count && c->slots[lo].id == id ? &c->slots[lo] : NULL;
}

static void set_live(diff_case *c, slot *s, int live) {
  if (live == s->live)
    return;
  if (live) {
    s->live_index = c->live_count;
    c->live[c->live_count++] = (size_t)(s - c->slots);
  } else {
    size_t last = c->live[--c->live_count];
    c->live[s->live_index] = last;
    c->slots[last].live_index = s->live_index;
    s->outbox_count = 0; /* aoi_remove drops undrained events */
  }
  s->live = live;
}

static slot *pick_live(diff_case *c) {
  if (c->live_count == 0)
    return NULL;
  return &c->slots[c->live[rng_below(&c->rng, c->live_count)]];
}

/* A slot that is not live, or a live one when few are free (then an add
   is a bad call that must fail with AOI_EEXIST). */
static slot *pick_free(diff_case *c) {
  for (int tries = 0; tries < 8; tries++) {
    slot *s = &c->slots[rng_below(&c->rng, c->slot_count)];
    if (!s->live)
      return s;
  }
  return &c->slots[rng_below(&c->rng, c->slot_count)];
}

/* ---- random values ------------------------------------------------------- */

static float quantize(const diff_case *c, double v) {
  if (c->quantum > 0)
    v = floor(v / c->quantum + 0.5) * c->quantum;
  return (float)v;
}

static void random_point(diff_case *c, float *x, float *y) {
  uint64_t *r = &c->rng;
  if (c->crowd && rng_chance(r, 0.7)) {
    double dx = -1.5, dy = -1.5; /* roughly normal, within +-3 spreads */
    for (int k = 0; k < 3; k++)
      dx += rng_unit(r);
    for (int k = 0; k < 3; k++)
      dy += rng_unit(r);
    dx *= 2;
    dy *= 2;
    *x = quantize(c, c->crowd_x + dx * c->crowd_spread);
    *y = quantize(c, c->crowd_y + dy * c->crowd_spread);
    return;
  }
  *x = quantize(c, rng_range(r, c->area_min_x, c->area_max_x));
  *y = quantize(c, rng_range(r, c->area_min_y, c->area_max_y));
}

/* Anywhere: mostly around the area, sometimes far out, rarely huge. */
static float teleport_coordinate(diff_case *c, float lo, float hi) {
  uint64_t *r = &c->rng;
  double span = (double)hi - (double)lo;
  double u = rng_unit(r);
  if (c->spectators)
    return quantize(c, rng_range(r, lo, hi));
  if (u < 0.8)
    return quantize(c, rng_range(r, lo - span, hi + span));
  if (u < 0.97) {
    double far = pow(10, rng_range(r, 4, 7));
    return quantize(c, rng_chance(r, 0.5) ? -far : far);
  }
  static const float huge[] = {1e20f, -1e20f, 3e38f, -3e38f, FLT_MAX,
                               -FLT_MAX};
  return huge[rng_below(r, sizeof huge / sizeof huge[0])];
}

static float random_radius(diff_case *c) {
  uint64_t *r = &c->rng;
  float max = c->config.max_radius;
  double u = rng_unit(r);
  if (c->spectators) { /* (far-sighted ones below max, for appeals) */
    if (u < 0.05)
      return u < 0.025 ? max : (float)rng_range(r, (double)max / 2, max);
    return (float)rng_range(r, 0, (double)max / 20);
  }
  if (u < 0.06)
    return 0;
  if (u < 0.08)
    return -0.0f;
  if (u < 0.16)
    return max;
  if (u < 0.6) { /* whole radii: exact ties with quantized positions */
    double whole = floor(rng_range(r, 0, (double)max + 1));
    return whole > max ? max : (float)whole;
  }
  return (float)rng_range(r, 0, max);
}

static uint32_t random_mask(diff_case *c) {
  return masks[rng_below(&c->rng, MASKS)];
}

static unsigned random_flags(diff_case *c) {
  size_t u = rng_below(&c->rng, 4);
  return u == 0 ? AOI_WATCHER : u == 1 ? AOI_MARKER : AOI_WATCHER | AOI_MARKER;
}

static float random_border(diff_case *c, int y_axis) {
  const float *borders = y_axis ? c->borders_y : c->borders_x;
  float b = borders[rng_below(&c->rng, c->border_count)];
  size_t u = rng_below(&c->rng, 4);
  if (u == 0)
    return nextafterf(b, -INFINITY);
  if (u == 1)
    return nextafterf(b, INFINITY);
  return b;
}

/* ---- operations on both sides -------------------------------------------- */

static int op_add(diff_case *c, uint64_t id, float x, float y, float radius,
                  unsigned flags, uint32_t layers, uint32_t interest) {
  char call[192];
  trace_line(&c->trace, "add %" PRIu64 " %.9g %.9g %.9g %s 0x%" PRIx32 " 0x%" PRIx32,
             id, (double)x, (double)y, (double)radius, flags_word(flags),
             layers, interest);
  int want = model_add(c->m, id, x, y, radius, flags, layers, interest);
  int got = test_add(c->world, id, x, y, radius, flags, layers, interest);
  snprintf(call, sizeof call,
           "test_add(%" PRIu64 ", %.9g, %.9g, r %.9g, flags %u, 0x%" PRIx32
           ", 0x%" PRIx32 ")",
           id, (double)x, (double)y, (double)radius, flags, layers, interest);
  check_code(c, call, got, want);
  slot *s = slot_of(c, id);
  if (want == 0 && s != NULL) {
    set_live(c, s, 1);
    s->life++;
    s->appeal = 0; /* a new entity: appeal and cap are 0 again */
    s->flags = flags;
    s->x = x;
    s->y = y;
    s->radius = radius;
    s->tag_next = test_tag(id);
  }
  return want;
}

/* The reference a host holding slot s (or none, for an id outside the
   pool) would move id by: the cached one while it is the live entity's;
   else, after checking that the stale one is refused, a fresh one from
   aoi_ref_of; for an id that is not live, the stale one, or 0. */
static aoi_ref ref_for_move(diff_case *c, slot *s, uint64_t id, float x,
                            float y) {
  char call[128];
  int live = s != NULL && s->live;
  if (s != NULL && s->ref != 0 && live && s->ref_life != s->life) {
    /* Respawned since: its old reference must not reach the new entity,
       even with bad coordinates (ENOENT comes first). */
    float bx = rng_chance(&c->ref_rng, 0.25) ? NAN : x;
    int got = aoi_move_ref(c->world, s->ref, bx, y);
    snprintf(call, sizeof call,
             "aoi_move_ref(stale reference of %" PRIu64 ", %.9g, %.9g)", id,
             (double)bx, (double)y);
    check_code(c, call, got, AOI_ENOENT);
    c->stale_refused++;
    s->ref = 0;
  }
  if (live && (s->ref == 0 || rng_chance(&c->ref_rng, 0.1))) {
    aoi_ref ref = SENTINEL;
    int got = aoi_ref_of(c->world, id, &ref);
    snprintf(call, sizeof call, "aoi_ref_of(%" PRIu64 ")", id);
    check_code(c, call, got, 0);
    if (ref == 0 || (s->ref != 0 && ref != s->ref))
      case_fail(c, "aoi_ref_of(%" PRIu64 ") gave %#" PRIx64 ", cached %#"
                PRIx64, id, ref, s->ref);
    s->ref = ref;
    s->ref_life = s->life;
  }
  if (!live) {
    aoi_ref ref = SENTINEL;
    int got = aoi_ref_of(c->world, id, &ref);
    snprintf(call, sizeof call, "aoi_ref_of(%" PRIu64 ") of no entity", id);
    check_code(c, call, got, AOI_ENOENT);
    if (ref != SENTINEL)
      case_fail(c, "%s wrote its out-parameter", call);
    if (s != NULL && s->ref != 0)
      c->stale_refused++;
  }
  return s != NULL ? s->ref : 0;
}

/* Now and then, from the references' generator (so the stream of other
   operations stays the same), a new tag for a random slot. */
static void maybe_set_tag(diff_case *c) {
  if (c->slot_count == 0 || !rng_chance(&c->ref_rng, 1.0 / 12))
    return;
  slot *s = &c->slots[rng_below(&c->ref_rng, c->slot_count)];
  uint64_t tag = rng_next(&c->ref_rng);
  char call[64];
  snprintf(call, sizeof call, "aoi_set_tag(%" PRIu64 ")", s->id);
  check_code(c, call, aoi_set_tag(c->world, s->id, tag),
             s->live ? 0 : AOI_ENOENT);
  if (s->live)
    s->tag_next = tag;
}

static int op_move(diff_case *c, uint64_t id, float x, float y) {
  char call[128];
  maybe_set_tag(c);
  trace_line(&c->trace, "move %" PRIu64 " %.9g %.9g", id, (double)x, (double)y);
  int want = model_move(c->m, id, x, y);
  slot *s = slot_of(c, id);
  int got;
  if (rng_chance(&c->ref_rng, 1.0 / 3)) {
    aoi_ref ref = ref_for_move(c, s, id, x, y);
    got = aoi_move_ref(c->world, ref, x, y);
    snprintf(call, sizeof call,
             "aoi_move_ref(%#" PRIx64 " of %" PRIu64 ", %.9g, %.9g)", ref, id,
             (double)x, (double)y);
    c->ref_moves++;
  } else {
    got = aoi_move(c->world, id, x, y);
    snprintf(call, sizeof call, "aoi_move(%" PRIu64 ", %.9g, %.9g)", id,
             (double)x, (double)y);
  }
  check_code(c, call, got, want);
  if (want == 0 && s != NULL) {
    s->x = x;
    s->y = y;
  }
  return want;
}

static int op_radius(diff_case *c, uint64_t id, float radius) {
  char call[128];
  trace_line(&c->trace, "radius %" PRIu64 " %.9g", id, (double)radius);
  int want = model_set_radius(c->m, id, radius);
  int got = aoi_set_radius(c->world, id, radius);
  snprintf(call, sizeof call, "aoi_set_radius(%" PRIu64 ", %.9g)", id,
           (double)radius);
  check_code(c, call, got, want);
  slot *s = slot_of(c, id);
  if (want == 0 && s != NULL)
    s->radius = radius;
  return want;
}

static int op_layers(diff_case *c, uint64_t id, uint32_t layers,
                     uint32_t interest) {
  char call[128];
  trace_line(&c->trace, "layers %" PRIu64 " 0x%" PRIx32 " 0x%" PRIx32, id, layers,
             interest);
  int want = model_set_layers(c->m, id, layers, interest);
  int got = aoi_set_layers(c->world, id, layers, interest);
  snprintf(call, sizeof call,
           "aoi_set_layers(%" PRIu64 ", 0x%" PRIx32 ", 0x%" PRIx32 ")", id,
           layers, interest);
  check_code(c, call, got, want);
  return want;
}

static int op_remove(diff_case *c, uint64_t id) {
  char call[64];
  trace_line(&c->trace, "remove %" PRIu64, id);
  int want = model_remove(c->m, id);
  int got = aoi_remove(c->world, id);
  snprintf(call, sizeof call, "aoi_remove(%" PRIu64 ")", id);
  check_code(c, call, got, want);
  slot *s = slot_of(c, id);
  if (want == 0 && s != NULL) {
    set_live(c, s, 0);
    if (!s->removed) /* (a later one was added since: never seen) */
      s->gone_tag = s->tag_next;
    s->removed = 1;
  }
  return want;
}

/* The tag event e of the tick just made must carry (see the top). */
static uint64_t expected_tag(diff_case *c, const aoi_event *e) {
  slot *s = slot_of(c, e->id);
  assert_non_null(s);
  return e->kind == AOI_LEAVE && s->removed ? s->gone_tag : s->tag;
}

static int op_appeal(diff_case *c, uint64_t id, float appeal) {
  char call[96];
  if (!c->apply_policies)
    return 0;
  trace_line(&c->trace, "appeal %" PRIu64 " %.9g", id, (double)appeal);
  int want = model_set_appeal(c->m, id, appeal);
  int got = aoi_set_appeal(c->world, id, appeal);
  snprintf(call, sizeof call, "aoi_set_appeal(%" PRIu64 ", %.9g)", id,
           (double)appeal);
  check_code(c, call, got, want);
  slot *s = slot_of(c, id);
  if (want == 0 && s != NULL)
    s->appeal = appeal;
  return want;
}

static int op_cap(diff_case *c, uint64_t id, uint32_t cap) {
  char call[96];
  if (!c->apply_policies)
    return 0;
  trace_line(&c->trace, "cap %" PRIu64 " %" PRIu32, id, cap);
  int want = model_set_cap(c->m, id, cap);
  int got = aoi_set_cap(c->world, id, cap);
  snprintf(call, sizeof call, "aoi_set_cap(%" PRIu64 ", %" PRIu32 ")", id,
           cap);
  check_code(c, call, got, want);
  return want;
}

/* ---- queries --------------------------------------------------------------- */

/* Compares one id query: return codes, then (on success) the total count
   and the first min(capacity, count) ids, and that nothing was written past
   `capacity`, nor anything at all on failure. */
static void compare_ids(diff_case *c, const char *call, int got, int want,
                        size_t got_count, size_t want_count, size_t capacity) {
  check_code(c, call, got, want);
  if (got != 0) {
    if (got_count != (size_t)SENTINEL)
      case_fail(c, "%s failed with %s but wrote *count", call, code_name(got));
    for (size_t i = 0; i < capacity; i++)
      if (c->got_ids[i] != SENTINEL)
        case_fail(c, "%s failed with %s but wrote ids[%zu]", call,
                  code_name(got), i);
    return;
  }
  if (got_count != want_count)
    case_fail(c, "%s: count %zu, the model %zu", call, got_count, want_count);
  size_t n = want_count < capacity ? want_count : capacity;
  for (size_t i = 0; i < n; i++)
    if (c->got_ids[i] != c->want_ids[i])
      case_fail(c, "%s: ids[%zu] = %" PRIu64 ", the model %" PRIu64
                   " (count %zu)",
                call, i, c->got_ids[i], c->want_ids[i], want_count);
  for (size_t i = n; i < capacity; i++)
    if (c->got_ids[i] != SENTINEL)
      case_fail(c, "%s: wrote ids[%zu] past the %zu found", call, i, n);
  if (c->got_ids[capacity] != SENTINEL)
    case_fail(c, "%s: wrote past capacity %zu", call, capacity);
}

/* A capacity for a query: usually roomy, sometimes short or 0. */
static size_t random_capacity(diff_case *c) {
  size_t u = rng_below(&c->rng, 10);
  if (u == 0)
    return 0;
  if (u <= 2)
    return rng_below(&c->rng, 6);
  return POOL_MAX + 8;
}

static void clear_ids(diff_case *c) {
  for (size_t i = 0; i < POOL_MAX + 16; i++)
    c->got_ids[i] = SENTINEL;
}

static void query_view(diff_case *c, uint64_t id, int watchers_of) {
  char call[96];
  size_t capacity = random_capacity(c);
  size_t got_count = (size_t)SENTINEL, want_count = 0;
  uint64_t *ids = capacity ? c->got_ids : NULL;
  int got, want;

  clear_ids(c);
  if (watchers_of) {
    want = model_watchers_of(c->m, id, c->want_ids, POOL_MAX + 8, &want_count);
    got = aoi_watchers_of(c->world, id, ids, capacity, &got_count);
  } else {
    want = model_view(c->m, id, c->want_ids, POOL_MAX + 8, &want_count);
    got = aoi_view(c->world, id, ids, capacity, &got_count);
  }
  snprintf(call, sizeof call, "%s(%" PRIu64 ", capacity %zu)",
           watchers_of ? "aoi_watchers_of" : "aoi_view", id, capacity);
  compare_ids(c, call, got, want, got_count, want_count, capacity);
}

static void query_circle(diff_case *c) {
  uint64_t *r = &c->rng;
  char call[160];
  float x, y, radius;
  size_t capacity = random_capacity(c);
  size_t got_count = (size_t)SENTINEL, want_count = 0;
  uint32_t mask = rng_chance(r, 0.5) ? 0xffffffffu : random_mask(c);
  slot *s = pick_live(c);

  if (s != NULL && rng_chance(r, 0.4)) {
    x = s->x;
    y = s->y;
  } else {
    random_point(c, &x, &y);
  }
  radius = random_radius(c);
  size_t bad = rng_below(r, 30);
  if (bad == 0)
    x = NAN;
  else if (bad == 1)
    y = INFINITY;
  else if (bad == 2)
    radius = -1;
  else if (bad == 3)
    radius = NAN;
  clear_ids(c);
  int want = model_query_circle(c->m, x, y, radius, mask, c->want_ids,
                                POOL_MAX + 8, &want_count);
  int got = aoi_query_circle(c->world, x, y, radius, mask,
                             capacity ? c->got_ids : NULL, capacity,
                             &got_count);
  snprintf(call, sizeof call,
           "aoi_query_circle(%.9g, %.9g, r %.9g, mask 0x%" PRIx32
           ", capacity %zu)",
           (double)x, (double)y, (double)radius, mask, capacity);
  compare_ids(c, call, got, want, got_count, want_count, capacity);
}

/* A random id to query: a live one, or any of the pool. */
static uint64_t query_target(diff_case *c) {
  slot *s = rng_chance(&c->rng, 0.8) ? pick_live(c) : NULL;
  return s != NULL ? s->id : c->slots[rng_below(&c->rng, c->slot_count)].id;
}

/* ---- events ---------------------------------------------------------------- */

static void describe_event(char *out, size_t size, const aoi_event *e) {
  if (e->kind == AOI_LEAVE)
    snprintf(out, size, "tick %" PRIu32 " leave %" PRIu64 " (%.9g %.9g)",
             e->tick, e->id, (double)e->x, (double)e->y);
  else
    snprintf(out, size, "tick %" PRIu32 " %s %" PRIu64 " %.9g %.9g", e->tick,
             kind_name(e->kind), e->id, (double)e->x, (double)e->y);
}

static int same_event(const aoi_event *a, const aoi_event *b) {
  /* Positions bit for bit: -0 and 0 print differently. */
  return a->id == b->id && a->tag == b->tag && a->kind == b->kind &&
         a->tick == b->tick &&
         memcmp(&a->x, &b->x, sizeof a->x) == 0 &&
         memcmp(&a->y, &b->y, sizeof a->y) == 0;
}

static void push_expected(slot *s, const aoi_event *e) {
  if (s->outbox_count == s->outbox_capacity) {
    size_t capacity = s->outbox_capacity ? 2 * s->outbox_capacity : 16;
    aoi_event *grown = realloc(s->outbox, capacity * sizeof *grown);
    assert_non_null(grown);
    s->outbox = grown;
    s->outbox_capacity = capacity;
  }
  s->outbox[s->outbox_count++] = *e;
}

static void drain_and_compare(diff_case *c, slot *s) {
  const aoi_event *events = NULL;
  size_t count = (size_t)SENTINEL;
  char got_text[96], want_text[96], call[64];

  int got = aoi_drain(c->world, s->id, &events, &count);
  snprintf(call, sizeof call, "aoi_drain(%" PRIu64 ")", s->id);
  check_code(c, call, got, s->live ? 0 : AOI_ENOENT);
  if (got != 0)
    return;
  size_t n = count < s->outbox_count ? count : s->outbox_count;
  for (size_t i = 0; i < n; i++) {
    if (!same_event(&events[i], &s->outbox[i])) {
      /* Say whether the engine has the model's event further on. */
      int later = 0;
      for (size_t j = i + 1; j < count && !later; j++)
        later = same_event(&events[j], &s->outbox[i]);
      describe_event(got_text, sizeof got_text, &events[i]);
      describe_event(want_text, sizeof want_text, &s->outbox[i]);
      case_fail(c, "watcher %" PRIu64 ": event %zu of %zu is [%s], the model "
                   "says [%s]: the engine %s (%zu events in the model)",
                s->id, i, count, got_text, want_text,
                later ? "has it later" : "does not have it",
                s->outbox_count);
    }
  }
  if (count != s->outbox_count) {
    const aoi_event *extra =
        count > s->outbox_count ? &events[n] : &s->outbox[n];
    describe_event(want_text, sizeof want_text, extra);
    case_fail(c, "watcher %" PRIu64 ": %zu events, the model %zu; first "
                 "%s: [%s]",
              s->id, count, s->outbox_count,
              count > s->outbox_count ? "extra" : "missing", want_text);
  }
  c->events_checked += count;
  s->outbox_count = 0;
  if (c->kept_count + count > c->kept_capacity) {
    size_t capacity = 2 * (c->kept_count + count) + 64;
    aoi_event *grown = realloc(c->kept, capacity * sizeof *grown);
    assert_non_null(grown);
    c->kept = grown;
    c->kept_capacity = capacity;
  }
  if (count > 0)
    memcpy(c->kept + c->kept_count, events, count * sizeof *events);
  borrowed *b = &c->borrows[c->borrow_count++];
  b->id = s->id;
  b->events = events;
  b->count = count;
  b->offset = c->kept_count;
  c->kept_count += count;
}

/* aoi_pending must list exactly the live watchers whose expected outbox is
   not empty; then drains all of them, some, or none. */
static void check_outboxes(diff_case *c, int mode) {
  const uint64_t *pending = NULL;
  size_t count = 0, want = 0;
  int rc = aoi_pending(c->world, &pending, &count);
  check_code(c, "aoi_pending()", rc, 0);
  for (size_t i = 0; i < c->slot_count; i++)
    if (c->slots[i].live && c->slots[i].outbox_count > 0)
      c->want_ids[want++] = c->slots[i].id;
  for (size_t i = 0; i < count && i < want; i++)
    if (pending[i] != c->want_ids[i])
      case_fail(c, "aoi_pending: ids[%zu] = %" PRIu64 ", expected %" PRIu64
                   " (%zu pending, %zu expected)",
                i, pending[i], c->want_ids[i], count, want);
  if (count != want)
    case_fail(c, "aoi_pending: %zu watchers, expected %zu (first %s: %" PRIu64
                 ")",
              count, want, count > want ? "extra" : "missing",
              count > want ? pending[want] : c->want_ids[count]);
  if (mode == 1)
    return;
  /* Drain while iterating over `pending`, as a host does: aoi_drain must
     not invalidate it, nor the events an earlier aoi_drain returned. */
  c->borrow_count = 0;
  c->kept_count = 0;
  for (size_t i = 0; i < count; i++)
    if (mode == 0 || rng_chance(&c->rng, 0.5))
      drain_and_compare(c, slot_of(c, pending[i]));
  /* A live watcher or marker with nothing pending drains 0 events; a dead
     id is AOI_ENOENT. */
  for (int k = 0; k < 3; k++) {
    slot *s = &c->slots[rng_below(&c->rng, c->slot_count)];
    if (!s->live || s->outbox_count == 0)
      drain_and_compare(c, s);
  }
  for (size_t i = 0; i < count; i++)
    if (pending[i] != c->want_ids[i])
      case_fail(c, "aoi_pending's ids[%zu] changed to %" PRIu64
                   " while draining (was %" PRIu64 ")",
                i, pending[i], c->want_ids[i]);
  for (size_t i = 0; i < c->borrow_count; i++) {
    const borrowed *b = &c->borrows[i];
    if (b->count > 0 && memcmp(b->events, c->kept + b->offset,
                               b->count * sizeof *b->events) != 0)
      case_fail(c, "the events aoi_drain(%" PRIu64 ") returned changed "
                   "before the next tick",
                b->id);
  }
}

static void check_stats(diff_case *c, size_t model_events_count) {
  aoi_stats stats;
  size_t watchers = 0;
  uint64_t sum = 0;

  memset(&stats, 0, sizeof stats);
  check_code(c, "aoi_world_stats()", aoi_world_stats(c->world, &stats), 0);
  for (size_t i = 0; i < c->live_count; i++)
    watchers += (c->slots[c->live[i]].flags & AOI_WATCHER) != 0;
  if (stats.tick != c->tick || stats.entities != c->live_count ||
      stats.watchers != watchers || stats.events != model_events_count) {
    if (stats.events != model_events_count)
      check_outboxes(c, 0); /* names the watcher when the events differ */
    case_fail(c, "aoi_stats: tick %" PRIu64 " entities %" PRIu64
                 " watchers %" PRIu64 " events %" PRIu64
                 "; expected tick %u entities %zu watchers %zu events %zu",
              stats.tick, stats.entities, stats.watchers, stats.events,
              c->tick, c->live_count, watchers, model_events_count);
  }
  if ((c->threads != 0 && stats.threads != c->threads) ||
      (c->shards != 0 && stats.shards != c->shards))
    case_fail(c, "aoi_stats: threads %u shards %u", stats.threads,
              stats.shards);
  c->handoffs += stats.handoffs;
  c->ghosts += stats.ghosts;
  if (stats.shard_entities == NULL)
    case_fail(c, "aoi_stats: shard_entities is NULL");
  for (unsigned i = 0; i < stats.shards; i++)
    sum += stats.shard_entities[i];
  if (sum != stats.entities)
    case_fail(c, "aoi_stats: shard_entities sum to %" PRIu64 ", not %" PRIu64,
              sum, stats.entities);
}

/* Checks tick c->tick + 1 of the world, which the model made with `want`
   and the engine with `got` (returned by `call`): the events, the
   outboxes, the stats and some queries. */
static void check_tick(diff_case *c, const char *call, int got, int want) {
  const model_event *events;

  check_code(c, call, got, want);
  c->lane_ticks += !c->world->skipped && !c->world->command.on_host;
  c->tick++;
  c->after_tick = 1;
  size_t count = model_events(c->m, &events);
  if (got == 0)
    for (size_t i = 0; i < c->slot_count; i++)
      c->slots[i].tag = c->slots[i].tag_next;
  for (size_t i = 0; i < count; i++) {
    slot *s = slot_of(c, events[i].watcher);
    assert_non_null(s);
    aoi_event e = events[i].event;
    e.tag = expected_tag(c, &e);
    push_expected(s, &e);
  }
  if (got == 0)
    for (size_t i = 0; i < c->slot_count; i++)
      c->slots[i].removed = 0;
  /* 0: drain all, 1: none (outboxes accumulate), 2: some. */
  size_t u = rng_below(&c->rng, 20);
  check_outboxes(c, u < 14 ? 0 : u < 17 ? 1 : 2);
  check_stats(c, count);
  for (int k = 0; k < 3; k++) {
    query_view(c, query_target(c), 0);
    query_view(c, query_target(c), 1);
  }
  query_circle(c);
  query_circle(c);
  c->after_tick = 0;
}

/* The model's tick, the trace's line: before the engine's tick. */
static int model_tick_traced(diff_case *c) {
  trace_line(&c->trace, "tick");
  return model_tick(c->m);
}

static void do_tick(diff_case *c) {
  int want = model_tick_traced(c);
  check_tick(c, "aoi_tick()", aoi_tick(c->world), want);
}

/* ---- the stream of operations ------------------------------------------- */

/* A mask that is usually all layers. */
static uint32_t usual_mask(diff_case *c) {
  return rng_chance(&c->rng, 0.65) ? 0xffffffffu : random_mask(c);
}

/* ---- interest policies: values (the policy cases) ----------------------- */

/* An appeal: 0 (or -0) again, max_radius or a float step below it, whole
   values (exact ties with quantized positions), any, or a bad one. */
static float random_appeal(diff_case *c) {
  uint64_t *r = &c->rng;
  float max = c->config.max_radius;
  double u = rng_unit(r);
  if (u < 0.15)
    return 0;
  if (u < 0.18)
    return -0.0f;
  if (u < 0.30)
    return max;
  if (u < 0.34)
    return nextafterf(max, 0);
  if (u < 0.70) {
    double whole = floor(rng_range(r, 0, (double)max + 1));
    return whole > max ? max : (float)whole;
  }
  if (u < 0.92)
    return (float)rng_range(r, 0, max);
  float bad[] = {-1, -FLT_MIN, nextafterf(max, INFINITY), max * 2 + 1,
                 INFINITY, -INFINITY, NAN};
  return bad[rng_below(r, sizeof bad / sizeof *bad)];
}

/* The size of watcher id's view as of the last tick (0 if not live). */
static size_t view_size(diff_case *c, uint64_t id) {
  size_t count = 0;
  if (model_view(c->m, id, NULL, 0, &count) != 0)
    return 0;
  return count;
}

/* A cap: 0 (no cap) again, 1, 2, a few, below the watcher's view now (so
   the view shrinks), many, or the largest. */
static uint32_t random_cap(diff_case *c, uint64_t id) {
  uint64_t *r = &c->rng;
  double u = rng_unit(r);
  if (u < 0.18)
    return 0;
  if (u < 0.34)
    return 1;
  if (u < 0.50)
    return 2;
  if (u < 0.68)
    return 3 + (uint32_t)rng_below(r, 6);
  if (u < 0.86) {
    size_t count = view_size(c, id);
    if (count < 2)
      return 1;
    return rng_chance(r, 0.5) ? (uint32_t)(count - 1) : (uint32_t)(count / 2);
  }
  if (u < 0.96)
    return 9 + (uint32_t)rng_below(r, 40);
  return rng_chance(r, 0.5) ? UINT32_MAX : UINT32_C(1) << 31;
}

/* Adds s->id with random attributes. (Random values are drawn one per
   statement: the order of a call's arguments is unspecified, and the stream
   must be the same with every compiler.) */
static void random_add(diff_case *c, slot *s) {
  float x, y;
  random_point(c, &x, &y);
  float radius = random_radius(c);
  unsigned flags = random_flags(c);
  uint32_t layers = usual_mask(c);
  uint32_t interest = usual_mask(c);
  op_add(c, s->id, x, y, radius, flags, layers, interest);
  if (c->policies && rng_chance(&c->rng, 0.25)) {
    if (rng_chance(&c->rng, 0.5))
      op_appeal(c, s->id, random_appeal(c));
    else
      op_cap(c, s->id, random_cap(c, s->id));
  }
}

static void walk(diff_case *c, slot *s) {
  uint64_t *r = &c->rng;
  double step = c->config.max_radius > 10 ? c->config.max_radius / 8 : 1.25;
  if (rng_chance(r, 0.05))
    step = c->config.max_radius > 1 ? c->config.max_radius : 1;
  double x = s->x, y = s->y;
  if (fabs(x) > 1e9 || fabs(y) > 1e9) { /* back from the far lands */
    float px, py;
    random_point(c, &px, &py);
    op_move(c, s->id, px, py);
    return;
  }
  if (c->crowd) {
    x += (c->crowd_x - x) * 0.05;
    y += (c->crowd_y - y) * 0.05;
  }
  x += rng_range(r, -step, step);
  y += rng_range(r, -step, step);
  op_move(c, s->id, quantize(c, x), quantize(c, y));
}

/* Moves onto a shard border (or just beside it), and sometimes straight
   back in the same tick. */
static void border_move(diff_case *c, slot *s) {
  uint64_t *r = &c->rng;
  float old_x = s->x, old_y = s->y;
  float x = s->x, y = s->y;
  size_t axis = rng_below(r, 3);
  if (axis != 1)
    x = random_border(c, 0);
  if (axis != 0)
    y = random_border(c, 1);
  op_move(c, s->id, x, y);
  if (rng_chance(r, 0.3))
    op_move(c, s->id, old_x, old_y);
}

/* Puts marker b exactly on the edge of watcher a's reach (its radius or
   b's appeal, whichever is larger, or that + hysteresis), or one float step
   inside or outside it. */
static void edge_move(diff_case *c, slot *a, slot *b) {
  uint64_t *r = &c->rng;
  double reach = (double)a->radius;
  if (b->appeal > a->radius) /* seen from its appeal (policy cases only) */
    reach = (double)b->appeal;
  if (rng_chance(r, 0.5))
    reach += (double)c->config.hysteresis;
  double dx = reach, dy = 0;
  if (c->config.shape == AOI_SHAPE_CELLS) {
    /* The first or last coordinate of a cell k cells away. */
    double cell = (double)c->config.cell_size;
    double k = ceil(reach / cell) + (double)rng_below(r, 2);
    double base = floor((double)a->x / cell);
    dx = (base + k + (rng_chance(r, 0.5) ? 1 : 0)) * cell - (double)a->x;
    dy = (double)rng_below(r, 3) * cell;
  } else if (rng_chance(r, 0.4)) {
    dx = 0.6 * reach; /* a 3-4-5 triangle, a diagonal for the square */
    dy = 0.8 * reach;
    if (c->config.shape == AOI_SHAPE_SQUARE)
      dx = dy = reach;
  }
  if (rng_chance(r, 0.5))
    dx = -dx;
  if (rng_chance(r, 0.5))
    dy = -dy;
  if (rng_chance(r, 0.5)) {
    double t = dx;
    dx = dy;
    dy = t;
  }
  float x = (float)((double)a->x + dx), y = (float)((double)a->y + dy);
  size_t nudge = rng_below(r, 4);
  if (nudge == 0)
    x = nextafterf(x, dx < 0 ? -INFINITY : INFINITY);
  else if (nudge == 1)
    x = nextafterf(x, dx < 0 ? INFINITY : -INFINITY);
  op_move(c, b->id, x, y);
}

static void bad_call(diff_case *c) {
  uint64_t *r = &c->rng;
  slot *live = pick_live(c);
  slot *any = &c->slots[rng_below(r, c->slot_count)];
  uint64_t id = live != NULL ? live->id : any->id;
  static const unsigned bad_flags[] = {0, 4, 5, 7, 8, 0xffffffffu};
  unsigned flags = bad_flags[rng_below(r, sizeof bad_flags / sizeof *bad_flags)];
  float max = c->config.max_radius;
  float bad_radii[] = {-1, -0.001f, nextafterf(max, INFINITY), max * 2 + 1,
                       INFINITY, -INFINITY, NAN};
  float bad_r = bad_radii[rng_below(r, sizeof bad_radii / sizeof *bad_radii)];
  float bad_coords[] = {NAN, INFINITY, -INFINITY};
  float bad_c = bad_coords[rng_below(r, 3)];
  float x, y;
  random_point(c, &x, &y);

  switch (rng_below(r, 12)) {
  case 0: /* not live: every op is AOI_ENOENT, even with bad arguments */
    if (!any->live) {
      op_move(c, any->id, x, rng_chance(r, 0.5) ? y : bad_c);
      op_radius(c, any->id, rng_chance(r, 0.5) ? 1 : bad_r);
      op_layers(c, any->id, 1, 1);
      op_remove(c, any->id);
    }
    break;
  case 1: /* an id outside the pool */
    op_move(c, rng_next(r) | 1, x, y);
    op_remove(c, UINT64_C(0x123456789abcdef1));
    break;
  case 2: /* exists wins over bad flags, coordinates and radius */
    op_add(c, id, bad_c, y, bad_r, flags, 1, 1);
    break;
  case 3:
    op_add(c, id, x, y, 1, AOI_MARKER, 1, 1);
    break;
  case 4: /* bad flags win over bad coordinates and radius */
    if (!any->live)
    {
      float ax = rng_chance(r, 0.5) ? x : bad_c;
      float radius = rng_chance(r, 0.5) ? 1 : bad_r;
      op_add(c, any->id, ax, y, radius, flags, 1, 1);
    }
    break;
  case 5: /* bad coordinates win over a bad radius */
    if (!any->live)
    {
      float radius = rng_chance(r, 0.5) ? 1 : bad_r;
      op_add(c, any->id, x, bad_c, radius, random_flags(c), 1, 1);
    }
    break;
  case 6:
    if (!any->live)
      op_add(c, any->id, x, y, bad_r, random_flags(c), 1, 1);
    break;
  case 7:
    if (live != NULL) {
      float mx = rng_chance(r, 0.5) ? bad_c : x;
      float my = rng_chance(r, 0.5) ? bad_c : y;
      op_move(c, live->id, mx, my);
      op_move(c, live->id, bad_c, bad_c);
    }
    break;
  case 8:
    if (live != NULL)
      op_radius(c, live->id, bad_r);
    break;
  case 9: /* removed twice */
    if (live != NULL) {
      op_remove(c, live->id);
      op_remove(c, live->id);
      op_move(c, live->id, x, y);
    }
    break;
  case 10: /* added and removed before the tick: never seen */
    if (!any->live) {
      random_add(c, any);
      op_remove(c, any->id);
    }
    break;
  default: /* a view between ticks: ENOENT for a dead id */
    query_view(c, any->id, 0);
    break;
  }
}


/* ---- interest policies: operations (the policy cases) ------------------- */

/* A live watcher away from the far lands, or NULL. */
static slot *pick_watcher(diff_case *c) {
  for (int tries = 0; tries < 8; tries++) {
    slot *a = pick_live(c);
    if (a != NULL && (a->flags & AOI_WATCHER) && fabs(a->x) < 1e9 &&
        fabs(a->y) < 1e9)
      return a;
  }
  return NULL;
}

/* A live slot other than `a` and `b`, or NULL. */
static slot *pick_other(diff_case *c, const slot *a, const slot *b) {
  for (int tries = 0; tries < 8; tries++) {
    slot *s = pick_live(c);
    if (s != NULL && s != a && s != b)
      return s;
  }
  return NULL;
}

/* Puts b and n at distances d and d - H from watcher a, on opposite sides
   along one axis: when b is in a's view and n is not, their cap keys tie
   (d - H both), and the smaller id must win; with H = 0, two newcomers at
   the same distance tie alike. */
static void tie_move(diff_case *c) {
  uint64_t *r = &c->rng;
  slot *a = pick_watcher(c);
  if (a == NULL)
    return;
  slot *b = NULL;
  uint64_t members[POOL_MAX + 8];
  size_t count = 0;
  if (model_view(c->m, a->id, members, POOL_MAX + 8, &count) == 0 &&
      count > 0 && rng_chance(r, 0.7))
    b = slot_of(c, members[rng_below(r, count)]);
  if (b == NULL || !b->live)
    b = pick_other(c, a, NULL);
  slot *n = pick_other(c, a, b);
  if (b == NULL || n == NULL)
    return;
  double h = (double)c->config.hysteresis;
  double d = floor(rng_range(r, h, (double)c->config.max_radius + h + 1));
  double near = rng_chance(r, 0.7) ? d - h : d;
  int y_axis = rng_chance(r, 0.5);
  op_move(c, b->id, (float)((double)a->x + (y_axis ? 0 : d)),
          (float)((double)a->y + (y_axis ? d : 0)));
  op_move(c, n->id, (float)((double)a->x - (y_axis ? 0 : near)),
          (float)((double)a->y - (y_axis ? near : 0)));
}

/* One policy operation: an appeal, a cap, an id that is not live (every
   call AOI_ENOENT, even with a bad appeal), a marker on the edge of its
   appeal, or a tie for a capped view. */
static void policy_op(diff_case *c) {
  uint64_t *r = &c->rng;
  slot *s = pick_live(c);
  slot *any = &c->slots[rng_below(r, c->slot_count)];
  size_t u = rng_below(r, 20);
  if (s == NULL)
    return;
  if (u < 7) {
    op_appeal(c, s->id, random_appeal(c));
  } else if (u < 14) {
    op_cap(c, s->id, random_cap(c, s->id));
  } else if (u < 15) {
    if (!any->live) {
      op_appeal(c, any->id, random_appeal(c));
      op_cap(c, any->id, random_cap(c, any->id));
    }
  } else if (u < 17) {
    slot *a = pick_watcher(c);
    if (a != NULL && a != s && s->appeal > 0)
      edge_move(c, a, s);
  } else {
    tie_move(c);
  }
}

/* A burst of policy changes on one entity between two ticks: appeals and
   caps set again and again, moves between, and a respawn (appeal and cap
   back to 0) with new ones after it. */
static void policy_burst(diff_case *c, slot *s) {
  uint64_t *r = &c->rng;
  for (size_t k = 2 + rng_below(r, 6); k > 0 && s->live; k--) {
    size_t u = rng_below(r, 5);
    if (u == 0)
      op_appeal(c, s->id, random_appeal(c));
    else if (u == 1)
      op_cap(c, s->id, random_cap(c, s->id));
    else if (u == 2)
      walk(c, s);
    else if (u == 3)
      op_radius(c, s->id, random_radius(c));
    else {
      op_remove(c, s->id);
      random_add(c, s);
    }
  }
}

/* The move bands of a policy case (7 in 10): 1 to 8, from 0 or a whole
   distance, steps whole (exact ties d = D) or fractional, periods 1 to
   2^32 - 1. Also makes crowds likelier, where caps bite. */
static void setup_policies(diff_case *c) {
  static const uint32_t periods[] = {1, 2, 2, 3, 4, 5, 7, 16, UINT32_MAX,
                                     UINT32_C(1) << 31};
  uint64_t *r = &c->rng;
  double max = (double)c->config.max_radius;
  c->crowd = rng_chance(r, 0.5);
  if (!rng_chance(r, 0.7))
    return;
  unsigned count = 1 + (unsigned)rng_below(r, AOI_MAX_MOVE_BANDS);
  float d = rng_chance(r, 0.3) ? 0 : (float)floor(rng_range(r, 0, max / 4));
  for (unsigned i = 0; i < count; i++) {
    c->config.move_bands[i].distance = d;
    c->config.move_bands[i].period =
        periods[rng_below(r, sizeof periods / sizeof *periods)];
    float step = rng_chance(r, 0.7)
                     ? (float)floor(rng_range(r, 1, max / 4 + 1))
                     : (float)rng_range(r, 0.001, max / 8);
    float next = d + step;
    d = next > d ? next : nextafterf(d, INFINITY);
  }
  c->config.move_band_count = c->apply_policies ? count : 0;
}

static void random_op(diff_case *c) {
  uint64_t *r = &c->rng;
  if (c->policies && rng_chance(r, 0.1)) {
    policy_op(c);
    return;
  }
  slot *s = pick_live(c);
  double below = c->live_count < c->population ? 0.12 : 0.03;
  double above = c->live_count > c->population ? 0.10 : 0.04;
  double u = rng_unit(r);

  if (s == NULL || u < below) {
    random_add(c, pick_free(c));
    return;
  }
  u -= below;
  if (u < above) {
    op_remove(c, s->id);
  } else if ((u -= above) < 0.04) {
    /* The same id again before the tick: a new entity, maybe of another
       kind, near the old one or anywhere. */
    float x = s->x, y = s->y;
    op_remove(c, s->id);
    if (rng_chance(r, 0.5))
      random_point(c, &x, &y);
    float radius = random_radius(c);
    unsigned flags = random_flags(c);
    uint32_t layers = usual_mask(c);
    uint32_t interest = usual_mask(c);
    op_add(c, s->id, x, y, radius, flags, layers, interest);
  } else if ((u -= 0.04) < 0.05) {
    float x = teleport_coordinate(c, c->area_min_x, c->area_max_x);
    float y = teleport_coordinate(c, c->area_min_y, c->area_max_y);
    op_move(c, s->id, x, y);
  } else if ((u -= 0.05) < 0.08) {
    border_move(c, s);
  } else if ((u -= 0.08) < 0.05) {
    op_radius(c, s->id, random_radius(c));
  } else if ((u -= 0.05) < 0.05) {
    uint32_t layers = random_mask(c);
    op_layers(c, s->id, layers, random_mask(c));
  } else if ((u -= 0.05) < 0.07) {
    bad_call(c);
  } else if ((u -= 0.07) < 0.02) {
    op_move(c, s->id, s->x, s->y); /* no move at all */
  } else if ((u -= 0.02) < 0.02) {
    float x = s->x, y = s->y; /* away and back: no move event */
    walk(c, s);
    op_move(c, s->id, x, y);
  } else if ((u -= 0.02) < 0.02) {
    query_view(c, s->id, 0);
    query_circle(c);
  } else if ((u -= 0.02) < 0.02) {
    /* Through several shards within one tick. */
    for (size_t k = 2 + rng_below(r, 4); k > 0; k--) {
      float x = rng_chance(r, 0.5)
                    ? random_border(c, 0)
                    : teleport_coordinate(c, c->area_min_x, c->area_max_x);
      float y = teleport_coordinate(c, c->area_min_y, c->area_max_y);
      op_move(c, s->id, x, y);
    }
  } else if ((u -= 0.02) < 0.01) {
    /* Respawned twice before the tick; the last one counts. */
    uint64_t id = s->id;
    op_remove(c, id);
    random_add(c, s);
    uint32_t layers = random_mask(c);
    op_layers(c, id, layers, random_mask(c));
    op_remove(c, id);
    random_add(c, s);
  } else if ((u -= 0.01) < 0.05) {
    slot *a = pick_live(c);
    if (a != s && (a->flags & AOI_WATCHER) && fabs(a->x) < 1e9 &&
        fabs(a->y) < 1e9)
      edge_move(c, a, s);
    else
      walk(c, s);
  } else {
    walk(c, s);
  }
}

static void run_tick_ops(diff_case *c) {
  uint64_t *r = &c->rng;
  if (c->tick == 0) {
    while (c->live_count < c->population)
      random_add(c, pick_free(c));
  }
  if (c->crowd && rng_chance(r, 0.1)) {
    c->crowd_x = quantize(c, c->crowd_x + rng_range(r, -50, 50));
    c->crowd_y = quantize(c, c->crowd_y + rng_range(r, -50, 50));
  }
  if (rng_chance(r, 0.4)) {
    /* Everybody walks, as in a busy zone, plus a few other ops. Half the
       time one in `every` (8 to 63) stands: too few unchanged watchers
       for the tick to leave departures (tick.c), so each of them must
       find what walked out of its reach by a scan. */
    size_t n = c->live_count;
    size_t every = rng_chance(r, 0.5) ? 8 + rng_below(r, 56) : 0;
    size_t phase = every > 0 ? rng_below(r, every) : 0;
    for (size_t i = 0; i < n && i < c->live_count; i++)
      if (every == 0 || i % every != phase)
        walk(c, &c->slots[c->live[i]]);
    for (size_t k = rng_below(r, 10); k > 0; k--)
      random_op(c);
  } else {
    size_t n = c->population / 4 + rng_below(r, c->population + 1);
    for (size_t k = 0; k < n; k++)
      random_op(c);
  }
}

/* ---- many operations per entity between two ticks ------------------------ */

/* A position on a shard border, a step beside one, or anywhere at all. */
static void border_point(diff_case *c, float *x, float *y) {
  uint64_t *r = &c->rng;
  size_t u = rng_below(r, 4);
  if (u == 0) {
    *x = teleport_coordinate(c, c->area_min_x, c->area_max_x);
    *y = teleport_coordinate(c, c->area_min_y, c->area_max_y);
    return;
  }
  random_point(c, x, y);
  if (u != 1)
    *x = random_border(c, 0);
  if (u != 2)
    *y = random_border(c, 1);
}

/* A burst of operations on one live entity, or on a free id. */
static void burst(diff_case *c) {
  uint64_t *r = &c->rng;
  slot *s = pick_live(c);
  size_t kind = rng_below(r, c->policies ? 11 : 9);
  if (s == NULL)
    kind = 5;
  float x, y;
  switch (kind) {
  case 0: /* moves back and forth over shard borders; the last one wins */
  case 1:
    for (size_t k = 2 + rng_below(r, 12); k > 0; k--) {
      border_point(c, &x, &y);
      op_move(c, s->id, x, y);
    }
    if (rng_chance(r, 0.3))
      walk(c, s);
    break;
  case 2: { /* away and back: where it stood, but it moved */
    float home_x = s->x, home_y = s->y;
    for (size_t k = 1 + rng_below(r, 6); k > 0; k--) {
      border_point(c, &x, &y);
      op_move(c, s->id, x, y);
    }
    op_move(c, s->id, home_x, home_y);
    break;
  }
  case 3: /* radius and layers again and again, moves between */
    for (size_t k = 2 + rng_below(r, 6); k > 0; k--) {
      size_t u = rng_below(r, 3);
      if (u == 0) {
        op_radius(c, s->id, random_radius(c));
      } else if (u == 1) {
        uint32_t layers = random_mask(c);
        op_layers(c, s->id, layers, random_mask(c));
      } else {
        border_point(c, &x, &y);
        op_move(c, s->id, x, y);
      }
    }
    break;
  case 4: { /* removed and added twice over, changed in between */
    uint64_t id = s->id;
    for (int round = 0; round < 2; round++) {
      op_remove(c, id);
      random_add(c, s);
      for (size_t k = rng_below(r, 4); k > 0; k--) {
        border_point(c, &x, &y);
        op_move(c, id, x, y);
      }
      if (rng_chance(r, 0.5))
        op_radius(c, id, random_radius(c));
      if (rng_chance(r, 0.5)) {
        uint32_t layers = usual_mask(c);
        op_layers(c, id, layers, usual_mask(c));
      }
    }
    if (rng_chance(r, 0.3))
      op_remove(c, id); /* and gone after all */
    break;
  }
  case 5: { /* added (and changed) and removed before any tick */
    slot *f = pick_free(c);
    for (int round = 0; round < 1 + (int)rng_below(r, 3); round++) {
      random_add(c, f);
      for (size_t k = rng_below(r, 5); k > 0; k--) {
        border_point(c, &x, &y);
        op_move(c, f->id, x, y);
      }
      if (rng_chance(r, 0.3))
        op_radius(c, f->id, random_radius(c));
      op_remove(c, f->id);
    }
    if (rng_chance(r, 0.4))
      random_add(c, f); /* and this one stays */
    break;
  }
  case 6: /* changed, then removed in the same tick */
    border_point(c, &x, &y);
    op_move(c, s->id, x, y);
    if (rng_chance(r, 0.5))
      op_radius(c, s->id, random_radius(c));
    op_remove(c, s->id);
    if (rng_chance(r, 0.5))
      op_move(c, s->id, x, y); /* not live any more */
    break;
  case 7: /* added, moved around, stays */
    s = pick_free(c);
    random_add(c, s);
    for (size_t k = 1 + rng_below(r, 5); k > 0; k--) {
      border_point(c, &x, &y);
      op_move(c, s->id, x, y);
    }
    break;
  case 9: /* policy cases only */
    policy_burst(c, s);
    break;
  case 10:
    policy_op(c);
    break;
  default:
    random_op(c);
    break;
  }
}

static void coalesce_ops(diff_case *c) {
  uint64_t *r = &c->rng;
  if (c->tick == 0) {
    while (c->live_count < c->population)
      random_add(c, pick_free(c));
  }
  size_t n = 1 + rng_below(r, c->population / 2 + 2);
  for (size_t k = 0; k < n; k++)
    burst(c);
  if (c->live_count < c->population / 2)
    random_add(c, pick_free(c));
}

/* ---- setting a case up --------------------------------------------------- */

static void make_pool(diff_case *c) {
  uint64_t ids[POOL_MAX];
  size_t n = 0, want = c->population * 3 / 2 + 24;
  static const uint64_t specials[] = {0,
                                      1,
                                      UINT64_MAX,
                                      UINT64_MAX - 1,
                                      UINT64_C(1) << 32,
                                      (UINT64_C(1) << 32) - 1,
                                      UINT64_C(1) << 63};
  if (want > POOL_MAX)
    want = POOL_MAX;
  for (size_t i = 0; i < sizeof specials / sizeof *specials; i++)
    ids[n++] = specials[i];
  while (n < want) {
    size_t u = rng_below(&c->rng, 4);
    ids[n++] = u == 0 ? rng_next(&c->rng) : 2 + rng_below(&c->rng, want * 2);
  }
  qsort(ids, n, sizeof *ids, compare_u64);
  c->slot_count = 0;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && ids[i] == ids[i - 1])
      continue;
    slot *s = &c->slots[c->slot_count++];
    memset(s, 0, sizeof *s);
    s->id = ids[i];
  }
}

static void make_borders(diff_case *c) {
  size_t n = 0;
  for (size_t d = 0; d < BORDER_DIVISORS; d++) {
    unsigned div = border_divisors[d];
    for (unsigned k = 0; k <= div; k++) {
      double fx = (double)c->area_min_x +
                  ((double)c->area_max_x - (double)c->area_min_x) * k / div;
      double fy = (double)c->area_min_y +
                  ((double)c->area_max_y - (double)c->area_min_y) * k / div;
      c->borders_x[n] = (float)fx;
      c->borders_y[n] = (float)fy;
      n++;
    }
  }
  static const float extra[] = {500, 333.25f, 250, 750, 666.75f, 125, 0, -0.0f};
  for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) {
    c->borders_x[n] = extra[i];
    c->borders_y[n] = extra[i];
    n++;
  }
  c->border_count = n;
}

/* The knobs of a seed and shape; the same for every layout. */
static void setup_case(diff_case *c, unsigned seed, aoi_shape shape) {
  uint64_t *r = &c->rng;
  c->seed = seed;
  c->rng = UINT64_C(0xa0761d6478bd642f) * (seed + 1) + (uint64_t)shape * 7919;
  rng_next(r);
  c->ref_rng = c->rng ^ UINT64_C(0x5851f42d4c957f2d);
  aoi_config_default(&c->config);
  c->config.shape = shape;
  c->config.max_radius = max_radii[rng_below(r, 5)];
  c->config.hysteresis =
      rng_chance(r, 0.5) ? 0 : hystereses[rng_below(r, 4)];
  c->config.move_events = rng_chance(r, 0.75);
  if (shape == AOI_SHAPE_CELLS) {
    static const float cells[] = {16, 50, 100, 37.5f, 250};
    c->config.cell_size = cells[rng_below(r, 5)];
  }
  float min_x = 0, min_y = 0, max_x = 1000, max_y = 1000;
  size_t bounds = rng_below(r, 10);
  if (bounds == 7) {
    min_x = min_y = -500;
    max_x = max_y = 500;
  } else if (bounds == 8) {
    max_y = 250;
  } else if (bounds == 9) {
    min_x = max_x = 100; /* ignored on x: the default layout */
  }
  c->config.min_x = min_x;
  c->config.min_y = min_y;
  c->config.max_x = max_x;
  c->config.max_y = max_y;
  /* The shard cuts move often, every tick at the most: the events must not
     change. Drawn from the seed, not the stream, to keep the stream. */
  static const unsigned rebalance[] = {0, 1, 2, 3, 16};
  c->config.rebalance_interval = rebalance[seed % 5];
#ifdef __linux__
  /* Workers bound to CPUs (wrapping around when they outnumber them)
     must not change the events either. */
  c->config.pin_threads = seed % 3 == 1;
#endif
  /* (from the seed too: one case in four) */
  c->spectators = seed % 4 == 2;
  if (c->spectators)
    c->config.max_radius = 500;
  c->area_min_x = min_x < max_x ? min_x : 0;
  c->area_max_x = min_x < max_x ? max_x : 1000;
  c->area_min_y = min_y < max_y ? min_y : 0;
  c->area_max_y = min_y < max_y ? max_y : 1000;
  c->population = 20 + (unsigned)rng_below(r, 281);
  c->ticks = 30 + (unsigned)rng_below(r, 31);
  c->quantum = quanta[rng_below(r, 4)];
  c->crowd = rng_chance(r, 0.3);
  c->crowd_x = quantize(c, rng_range(r, c->area_min_x, c->area_max_x));
  c->crowd_y = quantize(c, rng_range(r, c->area_min_y, c->area_max_y));
  c->crowd_spread = (float)rng_range(r, 20, 120);
  make_pool(c);
  make_borders(c);
}

static void free_case(diff_case *c) {
  if (c == NULL)
    return;
  aoi_destroy(c->world);
  model_destroy(c->m);
  for (size_t i = 0; i < POOL_MAX; i++)
    free(c->slots[i].outbox);
  trace_text_free(&c->trace);
  free(c->kept);
  free(c->got_ids);
  free(c->want_ids);
  free(c);
}

static unsigned env_unsigned(const char *name, unsigned fallback) {
  const char *text = getenv(name);
  if (text == NULL || *text == '\0')
    return fallback;
  return (unsigned)strtoul(text, NULL, 10);
}

/* The setup's population, but never more than the ids of its pool: the
   first tick adds the whole population, one id of the pool each, until
   that many live (the pool's ids were drawn for the population, with
   repeats dropped), or the adds would never end. */
static void fit_population(diff_case *c) {
  if (c->population > c->slot_count)
    c->population = (unsigned)c->slot_count;
}

/* A case of a seed and shape on a layout, its world not created yet: the
   caller may change the config (case_start creates it). */
static diff_case *case_new(unsigned seed, aoi_shape shape, unsigned threads,
                           unsigned shards, int coalesce, int policies) {
  diff_case *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->got_ids = malloc((POOL_MAX + 16) * sizeof *c->got_ids);
  c->want_ids = malloc((POOL_MAX + 16) * sizeof *c->want_ids);
  assert_non_null(c->got_ids);
  assert_non_null(c->want_ids);
  setup_case(c, seed, shape);
  c->coalesce = coalesce;
  if (coalesce) { /* fewer entities and ticks: many more layouts */
    c->population = 10 + (unsigned)rng_below(&c->rng, 100);
    c->ticks = 10 + (unsigned)rng_below(&c->rng, 10);
  }
  fit_population(c);
  if (policies) {
    const char *apply = getenv("AOI_DIFF_POLICIES");
    c->policies = 1;
    c->apply_policies = apply == NULL || strcmp(apply, "off") != 0;
    setup_policies(c);
  }
  c->threads = threads;
  c->shards = shards;
  c->config.threads = threads;
  c->config.shards = shards;
  return c;
}

/* Creates the world and the model of c's config. Which ticks run on the
   thread that starts them (aoi__tick_on_host): `ticks_on_host` 0 = the
   world's own choice (and lane 0's share of a blocking tick on the host
   thread: host_share), 1 = none (every lane a task of the pool), 2 = all. */
static void case_start(diff_case *c, int ticks_on_host) {
  trace_config(&c->trace, &c->config);
  int rc = aoi_create(&c->config, &c->world);
  if (rc != 0)
    case_fail(c, "aoi_create returned %s", code_name(rc));
  c->m = model_create(&c->config);
  assert_non_null(c->m);
  if (ticks_on_host != 0) {
    c->world->inline_cost = ticks_on_host == 2 ? UINT64_MAX : 0;
    c->world->inline_single = ticks_on_host == 2;
    c->world->host_share = false;
  }
}

/* The operations of one tick. */
static void case_ops(diff_case *c) {
  if (c->idle)
    return;
  if (c->coalesce)
    coalesce_ops(c);
  else
    run_tick_ops(c);
}

static void case_verbose(const diff_case *c, const char *prefix) {
  if (env_unsigned("AOI_DIFF_VERBOSE", 0))
    printf("%sseed %u %s%s threads %u shards %u: %u ticks, %zu live, %" PRIu64
           " calls, %" PRIu64 " events, %" PRIu64 " handoffs, %" PRIu64
           " ghosts, %" PRIu64 " moves by reference, %" PRIu64
           " stale references refused, %" PRIu64 " ticks as lane tasks\n",
           prefix, c->seed, shape_name(c->config.shape),
           c->policies ? " policies" : "", c->threads, c->shards, c->tick,
           c->live_count, c->calls_checked, c->events_checked, c->handoffs,
           c->ghosts, c->ref_moves, c->stale_refused, c->lane_ticks);
}

static void run_case(unsigned seed, aoi_shape shape, unsigned threads,
                     unsigned shards, int coalesce, int ticks_on_host,
                     int policies) {
  diff_case *c = case_new(seed, shape, threads, shards, coalesce, policies);
  current = c;
  case_start(c, ticks_on_host);
  while (c->tick < c->ticks) {
    case_ops(c);
    do_tick(c);
  }
  c->after_tick = 1;
  check_outboxes(c, 0);
  case_verbose(c, "");
  current = NULL;
  free_case(c);
}

/* Whether AOI_DIFF_SEED (0: not set) names a seed of another group than
   `group` (0 v1, 1 policies, 2 pool): the pool rounds' seeds are above
   POOL_SEED_BASE, the policy cases' above POLICY_SEED_BASE, the v1 ones
   below. */
static int other_group(unsigned only_seed, int group) {
  int of_seed = only_seed > POOL_SEED_BASE     ? 2
                : only_seed > POLICY_SEED_BASE ? 1
                                               : 0;
  return only_seed != 0 && of_seed != group;
}

static void run_shape(aoi_shape shape, int policies) {
  unsigned seeds = env_unsigned("AOI_DIFF_SEEDS",
                                policies ? DEFAULT_POLICY_SEEDS : DEFAULT_SEEDS);
  unsigned only_seed = env_unsigned("AOI_DIFF_SEED", 0);
  const char *layout = getenv("AOI_DIFF_LAYOUT");
  unsigned only_threads = 0, only_shards = 0;
  int have_layout = layout != NULL && sscanf(layout, "%u,%u", &only_threads,
                                             &only_shards) == 2;
  unsigned base = policies ? POLICY_SEED_BASE : 0;

  if (other_group(only_seed, policies))
    return;
  for (unsigned seed = base + 1; seed <= base + seeds || only_seed != 0;
       seed++) {
    if (only_seed != 0)
      seed = only_seed;
    for (unsigned j = 0; j < LAYOUTS_PER_SEED; j++) {
      /* Walk through every (threads, shards) pair across seeds and shapes;
         every tenth seed tries the defaults (0, 0) once. Ticks run where
         the world chooses, on the workers only, or on the host only, by
         turns. */
      unsigned k = (seed * LAYOUTS_PER_SEED + j) * 7 + (unsigned)shape * 13;
      unsigned threads = 1 + k % 4;
      unsigned shards = shard_counts[(k / 4) % SHARD_COUNTS];
      if (j == 0 && seed % 10 == 0)
        threads = shards = 0;
      if (have_layout) {
        if (j > 0)
          break;
        threads = only_threads;
        shards = only_shards;
      }
      run_case(seed, shape, threads, shards, 0, (int)((seed + j) % 3),
               policies);
    }
    if (only_seed != 0)
      break;
  }
}

/* Every seed on every layout of threads 1-4 x shard_counts, ticks run on
   the world's choice, on the workers only, or on the host only by turns. */
static void run_coalesce(aoi_shape shape, int policies) {
  unsigned seeds = env_unsigned("AOI_DIFF_SEEDS", 0);
  unsigned only_seed = env_unsigned("AOI_DIFF_SEED", 0);
  unsigned base = policies ? POLICY_SEED_BASE : 0;
  seeds = seeds == 0 ? (policies ? 1 : 2) : (seeds + 6) / 7;
  if (other_group(only_seed, policies))
    return;
  for (unsigned seed = base + 1; seed <= base + seeds || only_seed != 0;
       seed++) {
    if (only_seed != 0)
      seed = only_seed;
    for (unsigned t = 1; t <= 4; t++)
      for (unsigned k = 0; k < SHARD_COUNTS; k++)
        run_case(seed, shape, t, shard_counts[k], 1,
                 (int)((seed + t + k) % 3), policies);
    if (only_seed != 0)
      break;
  }
}

/* ---- several worlds on one pool (group `pool`) --------------------------- */

/* A round: a pool of P threads (P walks through pool_sizes) and 2 to 9
   worlds, each a case of its own seed, shape and size with its own model,
   most on the pool with their own lanes and shards, some ticked on the
   calling thread (AOI_RUN_CALLER), at most one on threads of its own
   (AOI_RUN_OWN). Every other round one world is large (over 2048 live
   entities, so that its ticks run as a task per lane and step); some are
   tiny, some empty (every tick idle), and the pool worlds run their ticks
   where they choose or, by turns, always as lane tasks. Each tick ticks
   them all, in one of the ways tick_round lists. */
#define ROUND_WORLDS_MAX 10
static const unsigned pool_sizes[] = {1, 2, 3, 5, 8};
#define POOL_SIZES (sizeof pool_sizes / sizeof pool_sizes[0])
static const unsigned pool_lanes[] = {0, 1, 1, 2, 3, 4, 8};
#define POOL_LANES (sizeof pool_lanes / sizeof pool_lanes[0])
#define RESULT_UNSET 12345 /* no aoi_* code: results[i] not written */

typedef struct pool_round {
  unsigned seed, pool_threads, ticks, tick;
  uint64_t rng;
  aoi_pool *pool;
  diff_case *cases[ROUND_WORLDS_MAX];
  aoi_world *worlds[ROUND_WORLDS_MAX];
  int want[ROUND_WORLDS_MAX];    /* the models' tick results */
  int results[ROUND_WORLDS_MAX];
  size_t count, planned;         /* worlds created, and to create */
  unsigned big, own, caller, idle; /* worlds of each kind, for verbose */
} pool_round;

static pool_round *round_now; /* freed by the teardown when a round fails */

static void free_round(pool_round *p) {
  if (p == NULL)
    return;
  for (size_t i = 0; i < p->count; i++)
    free_case(p->cases[i]); /* (waits for a tick in flight) */
  int rc = aoi_pool_destroy(p->pool);
  free(p);
  assert_int_equal(rc, 0); /* no world count left behind */
}

static const char *run_name(aoi_run run) {
  return run == AOI_RUN_POOL ? "AOI_RUN_POOL"
         : run == AOI_RUN_OWN ? "AOI_RUN_OWN"
                              : "AOI_RUN_CALLER";
}

/* World i of the round: its own seed, shape, run, lanes, shards and size.
   `big`: over 2048 live entities with short sight (max_radius 25), on 2
   lanes or more of the pool. */
static void round_world(pool_round *p, size_t i, int big) {
  uint64_t *r = &p->rng;
  aoi_shape shape = (aoi_shape)rng_below(r, 3);
  int policies = rng_chance(r, 0.4);
  int coalesce = !big && rng_chance(r, 0.2);
  size_t kind = rng_below(r, 10);
  aoi_run run = AOI_RUN_POOL;
  if (i > 0 && !big && kind == 0)
    run = AOI_RUN_CALLER;
  else if (i > 0 && !big && kind == 1 && p->own == 0)
    run = AOI_RUN_OWN;
  unsigned threads = run == AOI_RUN_POOL ? pool_lanes[rng_below(r, POOL_LANES)]
                     : run == AOI_RUN_OWN ? 1 + (unsigned)rng_below(r, 2)
                                          : (unsigned)rng_below(r, 3);
  if (big && threads <= 1)
    threads = 2 + (unsigned)rng_below(r, 3);
  unsigned shards =
      rng_chance(r, 0.3) ? 0 : shard_counts[rng_below(r, SHARD_COUNTS)];
  size_t size = rng_below(r, 6);
  int ticks_on_host = run == AOI_RUN_CALLER ? 0 : (int)rng_below(r, 2);

  diff_case *c = case_new(p->seed * 16 + (unsigned)i, shape, threads, shards,
                          coalesce, policies);
  p->cases[i] = c;
  p->count = i + 1;
  c->round_seed = p->seed;
  c->config.run = run;
  c->config.pool = run == AOI_RUN_POOL ? p->pool : NULL;
  if (run != AOI_RUN_OWN)
    c->config.pin_threads = 0; /* (AOI_RUN_OWN only) */
  if (big) {
    c->population = 2200 + (unsigned)rng_below(&c->rng, 600);
    c->config.max_radius = 25;
    c->spectators = 0;
    make_pool(c);
    fit_population(c);
  } else if (size == 0) {
    c->idle = 1; /* an empty world: every tick idle */
  } else if (size == 1) {
    c->population = 1 + (unsigned)rng_below(&c->rng, 6);
  }
  p->big += big != 0;
  p->own += run == AOI_RUN_OWN;
  p->caller += run == AOI_RUN_CALLER;
  p->idle += c->idle != 0;
  snprintf(c->round_note, sizeof c->round_note,
           "%s world %zu of %zu (%s%s) on a pool of %u threads (round seed "
           "%u)",
           run_name(run), i, p->planned,
           c->idle ? "empty" : big ? "large" : "normal",
           ticks_on_host == 1 ? ", every tick as lane tasks" : "",
           p->pool_threads, p->seed);
  case_start(c, ticks_on_host);
  p->worlds[i] = c->world;

  /* Lanes: 1 for 0 (AOI_RUN_POOL, AOI_RUN_CALLER); one delivery segment
     each. */
  aoi_stats stats;
  memset(&stats, 0, sizeof stats);
  check_code(c, "aoi_world_stats()", aoi_world_stats(c->world, &stats), 0);
  unsigned lanes = threads != 0 ? threads
                   : run == AOI_RUN_OWN ? stats.threads
                                        : 1;
  if (stats.threads != lanes ||
      aoi_delivery_segments(c->world) != stats.threads)
    case_fail(c, "%u lanes and %u segments, %u lanes expected", stats.threads,
              aoi_delivery_segments(c->world), lanes);
}

/* Checks the results of aoi_tick_many or aoi_tick_many_end of the worlds
   `which` (indices, n of them): each written, each the model's, and the
   call's return the first failing one's (0 here). */
static void check_many_results(pool_round *p, const char *call, int rc,
                               const size_t *which, size_t n,
                               const int *results) {
  int first = 0;
  for (size_t k = 0; k < n; k++) {
    diff_case *c = p->cases[which[k]];
    if (results[k] == RESULT_UNSET)
      case_fail(c, "%s did not write its result", call);
    if (first == 0)
      first = results[k];
  }
  if (rc != first)
    case_fail(p->cases[which[0]], "%s returned %s, its first failing "
              "result %s", call, code_name(rc), code_name(first));
}

/* The worlds `which` in one list, for the aoi_tick_many calls. */
static void list_worlds(const pool_round *p, const size_t *which, size_t n,
                        aoi_world **list, int *results) {
  for (size_t k = 0; k < n; k++) {
    list[k] = p->worlds[which[k]];
    results[k] = RESULT_UNSET;
  }
}

/* Ticks the worlds `which` with aoi_tick_many and checks each; the
   models have ticked. */
static void tick_many_checked(pool_round *p, const size_t *which, size_t n) {
  aoi_world *list[ROUND_WORLDS_MAX] = {0};
  int results[ROUND_WORLDS_MAX];
  list_worlds(p, which, n, list, results);
  int rc = aoi_tick_many(list, n, results);
  check_many_results(p, "aoi_tick_many", rc, which, n, results);
  for (size_t k = 0; k < n; k++)
    check_tick(p->cases[which[k]], "aoi_tick_many()", results[k],
               p->want[which[k]]);
}

/* Begins the worlds `which` with aoi_tick_many_begin. */
static void begin_many_checked(pool_round *p, const size_t *which, size_t n) {
  aoi_world *list[ROUND_WORLDS_MAX] = {0};
  int results[ROUND_WORLDS_MAX];
  list_worlds(p, which, n, list, results);
  int rc = aoi_tick_many_begin(list, n);
  if (rc != 0)
    case_fail(p->cases[which[0]], "aoi_tick_many_begin of %zu worlds "
              "returned %s", n, code_name(rc));
}

/* Ends one world's tick (polled a few times first, now and then) and
   checks it, while the others may still be in flight on the pool. */
static void end_one_checked(pool_round *p, size_t i) {
  diff_case *c = p->cases[i];
  if (rng_chance(&p->rng, 0.5))
    for (int polls = 0; polls < 3; polls++) {
      int done = aoi_tick_poll(c->world);
      if (done != 0 && done != 1)
        case_fail(c, "aoi_tick_poll returned %s", code_name(done));
      if (done)
        break;
    }
  check_tick(c, "aoi_tick_end()", aoi_tick_end(c->world), p->want[i]);
}

static void shuffle(uint64_t *r, size_t *items, size_t n) {
  for (size_t k = n; k > 1; k--) {
    size_t j = rng_below(r, k);
    size_t t = items[k - 1];
    items[k - 1] = items[j];
    items[j] = t;
  }
}

/* One tick of every world of the round: its operations, its model's tick,
   then the engine's, in one of five ways:
   0. aoi_tick_many of them all;
   1. aoi_tick_many_begin of them all, then aoi_tick_end of each in a random
      order, each checked while the rest may still run;
   2. aoi_tick_many_begin, then aoi_tick_many_end;
   3. aoi_tick_many_begin of some, then aoi_tick of each of the others (on
      the same pool, while the first are in flight), then aoi_tick_many_end;
   4. aoi_tick_begin of each, in a random order, then aoi_tick_end of each
      in another (or, one time in three, aoi_tick_many of some and aoi_tick
      of the rest one by one). */
static void tick_round(pool_round *p) {
  uint64_t *r = &p->rng;
  size_t all[ROUND_WORLDS_MAX] = {0}, some[ROUND_WORLDS_MAX] = {0},
      rest[ROUND_WORLDS_MAX] = {0};
  size_t n = p->count, n_some = 0, n_rest = 0;

  for (size_t i = 0; i < n; i++) {
    case_ops(p->cases[i]);
    all[i] = i;
  }
  for (size_t i = 0; i < n; i++)
    p->want[i] = model_tick_traced(p->cases[i]);
  shuffle(r, all, n);
  for (size_t k = 0; k < n; k++) {
    if (rng_chance(r, 0.5))
      some[n_some++] = all[k];
    else
      rest[n_rest++] = all[k];
  }
  size_t mode = rng_below(r, 5);
  switch (mode) {
  case 0:
    tick_many_checked(p, all, n);
    break;
  case 1:
    begin_many_checked(p, all, n);
    shuffle(r, all, n);
    for (size_t k = 0; k < n; k++)
      end_one_checked(p, all[k]);
    break;
  case 2:
  case 3: {
    size_t *begun = mode == 2 ? all : some;
    size_t n_begun = mode == 2 ? n : n_some;
    begin_many_checked(p, begun, n_begun);
    if (mode == 3)
      for (size_t k = 0; k < n_rest; k++)
        check_tick(p->cases[rest[k]], "aoi_tick()",
                   aoi_tick(p->worlds[rest[k]]), p->want[rest[k]]);
    aoi_world *list[ROUND_WORLDS_MAX] = {0};
    int results[ROUND_WORLDS_MAX];
    list_worlds(p, begun, n_begun, list, results);
    int rc = aoi_tick_many_end(list, n_begun, results);
    if (n_begun > 0)
      check_many_results(p, "aoi_tick_many_end", rc, begun, n_begun,
                         results);
    else if (rc != 0)
      fail_msg("aoi_tick_many_end of no world returned %s", code_name(rc));
    for (size_t k = 0; k < n_begun; k++)
      check_tick(p->cases[begun[k]], "aoi_tick_many_end()", results[k],
                 p->want[begun[k]]);
    break;
  }
  default:
    if (rng_chance(r, 1.0 / 3)) {
      tick_many_checked(p, some, n_some);
      for (size_t k = 0; k < n_rest; k++)
        check_tick(p->cases[rest[k]], "aoi_tick()",
                   aoi_tick(p->worlds[rest[k]]), p->want[rest[k]]);
      break;
    }
    for (size_t k = 0; k < n; k++) {
      int rc = aoi_tick_begin(p->worlds[all[k]]);
      if (rc != 0)
        case_fail(p->cases[all[k]], "aoi_tick_begin returned %s",
                  code_name(rc));
    }
    shuffle(r, all, n);
    for (size_t k = 0; k < n; k++)
      end_one_checked(p, all[k]);
    break;
  }
  p->tick++;
}

static void run_round(unsigned seed) {
  pool_round *p = calloc(1, sizeof *p);
  assert_non_null(p);
  round_now = p;
  p->seed = seed;
  p->rng = UINT64_C(0x2545f4914f6cdd1d) * seed;
  rng_next(&p->rng);
  p->pool_threads = pool_sizes[seed % POOL_SIZES];
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = p->pool_threads;
  assert_int_equal(aoi_pool_create(&pc, &p->pool), 0);
  assert_int_equal(aoi_pool_threads(p->pool), p->pool_threads);

  size_t n = 2 + rng_below(&p->rng, 8);
  p->planned = n;
  size_t big = seed % 2 == 1 ? rng_below(&p->rng, n) : n; /* n: none */
  for (size_t i = 0; i < n; i++)
    round_world(p, i, i == big);
  p->ticks = big < n ? 6 + (unsigned)rng_below(&p->rng, 5)
                     : 10 + (unsigned)rng_below(&p->rng, 15);
  while (p->tick < p->ticks)
    tick_round(p);
  for (size_t i = 0; i < n; i++) {
    diff_case *c = p->cases[i];
    c->after_tick = 1;
    check_outboxes(c, 0);
    case_verbose(c, "  ");
    /* The large world is too large to tick inline: its lanes were tasks. */
    if (i == big && c->lane_ticks == 0)
      case_fail(c, "no tick of the large world ran as lane tasks");
  }
  if (env_unsigned("AOI_DIFF_VERBOSE", 0))
    printf("pool round %u: %u threads, %zu worlds (%u large, %u empty, %u "
           "AOI_RUN_CALLER, %u AOI_RUN_OWN), %u ticks\n",
           seed, p->pool_threads, n, p->big, p->idle, p->caller, p->own,
           p->ticks);

  /* The pool refuses to go while a world is on it, and then works on. */
  size_t on_pool = 0;
  for (size_t i = 0; i < n; i++)
    on_pool += p->cases[i]->config.run == AOI_RUN_POOL;
  assert_true(on_pool > 0); /* (world 0 is) */
  for (size_t i = n; i-- > 0;) {
    diff_case *c = p->cases[i];
    if (c->config.run == AOI_RUN_POOL && on_pool-- == 1) {
      assert_int_equal(aoi_pool_destroy(p->pool), AOI_EBUSY);
      int want = model_tick_traced(c);
      check_tick(c, "aoi_tick()", aoi_tick(c->world), want);
    }
    assert_int_equal(aoi_destroy(c->world), 0);
    c->world = NULL;
  }
  round_now = NULL;
  free_round(p);
}

static void test_pool_worlds(void **state) {
  (void)state;
  unsigned rounds = env_unsigned("AOI_DIFF_SEEDS", DEFAULT_POOL_ROUNDS);
  unsigned only_seed = env_unsigned("AOI_DIFF_SEED", 0);
  if (other_group(only_seed, 2))
    return;
  if (only_seed != 0) {
    run_round(only_seed);
    return;
  }
  for (unsigned seed = POOL_SEED_BASE + 1; seed <= POOL_SEED_BASE + rounds;
       seed++)
    run_round(seed);
}

static int pool_teardown(void **state) {
  (void)state;
  pool_round *p = round_now;
  round_now = NULL;
  free_round(p);
  return 0;
}

static void test_coalesce_circle(void **state) {
  (void)state;
  run_coalesce(AOI_SHAPE_CIRCLE, 0);
}

static void test_coalesce_square(void **state) {
  (void)state;
  run_coalesce(AOI_SHAPE_SQUARE, 0);
}

static void test_coalesce_cells(void **state) {
  (void)state;
  run_coalesce(AOI_SHAPE_CELLS, 0);
}

static void test_circle(void **state) {
  (void)state;
  run_shape(AOI_SHAPE_CIRCLE, 0);
}

static void test_square(void **state) {
  (void)state;
  run_shape(AOI_SHAPE_SQUARE, 0);
}

static void test_cells(void **state) {
  (void)state;
  run_shape(AOI_SHAPE_CELLS, 0);
}

static void test_policies_circle(void **state) {
  (void)state;
  run_shape(AOI_SHAPE_CIRCLE, 1);
}

static void test_policies_square(void **state) {
  (void)state;
  run_shape(AOI_SHAPE_SQUARE, 1);
}

static void test_policies_cells(void **state) {
  (void)state;
  run_shape(AOI_SHAPE_CELLS, 1);
}

static void test_policies_coalesce_circle(void **state) {
  (void)state;
  run_coalesce(AOI_SHAPE_CIRCLE, 1);
}

static void test_policies_coalesce_square(void **state) {
  (void)state;
  run_coalesce(AOI_SHAPE_SQUARE, 1);
}

static void test_policies_coalesce_cells(void **state) {
  (void)state;
  run_coalesce(AOI_SHAPE_CELLS, 1);
}

static int teardown(void **state) {
  (void)state;
  free_case(current);
  current = NULL;
  return 0;
}

/* usage: test_differential [v1|policies|pool] (default: all three) */
int main(int argc, char **argv) {
  const struct CMUnitTest v1[] = {
      cmocka_unit_test_teardown(test_circle, teardown),
      cmocka_unit_test_teardown(test_square, teardown),
      cmocka_unit_test_teardown(test_cells, teardown),
      cmocka_unit_test_teardown(test_coalesce_circle, teardown),
      cmocka_unit_test_teardown(test_coalesce_square, teardown),
      cmocka_unit_test_teardown(test_coalesce_cells, teardown),
  };
  const struct CMUnitTest policies[] = {
      cmocka_unit_test_teardown(test_policies_circle, teardown),
      cmocka_unit_test_teardown(test_policies_square, teardown),
      cmocka_unit_test_teardown(test_policies_cells, teardown),
      cmocka_unit_test_teardown(test_policies_coalesce_circle, teardown),
      cmocka_unit_test_teardown(test_policies_coalesce_square, teardown),
      cmocka_unit_test_teardown(test_policies_coalesce_cells, teardown),
  };
  const struct CMUnitTest pool[] = {
      cmocka_unit_test_teardown(test_pool_worlds, pool_teardown),
  };
  const char *group = argc > 1 ? argv[1] : "";
  int failed = 0;

  if (argc > 2 || (argc == 2 && strcmp(group, "v1") != 0 &&
                   strcmp(group, "policies") != 0 &&
                   strcmp(group, "pool") != 0)) {
    fputs("usage: test_differential [v1|policies|pool]\n", stderr);
    return 2;
  }
  if (argc == 1 || strcmp(group, "v1") == 0)
    failed += cmocka_run_group_tests_name("v1", v1, NULL, NULL);
  if (argc == 1 || strcmp(group, "policies") == 0)
    failed += cmocka_run_group_tests_name("policies", policies, NULL, NULL);
  if (argc == 1 || strcmp(group, "pool") == 0)
    failed += cmocka_run_group_tests_name("pool", pool, NULL, NULL);
  return failed;
}
