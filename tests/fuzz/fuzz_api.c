/*
 * fuzz_api.c: libFuzzer target that drives the public API and the
 * brute-force model (tests/model.c) with the same operations and aborts on
 * the first difference.
 *
 * Input layout (every byte read past the end is 0):
 *   byte 0: shape ((b & 3) % 3), moves off (bit 2), hysteresis (bits 3..5);
 *   byte 1: threads 1 + b % 3, shards 1 + (b / 3) % 9;
 *   byte 2: max radius (bits 0..2), cell size (bits 3..5);
 *   byte 3: bounds hint (bits 0..1), interest policies (bit 7);
 *   with policies, byte 4: the number of move bands (b % 9), then two bytes
 *   a band: its distance (the first from a table that starts at 0, each
 *   next one the last plus a positive step, so they increase) and period
 *   (1 .. 2^32 - 1, from a table);
 *   then operations, one opcode byte (b % OP_COUNT, with policies
 *   b % OP_POLICY_COUNT) and its argument bytes: add, move, radius, layers,
 *   remove, tick, drain one id, view or watchers_of, circle query, and
 *   `edge`, which puts one entity exactly on the edge of another's reach or
 *   one float step beside it; with policies also `appeal` (a value from the
 *   radius table: 0, max_radius, above it, NaN, infinities, negatives) and
 *   `cap` (0, 1, 2, a few, 2^31, 2^32 - 1). One of the two move opcodes
 *   moves by reference (aoi_move_ref with the reference aoi_ref_of gave
 *   at the id's latest add, after checking that aoi_ref_of still gives it,
 *   and that the reference of the id's previous life is refused): the
 *   same operation by another path, so old inputs keep their meaning;
 *   the other moves the ids of odd index by aoi_move_many, a batch of one.
 * Inputs without bit 7 of byte 3 read as they did before the policies
 * existed, so the corpus and the regressions keep their meaning.
 * Ids come from a table of 64 (small ones and extremes such as 0 and
 * UINT64_MAX), so at most 64 entities live at once; coordinates and radii
 * come from tables holding shard borders, radius boundaries, -0, denormals,
 * huge values, NaN and infinities, radii above the maximum and negative
 * ones. At most MAX_OPS operations and MAX_TICKS ticks are read.
 *
 * Checked: every operation's return code equals the model's; after every
 * tick, aoi_pending lists exactly the watchers with undrained events and
 * aoi_drain gives back exactly the model's events, in order (the tick picks
 * whether it drains every outbox, none, or some, so outboxes accumulate
 * across ticks as the contract allows, or delivers them all by
 * aoi_deliver_slots, backlogs expanded and the rest as slots); aoi_stats agrees; queries between
 * operations answer as the model does. On a difference it prints what
 * differed and the operations so far as a trace (for aoi-replay and
 * model-replay) to stderr, and aborts. With AOI_FUZZ_API_TRACE set in the
 * environment, every input's trace is written to stderr as well: the way to
 * read what a corpus or regression input does.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aoi.h"
#include "support.h"
#include "model.h"

#define MAX_OPS 2000
/* A tick costs far more than an operation (the workers wake up), so the
   ticks an input may ask for are bounded too, to keep executions fast. */
#define MAX_TICKS 64
#define ID_COUNT 64
#define QUERY_CAPACITY (ID_COUNT + 8)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- value tables ---------------------------------------------------------- */

static const float hystereses[8] = {0, 0, 0.5f, 1, 2.5f, 10, 40, 1e30f};
static const float max_radii[8] = {500, 0, 1, 25, 100, 1000, 1e6f, FLT_MAX};
static const float cell_sizes[8] = {1, 0.5f, 10, 25, 100, 333.333f, 1e-3f,
                                    1e6f};
static const float bounds[4][4] = {
    {0, 0, 1000, 1000}, {-100, -100, 100, 100}, {0, 0, 0, 0},
    {-1e30f, -1e30f, 1e30f, 1e30f}};

/* Special coordinates; a byte >= COORD_SPECIALS picks (b - 160) * 12.5
   instead, a lattice over about -1200 .. 1200 that radii land on exactly. */
#define COORD_SPECIALS 64
static float coords[COORD_SPECIALS];

/* Radii; the last entries are relative to max_radius (see radius_of). */
#define RADIUS_TABLE 26
#define RADIUS_COUNT 32
static float radii[RADIUS_TABLE];

