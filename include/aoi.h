/*
 * aoi.h: a multithreaded, spatially sharded Area Of Interest service.
 *
 * The host (a zone server's game loop) owns an aoi_world. Between ticks it
 * submits operations (aoi_add, aoi_move, aoi_set_*, aoi_remove); each is
 * checked at once and queued. aoi_tick applies them (on the threads of
 * the world's pool, or the calling thread: aoi_run) and leaves in every watcher's outbox exactly the events that
 * docs/trace-format.md defines: leaves, then enters, then moves, each group
 * by entity id ascending. The host then delivers the events and may query
 * the state as of that tick. docs/usage.md explains the choices behind
 * each call and what it costs.
 *
 * Threads, the one rule set:
 *  1. A world's calls are made by one thread at a time: the host thread.
 *     It may change between calls if the host orders them (a mutex, a join).
 *  2. The one exception: between ticks, aoi_deliver of different segments
 *     may run at the same time on different threads. While any aoi_deliver
 *     runs, every other call on that world returns AOI_EBUSY.
 *  3. During a tick in flight (aoi_tick_begin or aoi_tick_many_begin ..
 *     aoi_tick_end or aoi_tick_many_end) only aoi_tick_poll, aoi_tick_end,
 *     aoi_tick_many_end and aoi_destroy may be called; every other call
 *     returns AOI_EBUSY.
 *  4. A delivery callback must not call into its world: such a call
 *     returns AOI_EBUSY and changes nothing.
 *  5. Different worlds are independent, also when they share a pool: each
 *     may have its own host thread. aoi_version, aoi_version_string,
 *     aoi_strerror, aoi_config_default and aoi_pool_config_default may be
 *     called from any thread, and aoi_delivery_segments and
 *     aoi_pool_threads at any time while the world or pool lives.
 *  6. A pool is shared: aoi_create and aoi_destroy of its worlds, and their
 *     ticks, may run on any threads at once. aoi_pool_destroy is called
 *     once its worlds are destroyed (else AOI_EBUSY).
 *
 * Errors: a call returns 0 or a negative AOI_E* code. One that fails
 * changes nothing and writes no out-parameter, except where its comment
 * says otherwise (aoi_tick, aoi_move_many). Every call checks, in this
 * order: AOI_EINVAL for a NULL world, pointer or out-parameter; AOI_EBUSY
 * (rules 2-4); then its own checks, in the order its comment lists them.
 * Out-parameters are never optional.
 *
 * Results are deterministic: events and answers are identical for every
 * thread count and shard count.
 */
#ifndef AOI_H
#define AOI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(AOI_STATIC)
#define AOI_EXPORT
#elif defined(_WIN32)
#ifdef AOI_BUILDING
#define AOI_EXPORT __declspec(dllexport)
#else
#define AOI_EXPORT __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define AOI_EXPORT __attribute__((visibility("default")))
#else
#define AOI_EXPORT
#endif

#define AOI_VERSION_MAJOR 0
#define AOI_VERSION_MINOR 3
#define AOI_VERSION_PATCH 0
/* 10000 * major + 100 * minor + patch, as aoi_version() returns it for the
   library actually linked. */
#define AOI_VERSION                                                           \
  (AOI_VERSION_MAJOR * 10000 + AOI_VERSION_MINOR * 100 + AOI_VERSION_PATCH)

/* The linked library's AOI_VERSION and its "major.minor.patch" string:
   compare with the header's to catch a header/library mismatch. */
AOI_EXPORT unsigned aoi_version(void);
AOI_EXPORT const char *aoi_version_string(void);

/* Error codes. All negative; 0 is success. */
#define AOI_EINVAL (-1)  /* NULL pointer, bad config, or bad argument    */
#define AOI_ENOMEM (-2)  /* an allocation failed                         */
#define AOI_EEXIST (-3)  /* aoi_add of an id that is live                */
#define AOI_ENOENT (-4)  /* the id or reference is not live              */
#define AOI_ECOORD (-5)  /* a coordinate is NaN or infinite              */
#define AOI_ERADIUS (-6) /* radius or appeal negative, not finite, or
                            > max_radius                                 */
