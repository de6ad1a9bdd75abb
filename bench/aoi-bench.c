/*
 * aoi-bench.c: drives synthetic crowds through an AOI world as a zone
 * server's game loop would, measures it, and checks it against the classic
 * single-threaded AOI algorithms (algo.h: brute force, the nine-grid, the
 * tower AOI, the cross-linked list), fed the same operations. It uses the
 * public API only (aoi.h).
 *
 * A run is one scenario (scenario.c) at one thread count:
 *  1. A fresh crowd from --seed and a fresh world over [0, side]^2, where
 *     side = sqrt(N pi R^2 / K) so that each entity sees about K others
 *     (--entities N, --radius R, --neighbours K; sparse scales R and K by
 *     its factors); max_radius R (but see the cliff scenarios below), an
 *     allocator hook that counts bytes and calls.
 *  2. A warm-up tick: every entity added (a share --players of them are
 *     players, watcher and marker; the others NPCs, markers only), aoi_tick,
 *     drain.
 *  3. --ticks measured ticks, each: the scenario's operations submitted
 *     (aoi_add, aoi_move, aoi_remove: "submit"), aoi_tick ("tick"), then
 *     aoi_pending and aoi_drain of every pending watcher in id order, every
 *     event hashed into the checksum ("drain").
 *     With --refs the engine's moves go through aoi_move_ref instead of
 *     aoi_move, as a host that keeps each entity's aoi_ref would: the
 *     bench takes the reference with aoi_ref_of right after each aoi_add,
 *     inside the timed submit (uniform adds only in the warm-up), and keeps
 *     it in its own per-entity array, by crowd slot (bench_op.slot).
 * --threads 1,2,4 is a sweep: one run per entry, same crowd, same seed. Each
 * algorithm of --baseline (default: the nine-grid alone) is fed the same
 * operations once per scenario, one after the other, after the engine's
 * runs (so that its memory does not count in theirs). With --verify they
 * run in lockstep with every engine run instead, and after each tick the
 * engine's events are compared with each one's, watcher by watcher and
 * event by event: the first difference is printed and the bench exits 1.
 * Under --verify they share the process's caches and memory with the
 * engine: use it to check, not to time. The first algorithm listed is "the
 * baseline" of the report and of the JSON's baseline_* keys; each also has
 * keys of its own (algo_NAME_*, null when it did not run).
 *
 * What each number means (medians and p99 are nearest-rank over the
 * measured ticks):
 *   tick ms         wall time of aoi_tick alone: median, p99, max
 *   phases ms       aoi_stats phase_ns (the slowest worker's apply, exchange
 *                   and compute), medians
 *   submit, drain   host time of the operation calls before the tick, and of
 *                   pending + drain + checksum after it, medians
 *   crowd           the crowd's own step a tick (the stand-in for the game's
 *                   logic, with --dump-ops its writing too): timed apart,
 *                   in neither submit nor frame
 *   updates/s       operations submitted a tick (moves, adds and removes: N
 *                   for uniform), mean, over the median tick; events/s: the
 *                   events drained a tick, likewise
 *   ghosts,         aoi_stats ghosts and handoffs, means a tick; rebalances:
 *   handoffs        how many in all
 *   imbalance       max / mean over the shards of the compute time each
 *                   spent over the measured ticks (aoi_stats shard_ns);
 *                   workers: the same per worker thread; entities: max /
 *                   mean of the entities each shard owns after the last tick
 *   peak RSS        the process's VmHWM, reset before the run through
 *                   /proc/self/clear_refs (so it holds the bench's own crowd
 *                   too; not reported where /proc cannot tell)
 *   B/entity        the engine's peak live heap, counted through the
 *                   allocator hook, / entities
 *   allocs          allocator calls (alloc + realloc) made during aoi_tick,
 *                   a tick, over the last half of the measured ticks; those
 *                   made during submit and during drain, apart
 *   speedup         the sweep's first median tick / this one; efficiency =
 *                   speedup / (threads / the first run's threads)
 *   baseline        the baseline's median tick (grid, views, diffs, events
 *                   into its outboxes; not the checksum) / the engine's
 *   algorithms      each one's median submit (its operations: where the
 *                   tower and the cross-list do their incremental work) and
 *                   tick, and their median sum a tick, "frame", what
 *                   compares with the engine's frame; events a tick; its
 *                   peak bytes (counted by the algorithm) / entities
 *   checksum        of every event of every tick, warm-up included: the same
 *                   for every thread and shard count, and every
 *                   algorithm's
 *   work, span      with --measure-cpu on (aoi_config.measure_cpu, the
 *                   default): aoi_stats work_ns, the tick's CPU time on
 *                   every thread, and span_ns, the sum over the phases of
 *                   the slowest lane's CPU time plus the serial part;
 *                   medians. predicted speedup = work / span: what as many
 *                   free cores as lanes would give over this run's own
 *                   work on one core (scripts/scaling.sh divides the
 *                   1-thread run's tick by each span instead)
 *   os threads      the process's threads after the warm-up tick, the
 *                   entries of /proc/self/task: the main thread, the
 *                   engine's, and for one world the delivery's
 *                   (threads - 1)
 *
 * --worlds K runs K worlds of N / K entities at once, each over a side
 * sized for its own N / K (the same density: a smaller copy of the crowd)
 * and seeded --seed + its index, all AOI_RUN_POOL on one pool of
 * --threads threads. A frame submits to every world in turn, ticks them
 * all with one aoi_tick_many (tick: its wall time), and delivers every
 * world's segments with one aoi_deliver_many, on the pool's threads
 * (frame = submit + tick + delivery, as for one world). Each world has
 * one lane. Work sums the worlds' work_ns; the span is the makespan of
 * list scheduling: each world one job of its span_ns,
 * given in order to the least loaded of the pool's threads. The checksum
 * folds each world's in order. The algorithms run one world, so
 * --baseline and --verify are refused; so are the shard tables.
 *
 * The cliff scenarios (outlier, spectator, mixed-radius, flood: scenario.c)
 * are the uniform crowd plus an odd part that should cost little: one far
 * marker, one spectator camera, a few long-sighted watchers, a flood of
 * operations. One odd entity or one flood must not slow a whole shard, so
 * before each of their runs the same crowd without the odd part (`plain`:
 * the same seed, entities and operations, but the odd part's) runs at the
 * same thread and shard counts in the same world configuration, and the
 * run also reports
 *   cliff           its median tick / the plain run's (cliff_ratio), and
 *                   likewise for submit (cliff_submit_ratio); 1 means the
 *                   odd part cost nothing. The baseline is fed the plain
 *                   crowd too: its own ratio (baseline_cliff_ratio) tells
 *                   what the odd part costs a plain nine-grid, the work
 *                   it adds (a long-sighted watcher's events) included
 * Their world's max_radius is --max-radius, by default the largest radius
 * the scenario gives anyone: --radius; --radius x the --mix factor for
 * mixed-radius; for spectator, whose camera sees max_radius far, the
 * library's default max_radius (500) or --radius where that is larger. The
 * nine-grid's cells and the towers are cut for --radius whatever max_radius
 * is. Under
 * --verify the plain runs are verified too. A flood ends every tick where
 * its plain crowd does, so their checksums must match.
 *
 * Exit status: 0; 1 when a check failed (a --verify difference, checksums
 * that differ across the sweep or from an algorithm's, a flood's that
 * differs from its plain crowd's, an API error); 2 for
 * a bad command line. With --json, stdout holds only the JSON lines; the
 * warnings, and the progress line when stderr is a terminal, go to stderr.
 */
#define _POSIX_C_SOURCE 200809L

#include "aoi.h"
#include "algo.h"
#include "bench.h"
#ifdef AOI_MPI
#include "mpi-bench.h"
#endif
#include "report.h"
#include "scenario.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Brute force above this many entities needs --force-brute: at 20,000 it
   makes 4 x 10^8 tests a tick. */
#define BRUTE_MAX_ENTITIES 20000u

/* ---- the allocator hook ------------------------------------------------- */

/* Called from the host and the workers at once. The counters are
   statistics: relaxed is enough, aoi_tick's return orders them before the
   host reads them. */
typedef struct heap_meter {
  atomic_llong live, peak;
  atomic_ullong calls; /* alloc + realloc */
} heap_meter;

static void meter_add(heap_meter *m, long long bytes)
{
  long long now =
      atomic_fetch_add_explicit(&m->live, bytes, memory_order_relaxed) + bytes;
  long long peak = atomic_load_explicit(&m->peak, memory_order_relaxed);
  while (now > peak &&
         !atomic_compare_exchange_weak_explicit(&m->peak, &peak, now,
                                                memory_order_relaxed,
                                                memory_order_relaxed))
    ;
}

static void *meter_alloc(void *user, size_t size)
{
  heap_meter *m = user;
  atomic_fetch_add_explicit(&m->calls, 1, memory_order_relaxed);
  void *p = malloc(size ? size : 1);
  if (p != NULL)
    meter_add(m, (long long)size);
  return p;
}

static void *meter_realloc(void *user, void *ptr, size_t old_size,
                           size_t new_size)
{
  heap_meter *m = user;
  atomic_fetch_add_explicit(&m->calls, 1, memory_order_relaxed);
  void *p = realloc(ptr, new_size ? new_size : 1);
  if (p != NULL)
    meter_add(m, (long long)new_size - (long long)(ptr ? old_size : 0));
  return p;
}

static void meter_free(void *user, void *ptr, size_t size)
{
  heap_meter *m = user;
  if (ptr == NULL)
    return;
  free(ptr);
  atomic_fetch_sub_explicit(&m->live, (long long)size, memory_order_relaxed);
}

static void meter_init(heap_meter *m)
{
  atomic_init(&m->live, 0);
  atomic_init(&m->peak, 0);
  atomic_init(&m->calls, 0);
}

static uint64_t meter_calls(heap_meter *m)
{
  return atomic_load_explicit(&m->calls, memory_order_relaxed);
}

/* ---- resident memory ---------------------------------------------------- */

/* Resets VmHWM to the current RSS (Linux >= 4.0); a no-op elsewhere. */
static void rss_reset(void)
{
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (f == NULL)
    return;
  fputs("5", f);
  fclose(f);
}

/* VmHWM in bytes, or 0 when /proc does not tell. */
static uint64_t rss_peak(void)
{
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL)
    return 0;
  char line[256];
  uint64_t kib = 0;
  while (fgets(line, sizeof(line), f) != NULL)
    if (strncmp(line, "VmHWM:", 6) == 0) {
      kib = strtoull(line + 6, NULL, 10);
      break;
    }
  fclose(f);
  return kib * 1024;
}

/* ---- feeding the engine and the algorithms ------------------------------ */

static const char *const op_names[] = {"aoi_add", "aoi_move", "aoi_remove"};

static void check(int rc, const char *call)
{
  if (rc != 0)
    bench_die("%s failed: %s", call, aoi_strerror(rc));
}

/* Whether marker `id` is among the --appeal share: a fixed draw per id, so
   a respawned id appeals again. */
