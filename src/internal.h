/*
 * internal.h: the functions the library's files share, all prefixed aoi__,
 * grouped by file in the order of a tick (docs/design.md, "A tick"),
 * and what a tick decides from the world's state (its tunables
 * and the tests both the host and the workers make). The types they work
 * on are in types.h, below it; who owns what, and when, is written there.
 *
 *   host thread, between ticks          each lane, on its own shards
 *   submit.c   ops -> queued records
 *   tick.c     begin / poll / end  -->  worker.c   batches, steps
 *              tasks on a pool (pool.c)
 *   rebalance.c new shard cuts          apply.c    1. records, handoffs
 *                                       exchange.c 2. ghosts
 *                                       compute.c  3. views -> events
 *                                       index.c       the shard's grid
 *                                       scan.c        reach scans
 *                                       push.c        quiet watchers
 *                                       policy.c      caps, appeals, bands
 *                                       view.c        view storage
 *   outbox.c   delivery of the events the workers left in their segments
 *   query.c    reads between ticks
 *   world.c    create / destroy         check.c    invariant walks
 *
 * Calls between files (what each object file takes from the others) only
 * go down, so the files form a stack and each can be read without those
 * above it:
 *
 *   world.c    -> submit.c tick.c worker.c outbox.c pool.c
 *   tick.c     -> rebalance.c worker.c outbox.c check.c pool.c
 *   submit.c   -> outbox.c
 *   query.c    -> view.c
 *   worker.c   -> apply.c exchange.c compute.c view.c
 *   compute.c  -> index.c scan.c push.c policy.c view.c
 *   scan.c     -> view.c
 *   push.c     -> view.c
 *   policy.c   -> view.c
 *   apply.c    -> view.c
 *   pool.c     -> sync.c
 *   every file -> alloc.c grid.c idmap.c ring.c sync.c, the bottom, which
 *                 call only alloc.c (and ring.c the stress points in sync.c)
 */
#ifndef AOI_INTERNAL_H
#define AOI_INTERNAL_H

#include "stress.h" /* the worker steps' stress points */
#include "types.h"

/* ---- what a tick decides ------------------------------------------------ */

/* A grid cell's side, as a share of the usual watcher reach. */
#ifndef AOI__CELL_PER_REACH
#define AOI__CELL_PER_REACH 0.5
#endif

/* The most events a quiet watcher's pushes may make, on the mean (push.c):
   beyond it the quiet watchers are not pushed to (compute.c), and a tick
   leaves no departures (tick.c). The pushes cost less than the scans
   while the changes make about this many events for each unchanged
   watcher or fewer (docs/performance.md has the measurement). */
#ifndef AOI__PUSH_EVENTS
#define AOI__PUSH_EVENTS 6
#endif

/* At most this many watchers are far-sighted (aoi__far_sighted) in a
   tick: each costs a pass over every handle's mark (tick.c). */
#define AOI__FAR_WATCHERS 8

/* A tick whose cost, about live entities + 16 x queued records, is at most
   this runs on the host thread (tick.c): waking the workers would cost
   more. */
#define AOI__INLINE_COST 2048u

/* The per-axis distance within which a marker may be seen by a watcher
   that sees `seen` far (its radius, or the marker's appeal), with the
   hysteresis, padded against rounding: markers that near a shard are
   ghosted there (tick.c for the world's largest, exchange.c per shard). */
static inline double aoi__ghost_reach(const struct aoi_world *w, double seen)
{
  double extent =
      aoi__reach_extent(&w->shape, seen + (double)w->config.hysteresis);
  return extent * (1 + 1e-9) + 1e-9;
}

/* Whether a watcher of `radius` sees `far` or farther: its reach (radius
   plus `hysteresis`) at least that. */
static inline bool aoi__reaches(float radius, double hysteresis, double far)
{
  return (double)radius + hysteresis >= far;
}