static const unsigned flag_values[] = {
    AOI_WATCHER, AOI_MARKER, AOI_WATCHER | AOI_MARKER,
    AOI_WATCHER | AOI_MARKER, AOI_WATCHER | AOI_MARKER, AOI_WATCHER,
    AOI_MARKER, 0, 4, AOI_WATCHER | 4, 0xffffffffu, AOI_MARKER | 8};
#define FLAG_COUNT (sizeof flag_values / sizeof flag_values[0])

static const uint32_t masks[] = {0xffffffffu, 0xffffffffu, 0xffffffffu,
                                 0xffffffffu, 1, 2, 3, 4, 6, 0x80000000u, 0,
                                 0x7fffffffu};
#define MASK_COUNT (sizeof masks / sizeof masks[0])

static const size_t capacities[] = {0, 1, 2, QUERY_CAPACITY};

/* Move bands: the first distance, the steps to the next ones, periods. */
static const float band_starts[8] = {0, 0, 0.5f, 1, 10, 25, 100, 1e6f};
static const float band_steps[8] = {1e-3f, 0.5f, 1, 5, 12.5f, 25, 100, 1e30f};
static const uint32_t band_periods[8] = {1, 2, 3, 4, 7, 16,
                                         UINT32_C(1) << 31, UINT32_MAX};
static const uint32_t caps[16] = {0, 1, 2, 3, 4, 5, 8, 16, 63, 64, 0, 1, 2,
                                  7, UINT32_C(1) << 31, UINT32_MAX};

static uint64_t ids[ID_COUNT];

static void init_tables(void) {
  static const float special[COORD_SPECIALS] = {
      0, -0.0f, 1, -1, 0.5f, 0.1f, 1e-3f, FLT_MIN,
      1e-45f, 10, 25, 33.333332f, 100, 111.111115f, 125, 200,
      250, 333.333344f, 333.333374f, 499.99f, 500, 500.01f, 999.99f, 1000,
      1000.01f, 1e4f, 1e6f, 1e7f, 16777216, 16777218, 1e9f, 1e15f,
      1e20f, 1e30f, 1e38f, FLT_MAX, -FLT_MAX, -1e30f, -1e6f, -500,
      -333.333344f, -100, -0.5f, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0};
  memcpy(coords, special, sizeof coords);
  coords[43] = NAN;
  coords[44] = -NAN;
  coords[45] = INFINITY;
  coords[46] = -INFINITY;
  coords[47] = nextafterf(500, 0);
  coords[48] = nextafterf(500, 1000);
  coords[49] = nextafterf(0, 1);
  coords[50] = nextafterf(0, -1);
  coords[51] = 1000.0f / 3;
  coords[52] = 2000.0f / 3;
  coords[53] = 1000.0f / 7;
  coords[54] = 4000.0f / 7;
  coords[55] = 1000.0f / 9;
  coords[56] = 5000.0f / 9;
  coords[57] = -1e-45f;
  coords[58] = -FLT_MIN;
  coords[59] = 2e38f;
  coords[60] = -2e38f;
  coords[61] = 3e38f;
  coords[62] = 1.5f;
  coords[63] = 12.5f;

  static const float radius_table[RADIUS_TABLE] = {
      0, -0.0f, 1e-45f, 0.5f, 1, 10, 12.5f, 25, 50, 100, 125, 200, 250,
      333.333344f, 499.99f, 500, 500.01f, 1000, 1e6f, 1e30f, FLT_MAX, -1,
      -1e-45f, 0, 0, 0};
  memcpy(radii, radius_table, sizeof radii);
  radii[23] = NAN;
  radii[24] = INFINITY;
  radii[25] = -INFINITY;

  for (size_t i = 0; i < ID_COUNT; i++)
    ids[i] = (uint64_t)i + 1;
  ids[56] = 0;
  ids[57] = UINT64_MAX;
  ids[58] = UINT64_MAX - 1;
  ids[59] = UINT64_C(1) << 63;
  ids[60] = (UINT64_C(1) << 63) - 1;
  ids[61] = UINT64_C(1) << 32;
  ids[62] = UINT64_C(0xffffffff);
  ids[63] = UINT64_C(1000003);
}

/* ---- the input ---------------------------------------------------------- */

typedef struct reader {
  const uint8_t *data;
  size_t size, pos;
} reader;

