/*
 * aoi.h: a multithreaded, spatially sharded Area Of Interest service.
 *
 * The host (a zone server's game loop) owns one aoi_world. Between ticks it
 * submits operations (aoi_add, aoi_move, aoi_move_many or aoi_move_ref,
 * aoi_set_radius, aoi_set_layers, aoi_set_appeal, aoi_set_cap,
 * aoi_remove); each is validated at once and queued. aoi_tick() applies
 * them on the worker threads, each worker owning some spatial shards, and
 * leaves in every watcher's outbox exactly the events that the trace
 * semantics (docs: TRACE_FORMAT.md) define: `leave`s, then `enter`s, then
 * `move`s, each group by entity id ascending. The host then drains the outboxes and
 * may query the state as of that tick.
 *
 * Threads: every function here must be called from one host thread at a
 * time (the game loop); none may be called concurrently with another on the
 * same world. The worker threads are internal. Different worlds are
 * independent. Between aoi_tick_begin and aoi_tick_end (a tick in flight)
 * the host may run its own game logic, but on this world it may only call
 * aoi_tick_poll, aoi_tick_end and aoi_destroy (which waits for the tick);
 * every other function returns AOI_EBUSY there and changes nothing
 * (aoi_strerror and aoi_config_default, which take no world, always work).
 *
 * Errors: functions return 0 or a negative AOI_E* code. A call that fails
 * changes nothing and writes no out-parameter, with two documented
 * exceptions: aoi_tick on AOI_ENOMEM, and aoi_move_many, which stands for a
 * run of aoi_move calls and keeps those before the first that fails (its
 * *done says how many). Every function that takes a world returns
 * AOI_EINVAL for a NULL world or a NULL out-parameter, and AOI_EBUSY while a
 * tick is in flight (see aoi_tick_begin), before any other check; those that
 * return ids or events may return AOI_ENOMEM when a buffer cannot grow.
 *
 * Results are deterministic: the events and query answers are identical for
 * every thread count and shard count.
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
#define AOI_VERSION_MINOR 1
#define AOI_VERSION_PATCH 0
/* One number that grows with every release: 10000 * major + 100 * minor +
   patch, as aoi_version() returns it for the library actually linked. */
#define AOI_VERSION                                                           \
  (AOI_VERSION_MAJOR * 10000 + AOI_VERSION_MINOR * 100 + AOI_VERSION_PATCH)

/* The linked library's AOI_VERSION, and its "major.minor.patch" string:
   compare with the header's to catch a header/library mismatch. */
AOI_EXPORT unsigned aoi_version(void);
AOI_EXPORT const char *aoi_version_string(void);

/* Error codes. All negative; 0 is success. */
#define AOI_EINVAL (-1)  /* NULL pointer, bad config, or bad argument    */
#define AOI_ENOMEM (-2)  /* an allocation failed                         */
#define AOI_EEXIST (-3)  /* aoi_add of an id that is live                */
#define AOI_ENOENT (-4)  /* the id is not live                           */
#define AOI_ECOORD (-5)  /* a coordinate is NaN or infinite              */
#define AOI_ERADIUS (-6) /* radius or appeal negative, not finite, or
                            > max_radius                                 */
#define AOI_EFLAGS (-7)  /* flags are neither watcher nor marker, or unknown bits */
#define AOI_ESYS (-8)    /* the system refused a thread or a sync object */
#define AOI_EBUSY (-9)   /* a tick is in flight: call aoi_tick_end first */

/* The name of an error code ("AOI_ENOENT: no such entity"); never NULL. */
AOI_EXPORT const char *aoi_strerror(int code);

/* Entity flags. An entity is a watcher, a marker, or both. */
#define AOI_WATCHER 1u /* has a view and receives events in its outbox */
#define AOI_MARKER 2u  /* can be seen by watchers */

typedef enum aoi_shape {
  AOI_SHAPE_CIRCLE = 0, /* (dx^2 + dy^2) <= R^2                          */
  AOI_SHAPE_SQUARE = 1, /* |dx| <= R and |dy| <= R                        */
  AOI_SHAPE_CELLS = 2   /* nine-grid: cells of side cell_size from (0,0);
                           cell distance <= ceil(R / cell_size) per axis  */
} aoi_shape;