/* Whether a watcher of `radius` is far-sighted in this tick (it reaches
   far_reach): its view is computed from the marks of every handle instead
   of its shard's grid (compute.c; with a cap, policy.c), so its shard is
   sent no ghosts for it (apply.c, exchange.c). The host picks far_reach
   (tick.c). */
static inline bool aoi__far_sighted(const struct aoi_world *w, float radius)
{
  return aoi__reaches(radius, w->config.hysteresis, w->command.far_reach);
}

/* Whether `changes` changed markers, each seen by about `mean` watchers,
   make at most AOI__PUSH_EVENTS events for each of `unchanged` entities:
   the pushes pay. The host asks it of the world before a tick (whether
   to leave departures, tick.c), and a worker of a shard (whether to push
   to its quiet watchers, compute.c). */
static inline bool aoi__pushes_pay(uint64_t changes, uint64_t mean,
                                   uint64_t unchanged)
{
  return changes * mean <= AOI__PUSH_EVENTS * unchanged;
}

/* Whether moves are told by distance bands, so that views keep told
   positions (aoi__view_told). */
static inline bool aoi__bands(const struct aoi_world *w)
{
  return w->config.move_events != 0 && w->config.move_band_count > 0;
}

/* ---- host side ---------------------------------------------------------- */

/* Whether an aoi_deliver runs now, on any thread. */
static inline bool aoi__delivering(const struct aoi_world *w)
{
  return atomic_load_explicit(&w->delivering, memory_order_acquire) != 0;
}

/* Whether no lane step of a tick runs: between ticks, and in a tick's
   serial start and finish (tick.c), which own the world whole, on
   whichever thread runs them. */
static inline bool aoi__lanes_idle(const struct aoi_world *w)
{
  return atomic_load(&((struct aoi_world *)w)->lanes_left) == 0;
}

/* The check every public call on a world makes right after its NULL
   checks (aoi.h, rules 2-4): AOI_EBUSY while a tick is in flight or any
   aoi_deliver runs (which covers a call from a delivery callback), else
   0. A call made against the rules from another thread is caught as far
   as a load can see it; the callback case is caught always. */
static inline int aoi__busy(const struct aoi_world *w)
{
  return w->in_flight || aoi__delivering(w) ? AOI_EBUSY : 0;
}

/* submit.c: the handle tables, the op records and their queues. */
/* The online cores as aoi_move_many sees them when it decides whether to
   spread a batch over the pool (0: the machine's; tests set more). */
extern unsigned aoi__spread_cores;
int aoi__host_init(struct aoi_world *world);
/* Frees everything the host side holds: the id map, the handle tables,
   the queues, the rebalancing plan and the query scratch. */
void aoi__host_free(struct aoi_world *world);

static inline bool aoi__radius_ok(const struct aoi_world *w, float radius)
{
  return isfinite(radius) && radius >= 0 && radius <= w->config.max_radius;
}

/* The shard record r of shard s's queue names: where its position is, if
   it has one, else s. The host's bounds count an arrival there. */
static inline unsigned aoi__record_target(const struct aoi_world *w,
                                          const aoi__queue *q,
                                          const aoi__record *r, unsigned s)
{
  return (aoi__record_what(q, r) & (AOI__RECORD_ADD | AOI__RECORD_MOVE))
             ? aoi__layout_shard(&w->layout, r->x, r->y)
             : s;
}

/* Looks up a live id; AOI__NONE if it is not live. */
static inline uint32_t aoi__live_handle(const struct aoi_world *w,
                                        uint64_t id)
{
  return aoi__idmap_get(&w->ids, id);
}

/* rebalance.c: moving the shard cuts, called by tick.c. */
/* Decides whether this tick moves the shard cuts and, if so, plans the new
   ones in world->plan and counts where every entity may go, so that the tick
   can reserve for the handoffs. Changes nothing else; false when no move is
   due or the plan cannot get memory. */
bool aoi__plan_relayout(struct aoi_world *world);
/* Makes the planned cuts the layout's. Cannot fail. */
void aoi__commit_relayout(struct aoi_world *world);