static unsigned next_byte(reader *r) {
  return r->pos < r->size ? r->data[r->pos++] : 0;
}

/* ---- one run ------------------------------------------------------------- */

typedef struct slot {
  int live;
  aoi_ref ref;   /* taken at its latest add (0: never added) */
  aoi_ref stale; /* the one of the life before, to be refused */
  unsigned flags;
  float x, y, radius;
  aoi_event *outbox; /* the events aoi_drain must give back */
  size_t outbox_count, outbox_capacity;
} slot;

typedef struct fuzz_run {
  aoi_config config;
  int policies; /* appeal and cap operations, move bands */
  aoi_world *world;
  model *m;
  slot slots[ID_COUNT];
  uint32_t tick;
  trace_text trace; /* the operations so far */
} fuzz_run;

_Noreturn static void fail(fuzz_run *f, const char *format, ...) {
  va_list args;

  fprintf(stderr, "fuzz_api: after tick %" PRIu32 ": ", f->tick);
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fprintf(stderr, "\nfuzz_api: layout --threads %u --shards %u; the "
                  "operations so far as a trace:\n%s",
          f->config.threads, f->config.shards,
          f->trace.text != NULL ? f->trace.text : "");
  abort();
}

static void check_code(fuzz_run *f, const char *call, int got, int want) {
  if (got != want)
    fail(f, "%s returned %d (%s), the model %d (%s)", call, got,
         aoi_strerror(got), want, aoi_strerror(want));
}

static size_t slot_index(uint64_t id) {
  for (size_t i = 0; i < ID_COUNT; i++)
    if (ids[i] == id)
      return i;
  return ID_COUNT;
}

static void push_expected(fuzz_run *f, slot *s, const aoi_event *event) {
  if (s->outbox_count == s->outbox_capacity) {
    size_t capacity = s->outbox_capacity ? 2 * s->outbox_capacity : 16;
    aoi_event *grown = realloc(s->outbox, capacity * sizeof *grown);
    if (grown == NULL)
      fail(f, "out of memory in the harness");
    s->outbox = grown;
    s->outbox_capacity = capacity;
  }
  s->outbox[s->outbox_count++] = *event;
}

static float coord_of(unsigned byte) {
  return byte < COORD_SPECIALS ? coords[byte] : (float)((int)byte - 160) * 12.5f;
}

static float radius_of(const fuzz_run *f, unsigned byte) {
  float max = f->config.max_radius;
  switch (byte % RADIUS_COUNT) {
  case RADIUS_TABLE + 0:
    return max;
  case RADIUS_TABLE + 1:
    return nextafterf(max, INFINITY);
  case RADIUS_TABLE + 2:
    return nextafterf(max, 0);
  case RADIUS_TABLE + 3:
    return max / 2;
  case RADIUS_TABLE + 4:
    return max / 3;
  case RADIUS_TABLE + 5:
    return max * 2;
  default:
    return radii[byte % RADIUS_COUNT];
  }
}

/* ---- operations ----------------------------------------------------------- */

static void op_add(fuzz_run *f, reader *r) {
  size_t index = next_byte(r) % ID_COUNT;
  float x = coord_of(next_byte(r));
  float y = coord_of(next_byte(r));
  float radius = radius_of(f, next_byte(r));
  unsigned flags = flag_values[next_byte(r) % FLAG_COUNT];
  uint32_t layers = masks[next_byte(r) % MASK_COUNT];
  uint32_t interest = masks[next_byte(r) % MASK_COUNT];
  uint64_t id = ids[index];

  trace_line(&f->trace, "add %" PRIu64 " %.9g %.9g %.9g %s 0x%" PRIx32 " 0x%" PRIx32,
             id, (double)x, (double)y, (double)radius, flags_word(flags),
             layers, interest);
  int want = model_add(f->m, id, x, y, radius, flags, layers, interest);
  int got = test_add(f->world, id, x, y, radius, flags, layers, interest);
  check_code(f, "aoi_add", got, want);
  if (got == 0) {
    slot *s = &f->slots[index];
    if (s->ref != 0)
      s->stale = s->ref;
    check_code(f, "aoi_ref_of", aoi_ref_of(f->world, id, &s->ref), 0);
    s->live = 1;
    s->flags = flags;
    s->x = x;
    s->y = y;
    s->radius = radius;
  }
}