/*
 * Allocator hooks. All three are called from the host thread and from the
 * worker threads concurrently, so they must be thread-safe. `size` is the
 * size that was asked for; realloc gets the old size too. A NULL return means
 * out of memory. The defaults wrap malloc/realloc/free.
 */
typedef struct aoi_allocator {
  void *(*alloc)(void *user, size_t size);
  void *(*realloc)(void *user, void *ptr, size_t old_size, size_t new_size);
  void (*free)(void *user, void *ptr, size_t size);
  void *user;
} aoi_allocator;

/* A distance band for move events (see aoi_config.move_bands). */
typedef struct aoi_move_band {
  float distance;  /* beyond this distance (>= 0, finite) ...           */
  uint32_t period; /* ... a marker's moves are told every `period` ticks */
} aoi_move_band;

#define AOI_MAX_MOVE_BANDS 8

typedef struct aoi_config {
  /* Worker threads; 0 = one per online core. At most 256. */
  unsigned threads;
  /* Spatial shards, each owned by one worker; 0 = one per thread. At most
     4096. Shard i is owned by worker i % threads. */
  unsigned shards;
  /* Bounds hint for the initial shard layout; entities outside are still
     accepted (the edge shards own them). Ignored when min >= max on an axis.
     Default (0, 0) - (1000, 1000). */
  float min_x, min_y, max_x, max_y;
  /* Largest view radius any entity may have (default 500, >= 0, finite). */
  float max_radius;
  /* Extra distance before a visible entity leaves a view (default 0). */
  float hysteresis;
  /* Whether `move` events are produced (default 1). */
  int move_events;
  /* View shape (default AOI_SHAPE_CIRCLE) and, for AOI_SHAPE_CELLS, the
     cell side (> 0, finite). */
  aoi_shape shape;
  float cell_size;
  /* Every this many ticks, if the busiest shard carries over 1.25x the
     mean load (an entity counts 1 plus the size of its view), the host
     moves the shard cuts to the load's quantiles along each axis, and the
     next tick hands entities over to match (the events are the same either
     way). 0 = never. Default 16. */
  unsigned rebalance_interval;
  /* Distance-based move rates (level of detail). With n = move_band_count
     bands (0 .. AOI_MAX_MOVE_BANDS, distances strictly increasing, periods
     >= 1), a marker B that a watcher A keeps in view is told to A by a
     `move` only when B's position differs from the one A was last told
     (by its enter or its latest move) and the tick t allows it: with P the
     period of the band of largest distance D such that d(A, B) > D (1 if
     none), when P = 1 or (A's id + t) mod P = 0. So near markers are told
     every tick and far ones every few, on ticks spread by watcher id.
     Default 0: every tick. The views then also keep the position each
     marker was last told (8 more bytes per view entry). */
  aoi_move_band move_bands[AOI_MAX_MOVE_BANDS];
  unsigned move_band_count;
  /* Whether each worker thread is bound to a CPU (default 0: the OS
     places them). 1: worker i is bound to the i-th CPU, wrapping around,
     of those the thread that calls aoi_create may run on (give that
     thread the CPUs the workers should use); aoi_tick then leaves worker
     0's share to worker 0 (see aoi_tick_begin). Without it, after the
     host thread has run alone for a while (a heavy frame of game logic
     before the tick), the OS may put two workers on one core while
     another idles, and a tick can take up to twice as long (README,
     Performance: the flood cliff; aoi_tick, which runs one share on the
     calling thread and wakes one worker fewer, did not show it at 2
     threads, but aoi_tick_begin, which wakes them all, may). Linux only:
     elsewhere 1 is AOI_EINVAL. Other values: AOI_EINVAL. */
  unsigned pin_threads;
  /* Allocator hooks, copied at create; NULL = malloc and free. */
  const aoi_allocator *allocator;
} aoi_config;

/* Fills `config` with the defaults above. */
AOI_EXPORT void aoi_config_default(aoi_config *config);

typedef struct aoi_world aoi_world;

/*
 * Creates a world and starts its worker threads. On success writes the new
 * world to *out and returns 0. Errors: AOI_EINVAL (NULL, or a config value
 * out of range), AOI_ENOMEM, AOI_ESYS (threads could not be started).
 */
AOI_EXPORT int aoi_create(const aoi_config *config, aoi_world **out);

/* Stops the workers and frees everything, undrained events included.
   Accepts NULL. */