/* outbox.c: outboxes, segments, backlogs and the pending list */
aoi_event *aoi__outbox_reserve(const aoi_allocator *a, aoi__outbox *outbox,
                               uint32_t count, uint32_t hint);
int aoi__outbox_append(const aoi_allocator *a, aoi__outbox *outbox,
                       const aoi_event *events, uint32_t count);
void aoi__outbox_free(const aoi_allocator *a, aoi__outbox *outbox);
void aoi__pending_free(const aoi_allocator *a, aoi__pending *pending);
void aoi__segment_free(const aoi_allocator *a, aoi__segment *segment);
/* Fills pending->ids with the ids of the watchers that have undrained
   events, ascending. */
int aoi__pending_update(struct aoi_world *world);
/* Expands every undelivered record into its watcher's outbox, so that the
   segments can be reused. Host only, before a tick. 0 or AOI_ENOMEM (then
   what could be moved was moved, and nothing is lost). */
int aoi__segments_settle(struct aoi_world *world);
/* After a tick: lists each backlog watcher without a record in one
   segment. Cannot fail (the lists hold a handle capacity). */
void aoi__segments_assign(struct aoi_world *world);

/* tick.c: sets the tasks a world's ticks are cut into (aoi_create). */
void aoi__tick_tasks_init(struct aoi_world *world);

/* ---- worker side -------------------------------------------------------- */

/* worker.c: a lane's steps of a tick and the batches between lanes. */
/* Runs lane k's step `step` (AOI_PHASE_*) of the tick, timing it (on the
   thread's CPU clock too when `cpu`): every lane must have finished the
   step before. */
void aoi__lane_step(aoi__worker *k, uint32_t step,
                    const aoi__tick_command *cmd, bool cpu);
/* Runs a tick on one thread, every lane's steps in turn, with the queues
   on the op rings. */
void aoi__tick_on_host(struct aoi_world *world,
                       const aoi__tick_command *cmd);
void aoi__shard_free(const aoi_allocator *a, aoi__shard *shard, bool told);
void aoi__worker_free(const aoi_allocator *a, aoi__worker *worker,
                      unsigned threads, unsigned shards);

/* The worker that owns a shard. */
static inline unsigned aoi__worker_of(const struct aoi_world *w,
                                      unsigned shard)
{
  return shard % w->threads;
}

/* Records a worker's first failure of the tick; aoi_tick_end returns it. */
static inline void aoi__fail(aoi__worker *k, int rc)
{
  if (k->error == 0)
    k->error = rc;
}

/* Appends one item to a batch for a peer; a failure marks the batch
   incomplete (its receiver degrades) and the worker failed. */
static inline void aoi__batch_append(aoi__worker *k, aoi__batch *b,
                                     const void *item, size_t size)
{
  int rc = aoi__reserve(&k->world->allocator, &b->items, &b->capacity,
                        b->count + 1, size);
  if (rc != 0) {
    aoi__fail(k, rc);
    b->incomplete = true;
    return;
  }
  memcpy((char *)b->items + size * b->count++, item, size);
}

/* apply.c: step 1, on worker k for its own shard s. */
int aoi__shard_insert(const aoi_allocator *a, aoi__shard *shard,
                      aoi__location *location, const aoi__entity *entity);
/* Takes the shard's queue from its op ring and applies its records,
   leaving departures only with `departures` (aoi__tick_command). */
void aoi__apply_ops(aoi__worker *k, aoi__shard *s, uint64_t tick,
                    bool departures);
/* Hands off the entities that now lie in another shard. */
void aoi__find_handoffs(aoi__worker *k, aoi__shard *s, bool relayout,
                        uint64_t tick);
/* Inserts the entities of a peer's handoff batch. */
void aoi__take_handoffs(aoi__worker *k, const aoi__batch *b);

/* exchange.c: step 2. */
/* Each shard's ghost reach, from what every worker's apply step noted
   (after the handoff batches). */