/* aoi_move_ref of the slot's reference, once the one of its previous life
   was refused and aoi_ref_of gave it (or AOI_ENOENT when not live). */
static int move_by_ref(fuzz_run *f, size_t index, float x, float y) {
  slot *s = &f->slots[index];
  uint64_t id = ids[index];
  aoi_ref now = 0;

  if (s->stale != 0)
    check_code(f, "aoi_move_ref of a reference before a respawn",
               aoi_move_ref(f->world, s->stale, x, y), AOI_ENOENT);
  check_code(f, "aoi_ref_of", aoi_ref_of(f->world, id, &now),
             s->live ? 0 : AOI_ENOENT);
  if (now != (s->live ? s->ref : 0))
    fail(f, "aoi_ref_of(%" PRIu64 ") gave %#" PRIx64 ", its add %#" PRIx64,
         id, now, s->ref);
  return aoi_move_ref(f->world, s->ref, x, y);
}

static void move_to(fuzz_run *f, size_t index, float x, float y,
                    int by_ref) {
  uint64_t id = ids[index];

  trace_line(&f->trace, "move %" PRIu64 " %.9g %.9g", id, (double)x, (double)y);
  int want = model_move(f->m, id, x, y);
  int got;
  if (by_ref)
    got = move_by_ref(f, index, x, y);
  else if (index % 2 == 0)
    got = aoi_move(f->world, id, x, y);
  else { /* a batch of one: the same operation by another path */
    aoi_move_op op = {id, x, y};
    size_t done = 99;
    got = aoi_move_many(f->world, &op, 1, &done);
    if (done != (got == 0 ? 1u : 0u))
      fail(f, "aoi_move_many(%" PRIu64 ") returned %d with done %zu", id,
           got, done);
  }
  check_code(f, by_ref ? "aoi_move_ref" : "aoi_move", got, want);
  if (got == 0) {
    f->slots[index].x = x;
    f->slots[index].y = y;
  }
}

static void op_move(fuzz_run *f, reader *r, int by_ref) {
  size_t index = next_byte(r) % ID_COUNT;
  float x = coord_of(next_byte(r));
  float y = coord_of(next_byte(r));
  move_to(f, index, x, y, by_ref);
}

static void op_radius(fuzz_run *f, reader *r) {
  size_t index = next_byte(r) % ID_COUNT;
  float radius = radius_of(f, next_byte(r));
  uint64_t id = ids[index];

  trace_line(&f->trace, "radius %" PRIu64 " %.9g", id, (double)radius);
  int want = model_set_radius(f->m, id, radius);
  int got = aoi_set_radius(f->world, id, radius);
  check_code(f, "aoi_set_radius", got, want);
  if (got == 0)
    f->slots[index].radius = radius;
}

static void op_layers(fuzz_run *f, reader *r) {
  size_t index = next_byte(r) % ID_COUNT;
  uint32_t layers = masks[next_byte(r) % MASK_COUNT];
  uint32_t interest = masks[next_byte(r) % MASK_COUNT];
  uint64_t id = ids[index];

  trace_line(&f->trace, "layers %" PRIu64 " 0x%" PRIx32 " 0x%" PRIx32, id, layers,
             interest);
  int want = model_set_layers(f->m, id, layers, interest);
  int got = aoi_set_layers(f->world, id, layers, interest);
  check_code(f, "aoi_set_layers", got, want);
}

static void op_remove(fuzz_run *f, reader *r) {
  size_t index = next_byte(r) % ID_COUNT;
  uint64_t id = ids[index];

  trace_line(&f->trace, "remove %" PRIu64, id);
  int want = model_remove(f->m, id);
  int got = aoi_remove(f->world, id);
  check_code(f, "aoi_remove", got, want);
  if (got == 0) {
    /* A removed watcher's undrained events are dropped. */
    f->slots[index].live = 0;
    f->slots[index].outbox_count = 0;
  }
}

/* b is the model's, whose tags are the ones every add gives (test_tag). */
static int same_event(const aoi_event *a, const aoi_event *b) {
  return a->id == b->id && a->tag == test_tag(b->id) && a->kind == b->kind &&
         a->tick == b->tick &&
         memcmp(&a->x, &b->x, sizeof a->x) == 0 &&
         memcmp(&a->y, &b->y, sizeof a->y) == 0;
}