static int appeals(const bench_options *o, uint64_t id)
{
  uint64_t h = hash_mix(BENCH_CHECKSUM_SEED, id);
  h ^= h >> 29;
  h *= UINT64_C(0xbf58476d1ce4e5b9);
  h ^= h >> 32;
  return (double)(h >> 11) * 0x1p-53 < o->appeal_share;
}

/* An added entity's policies: its cap as a watcher (the spectator's own
   with --spectator-cap: the odd part's slot follows the crowd's), its
   appeal as one of the --appeal share of the markers. */
static int set_policies(aoi_world *world, const bench_options *o,
                        const bench_op *op)
{
  int rc = 0;
  uint32_t cap = o->spectator_cap > 0 && op->slot == o->entities
                     ? o->spectator_cap
                     : o->cap;
  if (cap > 0 && (op->flags & AOI_WATCHER))
    rc = aoi_set_cap(world, op->id, cap);
  if (rc == 0 && o->appeal_share > 0 && (op->flags & AOI_MARKER) &&
      appeals(o, op->id))
    rc = aoi_set_appeal(world, op->id, (float)o->appeal_radius);
  return rc;
}

/* Submits one tick's operations. With `refs` (--refs: the host's
   per-entity array of references, by crowd slot) each add takes its
   entity's reference and each move goes through it. With `batch`
   (--batch: room for n moves) each run of moves goes to aoi_move_many. */
/* `tag`: every entity's tag, or UINT64_MAX for its id (one world). */
static void submit_engine(aoi_world *world, const bench_options *o,
                          const bench_op *ops, size_t n, aoi_ref *refs,
                          aoi_move_op *batch, uint64_t tag)
{
  for (size_t i = 0; i < n; i++) {
    const bench_op *op = &ops[i];
    int rc;
    if (batch != NULL && op->kind == BENCH_OP_MOVE) {
      size_t run = 0;
      while (i + run < n && ops[i + run].kind == BENCH_OP_MOVE) {
        const bench_op *m = &ops[i + run];
        batch[run++] = (aoi_move_op){m->id, m->x, m->y};
      }
      size_t done;
      rc = aoi_move_many(world, batch, run, &done);
      if (rc != 0)
        bench_die("aoi_move_many(%" PRIu64 ") failed: %s", batch[done].id,
                  aoi_strerror(rc));
      i += run - 1;
      continue;
    }
    if (op->kind == BENCH_OP_ADD) {
      rc = aoi_add(world, &(aoi_entity){.id = op->id,
                                        .tag = tag == UINT64_MAX ? op->id
                                                                 : tag,
                                        .x = op->x,
                                        .y = op->y,
                                        .radius = op->radius,
                                        .flags = op->flags,
                                        .layers = AOI_ALL_LAYERS,
                                        .interest = AOI_ALL_LAYERS});
      if (rc == 0)
        rc = set_policies(world, o, op);
      if (rc == 0 && refs != NULL)
        rc = aoi_ref_of(world, op->id, &refs[op->slot]);
    } else if (op->kind == BENCH_OP_MOVE)
      rc = refs != NULL ? aoi_move_ref(world, refs[op->slot], op->x, op->y)
                        : aoi_move(world, op->id, op->x, op->y);
    else
      rc = aoi_remove(world, op->id);
    if (rc != 0)
      bench_die("%s(%" PRIu64 ") failed: %s", op_names[op->kind], op->id,
                aoi_strerror(rc));
  }
}

static void submit_algo(algo *a, const bench_op *ops, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    const bench_op *op = &ops[i];
    int rc;
    if (op->kind == BENCH_OP_ADD)
      rc = algo_add(a, op->id, op->x, op->y, op->radius, op->flags,
                    UINT32_MAX, UINT32_MAX);
    else if (op->kind == BENCH_OP_MOVE)
      rc = algo_move(a, op->id, op->x, op->y);
    else
      rc = algo_remove(a, op->id);
    if (rc != 0)
      bench_die("%s: %s(%" PRIu64 ") failed: %s", algo_class_of(a)->name,
                op_names[op->kind], op->id, aoi_strerror(rc));
  }
}

/* One drained outbox; its events are borrowed until the next aoi_tick. */
typedef struct drained_outbox {
  uint64_t watcher;
  const aoi_event *events;
  size_t count;
} drained_outbox;

typedef struct drain_list {
  drained_outbox *items;
  size_t count, capacity;
} drain_list;

/* The checksum of one tick: the sum of one hash per watcher, so that it
   does not depend on the order watchers are delivered in. */
static uint64_t hash_watcher(uint64_t watcher, const aoi_event *events,
                             size_t count)
{
  return hash_outbox(BENCH_CHECKSUM_SEED, watcher, events, count);
}

/* Drains every pending watcher in id order into the checksum, the simple
   host's path (aoi_pending, aoi_drain); keeps the outboxes for --verify.
   Returns the number of events. */
static uint64_t drain_engine(aoi_world *world, drain_list *list,
                             uint64_t *checksum)
{
  const uint64_t *ids;
  size_t pending;
  check(aoi_pending(world, &ids, &pending), "aoi_pending");
  if (pending > list->capacity) {
    list->capacity = pending;
    list->items = bench_realloc(list->items, pending, sizeof(*list->items));
  }
  uint64_t total = 0, h = *checksum;
  for (size_t i = 0; i < pending; i++) {
    drained_outbox *d = &list->items[i];
    check(aoi_drain(world, ids[i], &d->events, &d->count), "aoi_drain");
    d->watcher = ids[i];
    h += hash_watcher(d->watcher, d->events, d->count);
    total += d->count;
  }
  list->count = pending;
  *checksum = h;
  return total;
}

/* ---- parallel delivery -------------------------------------------------- */

/* One world of a run, as the host keeps it: its crowd, its world, and the
   checksum of every event delivered from it. A run has --worlds of them. */
typedef struct world_run {
  crowd *c;
  aoi_world *world;
  aoi_ref *refs;     /* --refs: the host's references, by crowd slot */
  uint64_t checksum; /* of every tick's events, warm-up included */
  uint64_t drained;  /* events delivered in the last tick */
} world_run;

/* What one delivery thread took: every event copied into its wire buffer
   (as a server encodes them for sending), and where each watcher's begin.
   Each on its own cache line: the threads write their counts at every
   watcher, and a line two cores write moves between them at every write. */
typedef struct wire {
  _Alignas(64) aoi_event *events;
  size_t count, capacity;
  uint64_t *watchers; /* (world, watcher, first event) triples */
  size_t watcher_count, watcher_capacity;
  unsigned world; /* the world being delivered */
} wire;

/* Room for a watcher's `count` events at the end of the wire, noted as
   the watcher's; the caller writes them there. */
static aoi_event *wire_room(wire *out, uint64_t watcher, size_t count)
{
  if (out->count + count > out->capacity) {
    out->capacity = (out->count + count) * 2;
    out->events = bench_realloc(out->events, out->capacity, sizeof(aoi_event));
  }
  if (out->watcher_count + 3 > out->watcher_capacity) {
    out->watcher_capacity = out->watcher_capacity * 2 + 96;
    out->watchers = bench_realloc(out->watchers, out->watcher_capacity,
                                  sizeof(uint64_t));
  }
  out->watchers[out->watcher_count++] = out->world;
  out->watchers[out->watcher_count++] = watcher;
  out->watchers[out->watcher_count++] = out->count;
  aoi_event *room = out->events + out->count;
  out->count += count;
  return room;
}

static void wire_take(void *user, uint64_t watcher, uint64_t tag,
                      const aoi_event *events, size_t count)
{
  (void)tag;
  memcpy(wire_room(user, watcher, count), events, sizeof(aoi_event) * count);
}

/* aoi_deliver_slots's callback: each event built into the wire from the
   entity table, the bytes wire_take copies from aoi_deliver's expansion. */
static void wire_take_slots(void *user, const aoi_slot_events *e)
{
  size_t count = (size_t)e->leaves + e->enters + e->moves;
  aoi_event *to = wire_room(user, e->watcher, count);
  const uint32_t *slot = e->slots;
  for (uint32_t i = 0; i < e->leaves; i++)
    to[i] = (aoi_event){e->table[slot[i]].id, e->tags[slot[i]], 0, 0,
                        AOI_LEAVE, e->tick};
  for (uint32_t i = e->leaves; i < count; i++) {
    const aoi_slot *s = &e->table[slot[i]];
    to[i] = (aoi_event){s->id, e->tags[slot[i]], s->x, s->y,
                        i < e->leaves + e->enters ? AOI_ENTER : AOI_MOVE,
                        e->tick};
  }
}

/* One segment of one world to deliver. */
typedef struct delivery_job {
  unsigned world, segment;
} delivery_job;

/* Delivery threads: every segment of every world is a job, in world order,
   and thread i takes jobs i, i + threads, ... between two barriers; the
   main thread is thread 0. With one world, thread i takes its segments i,
   i + threads, ... With many worlds on a pool, aoi_deliver_many runs the
   segments on the pool's threads instead, and each thread takes a wire
   of its own at its first event of the round (many_take). */
typedef struct delivery {
  world_run *worlds;
  delivery_job *jobs;
  size_t job_count;
  unsigned threads;
  int slots;            /* by aoi_deliver_slots */
  aoi_world **many;     /* the worlds, for aoi_deliver_many; or NULL */
  unsigned many_count;
  int *results;
  unsigned wire_count;  /* wires: threads, or the pool's threads + 1 */
  _Atomic unsigned used; /* wires taken this round */
  unsigned round;
  wire *wires;
  pthread_t *ids;
  pthread_barrier_t start, done;
  int quit;
} delivery;

typedef struct delivery_arg {
  delivery *d;
  unsigned index;
} delivery_arg;

static void deliver_share(delivery *d, unsigned index)
{
  wire *out = &d->wires[index];
  out->count = out->watcher_count = 0;
  for (size_t j = index; j < d->job_count; j += d->threads) {
    out->world = d->jobs[j].world;
    aoi_world *w = d->worlds[out->world].world;
    if (d->slots)
      check(aoi_deliver_slots(w, d->jobs[j].segment, wire_take_slots,
                              wire_take, out),
            "aoi_deliver_slots");
    else
      check(aoi_deliver(w, d->jobs[j].segment, wire_take, out),
            "aoi_deliver");
  }
}

static void *delivery_main(void *arg)
{
  delivery_arg *a = arg;
  for (;;) {
    pthread_barrier_wait(&a->d->start);
    if (a->d->quit)
      break;
    deliver_share(a->d, a->index);
    pthread_barrier_wait(&a->d->done);
  }
  free(a);
  return NULL;
}

/* The round of aoi_deliver_many a thread's wire was taken in, across every
   run of the process. */
static _Atomic unsigned delivery_rounds;
static _Thread_local wire *thread_wire;
static _Thread_local unsigned thread_round;

/* The calling thread's wire in this round of aoi_deliver_many, taken at
   its first watcher. */