AOI_EXPORT void aoi_destroy(aoi_world *world);

/*
 * Operations. Each is validated at once against the state as submitted so
 * far (an id added and not yet ticked is live; a removed one is not) and
 * queued; nothing is visible to watchers before the next aoi_tick. Checks run
 * in this order: AOI_EINVAL (NULL world), AOI_EBUSY (a tick in flight),
 * AOI_EEXIST / AOI_ENOENT, then AOI_EFLAGS, AOI_ECOORD, AOI_ERADIUS. Positions and radii are stored as the
 * given floats. AOI_ENOMEM when the queue cannot grow.
 *
 * The operations on one entity between two ticks fold into one queued
 * record that holds the latest position, radius and masks, so the queue
 * holds at most one record per live entity plus one per entity removed
 * since the last tick, however many calls were made. Of an entity's
 * operations since the last tick, only two may need memory (AOI_ENOMEM):
 * the first, and the first that is neither a move nor a removal (a record
 * that only moves is kept smaller; the first aoi_set_* takes the room for
 * the rest); the others never fail for want of it. An entity added and
 * removed before the same tick was never there: nobody sees it.
 */

/* Adds entity `id` at (x, y). `flags` is AOI_WATCHER, AOI_MARKER or both.
   `layers` is what it is in, `interest` what it watches: watcher A sees
   marker B only when (A.interest & B.layers) != 0. An id removed before the
   same tick is a new entity: its old watchers get `leave` then `enter`. */
AOI_EXPORT int aoi_add(aoi_world *world, uint64_t id, float x, float y,
                       float radius, unsigned flags, uint32_t layers,
                       uint32_t interest);
/* Sets the position of a live entity (a walk or a teleport alike). Finding
   the entity by its id costs one read when the id is below a bound that
   follows the ids the world holds (about twice their number: ids drawn
   from a counter), and a hash probe, a random cache miss in a large world,
   for any other id (aoi_move_ref skips either). */
AOI_EXPORT int aoi_move(aoi_world *world, uint64_t id, float x, float y);

/* One move of aoi_move_many. */
typedef struct aoi_move_op {
  uint64_t id;
  float x, y;
} aoi_move_op;

/* aoi_move of ops[0], ops[1], ... ops[n - 1], in that order, with the same
   checks and effect as n calls, but faster for a host that moves many
   entities by id at once: each id's lookup (a random cache miss in a
   large world, for an id the world hashes: see aoi_move) is fetched while
   the ones before it are applied. Stops at
   the first move that fails and returns its error: that move and the ones
   after it changed nothing, the ones before it stand. *done (when not
   NULL) is the number that stand: n after 0, and the failing one's index
   after an error. AOI_EINVAL for a NULL world, or NULL ops with n > 0, then
   AOI_EBUSY while a tick is in flight (then nothing is done, and *done is
   0); n = 0 does nothing and returns 0. */
AOI_EXPORT int aoi_move_many(aoi_world *world, const aoi_move_op *ops,
                             size_t n, size_t *done);
/* Sets the view radius of a live entity. */
AOI_EXPORT int aoi_set_radius(aoi_world *world, uint64_t id, float radius);
/* Sets the layer and interest masks of a live entity. */
AOI_EXPORT int aoi_set_layers(aoi_world *world, uint64_t id, uint32_t layers,
                              uint32_t interest);
/* Sets the appeal radius of a live entity: as a marker, it is seen by any
   watcher within `appeal` (plus hysteresis once seen), even one whose own
   view radius is smaller; a watcher A sees marker B within
   max(A's radius, B's appeal). 0 <= appeal <= max_radius, else
   AOI_ERADIUS. 0 at aoi_add. A few markers with a large appeal cost the
   watchers around them, not every watcher. */
AOI_EXPORT int aoi_set_appeal(aoi_world *world, uint64_t id, float appeal);
/* Sets the view cap of a live entity: as a watcher, its view holds at most
   `cap` markers, the nearest (0, the default at aoi_add: no cap). Of the
   markers it could see, it keeps those of smallest key: the distance, less
   the hysteresis for one already in its view (so a newcomer only just
   nearer does not push a member out), ties to the smaller id. */
AOI_EXPORT int aoi_set_cap(aoi_world *world, uint64_t id, uint32_t cap);
/* Removes a live entity. Its watchers get `leave` at the next tick. If it is
   a watcher, its undrained events are dropped now. */