/* The events the engine gave watcher `index` (by aoi_drain, or by a
   delivery: `how`) are exactly the model's outbox, which empties. */
static void compare_outbox(fuzz_run *f, size_t index, const char *how,
                           const aoi_event *events, size_t count) {
  slot *s = &f->slots[index];
  uint64_t id = ids[index];
  for (size_t i = 0; i < count && i < s->outbox_count; i++) {
    const aoi_event *e = &events[i], *w = &s->outbox[i];
    if (!same_event(e, w))
      fail(f, "%s(%" PRIu64 ") event %zu: kind %" PRIu32 " id %" PRIu64
              " (%.9g, %.9g) tick %" PRIu32 "; the model: kind %" PRIu32
              " id %" PRIu64 " (%.9g, %.9g) tick %" PRIu32
              " (kinds: 0 leave, 1 enter, 2 move)",
           how, id, i, e->kind, e->id, (double)e->x, (double)e->y, e->tick,
           w->kind, w->id, (double)w->x, (double)w->y, w->tick);
  }
  if (count != s->outbox_count)
    fail(f, "%s(%" PRIu64 ") gave %zu events, the model %zu", how, id, count,
         s->outbox_count);
  s->outbox_count = 0;
}

static void drain_and_compare(fuzz_run *f, size_t index) {
  slot *s = &f->slots[index];
  const aoi_event *events = NULL;
  size_t count = 0;

  int got = aoi_drain(f->world, ids[index], &events, &count);
  check_code(f, "aoi_drain", got, s->live ? 0 : AOI_ENOENT);
  if (got != 0)
    return;
  compare_outbox(f, index, "aoi_drain", events, count);
}

/* aoi_deliver_slots's callbacks: a watcher's backlog, expanded, and its
   events of the last tick, as slots. */
static void delivered_events(void *user, uint64_t watcher, uint64_t tag,
                             const aoi_event *events, size_t count) {
  (void)tag;
  fuzz_run *f = user;
  size_t index = slot_index(watcher);
  if (index == ID_COUNT)
    fail(f, "aoi_deliver_slots: events for unknown watcher %" PRIu64, watcher);
  compare_outbox(f, index, "aoi_deliver_slots backlog", events, count);
}

static void delivered_slots(void *user, const aoi_slot_events *e) {
  fuzz_run *f = user;
  aoi_event events[3 * ID_COUNT];
  size_t index = slot_index(e->watcher);
  if (index == ID_COUNT ||
      (size_t)e->leaves + e->enters + e->moves > 3 * ID_COUNT)
    fail(f, "aoi_deliver_slots: %" PRIu32 " events for watcher %" PRIu64,
         e->leaves + e->enters + e->moves, e->watcher);
  compare_outbox(f, index, "aoi_deliver_slots", events,
                 slot_events_expand(e, events));
}

/* Every segment delivered by aoi_deliver_slots: every model outbox with
   events must be delivered, and only those. */
static void deliver_slots_and_compare(fuzz_run *f) {
  for (unsigned g = 0; g < aoi_delivery_segments(f->world); g++)
    check_code(f, "aoi_deliver_slots",
               aoi_deliver_slots(f->world, g, delivered_slots,
                                 delivered_events, f),
               0);
  for (size_t i = 0; i < ID_COUNT; i++)
    if (f->slots[i].outbox_count > 0)
      fail(f, "aoi_deliver_slots left watcher %" PRIu64 "'s %zu events",
           ids[i], f->slots[i].outbox_count);
}

/* Mode 0: drain every pending outbox (with bit 0 of the mask set,
   deliver them by aoi_deliver_slots instead); 1: none; 2: those the mask
   picks. */