static wire *many_wire(delivery *d)
{
  if (thread_wire == NULL || thread_round != d->round) {
    unsigned i = atomic_fetch_add(&d->used, 1);
    if (i >= d->wire_count)
      bench_die("more delivering threads than the pool has");
    thread_wire = &d->wires[i];
    thread_wire->count = thread_wire->watcher_count = 0;
    thread_round = d->round;
  }
  return thread_wire;
}

/* aoi_deliver_many's callback: the tag names the world (submit_engine). */
static void many_take(void *user, uint64_t watcher, uint64_t tag,
                      const aoi_event *events, size_t count)
{
  wire *out = many_wire(user);
  out->world = (unsigned)tag;
  wire_take(out, watcher, tag, events, count);
}

/* aoi_deliver_many_slots's callback, likewise. */
static void many_take_slots(void *user, const aoi_slot_events *e)
{
  wire *out = many_wire(user);
  out->world = (unsigned)e->watcher_tag;
  wire_take_slots(out, e);
}

static void delivery_init(delivery *d, world_run *worlds, unsigned count,
                          unsigned threads, aoi_world **many,
                          unsigned pool_threads)
{
  memset(d, 0, sizeof(*d));
  d->worlds = worlds;
  d->threads = threads ? threads : 1;
  d->wire_count = d->threads;
  if (many != NULL) {
    d->many = many;
    d->many_count = count;
    d->results = bench_calloc(count, sizeof(int));
    d->threads = 1;
    d->wire_count = pool_threads + 1;
  }
  for (unsigned i = 0; i < count; i++)
    d->job_count += aoi_delivery_segments(worlds[i].world);
  d->jobs = bench_calloc(d->job_count, sizeof(*d->jobs));
  size_t j = 0;
  for (unsigned i = 0; i < count; i++)
    for (unsigned s = 0; s < aoi_delivery_segments(worlds[i].world); s++)
      d->jobs[j++] = (delivery_job){i, s};
  /* (aligned as the type asks: calloc promises less) */
  d->wires = aligned_alloc(_Alignof(wire), sizeof(wire) * d->wire_count);
  if (d->wires == NULL)
    bench_die("out of memory");
  memset(d->wires, 0, sizeof(wire) * d->wire_count);
  d->ids = bench_calloc(d->threads, sizeof(pthread_t));
  pthread_barrier_init(&d->start, NULL, d->threads);
  pthread_barrier_init(&d->done, NULL, d->threads);
  for (unsigned i = 1; i < d->threads; i++) {
    delivery_arg *a = bench_calloc(1, sizeof(*a));
    a->d = d;
    a->index = i;
    if (pthread_create(&d->ids[i], NULL, delivery_main, a) != 0)
      bench_die("pthread_create failed");
  }
}

static void delivery_free(delivery *d)
{
  d->quit = 1;
  pthread_barrier_wait(&d->start);
  for (unsigned i = 1; i < d->threads; i++)
    pthread_join(d->ids[i], NULL);
  pthread_barrier_destroy(&d->start);
  pthread_barrier_destroy(&d->done);
  for (unsigned i = 0; i < d->wire_count; i++) {
    free(d->wires[i].events);
    free(d->wires[i].watchers);
  }
  free(d->wires);
  free(d->results);
  free(d->ids);
  free(d->jobs);
}

/* Takes every event of the tick out on all delivery threads, or on the
   pool's. */
static void deliver_engine(delivery *d)
{
  if (d->many != NULL) {
    d->round = atomic_fetch_add(&delivery_rounds, 1) + 1;
    atomic_store(&d->used, 0);
    if (d->slots)
      check(aoi_deliver_many_slots(d->many, d->many_count, many_take_slots,
                                   many_take, d, d->results),
            "aoi_deliver_many_slots");
    else
      check(aoi_deliver_many(d->many, d->many_count, many_take, d,
                             d->results),
            "aoi_deliver_many");
    return;
  }
  atomic_store(&d->used, d->threads);
  if (d->threads > 1)
    pthread_barrier_wait(&d->start);
  deliver_share(d, 0);
  if (d->threads > 1)
    pthread_barrier_wait(&d->done);
}

/* Folds what the delivery threads took into each world's checksum and
   `drained`; returns the events of all worlds together. */
static uint64_t hash_wires(const delivery *d, world_run *worlds,
                           unsigned count)
{
  uint64_t total = 0;
  for (unsigned w = 0; w < count; w++)
    worlds[w].drained = 0;
  for (unsigned i = 0; i < atomic_load(&d->used); i++) {
    const wire *out = &d->wires[i];
    for (size_t j = 0; j < out->watcher_count; j += 3) {
      world_run *w = &worlds[out->watchers[j]];
      size_t from = out->watchers[j + 2];
      size_t to = j + 3 < out->watcher_count ? out->watchers[j + 5]
                                             : out->count;
      w->checksum +=
          hash_watcher(out->watchers[j + 1], out->events + from, to - from);
      w->drained += to - from;
    }
    total += out->count;
  }
  return total;
}

/* The same checksum over an algorithm's outboxes; returns the events. */
static uint64_t hash_algo(const algo *a, uint64_t *checksum)
{
  const uint64_t *ids;
  size_t pending = algo_pending(a, &ids);
  uint64_t total = 0, h = *checksum;
  for (size_t i = 0; i < pending; i++) {
    const aoi_event *events;
    size_t count;
    algo_events(a, i, &events, &count);
    h += hash_watcher(ids[i], events, count);
    total += count;
  }
  *checksum = h;
  return total;
}

/* ---- --verify ----------------------------------------------------------- */

static const char *const kind_names[] = {"leave", "enter", "move"};

static void format_event(char *out, size_t size, const aoi_event *e)
{
  if (e == NULL) {
    snprintf(out, size, "(none)");
    return;
  }
  const char *kind = e->kind < 3 ? kind_names[e->kind] : "?";
  if (e->kind == AOI_LEAVE)
    snprintf(out, size, "%s %" PRIu64, kind, e->id);
  else
    snprintf(out, size, "%s %" PRIu64 " %.9g %.9g", kind, e->id, (double)e->x,
             (double)e->y);
  if (e->kind == AOI_LEAVE && (e->x != 0 || e->y != 0))
    snprintf(out + strlen(out), size - strlen(out), " (at %.9g %.9g)",
             (double)e->x, (double)e->y);
  snprintf(out + strlen(out), size - strlen(out), "  [tick %" PRIu32 "]",
           e->tick);
}

static int same_event(const aoi_event *a, const aoi_event *b)
{
  return a->id == b->id && a->kind == b->kind && a->tick == b->tick &&
         float_bits(a->x) == float_bits(b->x) &&
         float_bits(a->y) == float_bits(b->y);
}

/* Compares one tick's outboxes, engine against algorithm; on the first
   difference prints both sides and exits 1. */
static void verify_tick(const char *label, uint64_t tick,
                        const drain_list *engine, const algo *b)
{
  const char *name = algo_class_of(b)->name;
  const uint64_t *ids;
  size_t pending = algo_pending(b, &ids);
  size_t i = 0, j = 0;
  while (i < engine->count || j < pending) {
    uint64_t watcher = UINT64_MAX;
    if (i < engine->count)
      watcher = engine->items[i].watcher;
    if (j < pending && ids[j] < watcher)
      watcher = ids[j];
    const aoi_event *ours = NULL, *theirs = NULL;
    size_t our_count = 0, their_count = 0;
    if (i < engine->count && engine->items[i].watcher == watcher) {
      ours = engine->items[i].events;
      our_count = engine->items[i++].count;
    }
    if (j < pending && ids[j] == watcher)
      algo_events(b, j++, &theirs, &their_count);
    size_t k = 0;
    while (k < our_count && k < their_count && same_event(&ours[k], &theirs[k]))
      k++;
    if (k == our_count && k == their_count)
      continue;
    char a[128], c[128];
    format_event(a, sizeof(a), k < our_count ? &ours[k] : NULL);
    format_event(c, sizeof(c), k < their_count ? &theirs[k] : NULL);
    char tag[32];
    snprintf(tag, sizeof(tag), "%s:", name);
    bench_progress_clear();
    fprintf(stderr,
            "aoi-bench: verify [%s]: tick %" PRIu64 ", watcher %" PRIu64
            ": event %zu differs (the engine has %zu events for this"
            " watcher, %s %zu)\n"
            "  engine:   %s\n"
            "  %-9s %s\n",
            label, tick, watcher, k, our_count, name, their_count, a, tag,
            c);
    exit(BENCH_EXIT_FAIL);
  }
}

/* ---- statistics --------------------------------------------------------- */

static int compare_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The q-quantile (nearest rank) of n values; sorts them. */
static double quantile(double *values, unsigned n, double q)
{
  if (n == 0)
    return 0;
  qsort(values, n, sizeof(double), compare_double);
  double rank = ceil(q * n);
  unsigned i = rank < 1 ? 0 : (unsigned)rank - 1;
  return values[i < n ? i : n - 1];
}

static double mean_of(const double *values, unsigned n)
{
  double s = 0;
  for (unsigned i = 0; i < n; i++)
    s += values[i];
  return n ? s / n : 0;
}

/* max / mean of n values; 1 when they are all zero. */
static double max_over_mean(const double *values, unsigned n)
{
  double sum = 0, most = 0;
  for (unsigned i = 0; i < n; i++) {
    sum += values[i];
    if (values[i] > most)
      most = values[i];
  }
  return sum > 0 ? most * n / sum : 1.0;
}

/* ---- runs --------------------------------------------------------------- */

/* side = sqrt(N pi R^2 / K), for the scenario's radius and neighbours. */
static double world_side(const bench_options *o, const scenario_result *s)
{
  return sqrt((double)o->entities * M_PI * s->radius * s->radius /
              s->neighbours);
}

/* The crowd's view radius in a scenario: --radius, times sparse's factor. */
static double crowd_radius(const bench_options *o, const scenario *sc)
{
  return o->radius * sc->radius_factor;
}

/* The scenario's crowd for world `world` of the run (seeded --seed +
   world); with `plain`, without its odd part. */
static crowd *new_crowd(const bench_options *o, const scenario_result *s,
                        int plain, unsigned world)
{
  crowd_params params;
  memset(&params, 0, sizeof(params));
  params.entities = o->entities;
  params.side = s->side;
  params.step = s->step;
  params.players = o->players;
  params.radius = (float)s->radius;
  params.seed = o->seed + world;
  params.sparse_ids = o->sparse_ids;
  params.plain = plain;
  params.outlier_x = o->outlier_x;
  params.outlier_y = o->outlier_y;
  params.spectator_radius = s->max_radius;
  params.mix_share = o->mix_share;
  params.mix_radius = s->mix_radius;
  params.flood = o->flood;
  params.walk_share = o->walk_share;
  return crowd_create(s->sc, &params);
}

static void make_config(const bench_options *o, const scenario_result *s,
                        aoi_config *config)
{
  aoi_config_default(config);
  config->shards = o->shards;
  config->min_x = 0;
  config->min_y = 0;
  config->max_x = (float)s->side;
  config->max_y = (float)s->side;
  config->max_radius = s->max_radius;
  config->move_band_count = o->band_count;
  memcpy(config->move_bands, o->bands, sizeof(o->bands));
  config->hysteresis = (float)o->hysteresis;
  config->move_events = o->moves;
  config->pin_threads = (unsigned)o->pin;
  config->shape = o->shape;
  config->cell_size = (float)o->cell_size;
  config->rebalance_interval = o->rebalance;
}