#define AOI_EFLAGS (-7)  /* flags are neither watcher nor marker, or unknown bits */
#define AOI_ESYS (-8)    /* the system refused a thread or a sync object */
#define AOI_EBUSY (-9)   /* a tick or a delivery is under way (rules 2-4),
                            or a pool still has worlds (rule 6)          */
#define AOI_EREMOTE (-10) /* aoi_mpi.h: the entity, or the position of an
                             add, is another rank's                      */
#define AOI_EPEER (-11)   /* aoi_mpi.h: a peer failed, timed out, or sent
                             a message that does not decode             */

/* The name and meaning of an error code ("AOI_ENOENT: no such entity");
   never NULL. */
AOI_EXPORT const char *aoi_strerror(int code);

/* Entity flags. An entity is a watcher, a marker, or both. */
#define AOI_WATCHER 1u /* has a view and receives events */
#define AOI_MARKER 2u  /* can be seen by watchers */

/* Every layer: for `layers`, `interest` and query masks. */
#define AOI_ALL_LAYERS 0xffffffffu

typedef enum aoi_shape {
  AOI_SHAPE_CIRCLE = 0, /* (dx^2 + dy^2) <= R^2                          */
  AOI_SHAPE_SQUARE = 1, /* |dx| <= R and |dy| <= R                        */
  AOI_SHAPE_CELLS = 2   /* nine-grid: cells of side cell_size from (0,0);
                           cell distance <= ceil(R / cell_size) per axis  */
} aoi_shape;

/* Allocator hooks. Called from the host and the pools' threads at once, so they
   must be thread-safe. `size` is the size asked for; realloc gets the old
   size too. NULL means out of memory. */
typedef struct aoi_allocator {
  void *(*alloc)(void *user, size_t size);
  void *(*realloc)(void *user, void *ptr, size_t old_size, size_t new_size);
  void (*free)(void *user, void *ptr, size_t size);
  void *user;
} aoi_allocator;

/*
 * Where a world's ticks run (aoi_config.run). Each tick is split into
 * tasks: a small world's whole tick is one; a large one's is a task per
 * lane and step (docs/design.md, "Pools"). Events are the same whichever
 * way a world runs, on however many threads.
 */
typedef enum aoi_run {
  /* On threads of its own: aoi_create starts `threads` of them (a private
     pool) and aoi_destroy stops them. The default. */
  AOI_RUN_OWN = 0,
  /* On the threads of aoi_config.pool, shared with the other worlds on
     it; the world starts no thread. */
  AOI_RUN_POOL = 1,
  /* On the thread that ticks it: aoi_tick, aoi_tick_begin and
     aoi_tick_many run the whole tick before they return, and the world
     starts no thread. For hosts with a job system of their own; worlds
     may tick at once on different threads (rule 5). */
  AOI_RUN_CALLER = 2
} aoi_run;

/* A pool of threads that ticks the worlds on it (AOI_RUN_POOL). */
typedef struct aoi_pool aoi_pool;

typedef struct aoi_pool_config {
  /* Threads; 0 = one per online core. At most 256. */
  unsigned threads;
  /* 1: bind thread i to the i-th CPU the creating thread may run on
     (Linux only; elsewhere AOI_EINVAL). Default 0. */
  unsigned pin_threads;
  /* Allocator hooks for the pool itself, copied; NULL = malloc. */
  const aoi_allocator *allocator;
} aoi_pool_config;

/* Fills `config` with the defaults above. */
AOI_EXPORT void aoi_pool_config_default(aoi_pool_config *config);
/* Creates a pool and starts its threads, writing it to *out. Errors:
   AOI_EINVAL (NULL, or a value out of range), AOI_ENOMEM, AOI_ESYS. */