AOI_EXPORT int aoi_remove(aoi_world *world, uint64_t id);

/*
 * References, opt-in: a host that moves its entities every tick can name
 * them by reference instead of by id, which skips the id lookup (for an
 * id the world hashes, a random cache miss in a large world: see
 * aoi_move), so that aoi_move_ref costs a few ns where aoi_move by a
 * hashed id costs tens. A host that never takes a reference pays nothing
 * for them.
 *
 * A reference is valid while its entity lives: from the aoi_add that made
 * it (before any tick too) until its aoi_remove, an add and a remove before
 * the same tick included. From the removal on, every call with it returns
 * AOI_ENOENT, also once the id is added again (a new entity, with a new
 * reference) and once the world gives the entity's place to another. The
 * value is opaque: it stays the same for the entity's whole life, and 0 is
 * never one, so a host may keep 0 for "none". Threads and errors as for
 * every call here: the host thread, never during a tick (AOI_EBUSY); a
 * call that fails changes nothing and writes nothing.
 */
/* A reference to a live entity: its handle and a generation, so that a
   reference kept across a remove is refused (AOI_ENOENT), never aimed at
   the handle's next owner. 0 is never a valid reference. */
typedef uint64_t aoi_ref;

/* Writes the reference of live entity `id` to *ref. Checks in this order:
   AOI_EINVAL (NULL world or ref), AOI_EBUSY (a tick in flight),
   AOI_ENOENT (`id` is not live as submitted so far). Never allocates. */
AOI_EXPORT int aoi_ref_of(aoi_world *world, uint64_t id, aoi_ref *ref);
/* aoi_move of the entity `ref` names, in everything but the lookup: the
   same checks in the same order (AOI_EINVAL for a NULL world, AOI_EBUSY,
   AOI_ENOENT for anything but a live entity's reference: 0, a forged one,
   one taken before the entity's removal; then AOI_ECOORD), the same
   effect, folded into the same record as the entity's other operations
   since the last tick (so AOI_ENOMEM only as aoi_move: for the first
   operation on the entity since the last tick). */
AOI_EXPORT int aoi_move_ref(aoi_world *world, aoi_ref ref, float x, float y);

/*
 * Applies everything submitted since the last tick on the workers and
 * appends this tick's events to the watchers' outboxes. Blocks until done.
 * Returns 0, AOI_EINVAL (NULL), or AOI_ENOMEM in one of two ways, told apart
 * by aoi_stats_get's `tick`:
 *  - the tick did not start (`tick` unchanged): nothing was applied, the
 *    submitted operations stay queued, and a later aoi_tick applies them;
 *  - the tick was applied (`tick` advanced; every operation applied, no
 *    entity lost) but some watchers could not be given all their events.
 *    A watcher whose new entries could not be stored gets its leaves and
 *    moves now and its enters at a later tick (they are simply late). A
 *    watcher whose events could not be stored at all keeps its previous
 *    view and gets no events this tick; its next events take it from that
 *    view to the new one, with a `move` for every entity it kept (at the
 *    entity's current position, which may be the one it was last told).
 *    Nothing is lost or duplicated. With hysteresis the views may then
 *    settle differently than if nothing had failed, always within the
 *    visibility rules; a capped view may keep, until its next full
 *    computation, members that are no longer its nearest (never more than
 *    its cap); with move bands a view held back keeps the positions it was
 *    last told, so its later moves are the ones the bands allow. A shard
 *    whose index could not be built answers
 *    circle and watcher queries as empty until the next tick.
 * Either way the world stays consistent and usable. What a tick needs
 * beyond the memory the world already holds is bounded by the entities,
 * not by the calls since the last tick: a few hundred bytes per queued
 * record (see the operations above: at most one per live entity plus one
 * per entity removed since the last tick), plus what the views and
 * outboxes of the watchers that changed grow by. So a tick that failed for
 * want of memory succeeds once that much is available again, however many
 * operations were queued. Memory taken for a burst of changes (queued
 * records, handoffs, departures) is given back within about 12 ticks.
 */
AOI_EXPORT int aoi_tick(aoi_world *world);