/* ---- --dump-ops --------------------------------------------------------- */

/* The operations a run feeds the engine, for other programs to replay
   (the bindings' benchmarks, docs/bindings.md): little-endian, the magic
   "AOIOPS01", then u32 entities, u32 ticks (the warm-up's included), f32
   side (the world is [0, side]^2) and f32 max_radius; then each tick's
   u32 count and that many 24-byte operations: u64 id, f32 x, f32 y, f32
   radius, u8 kind (0 add, 1 move, 2 remove), u8 flags, u16 zero. Every
   add has every layer and interest, and its id as its tag; the world is
   aoi_config_default's but for its bounds and max_radius, and its
   checksum is bench.h's (docs/bindings.md). */
static FILE *dump_open(const char *path, uint32_t entities, uint32_t ticks,
                       float side, float max_radius)
{
  FILE *f = fopen(path, "wb");
  if (f == NULL)
    bench_die("--dump-ops: cannot write %s", path);
  uint32_t head[2] = {entities, ticks};
  float geometry[2] = {side, max_radius};
  fwrite("AOIOPS01", 1, 8, f);
  fwrite(head, sizeof(head), 1, f);
  fwrite(geometry, sizeof(geometry), 1, f);
  return f;
}

static void dump_tick(FILE *f, const bench_op *ops, size_t n)
{
  uint32_t count = (uint32_t)n;
  fwrite(&count, sizeof(count), 1, f);
  for (size_t i = 0; i < n; i++) {
    unsigned char rec[24] = {0};
    float xyr[3] = {ops[i].x, ops[i].y, ops[i].radius};
    memcpy(rec, &ops[i].id, 8);
    memcpy(rec + 8, xyr, 12);
    rec[20] = ops[i].kind;
    rec[21] = ops[i].flags;
    fwrite(rec, sizeof(rec), 1, f);
  }
}

static double ns_to_ms(uint64_t ns)
{
  return (double)ns / 1e6;
}

/* Per measured tick, what a run keeps until it summarizes. */
typedef struct samples {
  double *tick, *submit, *crowd, *drain, *checksum, *frame,
      *phase[AOI_PHASE_COUNT];
  double *work, *span;
} samples;

static void samples_init(samples *t, unsigned ticks)
{
  t->tick = bench_calloc(ticks, sizeof(double));
  t->work = bench_calloc(ticks, sizeof(double));
  t->span = bench_calloc(ticks, sizeof(double));
  t->submit = bench_calloc(ticks, sizeof(double));
  t->crowd = bench_calloc(ticks, sizeof(double));
  t->drain = bench_calloc(ticks, sizeof(double));
  t->checksum = bench_calloc(ticks, sizeof(double));
  t->frame = bench_calloc(ticks, sizeof(double));
  for (int p = 0; p < AOI_PHASE_COUNT; p++)
    t->phase[p] = bench_calloc(ticks, sizeof(double));
}

static void samples_free(samples *t)
{
  free(t->tick);
  free(t->work);
  free(t->span);
  free(t->submit);
  free(t->crowd);
  free(t->drain);
  free(t->checksum);
  free(t->frame);
  for (int p = 0; p < AOI_PHASE_COUNT; p++)
    free(t->phase[p]);
}

/* One algorithm fed a crowd's operations, beside the engine or alone, and
   what it measured a tick. */
typedef struct algo_run {
  algo *a;
  double *tick, *submit, *frame;
  double events;
  uint64_t checksum;
} algo_run;

static void algo_run_init(algo_run *r, const algo_class *cls,
                          const bench_options *o, const scenario_result *s,
                          const aoi_config *config)
{
  algo_params params = {config, s->radius, o->tower_side, o->skin};
  r->a = algo_create(cls, &params);
  r->tick = bench_calloc(o->ticks, sizeof(double));
  r->submit = bench_calloc(o->ticks, sizeof(double));
  r->frame = bench_calloc(o->ticks, sizeof(double));
  r->events = 0;
  r->checksum = BENCH_CHECKSUM_SEED;
}

/* Submits one tick's operations and ticks; the ticks before `warmup`
   are not measured. */
static void algo_run_tick(algo_run *r, unsigned tick, unsigned warmup,
                          const bench_op *ops, size_t n)
{
  uint64_t s0 = bench_now_ns();
  submit_algo(r->a, ops, n);
  uint64_t s1 = bench_now_ns();
  algo_tick(r->a);
  uint64_t s2 = bench_now_ns();
  uint64_t drained = hash_algo(r->a, &r->checksum);
  if (tick < warmup)
    return;
  unsigned m = tick - warmup;
  r->submit[m] = ns_to_ms(s1 - s0);
  r->tick[m] = ns_to_ms(s2 - s1);
  r->frame[m] = ns_to_ms(s2 - s0);
  r->events += (double)drained;
}

/* Its figures into `out` (when not NULL), and frees it. */
static void algo_run_finish(algo_run *r, unsigned ticks, algo_result *out)
{
  if (out != NULL) {
    out->cls = algo_class_of(r->a);
    out->ran = 1;
    out->tick_ms_median = quantile(r->tick, ticks, 0.5);
    out->tick_ms_p99 = quantile(r->tick, ticks, 0.99);
    out->submit_ms_median = quantile(r->submit, ticks, 0.5);
    out->frame_ms_median = quantile(r->frame, ticks, 0.5);
    out->events_per_tick = r->events / ticks;
    out->peak_bytes = algo_peak_bytes(r->a);
    out->checksum = r->checksum;
    out->rebuilds = algo_verlet_rebuilds(r->a);
  }
  algo_destroy(r->a);
  free(r->tick);
  free(r->submit);
  free(r->frame);
}

/* The process's threads now, counted from the entries of /proc/self/task;
   -1 where /proc cannot tell. */
static long os_thread_count(void)
{
  DIR *dir = opendir("/proc/self/task");
  if (dir == NULL)
    return -1;
  long n = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL)
    n += e->d_name[0] != '.';
  closedir(dir);
  return n;
}

/* The span of `count` worlds ticked together on `threads` threads, as
   list scheduling estimates it: each world is one job as long as its own
   span, given in order to the thread least loaded so far; the span is the
   most any thread carries (the makespan). For one world, its span.
   `load` has room for `threads` counters. */
static uint64_t schedule_span(const uint64_t *spans, unsigned count,
                              unsigned threads, uint64_t *load)
{
  memset(load, 0, sizeof(*load) * threads);
  uint64_t most = 0;
  for (unsigned i = 0; i < count; i++) {
    unsigned least = 0;
    for (unsigned k = 1; k < threads; k++)
      if (load[k] < load[least])
        least = k;
    load[least] += spans[i];
    if (load[least] > most)
      most = load[least];
  }
  return most;
}

/* One run of the engine at `threads`, of the scenario's crowd or, with
   `plain`, of the crowd without its odd part; with `lockstep`, every
   algorithm of --baseline runs beside it and every tick is verified
   against each, and when `algos` is not NULL their figures are kept there
   (o->algo_count of them). With --worlds K above 1, K worlds of
   o->entities each (o is the per-world copy run_scenario makes) run on one
   pool of `threads` threads and tick together through aoi_tick_many;
   lockstep is then never asked for. */