AOI_EXPORT int aoi_pool_create(const aoi_pool_config *config,
                               aoi_pool **out);
/* Stops the threads and frees the pool. Returns 0 (also for NULL), or
   AOI_EBUSY while a world is on it, and then frees nothing. */
AOI_EXPORT int aoi_pool_destroy(aoi_pool *pool);
/* The pool's thread count; 0 for NULL. */
AOI_EXPORT unsigned aoi_pool_threads(const aoi_pool *pool);

/* A distance band for move events (aoi_config.move_bands). */
typedef struct aoi_move_band {
  float distance;  /* beyond this distance (>= 0, finite) ...           */
  uint32_t period; /* ... a marker's moves are told every `period` ticks */
} aoi_move_band;

#define AOI_MAX_MOVE_BANDS 8

/* A world's configuration; docs/usage.md has one line a field and how to
   choose them. Start from aoi_config_default. */
typedef struct aoi_config {
  /* Where its ticks run (aoi_run); default AOI_RUN_OWN. */
  aoi_run run;
  /* The pool of AOI_RUN_POOL; must be NULL otherwise. */
  aoi_pool *pool;
  /* Lanes: how many threads one tick of this world may use at once. Each
     lane owns the shards i % threads and is one delivery segment. 0 = one
     per online core for AOI_RUN_OWN (which starts this many threads), and
     1 for AOI_RUN_POOL and AOI_RUN_CALLER: a small world is cheapest as
     one task, and costs about 3 KB empty (a lane adds about 1 KB, plus
     its rings to the other lanes). Give a large world on a pool as many
     lanes as the pool has threads (aoi_pool_threads). At most 256. */
  unsigned threads;
  /* Spatial shards; 0 = one per lane. At most 4096. Shard i is owned by
     lane i % threads. */
  unsigned shards;
  /* Bounds hint for the first shard layout; entities outside are still
     accepted. Ignored when min >= max on an axis. Default (0,0)-(1000,1000). */
  float min_x, min_y, max_x, max_y;
  /* Largest radius or appeal any entity may have (default 500, >= 0). */
  float max_radius;
  /* Extra distance before a visible entity leaves a view (default 0). */
  float hysteresis;
  /* Whether `move` events are produced (default 1). */
  int move_events;
  /* View shape (default AOI_SHAPE_CIRCLE); for AOI_SHAPE_CELLS, the cell
     side (> 0, finite). */
  aoi_shape shape;
  float cell_size;
  /* Every this many ticks, move the shard cuts to the load's quantiles
     when the busiest shard carries over 1.25x the mean. 0 = never.
     Default 16. Events are the same either way. */
  unsigned rebalance_interval;
  /* Distance-based move rates: a kept marker beyond band i's distance is
     told by a `move` only on ticks t with (watcher id + t) % period == 0.
     0 to AOI_MAX_MOVE_BANDS bands, distances strictly increasing, periods
     >= 1. Default 0 bands: every tick. docs/trace-format.md is exact. */
  aoi_move_band move_bands[AOI_MAX_MOVE_BANDS];
  unsigned move_band_count;
  /* 1: bind thread i of the world's own pool to the i-th CPU the creating
     thread may run on
     (AOI_RUN_OWN on Linux only; elsewhere AOI_EINVAL). Default 0. */
  unsigned pin_threads;
  /* 1: time every task of a tick on its thread's CPU clock, for
     aoi_stats.work_ns and span_ns (two clock reads a task). Default 0. */
  unsigned measure_cpu;
  /* Allocator hooks, copied at create; NULL = malloc and free. */
  const aoi_allocator *allocator;
} aoi_config;

/* Fills `config` with the defaults above. */
AOI_EXPORT void aoi_config_default(aoi_config *config);

typedef struct aoi_world aoi_world;