static void check_outboxes(fuzz_run *f, unsigned mode, unsigned mask) {
  const uint64_t *pending = NULL;
  uint64_t want[ID_COUNT];
  size_t count = 0, want_count = 0;

  check_code(f, "aoi_pending", aoi_pending(f->world, &pending, &count), 0);
  for (size_t i = 0; i < ID_COUNT; i++)
    if (f->slots[i].outbox_count > 0)
      want[want_count++] = ids[i];
  qsort(want, want_count, sizeof *want, compare_u64);
  for (size_t i = 0; i < count && i < want_count; i++)
    if (pending[i] != want[i])
      fail(f, "aoi_pending: ids[%zu] = %" PRIu64 ", the model %" PRIu64, i,
           pending[i], want[i]);
  if (count != want_count)
    fail(f, "aoi_pending: %zu watchers, the model %zu", count, want_count);
  if (mode == 1)
    return;
  if (mode == 0 && (mask & 1)) {
    deliver_slots_and_compare(f);
    return;
  }
  for (size_t i = 0; i < count; i++)
    if (mode == 0 || (mask >> (i % 8)) & 1)
      drain_and_compare(f, slot_index(pending[i]));
  /* aoi_drain must not invalidate the pending list. */
  for (size_t i = 0; i < count; i++)
    if (pending[i] != want[i])
      fail(f, "aoi_pending's ids[%zu] changed while draining", i);
}

static void check_stats(fuzz_run *f, size_t event_count) {
  aoi_stats stats;
  uint64_t live = 0, watchers = 0;

  memset(&stats, 0, sizeof stats);
  check_code(f, "aoi_stats_get", aoi_world_stats(f->world, &stats), 0);
  for (size_t i = 0; i < ID_COUNT; i++)
    if (f->slots[i].live) {
      live++;
      watchers += (f->slots[i].flags & AOI_WATCHER) != 0;
    }
  if (stats.tick != f->tick || stats.entities != live ||
      stats.watchers != watchers || stats.events != event_count)
    fail(f, "aoi_stats: tick %" PRIu64 " entities %" PRIu64 " watchers %" PRIu64
            " events %" PRIu64 "; the model: tick %" PRIu32 " entities %" PRIu64
            " watchers %" PRIu64 " events %zu",
         stats.tick, stats.entities, stats.watchers, stats.events, f->tick,
         live, watchers, event_count);
}

static void op_tick(fuzz_run *f, reader *r) {
  unsigned choice = next_byte(r);
  const model_event *events;

  trace_line(&f->trace, "tick");
  int want = model_tick(f->m);
  int got = aoi_tick(f->world);
  check_code(f, "aoi_tick", got, want);
  if (got != 0)
    return;
  f->tick++;
  size_t count = model_events(f->m, &events);
  for (size_t i = 0; i < count; i++) {
    size_t index = slot_index(events[i].watcher);
    if (index == ID_COUNT)
      fail(f, "the model gave an event to unknown watcher %" PRIu64,
           events[i].watcher);
    push_expected(f, &f->slots[index], &events[i].event);
  }
  /* Mostly drain everything, as aoi-replay does; sometimes let outboxes
     accumulate, wholly or in part. */
  unsigned mode = (choice & 7) < 5 ? 0 : (choice & 7) < 7 ? 1 : 2;
  check_outboxes(f, mode, choice >> 3);
  check_stats(f, count);
}

static void op_drain(fuzz_run *f, reader *r) {
  drain_and_compare(f, next_byte(r) % ID_COUNT);
}

static void compare_ids(fuzz_run *f, const char *call, int got, int want,
                        const uint64_t *got_ids, const uint64_t *want_ids,
                        size_t got_count, size_t want_count, size_t capacity) {
  check_code(f, call, got, want);
  if (got != 0)
    return;
  if (got_count != want_count)
    fail(f, "%s: %zu ids, the model %zu", call, got_count, want_count);
  for (size_t i = 0; i < got_count && i < capacity; i++)
    if (got_ids[i] != want_ids[i])
      fail(f, "%s: ids[%zu] = %" PRIu64 ", the model %" PRIu64, call, i,
           got_ids[i], want_ids[i]);
}

static void op_view(fuzz_run *f, reader *r) {
  size_t index = next_byte(r) % ID_COUNT;
  unsigned choice = next_byte(r);
  size_t capacity = capacities[choice % 4];
  uint64_t got_ids[QUERY_CAPACITY], want_ids[QUERY_CAPACITY];
  size_t got_count = 0, want_count = 0;
  char call[64];
  int got, want;

  if (choice & 4) {
    want = model_watchers_of(f->m, ids[index], want_ids, QUERY_CAPACITY,
                             &want_count);
    got = aoi_watchers_of(f->world, ids[index], capacity ? got_ids : NULL,
                          capacity, &got_count);
    snprintf(call, sizeof call, "aoi_watchers_of(%" PRIu64 ")", ids[index]);
  } else {
    want = model_view(f->m, ids[index], want_ids, QUERY_CAPACITY, &want_count);
    got = aoi_view(f->world, ids[index], capacity ? got_ids : NULL, capacity,
                   &got_count);
    snprintf(call, sizeof call, "aoi_view(%" PRIu64 ")", ids[index]);
  }
  compare_ids(f, call, got, want, got_ids, want_ids, got_count, want_count,
              capacity);
}