static void run_engine(const bench_options *o, const scenario_result *s,
                       unsigned threads, int plain, int lockstep,
                       run_result *r, algo_result *algos)
{
  unsigned ticks = o->ticks, from = ticks / 2; /* allocs: the last half */
  unsigned count = o->worlds;
  heap_meter meter;
  meter_init(&meter);
  aoi_allocator hook = {meter_alloc, meter_realloc, meter_free, &meter};
  aoi_config config;
  make_config(o, s, &config);
  config.threads = threads;
  config.allocator = &hook;
  config.measure_cpu = (unsigned)o->measure_cpu;

  rss_reset();
  aoi_pool *pool = NULL;
  if (count > 1) {
    /* The pool itself is not counted in the heap: only the worlds are. */
    aoi_pool_config pool_config;
    aoi_pool_config_default(&pool_config);
    pool_config.threads = threads;
    pool_config.pin_threads = (unsigned)o->pin;
    check(aoi_pool_create(&pool_config, &pool), "aoi_pool_create");
    config.run = AOI_RUN_POOL;
    config.pool = pool;
    config.threads = 0; /* one lane, a pool's default: a task a world */
    config.pin_threads = 0;
  }
  world_run *wr = bench_calloc(count, sizeof(*wr));
  aoi_world **worlds = bench_calloc(count, sizeof(*worlds));
  int *results = bench_calloc(count, sizeof(*results));
  for (unsigned i = 0; i < count; i++) {
    check(aoi_create(&config, &wr[i].world), "aoi_create");
    worlds[i] = wr[i].world;
    wr[i].checksum = BENCH_CHECKSUM_SEED;
  }
  r->world_empty_bytes =
      (double)atomic_load_explicit(&meter.live, memory_order_relaxed) /
      count;
  for (unsigned i = 0; i < count; i++) {
    wr[i].c = new_crowd(o, s, plain, i);
    /* The crowd's slots and a cliff's odd entity. */
    if (o->refs)
      wr[i].refs = bench_calloc((size_t)o->entities + 1, sizeof(aoi_ref));
  }
  size_t beside = lockstep ? o->algo_count : 0;
  algo_run runs[ALGO_COUNT];
  for (size_t k = 0; k < beside; k++)
    algo_run_init(&runs[k], o->algos[k], o, s, &config);
  aoi_stats stats, st;
  check(aoi_world_stats(wr[0].world, &stats), "aoi_stats_get");
  unsigned shards = stats.shards;
  /* The threads a tick may use at once: the world's lanes, or the pool's
     threads that all worlds share. */
  unsigned lanes = pool != NULL ? aoi_pool_threads(pool) : stats.threads;
  double *shard_ns = bench_calloc(shards, sizeof(double));
  uint64_t *spans = bench_calloc(count, sizeof(uint64_t));
  uint64_t *load = bench_calloc(lanes, sizeof(uint64_t));
  samples t;
  samples_init(&t, ticks);
  drain_list list = {NULL, 0, 0};
  aoi_move_op *batch = NULL;
  size_t batch_room = 0;
  delivery deliver;
  delivery_init(&deliver, wr, count, lockstep ? 1 : lanes,
                count > 1 ? worlds : NULL, lanes);
  deliver.slots = o->slots;
  char label[96], worlds_label[32] = "";
  if (count > 1)
    snprintf(worlds_label, sizeof(worlds_label), " worlds=%u", count);
  snprintf(label, sizeof(label), "%s%s t=%u%s%s", s->sc->name,
           plain ? " plain" : "", threads, worlds_label,
           lockstep ? " verify" : "");

  double updates = 0, events = 0, ghosts = 0, handoffs = 0;
  uint64_t allocs_tick = 0, allocs_submit = 0, allocs_drain = 0;
  r->os_threads = -1;
  unsigned warmup = o->warmup;
  FILE *dump = NULL;
  if (o->dump_ops != NULL && count == 1 && !plain)
    dump = dump_open(o->dump_ops, o->entities, warmup + ticks,
                     (float)s->side, s->max_radius);
  for (unsigned tick = 0; tick < warmup + ticks; tick++) {
    bench_progress("[%s] tick %u/%u", label, tick, warmup + ticks);
    const bench_op *ops = NULL; /* the last world's: lockstep has one */
    size_t n = 0, total = 0;
    /* The crowd's own step (the game's logic) and the dump are not the
       host's calls: timed apart (crowd) and out of submit and frame. */
    uint64_t crowd_ns = 0;
    uint64_t a0 = meter_calls(&meter), s0 = bench_now_ns();
    for (unsigned i = 0; i < count; i++) {
      uint64_t c0 = bench_now_ns();
      ops = tick ? crowd_next(wr[i].c, &n) : crowd_start(wr[i].c, &n);
      if (o->batch && n > batch_room) {
        free(batch);
        batch_room = n;
        batch = bench_calloc(batch_room, sizeof(aoi_move_op));
      }
      if (dump != NULL)
        dump_tick(dump, ops, n);
      crowd_ns += bench_now_ns() - c0;
      submit_engine(wr[i].world, o, ops, n, wr[i].refs,
                    o->batch ? batch : NULL, count > 1 ? i : UINT64_MAX);
      total += n;
    }
    uint64_t a1 = meter_calls(&meter), s1 = bench_now_ns();
    s0 += crowd_ns;
    if (count == 1)
      check(aoi_tick(wr[0].world), "aoi_tick");
    else
      check(aoi_tick_many(worlds, count, results), "aoi_tick_many");
    uint64_t a2 = meter_calls(&meter), s2 = bench_now_ns();
    uint64_t drained;
    if (lockstep) {
      drained = drain_engine(wr[0].world, &list, &wr[0].checksum);
      wr[0].drained = drained;
    } else {
      deliver_engine(&deliver);
    }
    uint64_t a3 = meter_calls(&meter), s3 = bench_now_ns();
    if (!lockstep)
      drained = hash_wires(&deliver, wr, count);
    uint64_t s4 = bench_now_ns();
    /* --gap: the host's own work between this frame and the next, a
       busy loop on this thread (the game's logic in a server) */
    while (o->gap_ms > 0 && bench_now_ns() - s4 < (uint64_t)(o->gap_ms * 1e6))
      ;
    uint64_t work = 0;
    for (unsigned i = 0; i < count; i++) {
      check(aoi_world_stats(wr[i].world, &st), "aoi_stats_get");
      if (wr[i].drained != st.events)
        bench_die("tick %" PRIu64 ": drained %" PRIu64 " events from world"
                  " %u, aoi_stats says %" PRIu64,
                  st.tick, wr[i].drained, i, st.events);
      ghosts += tick >= warmup ? (double)st.ghosts : 0;
      handoffs += tick >= warmup ? (double)st.handoffs : 0;
      work += st.work_ns;
      spans[i] = st.span_ns;
      if (i == 0)
        stats = st;
    }
    for (size_t k = 0; k < beside; k++) {
      algo_run_tick(&runs[k], tick, warmup, ops, n);
      verify_tick(label, stats.tick, &list, runs[k].a);
    }
    if (tick == 0) /* every thread the run uses is up once a tick ran */
      r->os_threads = os_thread_count();
    if (tick < warmup)
      continue;
    unsigned m = tick - warmup;
    t.submit[m] = ns_to_ms(s1 - s0);
    t.crowd[m] = ns_to_ms(crowd_ns);
    t.tick[m] = ns_to_ms(s2 - s1);
    t.drain[m] = ns_to_ms(s3 - s2);
    t.checksum[m] = ns_to_ms(s4 - s3);
    t.frame[m] = ns_to_ms(s3 - s0);
    t.work[m] = ns_to_ms(work);
    t.span[m] = ns_to_ms(schedule_span(spans, count, lanes, load));
    for (int p = 0; p < AOI_PHASE_COUNT; p++)
      t.phase[p][m] = ns_to_ms(stats.phase_ns[p]);
    updates += (double)total;
    events += (double)drained;
    for (unsigned i = 0; i < shards && i < stats.shards; i++)
      shard_ns[i] += (double)stats.shard_ns[i];
    if (m >= from) {
      allocs_submit += a1 - a0;
      allocs_tick += a2 - a1;
      allocs_drain += a3 - a2;
    }
  }
  bench_progress_clear();
  if (dump != NULL && fclose(dump) != 0)
    bench_die("--dump-ops: cannot write %s", o->dump_ops);

  r->worlds = count;
  r->threads_asked = threads;
  r->threads = lanes;
  r->shards = shards;
  r->rebalances = 0;
  for (unsigned i = 0; i < count; i++) {
    check(aoi_world_stats(wr[i].world, &st), "aoi_stats_get");
    r->rebalances += st.rebalances;
  }
  if (count == 1) {
    /* The shard figures of one world; for many they would mix worlds. */
    r->shard = bench_calloc(shards, sizeof(*r->shard));
    double *per_worker = bench_calloc(stats.threads, sizeof(double));
    double *owned = bench_calloc(shards, sizeof(double));
    for (unsigned i = 0; i < shards; i++) {
      aoi_shard_info info;
      check(aoi_shard(wr[0].world, i, &info), "aoi_shard_info_get");
      r->shard[i].worker = info.worker;
      r->shard[i].entities = info.entities;
      r->shard[i].ghosts = info.ghosts;
      r->shard[i].compute_ms = ns_to_ms((uint64_t)shard_ns[i]) / ticks;
      if (info.worker < stats.threads)
        per_worker[info.worker] += shard_ns[i];
      owned[i] = info.entities;
    }
    r->imbalance = max_over_mean(shard_ns, shards);
    r->worker_imbalance = max_over_mean(per_worker, stats.threads);
    r->entity_imbalance = max_over_mean(owned, shards);
    free(per_worker);
    free(owned);
  } else {
    r->shard = NULL;
    r->imbalance = r->worker_imbalance = r->entity_imbalance = NAN;
  }
  free(shard_ns);

  r->peak_rss_bytes = rss_peak();
  r->heap_peak_bytes =
      (size_t)atomic_load_explicit(&meter.peak, memory_order_relaxed);
  r->allocs_per_tick = (double)allocs_tick / (ticks - from);
  r->submit_allocs_per_tick = (double)allocs_submit / (ticks - from);
  r->drain_allocs_per_tick = (double)allocs_drain / (ticks - from);
  /* One world's checksum as it is; several folded in world order. */
  r->checksum = wr[0].checksum;
  if (count > 1) {
    r->checksum = BENCH_CHECKSUM_SEED;
    for (unsigned i = 0; i < count; i++)
      r->checksum = hash_mix(r->checksum, wr[i].checksum);
  }
  r->verified = lockstep;
  r->updates_per_tick = updates / ticks;
  r->events_per_tick = events / ticks;
  r->ghosts_per_tick = ghosts / ticks;
  r->handoffs_per_tick = handoffs / ticks;
  r->tick_ms_mean = mean_of(t.tick, ticks);
  r->tick_ms_median = quantile(t.tick, ticks, 0.5);
  r->tick_ms_p99 = quantile(t.tick, ticks, 0.99);
  r->tick_ms_max = quantile(t.tick, ticks, 1.0);
  r->submit_ms_median = quantile(t.submit, ticks, 0.5);
  r->crowd_ms_median = quantile(t.crowd, ticks, 0.5);
  r->drain_ms_median = quantile(t.drain, ticks, 0.5);
  r->checksum_ms_median = quantile(t.checksum, ticks, 0.5);
  r->frame_ms_median = quantile(t.frame, ticks, 0.5);
  r->parallel_delivery = !lockstep;
  for (int p = 0; p < AOI_PHASE_COUNT; p++)
    r->phase_ms_median[p] =
        count == 1 ? quantile(t.phase[p], ticks, 0.5) : NAN;
  r->work_ms_median = r->span_ms_median = r->predicted_speedup = NAN;
  if (o->measure_cpu) {
    r->work_ms_median = quantile(t.work, ticks, 0.5);
    r->span_ms_median = quantile(t.span, ticks, 0.5);
    if (r->span_ms_median > 0)
      r->predicted_speedup = r->work_ms_median / r->span_ms_median;
  }

  for (size_t k = 0; k < beside; k++)
    algo_run_finish(&runs[k], ticks, algos != NULL ? &algos[k] : NULL);
  delivery_free(&deliver);
  for (unsigned i = 0; i < count; i++)
    check(aoi_destroy(wr[i].world), "aoi_destroy");
  check(aoi_pool_destroy(pool), "aoi_pool_destroy");
  long long leaked = atomic_load_explicit(&meter.live, memory_order_relaxed);
  if (leaked != 0)
    fprintf(stderr, "aoi-bench: warning: [%s] the engine still holds %lld"
            " bytes of the allocator hook after aoi_destroy\n",
            label, leaked);
  for (unsigned i = 0; i < count; i++) {
    crowd_destroy(wr[i].c);
    free(wr[i].refs);
  }
  free(wr);
  free(worlds);
  free(results);
  free(spans);
  free(load);
  free(batch);
  free(list.items);
  samples_free(&t);
}

/* One algorithm alone, fed the same operations as the engine (with
   `plain`, the plain crowd's). */
static void run_algo(const bench_options *o, const scenario_result *s,
                     const algo_class *cls, int plain, algo_result *out)
{
  crowd *c = new_crowd(o, s, plain, 0);
  aoi_config config;
  make_config(o, s, &config);
  algo_run r;
  algo_run_init(&r, cls, o, s, &config);
  char label[96];
  snprintf(label, sizeof(label), "%s%s %s", s->sc->name,
           plain ? " plain" : "", cls->name);
  for (unsigned tick = 0; tick < o->warmup + o->ticks; tick++) {
    bench_progress("[%s] tick %u/%u", label, tick, o->warmup + o->ticks);
    size_t n;
    const bench_op *ops = tick ? crowd_next(c, &n) : crowd_start(c, &n);
    algo_run_tick(&r, tick, o->warmup, ops, n);
  }
  bench_progress_clear();
  algo_run_finish(&r, o->ticks, out);
  crowd_destroy(c);
}

/* The radius of mixed-radius's long-sighted watchers. */
static float mix_radius(const bench_options *o)
{
  return (float)(o->radius * o->mix_factor);
}

/* The world's max_radius for a scenario: --max-radius, or the largest
   radius the scenario gives anyone (the spectator's camera: the library's
   default max_radius, at least --radius). */