/* Creates a world, and for AOI_RUN_OWN starts its threads, writing it to
   *out. Errors: AOI_EINVAL (NULL, a config value out of range, a pool
   without AOI_RUN_POOL or the reverse), AOI_ENOMEM, AOI_ESYS (threads
   could not be started). */
AOI_EXPORT int aoi_create(const aoi_config *config, aoi_world **out);

/* Stops the world's own threads (AOI_RUN_OWN) and frees everything,
   undelivered events included; waits for its tick in flight. Other worlds
   on the same pool tick on undisturbed. Returns 0 (also for NULL), or AOI_EBUSY
   while a delivery runs (rules 2 and 4), and then frees nothing. */
AOI_EXPORT int aoi_destroy(aoi_world *world);

/*
 * Operations. Each is checked at once against the state as submitted so
 * far (an id added and not yet ticked is live; a removed one is not) and
 * queued; watchers see it at the next tick. Checks, after AOI_EINVAL and
 * AOI_EBUSY: AOI_EEXIST or AOI_ENOENT, then AOI_EFLAGS, AOI_ECOORD,
 * AOI_ERADIUS; AOI_ENOMEM when the queue cannot grow. An entity's
 * operations between two ticks fold into one queued record, so the queue
 * is bounded by the entities, not by the calls. An entity added and removed
 * before the same tick was never there.
 *
 * Ids: every uint64_t is a valid id, 0 and UINT64_MAX included.
 */

/* What aoi_add takes. Designated initialisers read well:
   aoi_add(w, &(aoi_entity){.id = 7, .x = 1, .y = 2, .radius = 10, ...}). */
typedef struct aoi_entity {
  uint64_t id;
  /* The host's own value (an index, a pointer cast to an integer), handed
     back with every event about this entity and, for a watcher, with its
     deliveries (aoi_set_tag says which value). The library never reads
     it. */
  uint64_t tag;
  float x, y;
  /* The view radius: 0 <= radius <= max_radius. A marker-only entity has
     no view: its radius is checked and kept, and unused. */
  float radius;
  unsigned flags;    /* AOI_WATCHER, AOI_MARKER or both */
  uint32_t layers;   /* the layers it is in */
  uint32_t interest; /* the layers it watches: a watcher A sees a marker B
                        only when (A.interest & B.layers) != 0 */
} aoi_entity;

/* Adds an entity. An id removed since the last tick is a new entity: its
   old watchers get `leave` then `enter`. */
AOI_EXPORT int aoi_add(aoi_world *world, const aoi_entity *entity);
/* Sets the position of a live entity (a walk or a teleport alike). */
AOI_EXPORT int aoi_move(aoi_world *world, uint64_t id, float x, float y);

/* One move of aoi_move_many. */
typedef struct aoi_move_op {
  uint64_t id;
  float x, y;
} aoi_move_op;

/* aoi_move of ops[0] .. ops[n - 1] in order, with the id lookups fetched
   ahead. Stops at the first move that fails and returns its error; the
   moves before it stand, and *done is how many stood (n on success, 0 when
   the call itself is refused). AOI_EINVAL for a NULL world or done, or NULL
   ops with n > 0. A batch of 16,384 moves or more, on a world whose pool
   has 3 threads or more with a core each beside the calling thread's, is
   spread over those threads and the calling one (on a shared pool, only
   when nothing waits in its queue): the same result, in a fraction of the
   time; then an AOI_ENOMEM may come before the moves of its window of the
   batch (*done says where). */
AOI_EXPORT int aoi_move_many(aoi_world *world, const aoi_move_op *ops,
                             size_t n, size_t *done);
/* Sets the view radius of a live entity (0 .. max_radius, else
   AOI_ERADIUS). */
AOI_EXPORT int aoi_set_radius(aoi_world *world, uint64_t id, float radius);
/* Sets the layer and interest masks of a live entity. */
AOI_EXPORT int aoi_set_layers(aoi_world *world, uint64_t id, uint32_t layers,
                              uint32_t interest);