void aoi__ghost_reaches(aoi__worker *k);
/* Ghosts the shard's markers and departures to the shards near them. */
void aoi__publish_ghosts(aoi__worker *k, aoi__shard *s, uint64_t tick);
/* Stores the ghosts of a peer's batch. */
void aoi__take_ghosts(aoi__worker *k, const aoi__batch *b);

/* compute.c: step 3 (with policy.c and view.c, see compute.h). */
/* Indexes the shard and computes the views and events of its watchers. */
void aoi__compute_shard(aoi__worker *k, aoi__shard *s,
                        const aoi__tick_command *cmd);

/* view.c: what the other files need of a view. */
/* Empties a view, freeing its block if it is the allocator's (one of a
   worker's chunks goes with its chunk). */
void aoi__view_free(const aoi_allocator *a, aoi__view *view, bool told);
/* Empties a removed watcher's view: its block goes back to worker k. */
void aoi__view_recycle(struct aoi__worker *k, aoi__view *view);

/* transfer.c: views that travel between worlds (src/mpi). */
/* Watcher `id`'s view as of the last tick, as aoi_view, and with move
   bands the position last told of each (x, y pairs; 0 without bands) in
   told_xy when it is not NULL (room for 2 * capacity floats). */
int aoi__view_export(struct aoi_world *w, uint64_t id, uint64_t *ids,
                     float *told_xy, size_t capacity, size_t *count);
/* Queues, between ticks, a view for live watcher `watcher` that the next
   tick puts in place of its own before computing it: `ids` ascending, each
   a live marker here, with the positions last told (told_xy, NULL for
   none) where the world has move bands. The watcher must have a record
   that tick (a move). AOI_EINVAL, AOI_EBUSY, AOI_ENOENT (the watcher or
   an id), AOI_EFLAGS (not a watcher; an id not a marker, or its own),
   AOI_ENOMEM; nothing changes on failure. */
int aoi__view_install(struct aoi_world *w, uint64_t watcher,
                      const uint64_t *ids, const float *told_xy, size_t n);
/* The apply step's half, after shard s's records (worker.c). */
void aoi__adopt_installs(struct aoi__worker *k, aoi__shard *s, uint64_t tick);
/* Gives back the views no tick adopted (tick.c, at a tick's end), and
   with _free the list too (world.c). */
void aoi__installs_clear(struct aoi_world *w);
void aoi__installs_free(struct aoi_world *w);
/* Frees worker k's view chunks, with every view block carved from them
   (aoi_destroy; aoi__view_free then frees only the allocator's blocks). */
void aoi__view_chunks_free(struct aoi__worker *k);
/* The index of `id` in a view, or view->count when it holds no such id. */
uint32_t aoi__view_find(const aoi__view *view, const aoi__mark *mark,
                        uint64_t id);
/* Whether the view holds handle h, whose id is `id`. */
bool aoi__view_holds(const aoi__view *view, const aoi__mark *mark, uint64_t id,
                     uint32_t h);

/* ---- invariants (check.c) ----------------------------------------------- */

/* An invariant walk of the whole world, for tests and the checked builds
   (host only, between ticks). Returns true when every structure is
   consistent; else the walk stopped at the first invariant that does not
   hold, which aoi__check_failure names. */
bool aoi__world_valid(struct aoi_world *world);
/* The walk of one shard (part of aoi__world_valid's). */
bool aoi__shard_valid(const struct aoi_world *world, const aoi__shard *shard);
/* The invariant the calling thread's last walk found broken, as
   "check.c:LINE: CONDITION (SUBJECT)": the condition as check.c writes
   it, and the shard, handle, segment or worker it concerns; "" when that
   walk passed. Valid until the thread's next walk. */
const char *aoi__check_failure(void);
/* Called by aoi_tick_end where AOI_CHECK_INVARIANTS is defined: walks the
   world (every tick, or every few ticks for a large one) and aborts with a
   message when it is not consistent. */
void aoi__check_tick(struct aoi_world *world);

#endif /* AOI_INTERNAL_H */