static float max_radius_of(const bench_options *o, const scenario *sc)
{
  float radius = (float)crowd_radius(o, sc);
  if (o->max_radius_given)
    return (float)o->max_radius;
  if (sc->odd == BENCH_ODD_SPECTATOR) {
    aoi_config defaults;
    aoi_config_default(&defaults);
    return defaults.max_radius > radius ? defaults.max_radius : radius;
  }
  if (sc->odd == BENCH_ODD_MIXED && mix_radius(o) > radius)
    return mix_radius(o);
  return radius;
}

static double ratio(double a, double b)
{
  return b > 0 ? a / b : NAN;
}

/* Runs one scenario at every thread count (a cliff scenario's plain crowd
   just before each), then the baseline, and reports. Returns the exit
   status: 1 when the checksums disagree. */
static int run_scenario(const bench_options *o, const scenario *sc)
{
  /* What one world of the run sees: its share of the entities (all of
     them for one world), and a side sized for that share, so that each of
     --worlds worlds is a smaller copy of the crowd at its density. */
  bench_options world_options = *o;
  world_options.entities = o->entities / o->worlds;
  scenario_result s;
  memset(&s, 0, sizeof(s));
  s.sc = sc;
  s.radius = crowd_radius(o, sc);
  s.neighbours = o->neighbours * sc->neighbours_factor;
  s.side = world_side(&world_options, &s);
  s.step = o->step_given ? o->step : s.radius / 20;
  s.tower_side = o->tower_side > 0 ? o->tower_side : s.radius;
  s.max_radius = max_radius_of(o, sc);
  if (o->appeal_share > 0 && (float)o->appeal_radius > s.max_radius)
    s.max_radius = (float)o->appeal_radius; /* an appeal is bounded so */
  s.mix_radius = mix_radius(o);
  s.run_count = o->thread_count;
  s.runs = bench_calloc(s.run_count, sizeof(*s.runs));
  for (size_t k = 0; k < s.run_count; k++) {
    run_result *r = &s.runs[k], plain;
    if (sc->odd != BENCH_ODD_NONE) {
      memset(&plain, 0, sizeof(plain));
      run_engine(&world_options, &s, o->threads[k], 1, o->verify, &plain,
                 k == 0 ? s.plain_algos : NULL);
      free(plain.shard);
    }
    run_engine(&world_options, &s, o->threads[k], 0, o->verify, r,
               k == 0 ? s.algos : NULL);
    if (sc->odd != BENCH_ODD_NONE) {
      r->has_plain = 1;
      r->plain_tick_ms_median = plain.tick_ms_median;
      r->plain_submit_ms_median = plain.submit_ms_median;
      r->plain_checksum = plain.checksum;
      r->cliff_ratio = ratio(r->tick_ms_median, plain.tick_ms_median);
      r->cliff_submit_ratio =
          ratio(r->submit_ms_median, plain.submit_ms_median);
    }
  }
  s.algo_count = o->algo_count;
  for (size_t k = 0; k < s.algo_count && !o->verify; k++) {
    if (sc->odd != BENCH_ODD_NONE)
      run_algo(o, &s, o->algos[k], 1, &s.plain_algos[k]);
    run_algo(o, &s, o->algos[k], 0, &s.algos[k]);
  }

  const run_result *first = &s.runs[0];
  for (size_t k = 0; k < s.run_count; k++) {
    run_result *r = &s.runs[k];
    r->speedup = r->tick_ms_median > 0
                     ? first->tick_ms_median / r->tick_ms_median
                     : NAN;
    r->efficiency = r->speedup * first->threads / r->threads;
  }
  if (o->json)
    report_json(o, &s);
  else
    report_human(o, &s);

  int status = 0;
  for (size_t k = 1; k < s.run_count; k++)
    if (s.runs[k].checksum != first->checksum) {
      fprintf(stderr, "aoi-bench: warning: %s: checksum %016" PRIx64
              " with %u threads and %u shards differs from %016" PRIx64
              " with %u threads and %u shards\n",
              sc->name, s.runs[k].checksum, s.runs[k].threads,
              s.runs[k].shards, first->checksum, first->threads,
              first->shards);
      status = BENCH_EXIT_FAIL;
    }
  for (size_t k = 1; k < s.run_count; k++)
    if (s.runs[k].has_plain &&
        s.runs[k].plain_checksum != first->plain_checksum) {
      fprintf(stderr, "aoi-bench: warning: %s: the plain crowd's checksum"
              " with %u threads and %u shards differs from the one with %u"
              " threads and %u shards\n",
              sc->name, s.runs[k].threads, s.runs[k].shards, first->threads,
              first->shards);
      status = BENCH_EXIT_FAIL;
    }
  if (sc->odd == BENCH_ODD_FLOOD)
    for (size_t k = 0; k < s.run_count; k++)
      if (s.runs[k].checksum != s.runs[k].plain_checksum) {
        fprintf(stderr, "aoi-bench: warning: flood: with %u threads the"
                " events differ from the plain crowd's, though only the"
                " last position counts\n",
                s.runs[k].threads);
        status = BENCH_EXIT_FAIL;
      }
  for (size_t a = 0; a < s.algo_count; a++)
    for (size_t k = 0; k < s.run_count; k++) {
      const char *name = s.algos[a].cls->name;
      if (s.plain_algos[a].ran &&
          s.runs[k].plain_checksum != s.plain_algos[a].checksum) {
        fprintf(stderr, "aoi-bench: warning: %s: the plain crowd's checksum"
                " with %u threads differs from %s's\n",
                sc->name, s.runs[k].threads, name);
        status = BENCH_EXIT_FAIL;
      }
      if (s.runs[k].checksum != s.algos[a].checksum) {
        fprintf(stderr, "aoi-bench: warning: %s: the checksum with %u"
                " threads differs from %s's: the events differ"
                " (--verify finds the first difference)\n",
                sc->name, s.runs[k].threads, name);
        status = BENCH_EXIT_FAIL;
      }
    }
  for (size_t k = 0; k < s.run_count; k++)
    free(s.runs[k].shard);
  free(s.runs);
  return status;
}

/* ---- command line ------------------------------------------------------- */

static void usage(FILE *out)
{
  fprintf(out,
      "usage: aoi-bench [options]\n"
      "Runs synthetic crowds through an AOI world and reports tick times,\n"
      "throughput, balance, memory and allocations, against single-\n"
      "threaded classic AOI algorithms fed the same operations.\n"
      "\n"
      "  --scenario LIST    comma-separated scenarios, or all "
      "(default uniform)\n"
      "  --entities N       entities (default 20000)\n"
      "  --radius R         view radius of every entity (default 10)\n"
      "  --neighbours K     entities each one sees, on average: sizes the\n"
      "                     world, side = sqrt(N pi R^2 / K) (default 35)\n"
      "  --step S           distance walked a tick (default radius / 20)\n"
      "  --ticks T          measured ticks, after the warm-up (default 50)\n"
      "  --dump-ops FILE    write every tick's operations to FILE, for the\n"
      "                     bindings' benchmarks to replay (format: the\n"
      "                     comment of dump_open in aoi-bench.c; one world)\n"
      "  --gap MS           the host busy for MS milliseconds after each\n"
      "                     frame (and its checksum), as a server's logic\n"
      "                     runs between ticks (default 0; JSON: gap_ms)\n"
      "  --warmup W         ticks before them, not measured; the first adds\n"
      "                     the crowd (default 1). A gathering crowd\n"
      "                     (hotspot) needs the cuts to follow it first:\n"
      "                     more than --rebalance ticks\n"
      "  --threads LIST     worker threads, comma-separated: a sweep;\n"
      "                     0 = one per core (default $AOI_THREADS, else 0)\n"
      "  --shards N         spatial shards (of each world); 0 = one per\n"
      "                     thread (default 0)\n"
      "  --seed N           PRNG seed (default 1)\n"
      "  --players P        share of entities that are players, watcher and\n"
      "                     marker; the rest are NPCs, markers only "
      "(default 1)\n"
      "  --moves on|off     move events (default on)\n"
      "  --pin on|off       bind each worker thread to a CPU\n"
      "                     (aoi_config.pin_threads; default off)\n"
      "  --worlds K         K worlds of N / K entities each (N: --entities,\n"
      "                     a multiple of K), each sized for its own share,\n"
      "                     so each is a smaller copy of the crowd at the\n"
      "                     same density, seeded --seed + 0 .. K - 1; all on\n"
      "                     one pool of --threads threads (AOI_RUN_POOL, a\n"
      "                     lane per pool thread), ticked by one\n"
      "                     aoi_tick_many a frame. No --baseline or --verify\n"
      "                     (default 1: one world, threads of its own)\n"
      "  --measure-cpu on|off  time each task on its thread's CPU clock\n"
      "                     (aoi_config.measure_cpu) for work and span\n"
      "                     (default on; see below)\n"
      "  --shape circle|square|cells C   view shape (default circle)\n"
      "  --hysteresis H     extra distance before leaving a view "
      "(default 0)\n"
      "  --rebalance N      ticks between shard rebalances; 0 = never\n"
      "                     (default: the library's, 16)\n"
      "  --max-radius R     the world's max_radius (default: the largest\n"
      "                     radius the scenario gives anyone; see below)\n"
      "  --outlier-at X,Y   outlier: where the far marker stands\n"
      "                     (default 3e38,3e38)\n"
      "  --mix SHARE:FACTOR mixed-radius: that share of the watchers has\n"
      "                     FACTOR x --radius (default 0.01:10)\n"
      "  --flood K          flood: moves per entity a tick, to random points"
      "\n"
      "                     of the map and its real step last (default 16)\n"
      "  --walkers SHARE    idle: the share of the crowd that walks a tick\n"
      "                     (default 0.05)\n"
      "  --appeal SHARE:RADIUS  that share of the markers is seen from\n"
      "                     RADIUS away (aoi_set_appeal; max_radius grows\n"
      "                     to it)\n"
      "  --cap K            every watcher sees at most its K nearest\n"
      "                     (aoi_set_cap)\n"
      "  --spectator-cap K  spectator: the camera alone sees at most its K\n"
      "                     nearest\n"
      "  --move-every D:P[,D:P...]  beyond D, moves are told every P ticks\n"
      "                     (aoi_config.move_bands). With any policy the\n"
      "                     classic algorithms do not run (they have none)\n");
  fprintf(out,
      "  --refs             the engine's moves by reference: aoi_ref_of at\n"
      "                     each add (timed with submit), then aoi_move_ref\n"
      "                     (JSON: refs)\n"
      "  --batch            the engine's moves by id, each tick's run of\n"
      "                     them in one aoi_move_many (JSON: batch)\n"
      "  --slots            delivery by aoi_deliver_slots (many worlds:\n"
      "                     aoi_deliver_many_slots): each\n"
      "                     event built into the wire buffer from the\n"
      "                     entity table, the same bytes aoi_deliver\n"
      "                     copies (JSON: slots)\n"
      "  --sparse-ids       ids spread over 64 bits instead of 1, 2, 3 ...,\n"
      "                     so the id map hashes them (JSON: sparse_ids)\n"
      "  --json             one JSON object per run on stdout, nothing else\n"
      "  --baseline LIST    the algorithms run beside the engine, comma-\n"
      "                     separated, or all: brute, ninegrid, tower, xlist,\n"
      "                     verlet\n"
      "                     (default ninegrid; the first is the JSON's\n"
      "                     baseline_*)\n"
      "  --tower-side S     tower: the side of a tower (default: the crowd's\n"
      "                     view radius)\n"
      "  --skin F           verlet: the skin beyond each watcher's reach, a\n"
      "                     share of the reach (default 0.25)\n"
      "  --force-brute      run brute force above %u entities (O(N^2) a tick)\n"
      "  --verify           compare every event with every --baseline\n"
      "                     algorithm's; exit 1 at the first difference (for\n"
      "                     checking, not timing)\n"
      "  --no-baseline      run no algorithm beside the engine (large runs)\n"
      "  --mpi ...          (a -DAOI_MPI=ON build, under mpirun) the crowd\n"
      "                     on one world over the ranks; its own options\n"
      "                     follow (bench/mpi-bench.c, docs/distributed.md)\n"
      "  --help             this text\n"
      "\n"
      "scenarios:\n",
      BRUTE_MAX_ENTITIES);
  for (size_t i = 0; i < bench_scenario_count; i++)
    fprintf(out, "  %-12s %s\n", bench_scenarios[i].name,
            bench_scenarios[i].summary);
  fprintf(out, "\nalgorithms (single-threaded, each event the engine's):\n");
  for (size_t i = 0; i < ALGO_COUNT; i++)
    fprintf(out, "  %-12s %s\n", algo_classes[i]->name,
            algo_classes[i]->summary);
  fprintf(out,
      "\n"
      "outlier, spectator, mixed-radius and flood are cliffs: before each of\n"
      "their runs, the same crowd without its odd part runs at the same\n"
      "threads and shards, and the run reports its median tick and submit\n"
      "over that one's (JSON: cliff_ratio, cliff_submit_ratio). Their\n"
      "max_radius is --radius, but for mixed-radius --radius x FACTOR, and\n"
      "for spectator, whose camera has radius max_radius, the library's\n"
      "default 500 (or --radius if larger).\n"
      "\n"
      "work and span (JSON work_ms_median, span_ms_median: medians a tick):\n"
      "work is the tick's CPU time on every thread together, what it would\n"
      "take on one core; span its critical path, for each phase the slowest\n"
      "lane's CPU time, plus the serial start and finish. predicted_speedup\n"
      "= work / span: the speedup that as many free cores as lanes would give\n"
      "over this run's own work on one core. It is not the speedup over a\n"
      "1-thread run, whose work is smaller (lanes add work):\n"
      "scripts/scaling.sh gives that one, the 1-thread run's tick over each\n"
      "run's span. A tick spread over lanes reads its threads' CPU clocks\n"
      "twice a lane and step, one a thread runs whole twice in all; compare\n"
      "tick times with --measure-cpu off. os_threads: the process's\n"
      "threads after the warm-up (/proc/self/task): the main thread, the\n"
      "engine's workers or pool, and for one world threads - 1 delivery\n"
      "threads.\n"
      "\n"
      "With --worlds K above 1: tick is the wall time of aoi_tick_many;\n"
      "submit runs world after world on the host, and one aoi_deliver_many\n"
      "delivers every world's segments on the pool's threads; frame = submit\n"
      "+ tick + delivery, as for one world. work is the sum of the worlds',\n"
      "and span a list-scheduling estimate: each world one job as long as\n"
      "its span, given in order to the least loaded of the pool's threads;\n"
      "the most one carries. The checksum folds the worlds' in order, so it\n"
      "is the same at every thread count. The shard, phase and imbalance\n"
      "figures are one world's and left out; world_empty_bytes is one\n"
      "world's heap before its first add.\n");
}