/* Sets the appeal of a live entity: as a marker it is seen by every
   watcher within max(the watcher's radius, its appeal). 0 .. max_radius,
   else AOI_ERADIUS; 0 at aoi_add. */
AOI_EXPORT int aoi_set_appeal(aoi_world *world, uint64_t id, float appeal);
/* Sets the view cap of a live entity: as a watcher its view holds at most
   `cap` markers, the nearest (docs/trace-format.md has the exact key).
   0 = no cap, the default at aoi_add. */
AOI_EXPORT int aoi_set_cap(aoi_world *world, uint64_t id, uint32_t cap);
/* Sets the tag of a live entity (aoi_entity.tag). Like every operation it
   takes effect at the next tick: an event carries the tag its entity had
   at the tick that made it, and a delivery the watcher's as of the last
   tick. Never allocates. */
AOI_EXPORT int aoi_set_tag(aoi_world *world, uint64_t id, uint64_t tag);
/* Removes a live entity. Its watchers get `leave` at the next tick. If it
   is a watcher, its undelivered events are dropped now. */
AOI_EXPORT int aoi_remove(aoi_world *world, uint64_t id);

/*
 * References: a host that moves its entities every tick may name them by
 * reference, which skips the id lookup. A reference is valid from the
 * aoi_add that made the entity until its aoi_remove. It is keyed to its
 * world: a reference of another world, a guessed value, or one kept past
 * its entity's removal is refused with AOI_ENOENT, also after the id is
 * added again and after the world gives the entity's place to another;
 * none is ever accepted again. 0 is never a reference.
 */
typedef uint64_t aoi_ref;

/* Writes the reference of live entity `id` to *ref. Checks: AOI_ENOENT.
   Never allocates. */
AOI_EXPORT int aoi_ref_of(aoi_world *world, uint64_t id, aoi_ref *ref);
/* aoi_move of the entity `ref` names: the same checks (AOI_ENOENT for
   anything but a live entity's reference, then AOI_ECOORD) and effect. */
AOI_EXPORT int aoi_move_ref(aoi_world *world, aoi_ref ref, float x, float y);

/* Applies everything submitted since the last tick and leaves the tick's
   events for delivery; blocks until done. 0, or AOI_ENOMEM: with `tick`
   (aoi_world_stats) unchanged nothing was applied and the operations stay
   queued; with `tick` advanced some watchers get their events at a later
   tick, nothing lost (docs/usage.md, "Errors"). */
AOI_EXPORT int aoi_tick(aoi_world *world);

/* aoi_tick in two halves, so that the host can run game logic while the
   pool's threads compute. aoi_tick_begin starts the tick and returns at
   once: 0, AOI_EBUSY (a tick already in flight), or AOI_ENOMEM (nothing
   started, the operations stay queued). A tick that is small or has
   nothing to do may be done on the calling thread before it returns, and
   an AOI_RUN_CALLER world's always is. */
AOI_EXPORT int aoi_tick_begin(aoi_world *world);
/* 1 when the tick in flight has finished (aoi_tick_end will not block), 0
   while it runs; AOI_EINVAL when no tick is in flight. */
AOI_EXPORT int aoi_tick_poll(aoi_world *world);
/* Waits for the tick in flight and returns what aoi_tick would have;
   AOI_EINVAL when no tick is in flight. */
AOI_EXPORT int aoi_tick_end(aoi_world *world);