/*
 * aoi_tick in two halves, so that the host can run other game logic while
 * the workers compute. aoi_tick_begin hands the submitted operations to the
 * workers and returns at once: 0, AOI_EINVAL (NULL), AOI_EBUSY (a tick is
 * already in flight), or AOI_ENOMEM (nothing started and nothing changed;
 * the operations stay queued). aoi_tick_poll returns 1 when the tick in
 * flight has finished (so aoi_tick_end will not block), 0 while it runs,
 * AOI_EINVAL when no tick is in flight. aoi_tick_end waits for it and
 * returns what aoi_tick would have; AOI_EINVAL when no tick is in flight.
 *
 * Some ticks do not wake the workers, and are done when aoi_tick_begin
 * returns: one with nothing to do (no operation queued, no view held back
 * by the last tick, no move of the shard cuts due), which only advances
 * the tick count; and a small one (live entities plus 16 per entity
 * changed since the last tick: at most 2048), which the calling thread
 * computes itself in less time than waking the workers would take. With
 * one worker thread, aoi_tick (which would only wait for it) always runs
 * the tick on the calling thread; with more, aoi_tick runs worker 0's
 * share (its shards) on the calling thread while the other workers run
 * theirs, and worker 0's thread sleeps on (unless pin_threads is set). So
 * aoi_tick keeps the calling thread as busy as one worker, and
 * `threads` threads compute in either call. The results are the same
 * either way.
 */
AOI_EXPORT int aoi_tick_begin(aoi_world *world);
AOI_EXPORT int aoi_tick_poll(aoi_world *world);
AOI_EXPORT int aoi_tick_end(aoi_world *world);

/* Event kinds, in their output order within one watcher and one tick. */
typedef enum aoi_event_kind {
  AOI_LEAVE = 0,
  AOI_ENTER = 1,
  AOI_MOVE = 2
} aoi_event_kind;

typedef struct aoi_event {
  uint64_t id;   /* the entity that entered, left or moved */
  float x, y;    /* its position (enter, move); 0 for leave */
  uint32_t kind; /* an aoi_event_kind */
  uint32_t tick; /* the tick that produced it (low 32 bits, from 1) */
} aoi_event;

/*
 * Takes every undrained event of watcher `id`, oldest tick first, and empties
 * its outbox. Events accumulate across ticks until drained, so a host that
 * drains late loses nothing. *events is borrowed: valid until the next
 * aoi_tick, aoi_remove of this id, or aoi_destroy. Writes *count = 0 for a
 * live entity with no events. AOI_ENOENT when `id` is not live; AOI_ENOMEM
 * when the last tick's events cannot be laid out in the outbox (they are
 * kept compact until read: see aoi_deliver, the path that needs no lookup
 * and no memory of its own).
 */
AOI_EXPORT int aoi_drain(aoi_world *world, uint64_t id,
                         const aoi_event **events, size_t *count);

/*
 * Parallel delivery. A tick leaves its events in aoi_delivery_segments()
 * segments (one per worker thread), each holding the events of a disjoint
 * set of watchers. aoi_deliver takes every undrained event of every watcher
 * of one segment and calls `fn` once per watcher that has any, with all of
 * that watcher's events in order (older ticks first, as aoi_drain would
 * give them), then empties its outbox. `events` is valid only during the
 * call. No id lookup and no sort happen on this path: watchers come in the
 * order the workers computed them, which depends on the layout.
 *
 * Threads: between ticks, aoi_deliver of DIFFERENT segments may run at the
 * same time on different threads (one thread per segment at a time). While
 * any aoi_deliver runs, no other function may be called on this world, and
 * the host must order every aoi_deliver before its next call on the world
 * (join its threads, or a barrier). `fn` must not call into this world.
 * `fn` runs on the delivering thread: state of its own that it writes at
 * every watcher (a count, a cursor) belongs on a cache line of its own,
 * or the threads will pass that line between their cores at each write.
 *
 * A host may mix both paths: a watcher taken by aoi_drain is not delivered
 * again, and aoi_deliver empties what aoi_drain would return. Events not
 * taken before the next tick stay, in order, for a later aoi_drain or
 * aoi_deliver (that tick moves them into the watcher's outbox).
 *
 * Returns 0; AOI_EINVAL for a NULL world or fn or a segment out of range;
 * AOI_EBUSY during a tick; AOI_ENOMEM when a watcher's events cannot be
 * laid out (then that watcher and the ones after it stay undelivered; call
 * again).
 */