static void usage_error(const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

static void usage_error(const char *format, ...)
{
  va_list args;
  va_start(args, format);
  fputs("aoi-bench: ", stderr);
  vfprintf(stderr, format, args);
  fputs("\n(aoi-bench --help lists the options)\n", stderr);
  va_end(args);
  exit(BENCH_EXIT_USAGE);
}

/* 1 for "on", 0 for "off"; anything else is a usage error. */
static int parse_switch(const char *flag, const char *value)
{
  if (strcmp(value, "on") == 0)
    return 1;
  if (strcmp(value, "off") != 0)
    usage_error("%s: '%s' is neither on nor off", flag, value);
  return 0;
}

static uint64_t parse_unsigned(const char *flag, const char *text,
                               uint64_t min, uint64_t max)
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' ||
      text[0] == '+' || text[0] == ' ' || v < min || v > max)
    usage_error("%s: '%s' is not an integer in [%" PRIu64 ", %" PRIu64 "]",
                flag, text, min, max);
  return (uint64_t)v;
}

static double parse_number(const char *flag, const char *text)
{
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !isfinite(v))
    usage_error("%s: '%s' is not a finite number", flag, text);
  return v;
}

/* "X<sep>Y" into two finite numbers. */
static void parse_pair(const char *flag, const char *text, char sep,
                       double *a, double *b)
{
  const char *mid = strchr(text, sep);
  char first[64];
  if (mid == NULL || (size_t)(mid - text) >= sizeof(first))
    usage_error("%s: '%s' is not two numbers separated by '%c'", flag, text,
                sep);
  memcpy(first, text, (size_t)(mid - text));
  first[mid - text] = '\0';
  *a = parse_number(flag, first);
  *b = parse_number(flag, mid + 1);
}

/* "1,2,4" into a new array of unsigned in [min, max]. */
static unsigned *parse_list(const char *flag, const char *text, unsigned max,
                            size_t *count)
{
  size_t n = 1;
  for (const char *p = text; *p; p++)
    n += *p == ',';
  unsigned *values = bench_calloc(n, sizeof(*values));
  char item[32];
  const char *p = text;
  for (size_t i = 0; i < n; i++) {
    size_t len = strcspn(p, ",");
    if (len == 0 || len >= sizeof(item))
      usage_error("%s: '%s' is not a comma-separated list of integers",
                  flag, text);
    memcpy(item, p, len);
    item[len] = '\0';
    values[i] = (unsigned)parse_unsigned(flag, item, 0, max);
    p += len + 1;
  }
  *count = n;
  return values;
}

static const scenario **parse_scenarios(const char *text, size_t *count)
{
  if (strcmp(text, "all") == 0) {
    const scenario **all =
        bench_calloc(bench_scenario_count, sizeof(*all));
    for (size_t i = 0; i < bench_scenario_count; i++)
      all[i] = &bench_scenarios[i];
    *count = bench_scenario_count;
    return all;
  }
  size_t n = 1;
  for (const char *p = text; *p; p++)
    n += *p == ',';
  const scenario **list = bench_calloc(n, sizeof(*list));
  char name[64];
  const char *p = text;
  for (size_t i = 0; i < n; i++) {
    size_t len = strcspn(p, ",");
    if (len >= sizeof(name))
      len = sizeof(name) - 1;
    memcpy(name, p, len);
    name[len] = '\0';
    list[i] = scenario_find(name);
    if (list[i] == NULL)
      usage_error("--scenario: no scenario '%s' (run --help for the list)",
                  name);
    p += strcspn(p, ",") + 1;
  }
  *count = n;
  return list;
}

/* "D:P,D:P" into o->bands: distances strictly increasing, periods >= 1,
   at most AOI_MAX_MOVE_BANDS (as aoi_config wants them). */
static void parse_bands(const char *text, bench_options *o)
{
  o->band_count = 0;
  const char *p = text;
  for (;;) {
    size_t len = strcspn(p, ",");
    char band[64];
    if (len == 0 || len >= sizeof(band))
      usage_error("--move-every: '%s' is not a comma-separated list of"
                  " D:P", text);
    if (o->band_count == AOI_MAX_MOVE_BANDS)
      usage_error("--move-every: more than %d bands", AOI_MAX_MOVE_BANDS);
    memcpy(band, p, len);
    band[len] = '\0';
    char *colon = strchr(band, ':');
    if (colon == NULL)
      usage_error("--move-every: '%s' is not D:P", band);
    *colon = '\0';
    double d = parse_number("--move-every", band);
    uint64_t period = parse_unsigned("--move-every", colon + 1, 1,
                                     UINT32_MAX);
    if (!(d >= 0 && d <= FLT_MAX) ||
        (o->band_count > 0 &&
         !((float)d > o->bands[o->band_count - 1].distance)))
      usage_error("--move-every: distances must be >= 0 and increasing"
                  " ('%s')", text);
    o->bands[o->band_count].distance = (float)d;
    o->bands[o->band_count++].period = (uint32_t)period;
    if (p[len] == '\0')
      return;
    p += len + 1;
  }
}

/* "tower,xlist" or "all" into o->algos. */
static void parse_algos(const char *text, bench_options *o)
{
  o->algo_count = 0;
  if (strcmp(text, "all") == 0) {
    for (size_t i = 0; i < ALGO_COUNT; i++)
      o->algos[o->algo_count++] = algo_classes[i];
    return;
  }
  const char *p = text;
  for (;;) {
    size_t len = strcspn(p, ",");
    char name[32];
    if (len == 0 || len >= sizeof(name))
      usage_error("--baseline: '%s' is not a comma-separated list of"
                  " brute, ninegrid, tower, xlist (or all)", text);
    memcpy(name, p, len);
    name[len] = '\0';
    const algo_class *cls = algo_find(name);
    if (cls == NULL)
      usage_error("--baseline: no algorithm '%s' (brute, ninegrid, tower,"
                  " xlist, or all)", name);
    for (size_t i = 0; i < o->algo_count; i++)
      if (o->algos[i] == cls)
        usage_error("--baseline: '%s' is listed twice", name);
    o->algos[o->algo_count++] = cls;
    if (p[len] == '\0')
      return;
    p += len + 1;
  }
}