/* Ticks worlds[0] .. worlds[n - 1], each exactly as aoi_tick would: a
   world's events are the same as if it were ticked alone. Worlds on a
   pool (AOI_RUN_POOL, or AOI_RUN_OWN's private one) tick on their pools'
   threads at once: a small world is one task, and a large one a task per
   lane and step, so that one wake-up serves many worlds and every thread
   stays busy until the last world is done. AOI_RUN_CALLER worlds tick in turn
   on the calling thread meanwhile. Writes each world's result to
   results[i] (what aoi_tick would return) and returns 0 when all are 0,
   else the first failing one. Refused, ticking nothing and writing
   nothing: AOI_EINVAL (worlds or results NULL with n > 0, a NULL world,
   a world listed twice), then AOI_EBUSY (a world with a tick in flight or
   a delivery running); AOI_ESYS where the system refuses the wait's sync
   object (not on Linux). */
AOI_EXPORT int aoi_tick_many(aoi_world *const *worlds, size_t n,
                             int *results);
/* aoi_tick_many in two halves: starts every world's tick, with the same
   checks (0, AOI_EINVAL or AOI_EBUSY), and returns. Each world is then in
   flight (rule 3) until aoi_tick_end of it, or aoi_tick_many_end. */
AOI_EXPORT int aoi_tick_many_begin(aoi_world *const *worlds, size_t n);
/* aoi_tick_end of every world, results as aoi_tick_many's. Refused,
   waiting for nothing and writing nothing: AOI_EINVAL (NULL worlds or
   results with n > 0, a NULL world, a world listed twice), AOI_EBUSY (a
   delivery runs on a world), AOI_EINVAL (a world with no tick in
   flight). */
AOI_EXPORT int aoi_tick_many_end(aoi_world *const *worlds, size_t n,
                                 int *results);

/* Event kinds, in their output order within one watcher and one tick. */
typedef enum aoi_event_kind {
  AOI_LEAVE = 0,
  AOI_ENTER = 1,
  AOI_MOVE = 2
} aoi_event_kind;

typedef struct aoi_event {
  uint64_t id;         /* the entity that entered, left or moved */
  uint64_t tag;        /* that entity's tag (aoi_entity.tag) */
  float x, y;          /* its position (enter, move); 0 for leave */
  aoi_event_kind kind;
  uint32_t tick;       /* the tick that produced it (low 32 bits, from 1) */
} aoi_event;

/* Delivery: a tick leaves its events in aoi_delivery_segments() segments,
   each for a disjoint set of watchers, which different threads may
   deliver at once (rule 2). aoi_deliver calls `fn` once per watcher of the
   segment with events (its id, tag and every undelivered event, older
   ticks first; `events` valid during the call) and empties its outbox.
   Checks: AOI_EBUSY also for a segment another thread is delivering;
   AOI_EINVAL for a segment out of range; AOI_ENOMEM (that watcher and the
   ones after it stay: call again). docs/usage.md, "Delivery". */
typedef void (*aoi_deliver_fn)(void *user, uint64_t watcher,
                               uint64_t watcher_tag, const aoi_event *events,
                               size_t count);
/* The number of delivery segments (one per lane); 0 for NULL. */
AOI_EXPORT unsigned aoi_delivery_segments(const aoi_world *world);
AOI_EXPORT int aoi_deliver(aoi_world *world, unsigned segment,
                           aoi_deliver_fn fn, void *user);
/* aoi_deliver of every segment of worlds[0] .. worlds[n - 1], each a task
   on its world's pool (AOI_RUN_CALLER worlds' on the calling thread,
   meanwhile). So `fn` is called from several threads at once, each call
   for a different watcher: it must be thread-safe, and must not tick or
   wait for a world of the same pool (its thread is one of the pool's).
   results[i] is world i's first failing aoi_deliver result, or 0; returns
   0 or the first failing one. Refused, delivering nothing and writing
   nothing, as aoi_tick_many is: AOI_EINVAL (also for a NULL fn), then
   AOI_EBUSY; AOI_ESYS as there. */
AOI_EXPORT int aoi_deliver_many(aoi_world *const *worlds, size_t n,
                                aoi_deliver_fn fn, void *user,
                                int *results);