typedef void (*aoi_deliver_fn)(void *user, uint64_t watcher,
                               const aoi_event *events, size_t count);
AOI_EXPORT unsigned aoi_delivery_segments(const aoi_world *world);
AOI_EXPORT int aoi_deliver(aoi_world *world, unsigned segment,
                           aoi_deliver_fn fn, void *user);

/*
 * The watchers that have undrained events, ids ascending. *ids is borrowed:
 * valid until the next aoi_tick, aoi_pending, aoi_remove or aoi_destroy;
 * aoi_drain does not invalidate it, so a host can drain while it iterates.
 */
AOI_EXPORT int aoi_pending(aoi_world *world, const uint64_t **ids,
                           size_t *count);

/*
 * Queries, answered from the state as of the last tick (operations submitted
 * since are not seen). Each writes at most `capacity` ids ascending to `ids`
 * (which may be NULL when capacity is 0) and the total number found to
 * *count, so a caller can size a buffer and ask again.
 */

/* Live markers within the circle (inclusive) whose layers intersect
   `layer_mask`. AOI_ECOORD for a centre that is not finite; AOI_ERADIUS
   for a radius that is negative, not finite or above the world's
   max_radius (a query is bounded like a view, so that its cost is too). */
AOI_EXPORT int aoi_query_circle(aoi_world *world, float x, float y,
                                float radius, uint32_t layer_mask,
                                uint64_t *ids, size_t capacity, size_t *count);
/* The current view of watcher `id`. AOI_ENOENT when `id` is not live; an
   entity added since the last tick has an empty view. */
AOI_EXPORT int aoi_view(aoi_world *world, uint64_t id, uint64_t *ids,
                        size_t capacity, size_t *count);
/* The watchers whose current view holds `id`. AOI_ENOENT when not live. */
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
  unsigned threads;     /* worker threads */
  unsigned shards;      /* spatial shards */
  uint64_t entities;    /* live entities after the tick */
  uint64_t watchers;    /* live watchers after the tick */
  uint64_t ghosts;      /* ghost copies held by shards this tick */
  uint64_t handoffs;    /* entities that changed shard this tick */
  uint64_t rebalances;  /* times the shard cuts moved, since creation */
  uint64_t events;      /* events produced this tick */
  uint64_t tick_ns;     /* wall time of aoi_tick */
  /* Wall time of each phase: the slowest worker's. */
  uint64_t phase_ns[AOI_PHASE_COUNT];
  /* Owned entities per shard after the tick, `shards` entries; borrowed,
     valid until the next aoi_tick or aoi_destroy. */
  const uint32_t *shard_entities;
  /* Compute time per shard in ns, `shards` entries; borrowed likewise. */
  const uint64_t *shard_ns;
} aoi_stats;

/* Writes the statistics of the last tick to *stats (zeros before the first
   tick, but for threads and shards). */
AOI_EXPORT int aoi_stats_get(const aoi_world *world, aoi_stats *stats);

/* One shard as of the last tick, for tools that draw or tune the layout. */
typedef struct aoi_shard_info {
  /* Its rectangle: min <= x < max; the edge shards extend to +-infinity. */
  double min_x, min_y, max_x, max_y;
  unsigned worker;   /* the worker thread that owns it */
  uint32_t entities; /* entities it owns */
  uint32_t ghosts;   /* ghost copies of markers owned by its neighbours */
  uint64_t compute_ns;
  /* How far beyond its rectangle, per axis, other shards' markers were
     ghosted to it: its widest watcher's radius plus the hysteresis (in
     whole cells for AOI_SHAPE_CELLS, and a hair more against rounding); a
     marker with an appeal comes from as far as its appeal reaches. 0 when
     it had no watchers or is the only shard. Many ghosts and a wide reach
     say the shard holds a far-sighted watcher. */
  double ghost_reach;
} aoi_shard_info;

/* Describes shard `shard` (0 .. stats.shards - 1). AOI_EINVAL when out of
   range. */
AOI_EXPORT int aoi_shard_info_get(const aoi_world *world, unsigned shard,
                                  aoi_shard_info *info);
/* The ids of the ghosts shard `shard` held in the last tick, ascending; the
   same capacity and count rules as the queries. */
AOI_EXPORT int aoi_shard_ghosts(aoi_world *world, unsigned shard,
                                uint64_t *ids, size_t capacity,
                                size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* AOI_H */