static void op_circle(fuzz_run *f, reader *r) {
  float x = coord_of(next_byte(r));
  float y = coord_of(next_byte(r));
  float radius = radius_of(f, next_byte(r));
  uint32_t mask = masks[next_byte(r) % MASK_COUNT];
  size_t capacity = capacities[next_byte(r) % 4];
  uint64_t got_ids[QUERY_CAPACITY], want_ids[QUERY_CAPACITY];
  size_t got_count = 0, want_count = 0;
  char call[160];

  int want = model_query_circle(f->m, x, y, radius, mask, want_ids,
                                QUERY_CAPACITY, &want_count);
  int got = aoi_query_circle(f->world, x, y, radius, mask,
                             capacity ? got_ids : NULL, capacity, &got_count);
  snprintf(call, sizeof call,
           "aoi_query_circle(%.9g, %.9g, r %.9g, mask 0x%" PRIx32 ")",
           (double)x, (double)y, (double)radius, mask);
  compare_ids(f, call, got, want, got_ids, want_ids, got_count, want_count,
              capacity);
}

/* Moves entity b onto the edge of a's reach (its radius, or radius plus the
   hysteresis), or one float step inside or outside it. */
static void op_edge(fuzz_run *f, reader *r) {
  size_t ai = next_byte(r) % ID_COUNT, bi = next_byte(r) % ID_COUNT;
  unsigned choice = next_byte(r);
  const slot *a = &f->slots[ai];

  if (!a->live || ai == bi)
    return;
  double reach = (double)a->radius;
  if (choice & 1)
    reach += (double)f->config.hysteresis;
  double dx = reach, dy = 0;
  if (f->config.shape == AOI_SHAPE_CELLS) {
    /* The first or last coordinate of a cell k cells away. */
    double cell = (double)f->config.cell_size;
    double k = ceil(reach / cell) + (double)((choice >> 1) & 1);
    double base = floor((double)a->x / cell);
    dx = (base + k + ((choice >> 2) & 1)) * cell - (double)a->x;
    dy = (double)((choice >> 3) % 3) * cell;
  } else if (choice & 2) {
    dx = 0.6 * reach; /* a 3-4-5 triangle; the square's corner */
    dy = 0.8 * reach;
    if (f->config.shape == AOI_SHAPE_SQUARE)
      dx = dy = reach;
  }
  if (choice & 16)
    dx = -dx;
  if (choice & 32)
    dy = -dy;
  if (choice & 64) {
    double t = dx;
    dx = dy;
    dy = t;
  }
  float x = (float)((double)a->x + dx), y = (float)((double)a->y + dy);
  unsigned nudge = (choice >> 7) | ((choice >> 2) & 2);
  if (nudge == 0)
    x = nextafterf(x, dx < 0 ? -INFINITY : INFINITY);
  else if (nudge == 1)
    x = nextafterf(x, dx < 0 ? INFINITY : -INFINITY);
  move_to(f, bi, x, y, 0);
}

static void op_appeal(fuzz_run *f, reader *r) {
  size_t index = next_byte(r) % ID_COUNT;
  float appeal = radius_of(f, next_byte(r));
  uint64_t id = ids[index];

  trace_line(&f->trace, "appeal %" PRIu64 " %.9g", id, (double)appeal);
  int want = model_set_appeal(f->m, id, appeal);
  int got = aoi_set_appeal(f->world, id, appeal);
  check_code(f, "aoi_set_appeal", got, want);
}

static void op_cap(fuzz_run *f, reader *r) {
  size_t index = next_byte(r) % ID_COUNT;
  uint32_t cap = caps[next_byte(r) % 16];
  uint64_t id = ids[index];

  trace_line(&f->trace, "cap %" PRIu64 " %" PRIu32, id, cap);
  int want = model_set_cap(f->m, id, cap);
  int got = aoi_set_cap(f->world, id, cap);
  check_code(f, "aoi_set_cap", got, want);
}