/* Delivery without copies. aoi_deliver expands every event into an
   aoi_event (32 bytes) before the callback sees it; aoi_deliver_slots
   hands over what the tick wrote instead: a watcher's events as slots,
   4-byte indexes into the world's entity table, which holds every
   entity's id and position as the last tick left them, and its tags. A
   host that encodes its own packets reads each entity from the table, and
   an entity seen by many watchers is read from the same line by each.
   docs/usage.md, "Delivery", says which to use. */
typedef struct aoi_slot {
  uint64_t id;
  float x, y;            /* its position after the last tick */
  uint32_t internal[2];  /* the engine's; not for the host */
} aoi_slot;

/* One watcher's events of the last tick, for aoi_deliver_slots. Every
   pointer is valid during the callback only. */
typedef struct aoi_slot_events {
  uint64_t watcher, watcher_tag;
  const aoi_slot *table; /* the entities, by slot */
  const uint64_t *tags;  /* their tags, by slot */
  /* leaves, then enters, then moves, each group by entity id ascending:
     the events aoi_deliver gives as aoi_events, in the same order. A
     leave's entity is table[slot].id with tag tags[slot]; its x, y are not
     the event's (a leave has no position). An enter's or a move's
     position is table[slot].x, y. */
  const uint32_t *slots;
  uint32_t leaves, enters, moves;
  uint32_t tick; /* the tick that produced them (aoi_event.tick) */
} aoi_slot_events;

typedef void (*aoi_deliver_slots_fn)(void *user,
                                     const aoi_slot_events *events);

/* aoi_deliver of `segment`, with every watcher whose events are all of
   the last tick handed to `fn` as slots, unexpanded. A watcher that also
   has events of earlier ticks (an outbox that was not delivered: after
   an AOI_ENOMEM, or a host that skipped a delivery) gets them all,
   expanded, through `backlog_fn`, as aoi_deliver gives them. The same
   threads rule and checks as aoi_deliver (AOI_EINVAL also for a NULL fn
   or backlog_fn); AOI_ENOMEM only on the backlog path. */
AOI_EXPORT int aoi_deliver_slots(aoi_world *world, unsigned segment,
                                 aoi_deliver_slots_fn fn,
                                 aoi_deliver_fn backlog_fn, void *user);
/* aoi_deliver_many by aoi_deliver_slots: every segment of worlds[0] ..
   worlds[n - 1] a task on its world's pool, the same rules and results
   (AOI_EINVAL also for a NULL fn or backlog_fn). */
AOI_EXPORT int aoi_deliver_many_slots(aoi_world *const *worlds, size_t n,
                                      aoi_deliver_slots_fn fn,
                                      aoi_deliver_fn backlog_fn, void *user,
                                      int *results);

/* Takes every undelivered event of watcher `id`, oldest tick first, and
   empties its outbox: the path by id, for hosts that do not use segments.
   *events is borrowed until the next aoi_tick, aoi_remove of this id, or
   aoi_destroy. Checks: AOI_ENOENT, then AOI_ENOMEM. */
AOI_EXPORT int aoi_drain(aoi_world *world, uint64_t id,
                         const aoi_event **events, size_t *count);

/* The watchers that have undelivered events, ids ascending. *ids is
   borrowed until the next aoi_tick, aoi_pending, aoi_remove or
   aoi_destroy; aoi_drain does not invalidate it. */
AOI_EXPORT int aoi_pending(aoi_world *world, const uint64_t **ids,
                           size_t *count);

/*
 * Queries, answered from the state as of the last tick. Each writes at
 * most `capacity` ids ascending to `ids` (NULL allowed when capacity is 0)
 * and the total found to *count, so a caller can size a buffer and ask
 * again. AOI_ENOMEM when the answer cannot be gathered.
 */

/* Live markers within the circle (inclusive) whose layers meet
   `layer_mask`. Checks: AOI_ECOORD, then AOI_ERADIUS (0 .. max_radius). */