static void parse_options(int argc, char **argv, bench_options *o)
{
  memset(o, 0, sizeof(*o));
  o->entities = 20000;
  o->radius = 10;
  o->neighbours = 35;
  o->players = 1;
  o->ticks = 50;
  o->warmup = 1;
  o->seed = 1;
  o->moves = 1;
  o->shape = AOI_SHAPE_CIRCLE;
  const char *algos = "ninegrid";
  int no_baseline = 0, baseline_given = 0;
  aoi_config defaults;
  aoi_config_default(&defaults);
  o->rebalance = defaults.rebalance_interval;
  o->outlier_x = o->outlier_y = 3e38f;
  o->mix_share = 0.01;
  o->mix_factor = 10;
  o->flood = 16;
  o->walk_share = 0.05;
  o->worlds = 1;
  o->measure_cpu = 1;
  const char *scenarios = "uniform";
  const char *threads = getenv("AOI_THREADS");
  const char *threads_flag = "AOI_THREADS";
  if (threads == NULL || *threads == '\0')
    threads = "0";

  for (int i = 1; i < argc; i++) {
    /* --flag VALUE or --flag=VALUE */
    char flag[32];
    const char *arg = argv[i], *value = NULL, *eq = strchr(arg, '=');
    size_t len = eq != NULL && strncmp(arg, "--", 2) == 0
                     ? (size_t)(eq - arg)
                     : strlen(arg);
    if (len >= sizeof(flag))
      usage_error("unknown option '%s'", arg);
    memcpy(flag, arg, len);
    flag[len] = '\0';
    if (len < strlen(arg))
      value = arg + len + 1;

    int is_switch = strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0 ||
                    strcmp(flag, "--json") == 0 ||
                    strcmp(flag, "--verify") == 0 ||
                    strcmp(flag, "--force-brute") == 0 ||
                    strcmp(flag, "--refs") == 0 ||
                    strcmp(flag, "--batch") == 0 ||
                    strcmp(flag, "--slots") == 0 ||
                    strcmp(flag, "--sparse-ids") == 0 ||
                    strcmp(flag, "--no-baseline") == 0;
    if (is_switch) {
      if (value != NULL)
        usage_error("%s takes no value", flag);
      if (strcmp(flag, "--json") == 0)
        o->json = 1;
      else if (strcmp(flag, "--verify") == 0)
        o->verify = 1;
      else if (strcmp(flag, "--no-baseline") == 0)
        no_baseline = 1;
      else if (strcmp(flag, "--force-brute") == 0)
        o->force_brute = 1;
      else if (strcmp(flag, "--refs") == 0)
        o->refs = 1;
      else if (strcmp(flag, "--batch") == 0)
        o->batch = 1;
      else if (strcmp(flag, "--slots") == 0)
        o->slots = 1;
      else if (strcmp(flag, "--sparse-ids") == 0)
        o->sparse_ids = 1;
      else {
        usage(stdout);
        exit(0);
      }
      continue;
    }
    if (strncmp(flag, "--", 2) != 0 || flag[2] == '\0')
      usage_error("unexpected argument '%s'", arg);
    if (value == NULL) {
      if (i + 1 >= argc)
        usage_error("%s needs a value", flag);
      value = argv[++i];
    }

    if (strcmp(flag, "--scenario") == 0)
      scenarios = value;
    else if (strcmp(flag, "--baseline") == 0) {
      algos = value;
      baseline_given = 1;
    } else if (strcmp(flag, "--tower-side") == 0) {
      o->tower_side = parse_number(flag, value);
      if (!(o->tower_side > 0))
        usage_error("--tower-side must be > 0");
    } else if (strcmp(flag, "--skin") == 0) {
      o->skin = parse_number(flag, value);
      if (!(o->skin > 0))
        usage_error("--skin must be > 0");
    }
    else if (strcmp(flag, "--entities") == 0)
      o->entities = (uint32_t)parse_unsigned(flag, value, 1, 100000000);
    else if (strcmp(flag, "--radius") == 0)
      o->radius = parse_number(flag, value);
    else if (strcmp(flag, "--neighbours") == 0)
      o->neighbours = parse_number(flag, value);
    else if (strcmp(flag, "--step") == 0) {
      o->step = parse_number(flag, value);
      o->step_given = 1;
    } else if (strcmp(flag, "--ticks") == 0)
      o->ticks = (unsigned)parse_unsigned(flag, value, 1, 10000000);
    else if (strcmp(flag, "--dump-ops") == 0)
      o->dump_ops = value;
    else if (strcmp(flag, "--warmup") == 0)
      o->warmup = (unsigned)parse_unsigned(flag, value, 1, 10000000);
    else if (strcmp(flag, "--gap") == 0)
      o->gap_ms = (double)parse_unsigned(flag, value, 0, 10000);
    else if (strcmp(flag, "--threads") == 0) {
      threads = value;
      threads_flag = "--threads";
    } else if (strcmp(flag, "--shards") == 0)
      o->shards = (unsigned)parse_unsigned(flag, value, 0, 4096);
    else if (strcmp(flag, "--seed") == 0)
      o->seed = parse_unsigned(flag, value, 0, UINT64_MAX);
    else if (strcmp(flag, "--players") == 0)
      o->players = parse_number(flag, value);
    else if (strcmp(flag, "--hysteresis") == 0)
      o->hysteresis = parse_number(flag, value);
    else if (strcmp(flag, "--rebalance") == 0)
      o->rebalance = (unsigned)parse_unsigned(flag, value, 0, UINT32_MAX);
    else if (strcmp(flag, "--max-radius") == 0) {
      o->max_radius = parse_number(flag, value);
      o->max_radius_given = 1;
    } else if (strcmp(flag, "--outlier-at") == 0) {
      double x, y;
      parse_pair(flag, value, ',', &x, &y);
      if (fabs(x) > FLT_MAX || fabs(y) > FLT_MAX)
        usage_error("--outlier-at: '%s' is beyond the floats", value);
      o->outlier_x = (float)x;
      o->outlier_y = (float)y;
    } else if (strcmp(flag, "--mix") == 0)
      parse_pair(flag, value, ':', &o->mix_share, &o->mix_factor);
    else if (strcmp(flag, "--appeal") == 0)
      parse_pair(flag, value, ':', &o->appeal_share, &o->appeal_radius);
    else if (strcmp(flag, "--cap") == 0)
      o->cap = (uint32_t)parse_unsigned(flag, value, 0, UINT32_MAX);
    else if (strcmp(flag, "--spectator-cap") == 0)
      o->spectator_cap =
          (uint32_t)parse_unsigned(flag, value, 0, UINT32_MAX);
    else if (strcmp(flag, "--move-every") == 0)
      parse_bands(value, o);
    else if (strcmp(flag, "--flood") == 0)
      o->flood = (unsigned)parse_unsigned(flag, value, 1, 1024);
    else if (strcmp(flag, "--walkers") == 0)
      o->walk_share = parse_number(flag, value);
    else if (strcmp(flag, "--moves") == 0)
      o->moves = parse_switch(flag, value);
    else if (strcmp(flag, "--pin") == 0)
      o->pin = parse_switch(flag, value);
    else if (strcmp(flag, "--measure-cpu") == 0)
      o->measure_cpu = parse_switch(flag, value);
    else if (strcmp(flag, "--worlds") == 0)
      o->worlds = (unsigned)parse_unsigned(flag, value, 1, 1000000);
    else if (strcmp(flag, "--shape") == 0) {
      if (strcmp(value, "circle") == 0)
        o->shape = AOI_SHAPE_CIRCLE;
      else if (strcmp(value, "square") == 0)
        o->shape = AOI_SHAPE_SQUARE;
      else if (strcmp(value, "cells") == 0) {
        if (i + 1 >= argc)
          usage_error("--shape cells needs a cell size");
        o->shape = AOI_SHAPE_CELLS;
        o->cell_size = parse_number("--shape cells", argv[++i]);
        if (!(o->cell_size > 0))
          usage_error("--shape cells: the cell size must be > 0");
      } else
        usage_error("--shape: '%s' is not circle, square or cells", value);
    } else
      usage_error("unknown option '%s'", flag);
  }

  if (!(o->radius > 0) || o->radius > 1e9)
    usage_error("--radius must be > 0 (and at most 1e9)");
  if (!(o->neighbours > 0))
    usage_error("--neighbours must be > 0");
  if (o->step < 0)
    usage_error("--step must be >= 0");
  if (!(o->players >= 0 && o->players <= 1))
    usage_error("--players must be in [0, 1]");
  if (o->hysteresis < 0)
    usage_error("--hysteresis must be >= 0");
  if (o->max_radius_given &&
      !(o->max_radius >= o->radius && o->max_radius <= 1e9))
    usage_error("--max-radius must be at least --radius (and at most 1e9)");
  if (!(o->mix_share >= 0 && o->mix_share <= 1))
    usage_error("--mix: the share must be in [0, 1]");
  if (!(o->walk_share >= 0 && o->walk_share <= 1))
    usage_error("--walkers: the share must be in [0, 1]");
  if (!(o->mix_factor > 0) || o->radius * o->mix_factor > 1e9)
    usage_error("--mix: the factor must be > 0 (and radius x factor at most"
                " 1e9)");
  if (no_baseline && baseline_given)
    usage_error("--baseline and --no-baseline contradict each other");
  if (o->verify && no_baseline)
    usage_error("--verify compares with the --baseline algorithms: not with"
                " --no-baseline");
  if (!(o->appeal_share >= 0 && o->appeal_share <= 1) ||
      !(o->appeal_radius >= 0 && o->appeal_radius <= 1e9))
    usage_error("--appeal: the share must be in [0, 1], the radius >= 0");
  if (bench_policies(o)) {
    /* the classic algorithms know no policy: the engine runs alone */
    if (baseline_given || o->verify)
      usage_error("--baseline and --verify need a world without --appeal,"
                  " --cap or --move-every (the classic algorithms have no"
                  " policies)");
    no_baseline = 1;
  }
  if (o->entities % o->worlds != 0)
    usage_error("--worlds: %" PRIu32 " entities do not split into %u worlds"
                " of equal size (--entities must be a multiple of --worlds)",
                o->entities, o->worlds);
  if (o->worlds > 1) {
    /* the algorithms run one world: the engine runs alone */
    if (baseline_given || o->verify)
      usage_error("--baseline and --verify run one world: not with"
                  " --worlds %u", o->worlds);
    no_baseline = 1;
  }
  if (!no_baseline)
    parse_algos(algos, o);
  for (size_t i = 0; i < o->algo_count; i++)
    if (o->algos[i] == &algo_brute && o->entities > BRUTE_MAX_ENTITIES &&
        !o->force_brute)
      usage_error("--baseline brute: %" PRIu32 " entities is above %u, and"
                  " brute force costs N^2 a tick (10^10 tests at 100,000);"
                  " --force-brute runs it anyway",
                  o->entities, BRUTE_MAX_ENTITIES);
  o->threads = parse_list(threads_flag, threads, 256, &o->thread_count);
  o->scenarios = parse_scenarios(scenarios, &o->scenario_count);
  for (size_t i = 0; i < o->scenario_count; i++) {
    if (o->scenarios[i]->odd == BENCH_ODD_MIXED && o->max_radius_given &&
        mix_radius(o) > (float)o->max_radius)
      usage_error("mixed-radius: --radius x the --mix factor is above"
                  " --max-radius");
    if (o->max_radius_given &&
        (float)crowd_radius(o, o->scenarios[i]) > (float)o->max_radius)
      usage_error("%s: its radius, %g x --radius, is above --max-radius",
                  o->scenarios[i]->name, o->scenarios[i]->radius_factor);
  }
}

int main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "--mpi") == 0) {
#ifdef AOI_MPI
    return mpi_bench_main(argc - 1, argv + 1);
#else
    fputs("aoi-bench: --mpi needs a build with -DAOI_MPI=ON\n", stderr);
    return BENCH_EXIT_USAGE;
#endif
  }
  bench_options options;
  parse_options(argc, argv, &options);
  int status = 0;
  for (size_t i = 0; i < options.scenario_count; i++)
    if (run_scenario(&options, options.scenarios[i]) != 0)
      status = BENCH_EXIT_FAIL;
  free(options.threads);
  free(options.scenarios);
  return status;
}