enum {
  OP_ADD,
  OP_ADD2,
  OP_MOVE,
  OP_MOVE2,
  OP_RADIUS,
  OP_LAYERS,
  OP_REMOVE,
  OP_TICK,
  OP_TICK2,
  OP_DRAIN,
  OP_VIEW,
  OP_CIRCLE,
  OP_EDGE,
  OP_EDGE2,
  OP_COUNT,
  /* With policies only. */
  OP_APPEAL = OP_COUNT,
  OP_CAP,
  OP_POLICY_COUNT
};

static void configure(fuzz_run *f, reader *r) {
  unsigned b0 = next_byte(r), b1 = next_byte(r), b2 = next_byte(r);
  unsigned b3 = next_byte(r);
  aoi_config *c = &f->config;

  aoi_config_default(c);
  c->shape = (aoi_shape)((b0 & 3) % 3);
  c->move_events = !((b0 >> 2) & 1);
  c->hysteresis = hystereses[(b0 >> 3) & 7];
  c->threads = 1 + b1 % 3;
  c->shards = 1 + (b1 / 3) % 9;
  c->max_radius = max_radii[b2 & 7];
  c->cell_size = cell_sizes[(b2 >> 3) & 7];
  const float *box = bounds[b3 & 3];
  c->min_x = box[0];
  c->min_y = box[1];
  c->max_x = box[2];
  c->max_y = box[3];

  f->policies = (b3 >> 7) & 1;
  if (f->policies) {
    unsigned count = next_byte(r) % (AOI_MAX_MOVE_BANDS + 1);
    for (unsigned i = 0; i < count; i++) {
      unsigned distance = next_byte(r), period = next_byte(r);
      float d = band_starts[distance & 7];
      if (i > 0) {
        float last = c->move_bands[i - 1].distance;
        d = last + band_steps[distance & 7];
        if (!(d > last))
          d = nextafterf(last, INFINITY);
        if (!isfinite(d)) /* no room above: fewer bands */
          break;
      }
      c->move_bands[i].distance = d;
      c->move_bands[i].period = band_periods[period & 7];
      c->move_band_count = i + 1;
    }
  }

  trace_config(&f->trace, c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int initialised, print_trace;
  static fuzz_run f;
  reader r = {data, size, 0};

  if (!initialised) {
    init_tables();
    print_trace = getenv("AOI_FUZZ_API_TRACE") != NULL;
    initialised = 1;
  }
  memset(&f, 0, sizeof f);
  configure(&f, &r);
  int rc = aoi_create(&f.config, &f.world);
  if (rc != 0)
    fail(&f, "aoi_create returned %d (%s)", rc, aoi_strerror(rc));
  f.m = model_create(&f.config);
  if (f.m == NULL)
    fail(&f, "model_create failed");

  for (unsigned n = 0; n < MAX_OPS && f.tick < MAX_TICKS && r.pos < r.size;
       n++) {
    switch (next_byte(&r) % (f.policies ? OP_POLICY_COUNT : OP_COUNT)) {
    case OP_ADD:
    case OP_ADD2:
      op_add(&f, &r);
      break;
    case OP_MOVE:
      op_move(&f, &r, 0);
      break;
    case OP_MOVE2:
      op_move(&f, &r, 1);
      break;
    case OP_RADIUS:
      op_radius(&f, &r);
      break;
    case OP_LAYERS:
      op_layers(&f, &r);
      break;
    case OP_REMOVE:
      op_remove(&f, &r);
      break;
    case OP_TICK:
    case OP_TICK2:
      op_tick(&f, &r);
      break;
    case OP_DRAIN:
      op_drain(&f, &r);
      break;
    case OP_VIEW:
      op_view(&f, &r);
      break;
    case OP_CIRCLE:
      op_circle(&f, &r);
      break;
    case OP_APPEAL:
      op_appeal(&f, &r);
      break;
    case OP_CAP:
      op_cap(&f, &r);
      break;
    default:
      op_edge(&f, &r);
      break;
    }
  }
  /* A last tick, so that every input ends with its events checked. */
  op_tick(&f, &r);
  if (print_trace)
    fprintf(stderr, "%s", f.trace.text);

  aoi_destroy(f.world);
  model_destroy(f.m);
  for (size_t i = 0; i < ID_COUNT; i++)
    free(f.slots[i].outbox);
  trace_text_free(&f.trace);
  return 0;
}