AOI_EXPORT int aoi_query_circle(aoi_world *world, float x, float y,
                                float radius, uint32_t layer_mask,
                                uint64_t *ids, size_t capacity, size_t *count);
/* The current view of watcher `id` (empty until a tick applied it).
   Checks: AOI_ENOENT. */
AOI_EXPORT int aoi_view(aoi_world *world, uint64_t id, uint64_t *ids,
                        size_t capacity, size_t *count);
/* The watchers whose current view holds `id`. Checks: AOI_ENOENT. */
AOI_EXPORT int aoi_watchers_of(aoi_world *world, uint64_t id, uint64_t *ids,
                               size_t capacity, size_t *count);

/* Phases of a tick, for aoi_stats.phase_ns. */
enum {
  AOI_PHASE_APPLY = 0,    /* host ops applied, border handoffs exchanged */
  AOI_PHASE_EXCHANGE = 1, /* ghosts published to neighbouring shards    */
  AOI_PHASE_COMPUTE = 2,  /* views computed, diffed, events merged      */
  AOI_PHASE_COUNT = 3
};

/* Statistics of the last tick. */
typedef struct aoi_stats {
  uint64_t tick;        /* ticks completed */
  unsigned threads;     /* lanes (aoi_config.threads) */
  unsigned shards;      /* spatial shards */
  uint64_t entities;    /* live entities after the tick */
  uint64_t watchers;    /* live watchers after the tick */
  uint64_t ghosts;      /* ghost copies held by shards this tick */
  uint64_t handoffs;    /* entities that changed shard this tick */
  uint64_t rebalances;  /* times the shard cuts moved, since creation */
  uint64_t events;      /* events produced this tick */
  uint64_t tick_ns;     /* wall time of the tick */
  /* Wall time of each phase: the slowest lane's. */
  uint64_t phase_ns[AOI_PHASE_COUNT];
  /* With aoi_config.measure_cpu, else 0: the tick's CPU time on every
     thread together (work), and the sum over the phases of the slowest
     lane's CPU time, plus the serial part before and after them (span).
     On as many free cores as lanes, a tick takes about span_ns; on one,
     about work_ns. */
  uint64_t work_ns, span_ns;
  /* Owned entities per shard after the tick, `shards` entries; borrowed,
     valid until the next aoi_tick or aoi_destroy. */
  const uint32_t *shard_entities;
  /* Compute time per shard in ns, `shards` entries; borrowed likewise. */
  const uint64_t *shard_ns;
} aoi_stats;

/* Writes the statistics of the last tick to *stats (zeros before the
   first tick, but for threads and shards). */
AOI_EXPORT int aoi_world_stats(const aoi_world *world, aoi_stats *stats);

/* One shard as of the last tick, for tools that draw or tune the layout. */
typedef struct aoi_shard_info {
  /* Its rectangle: min <= x < max; the edge shards extend to +-infinity. */
  double min_x, min_y, max_x, max_y;
  unsigned worker;   /* the lane that owns it */
  uint32_t entities; /* entities it owns */
  uint32_t ghosts;   /* ghost copies of markers owned by its neighbours */
  uint64_t compute_ns;
  /* How far beyond its rectangle, per axis, other shards' markers were
     ghosted to it (its widest watcher's reach, or an appeal's); 0 when it
     had no watchers or is the only shard. */
  double ghost_reach;
} aoi_shard_info;

/* Describes shard `shard`. Checks: AOI_EINVAL when shard >= stats.shards. */
AOI_EXPORT int aoi_shard(const aoi_world *world, unsigned shard,
                         aoi_shard_info *info);
/* The ids of the ghosts shard `shard` held in the last tick, ascending,
   with the queries' capacity and count rules. Checks: AOI_EINVAL when
   shard is out of range, then AOI_ENOMEM. */
AOI_EXPORT int aoi_shard_ghosts(aoi_world *world, unsigned shard,
                                uint64_t *ids, size_t capacity,
                                size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* AOI_H */
