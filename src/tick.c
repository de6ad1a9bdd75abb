/*
 * tick.c: a tick's course: aoi_tick_begin, aoi_tick_poll, aoi_tick_end,
 * aoi_tick and aoi_tick_many, and the tasks a tick is cut into.
 *
 * A tick starts (start) on the host thread, or for aoi_tick_many on a pool
 * thread: it settles the last tick's undelivered events into their
 * outboxes (outbox.c), reserves everything the apply step can add (so
 * that no operation can be lost inside the tick), makes the tags set
 * since the last tick the ones its events carry, moves the shard cuts
 * when rebalance.c plans it, and fills the tick command: the ghost reach
 * and the cell size follow the live watchers' radii and appeals; whether
 * the tick leaves departures follows how many entities changed; the far
 * reach, whether a few watchers see far. Then it pushes each shard's
 * queue onto its ring, and either skips a tick with nothing to do, runs a
 * small one on the thread at hand (every lane's steps in turn), or hands
 * the lanes to the pool: a task per lane for each of the three steps
 * (worker.c), the last lane to finish a step pushing the next one's.
 *
 * The last lane of the last step finishes the tick (finish): it empties
 * the queues, sums what the lanes reported, frees the handles removed
 * before the last tick, hands each segment the backlog watchers it
 * delivers (outbox.c), gives back what a burst made the arrays grow, and
 * publishes the statistics. Where AOI_CHECK_INVARIANTS is defined it then
 * walks the world's invariants (check.c). Then it counts the tick done in
 * the host's job (pool.h), its last touch of the world; aoi_tick_end
 * waits for that.
 */
#include "internal.h"
#include "stress.h"

#include <math.h>
#include <string.h>

/* Entities and marks keep a tick's low 32 bits (aoi__stamp), compared
   only for equality with the tick at hand. So that a stamp never meets a
   later tick's bits (the entity would seem changed that tick, 2^32 ticks
   after it was), once every 2^31 ticks, before the workers run (or skip
   the tick), each stamp older than 2^31 ticks is brought forward to the
   tick before: then no stamp is ever 2^32 ticks old. */
#define AOI__STAMP_AGE (UINT32_C(1) << 31)
static void age_stamps(aoi_world *w, uint64_t tick)
{
  uint32_t now = aoi__stamp(tick), before = now - 1;
  for (unsigned s = 0; s < w->shard_count; s++) {
    aoi__shard *sh = &w->shards[s];
    for (uint32_t i = 0; i < sh->count; i++) {
      aoi__entity *e = &sh->entities[i];
      if (now - e->touched >= AOI__STAMP_AGE)
        e->touched = before;
      if (now - e->changed >= AOI__STAMP_AGE)
        e->changed = before;
      aoi__mark *m = &w->mark[e->handle];
      if (now - m->moved >= AOI__STAMP_AGE)
        m->moved = before;
    }
  }
}

/* The largest radius of a live watcher and appeal of a live entity, after
   the one that was the largest shrank or left. */
static void recompute_highs(aoi_world *w)
{
  float radius = 0, appeal = 0;
  for (uint32_t h = 0; h < w->handle_count; h++) {
    const aoi__host_entity *e = &w->host[h];
    if (!(e->flags & AOI__LIVE))
      continue;
    if ((e->flags & AOI_WATCHER) && e->radius > radius)
      radius = e->radius;
    if (e->appeal > appeal)
      appeal = e->appeal;
  }
  w->radius_high = radius;
  w->appeal_high = appeal;
  w->radius_high_dirty = w->appeal_high_dirty = false;
}

/* The reach from which a watcher may be far-sighted this tick
   (aoi__far_sighted), or INFINITY. A far-sighted watcher is computed from
   the marks of every handle (compute.c), which costs a pass over them all,
   so it must see a good share of the crowd: its reach box must cover at
   least a sixteenth of the box of the live entities (as the last tick
   left them), and its reach be four times the usual one. The reach is
   rounded up to a power of two, so that it seldom changes while the crowd
   walks (a shard's ghost reach follows it: apply.c). Only with shards to
   send ghosts between. */
static double far_candidate(const aoi_world *w, double usual)
{
  if (w->shard_count == 1)
    return INFINITY;
  double box[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
  for (unsigned s = 0; s < w->shard_count; s++) {
    const double *b = w->shards[s].box;
    if (!(b[0] <= b[2])) /* no entity */
      continue;
    box[0] = fmin(box[0], b[0]);
    box[1] = fmin(box[1], b[1]);
    box[2] = fmax(box[2], b[2]);
    box[3] = fmax(box[3], b[3]);
  }
  double area = (box[2] - box[0]) * (box[3] - box[1]);
  double far = fmax(4 * usual, sqrt(area) / 8);
  if (!(area > 0) || !(far < INFINITY) ||
      (double)w->radius_high + (double)w->config.hysteresis < far)
    return INFINITY;
  int exponent;
  (void)frexp(far, &exponent); /* far < 2^exponent */
  return ldexp(1, exponent);
}

/* The mean view of the watchers the last two ticks computed from a scan
   (the workers' counts, which they reset only inside a tick), 0 before
   any. */
static uint64_t mean_view(const aoi_world *w)
{
  uint64_t sum = 0, n = 0;
  for (unsigned i = 0; i < w->threads; i++) {
    const aoi__worker *k = &w->workers[i];
    sum += k->view_sum + k->last_view_sum;
    n += k->view_n + k->last_view_n;
  }
  return n > 0 ? sum / n : 0;
}

/* The tags aoi_set_tag gave since the last tick become the ones this
   tick's events carry. */
static void apply_tags(aoi_world *w)
{
  for (uint32_t i = 0; i < w->tag_queued_count; i++) {
    uint32_t h = w->tag_queued[i];
    AOI__ASSERT(h < w->handle_count);
    AOI__ASSERT(w->handle_bits[h] & AOI__HANDLE_TAG); /* listed once */
    w->tag[h] = w->tag_next[h];
    w->handle_bits[h] &= (uint8_t)~AOI__HANDLE_TAG;
  }
  w->tag_queued_count = 0;
}

/* Reserves everything the apply phase can add, for the cuts `relayout`
   plans too: then it never allocates, and no op and no handoff can be
   lost to a failed allocation inside the tick. Each record touches and
   departs at most once, and departs only in a tick that leaves departures
   (`departures`): a walking crowd's ticks hold no room for them. 0 or
   AOI_ENOMEM (what was reserved stays). */
static int reserve_for_tick(aoi_world *w, bool relayout, bool departures)
{
  AOI__ASSERT(aoi__lanes_idle(w)); /* between ticks, or a tick's start */
  const aoi_allocator *a = &w->allocator;
  int rc;
  for (unsigned s = 0; s < w->shard_count; s++) {
    aoi__shard *sh = &w->shards[s];
    uint32_t planned = relayout ? w->plan.arrivals[s] : 0;
    uint32_t need = sh->count + sh->arrivals_bound + planned;
    aoi__peak_note(&sh->entity_peak, need);
    aoi__peak_note(&sh->queue.peak, sh->queue.count);
    aoi__peak_note(&sh->queue.extra_peak, sh->queue.extra_count);
    if ((rc = aoi__reserve_lined(a, &sh->entity_block,
                                 (void **)&sh->entities, &sh->capacity, need,
                                 sizeof(aoi__entity))) != 0 ||
        (rc = aoi__reserve(a, (void **)&sh->touched, &sh->touched_capacity,
                           sh->queue.count, sizeof(uint32_t))) != 0 ||
        (departures &&
         (rc = aoi__reserve(a, (void **)&sh->departed,
                            &sh->departed_capacity, sh->queue.count,
                            sizeof(aoi__ghost))) != 0))
      return rc;
  }
  for (unsigned i = 0; i < w->threads; i++)
    for (unsigned j = 0; j < w->threads; j++) {
      aoi__batch *b = &w->workers[i].handoffs_out[j];
      uint32_t bound =
          b->bound + (relayout ? w->plan.bound[i * w->threads + j] : 0);
      aoi__peak_note(&b->peak, bound);
      if (bound > 0 && (rc = aoi__reserve(a, &b->items, &b->capacity, bound,
                                          sizeof(aoi__handoff))) != 0)
        return rc;
    }
  return 0;
}

/* Whether this tick leaves departures. The records are one per live
   entity that changed and one per entity removed since the last tick
   (limbo). Departures serve the unchanged watchers only, which then take
   the changes around them from pushes (push.c); without them every
   watcher scans its reach. They pay only where the pushes do: where the
   changes make at most AOI__PUSH_EVENTS events an unchanged entity, on
   the mean view. Beyond that the quiet watchers are not pushed to, and
   each one's look at the changes in its reach (compute_changes) costs
   more than its scan. So a walking crowd with a few standing, or one
   standing spectator, leaves none. */
static bool departures_pay(const aoi_world *w)
{
  uint64_t changed = (uint64_t)w->records - w->limbo_count;
  uint64_t unchanged = w->live > changed ? w->live - changed : 0;
  return unchanged > 0 && aoi__pushes_pay(changed, mean_view(w), unchanged);
}

/* Cells follow the usual reach, not the largest: a watcher scans the
   cells its own reach covers, so one spectator with a huge radius costs
   its own scan and nobody else's. The mean radius with the hysteresis,
   at most `reach`. */
static double usual_reach(const aoi_world *w, double reach)
{
  double usual = w->watchers > 0 ? w->radius_sum / (double)w->watchers : 0;
  return fmin(fmax(usual, 0) + (double)w->config.hysteresis, reach);
}

/* Sets the command's far reach: far-sighted watchers only while few
   watchers reach that far, as the shards counted at the last exchange for
   the same candidate or a nearer one (one tick late: a crowd of them
   costs a tick each pass). */
static void choose_far_reach(aoi_world *w, double usual)
{
  double candidate = far_candidate(w, usual);
  uint64_t reaching = 0;
  for (unsigned s = 0; s < w->shard_count; s++)
    reaching += w->shards[s].far_count;
  w->command.far_candidate = candidate;
  w->command.far_reach = candidate >= w->last_far_candidate &&
                                 reaching <= AOI__FAR_WATCHERS
                             ? candidate
                             : INFINITY;
  w->last_far_candidate = candidate;
}

/* Fills the tick command from the live crowd: the ghost reach and the
   cell size follow the live watchers' radii and appeals. `departures`:
   whether the tick leaves them (departures_pay, as reserved). */
static void plan_command(aoi_world *w, bool relayout, bool departures)
{
  w->command.relayout = relayout;
  if (w->radius_high_dirty || w->appeal_high_dirty)
    recompute_highs(w);
  /* A marker is seen from max(the watcher's radius, its own appeal). */
  double seen = fmax(w->radius_high, w->appeal_high);
  double reach = seen + (double)w->config.hysteresis;
  w->command.tick = w->tick + 1;
  w->command.departures = departures;
  if (aoi__stamp(w->command.tick) % AOI__STAMP_AGE == 0)
    age_stamps(w, w->command.tick);
  w->command.ghost_reach = aoi__ghost_reach(w, seen);
  w->command.appeals = w->appeal_high > 0;
  double usual = usual_reach(w, reach);
  w->command.usual_reach = usual;
  choose_far_reach(w, usual);
  w->command.cell_size = w->shape.kind == AOI_SHAPE_CELLS
                             ? fmax(w->shape.cell, usual)
                             : fmax(usual * AOI__CELL_PER_REACH, 1e-3);
  w->command.shutdown = 0;
}

/* A tick with nothing to apply, no view held back by the last one, the
   cuts where they were and the same ghost reach would rebuild the same
   ghosts and grids, compute no watcher and make no event. */
static bool tick_is_idle(const aoi_world *w, bool relayout)
{
  return w->records == 0 && !relayout && !w->views_held && !w->lagging &&
         w->command.ghost_reach == w->last_ghost_reach;
}

/* Skips an idle tick: the tick counts with no handoff, no event and no
   time. */
static void skip_tick(aoi_world *w)
{
  for (unsigned i = 0; i < w->threads; i++) {
    aoi__worker *k = &w->workers[i];
    k->handoffs = k->events_made = 0;
    memset(k->phase_ns, 0, sizeof(k->phase_ns));
    memset(k->cpu_ns, 0, sizeof(k->cpu_ns));
  }
  for (unsigned s = 0; s < w->shard_count; s++)
    w->shards[s].compute_ns = 0;
}

/* Hands each shard its queue through its op ring. */
static void push_queues(aoi_world *w)
{
  for (unsigned s = 0; s < w->shard_count; s++)
    AOI__ASSERT(aoi__ring_count(w->shards[s].ops) == 0); /* last one taken */
  for (unsigned s = 0; s < w->shard_count; s++)
    while (aoi__ring_push(w->shards[s].ops, &w->shards[s].queue) != 0)
      ; /* holds 3; at most one queue is ever on it */
}

/* Whether the thread that starts the tick runs it whole. A small world
   with a few changes is cheaper to tick here than to wake threads for: a
   wake-up and the batches between lanes cost more than the tick itself
   (a tick costs about 50 ns per entity and a few us per changed one; a
   wake-up tens of us). So is any tick of one lane that this thread would
   only wait for (`alone`), and every tick without a pool. */
static bool runs_here(const aoi_world *w, bool alone)
{
  return w->pool == NULL ||
         w->live + 16 * (uint64_t)w->records <= w->inline_cost ||
         (alone && w->threads == 1 && w->inline_single);
}

/* How a started tick goes on (start). */
enum { GO_IDLE, GO_HERE, GO_LANES };

/* The start of a tick, up to where its steps run: 0 and how they run, or
   AOI_ENOMEM, and then nothing was applied. `alone`: this thread would
   only wait for the tick (runs_here). */
static int start(aoi_world *w, bool alone, int *how)
{
  bool cpu = w->config.measure_cpu != 0;
  uint64_t c0 = cpu ? aoi__cpu_ns() : 0;
  uint64_t started = aoi__now_ns();
  bool relayout = aoi__plan_relayout(w);
  /* The last tick's undelivered events move to their outboxes, so that the
     lanes can reuse the segments (and the marks can change). */
  int rc;
  /* (decided once: apply departs only where room was reserved) */
  bool departures = departures_pay(w);
  if ((rc = aoi__segments_settle(w)) != 0 ||
      (rc = reserve_for_tick(w, relayout, departures)) != 0)
    return rc;
  /* From here on nothing can fail before the lanes run. */
  apply_tags(w);
  if (relayout)
    aoi__commit_relayout(w);
  plan_command(w, relayout, departures);
  w->tick_started = started;
  w->skipped = tick_is_idle(w, relayout);
  if (w->skipped) {
    skip_tick(w);
    *how = GO_IDLE;
  } else {
    push_queues(w);
    w->command.on_host = runs_here(w, alone);
    *how = w->command.on_host ? GO_HERE : GO_LANES;
  }
  w->cpu_mark = c0;
  w->serial_cpu_ns = 0;
  return 0;
}

/* ---- after a tick ------------------------------------------------------- */

/* Every SHRINK_PERIOD ticks, the arrays that grew for a burst of
   operations, handoffs or departures give back what the last two periods
   did not need: a flood's memory goes back 8 to 12 ticks after it, while a
   crowd whose needs stay within 4x of their peaks never reallocates. (The
   grid and the compute scratch, sized by entities plus ghosts, are left
   as they are.) */
#define SHRINK_PERIOD 4

/* What an array keeps when it shrinks: what it needed lately, and never
   less than it holds now. The peak's period turns. */
static uint32_t peak_keep(aoi__peak *peak, uint32_t holds)
{
  uint32_t recent = aoi__peak_recent(peak);
  aoi__peak_turn(peak);
  return recent > holds ? recent : holds;
}

/* Gives back what one array of `elem`-byte items did not need lately, but
   never what it holds now. */
static void shrink_to_peak(const aoi_allocator *a, void **array, uint32_t *cap,
                           aoi__peak *peak, uint32_t holds, size_t elem)
{
  aoi__shrink(a, array, cap, peak_keep(peak, holds), elem);
}

static void shrink_arrays(aoi_world *w)
{
  const aoi_allocator *a = &w->allocator;
  /* The needs of the apply phase were noted when the tick reserved them;
     those of the exchange, now. */
  for (unsigned s = 0; s < w->shard_count; s++)
    aoi__peak_note(&w->shards[s].ghost_peak, w->shards[s].ghost_count);
  for (unsigned i = 0; i < w->threads; i++)
    for (unsigned j = 0; j < w->threads; j++)
      aoi__peak_note(&w->workers[i].ghosts_out[j].peak,
                     w->workers[i].ghosts_out[j].count);
  if (w->tick % SHRINK_PERIOD != 0)
    return;
  for (unsigned s = 0; s < w->shard_count; s++) {
    aoi__shard *sh = &w->shards[s];
    aoi__queue *q = &sh->queue;
    /* Each record touches and departs at most once: one peak for three. */
    uint32_t records = aoi__peak_recent(&q->peak);
    aoi__peak_turn(&q->peak);
    aoi__shrink(a, (void **)&q->records, &q->capacity,
                records > q->count ? records : q->count, sizeof(aoi__record));
    shrink_to_peak(a, (void **)&q->extras, &q->extra_capacity, &q->extra_peak,
                   q->extra_count, sizeof(aoi__record_extra));
    aoi__shrink(a, (void **)&sh->touched, &sh->touched_capacity, records,
                sizeof(uint32_t));
    aoi__shrink(a, (void **)&sh->departed, &sh->departed_capacity, records,
                sizeof(aoi__ghost));
    aoi__shrink_lined(a, &sh->entity_block, (void **)&sh->entities,
                      &sh->capacity, peak_keep(&sh->entity_peak, sh->count),
                      sizeof(aoi__entity));
    shrink_to_peak(a, (void **)&sh->ghosts, &sh->ghost_capacity,
                   &sh->ghost_peak, sh->ghost_count, sizeof(aoi__ghost));
  }
  for (unsigned i = 0; i < w->threads; i++)
    for (unsigned j = 0; j < w->threads; j++) {
      aoi__batch *b = &w->workers[i].handoffs_out[j];
      shrink_to_peak(a, &b->items, &b->capacity, &b->peak, b->count,
                     sizeof(aoi__handoff));
      b = &w->workers[i].ghosts_out[j];
      shrink_to_peak(a, &b->items, &b->capacity, &b->peak, b->count,
                     sizeof(aoi__ghost));
    }
}

/* Empties the queues the tick applied, and the bounds reserved for them. */
static void end_queues(aoi_world *w)
{
  for (unsigned s = 0; s < w->shard_count; s++) {
    aoi__shard *sh = &w->shards[s];
    AOI__ASSERT(sh->queue.count <= sh->queue.capacity);
    for (uint32_t i = 0; i < sh->queue.count; i++)
      w->queued[sh->queue.records[i].handle] = AOI__NONE;
    sh->queue.count = sh->queue.extra_count = 0;
    sh->arrivals_bound = 0;
    sh->touched_count = sh->departed_count = 0; /* read only in the tick */
  }
  w->records = 0;
  for (unsigned i = 0; i < w->threads; i++)
    for (unsigned j = 0; j < w->threads; j++)
      w->workers[i].handoffs_out[j].bound = 0;
}

/* Sums what the workers reported into the stats: the slowest worker's
   phase times, the others' counts. Returns the tick's result, a worker's
   failure or 0. */
static int sum_results(aoi_world *w)
{
  int rc = 0;
  aoi_stats *st = &w->stats;
  memset(st->phase_ns, 0, sizeof(st->phase_ns));
  st->ghosts = st->handoffs = st->events = 0;
  w->lagging = false;
  uint64_t span[AOI_PHASE_COUNT] = {0};
  st->work_ns = st->span_ns = 0;
  for (unsigned i = 0; i < w->threads; i++) {
    aoi__worker *k = &w->workers[i];
    if (k->error != 0)
      rc = k->error;
    for (int p = 0; p < AOI_PHASE_COUNT; p++) {
      if (k->phase_ns[p] > st->phase_ns[p])
        st->phase_ns[p] = k->phase_ns[p];
      if (k->cpu_ns[p] > span[p])
        span[p] = k->cpu_ns[p];
      st->work_ns += k->cpu_ns[p];
    }
    st->ghosts += k->ghosts;
    st->handoffs += k->handoffs;
    st->events += k->events_made;
    w->lagging |= k->lagging > 0;
  }
  for (int p = 0; p < AOI_PHASE_COUNT; p++)
    st->span_ns += span[p];
  return rc;
}

/* Handles removed before this tick are free once no view can hold them:
   after a tick that recomputed every view. A view held back by a failed
   tick (rc != 0) may still hold one, and a new entity under it would pass
   for the old one, so those wait for a tick that succeeds. */
static void release_handles(aoi_world *w, int rc)
{
  w->views_held = rc != 0;
  /* Their ids stay readable for one more tick: the leaves of this one name
     them until they are delivered. */
  if (rc == 0) {
    w->free_count += w->limbo_old_count; /* (one ring: see types.h) */
    w->limbo_old_count = 0;
  }
  w->limbo_old_count += w->limbo_count;
  w->limbo_count = 0;
  /* the released ring holds each handle at most once */
  AOI__ASSERT((uint64_t)w->free_count + w->limbo_old_count <=
              w->handle_capacity);
}

/* The per-shard stats and the tick's totals. */
static void publish_stats(aoi_world *w)
{
  for (unsigned s = 0; s < w->shard_count; s++) {
    w->shard_entities[s] = w->shards[s].count;
    w->shard_ns[s] = w->shards[s].compute_ns;
  }
  aoi_stats *st = &w->stats; /* (its tick is w->tick: aoi_world_stats) */
  st->entities = w->live;
  st->watchers = w->watchers;
  st->tick_ns = w->skipped ? 0 : aoi__now_ns() - w->tick_started;
  st->work_ns += w->serial_cpu_ns;
  st->span_ns += w->serial_cpu_ns;
}

/* ---- quiet worlds ------------------------------------------------------- */

/* An empty world that nobody submits to (an instance between groups)
   would still pay a whole tick's start and finish each tick. Once its
   ticks have been skipped, empty, for three shrink periods in a row, its
   arrays have shrunk to nothing and each further tick's start and finish
   change nothing but the tick count, as long as nothing is submitted
   (records, tags) and nothing is left to settle, free or deliver: the
   world is quiet, and quiet_tick counts its tick alone. Every other
   change the host can make between ticks is a record or a tag, so the
   check reads one cache line. */
static void note_quiet(aoi_world *w)
{
  bool empty = w->skipped && w->live == 0 && w->backlog_count == 0 &&
               w->limbo_count == 0 && w->limbo_old_count == 0 &&
               !w->views_held && !w->lagging && !w->radius_high_dirty &&
               !w->appeal_high_dirty;
  w->quiet_ticks = empty ? w->quiet_ticks + (w->quiet_ticks < UINT32_MAX) : 0;
  w->quiet = w->quiet_ticks >= 3 * SHRINK_PERIOD;
}

/* Counts the tick of a quiet world with nothing submitted; false (and
   nothing done) for any other. */
static bool quiet_tick(aoi_world *w)
{
  if (!w->quiet || w->records != 0 || w->tag_queued_count != 0)
    return false;
  w->tick++;
  return true;
}

/* The end of a tick, once every lane has finished its steps: the lanes'
   results collected, the arrays recycled, the stats published. `whole`:
   this thread ran the tick from its start, whose CPU clock reading
   (cpu_mark) times the whole tick as serial. */
static void finish(aoi_world *w, bool whole)
{
  bool cpu = w->config.measure_cpu != 0;
  uint64_t c0 = !cpu ? 0 : whole ? w->cpu_mark : aoi__cpu_ns();
  w->tick++;
  end_queues(w);
  aoi__installs_clear(w);
  int rc = sum_results(w);
  release_handles(w, rc);
  aoi__segments_assign(w);
  shrink_arrays(w);
  w->last_ghost_reach = w->command.ghost_reach;
  if (cpu)
    w->serial_cpu_ns += aoi__cpu_ns() - c0;
  publish_stats(w);
  note_quiet(w);
#ifdef AOI_CHECK_INVARIANTS
  aoi__check_tick(w); /* after the timing: the walk is no part of a tick */
#endif
  w->tick_rc = rc;
}

/* Counts the tick done in the job the host waits on: the last touch of
   the world by a thread of its pool. */
static void complete(aoi_world *w)
{
  aoi__job_done(w->job);
}

/* ---- the tasks ---------------------------------------------------------- */

/* Runs lane k's step, and while this lane is the last to finish a step,
   the next one: it pushes the other lanes' tasks of that step and runs
   lane 0's itself. The last lane of the last step finishes the tick. */
static void run_lanes(aoi_world *w, aoi__worker *k);

/* Starts step w->step: every lane from `from` on gets its task on the
   pool, ahead of what waits there. */
static void push_lanes(aoi_world *w, unsigned from)
{
  atomic_store(&w->lanes_left, w->threads);
  if (from >= w->threads)
    return;
  for (unsigned i = from; i + 1 < w->threads; i++)
    w->workers[i].task.next = &w->workers[i + 1].task;
  aoi__pool_push(w->pool, &w->workers[from].task,
                 &w->workers[w->threads - 1].task, w->threads - from, true);
}

static void run_lanes(aoi_world *w, aoi__worker *k)
{
  for (;;) {
    aoi__lane_step(k, w->step, &w->command, w->config.measure_cpu != 0);
    if (atomic_fetch_sub(&w->lanes_left, 1) != 1)
      return; /* another lane goes on: w is not ours to touch */
    if (w->step == AOI_PHASE_COMPUTE) {
      finish(w, false);
      complete(w);
      return;
    }
    w->step++;
    push_lanes(w, 1);
    k = &w->workers[0];
  }
}

static void lane_task(aoi__task *t)
{
  aoi__worker *k = (aoi__worker *)((char *)t - offsetof(aoi__worker, task));
  run_lanes(k->world, k);
}

/* Goes on with a started tick: skips it, runs it here, or hands its
   lanes to the pool (running lane 0's first step here when `share`). */
static void go(aoi_world *w, int how, bool share)
{
  if (how == GO_LANES) {
    if (w->config.measure_cpu != 0)
      w->serial_cpu_ns = aoi__cpu_ns() - w->cpu_mark;
    w->step = AOI_PHASE_APPLY;
    push_lanes(w, share ? 1 : 0);
    if (share)
      run_lanes(w, &w->workers[0]);
    return;
  }
  if (how == GO_HERE)
    aoi__tick_on_host(w, &w->command);
  finish(w, true);
  complete(w);
}

/* A world's whole tick from its start, on a pool thread (aoi_tick_many). */
static void start_task(aoi__task *t)
{
  aoi_world *w = (aoi_world *)((char *)t - offsetof(aoi_world, start));
  int how;
  int rc = start(w, true, &how);
  if (rc != 0) {
    w->tick_rc = rc; /* nothing applied; `tick` stays */
    complete(w);
    return;
  }
  go(w, how, true);
}

/* Segment k's delivery, on a pool thread (aoi_deliver_many). */
static void deliver_task(aoi__task *t)
{
  aoi__worker *k = (aoi__worker *)((char *)t - offsetof(aoi__worker, deliver));
  aoi_world *w = k->world;
  aoi__job *job = w->deliver_job;
  k->deliver_rc =
      w->deliver_slots != NULL
          ? aoi_deliver_slots(w, k->index, w->deliver_slots, w->deliver_fn,
                              w->deliver_user)
          : aoi_deliver(w, k->index, w->deliver_fn, w->deliver_user);
  aoi__job_done(job);
}

void aoi__tick_tasks_init(aoi_world *w)
{
  w->start.run = start_task;
  for (unsigned i = 0; i < w->threads; i++) {
    w->workers[i].task.run = lane_task;
    w->workers[i].task.big = true;
    w->workers[i].deliver.run = deliver_task;
  }
}

/* ---- the host's calls --------------------------------------------------- */

/* aoi_tick_begin; `blocking` when aoi_tick calls it. */
static int tick_begin(aoi_world *w, bool blocking)
{
  if (w == NULL)
    return AOI_EINVAL;
  int rc = aoi__busy(w);
  if (rc != 0)
    return rc;
  if (quiet_tick(w)) {
    w->in_flight = true;
    w->job = &w->solo;
    w->tick_rc = 0;
    aoi__job_arm(&w->solo, 0); /* done */
    return 0;
  }
  int how;
  if ((rc = start(w, blocking, &how)) != 0)
    return rc;
  w->in_flight = true;
  w->job = &w->solo;
  aoi__job_arm(&w->solo, 1);
  go(w, how, blocking && w->host_share && w->own_pool);
  return 0;
}

int aoi_tick_poll(aoi_world *w)
{
  if (w == NULL)
    return AOI_EINVAL;
  if (!w->in_flight) /* (a delivery runs only between ticks) */
    return aoi__busy(w) != 0 ? AOI_EBUSY : AOI_EINVAL;
  return aoi__job_finished(w->job) ? 1 : 0;
}

int aoi_tick_end(aoi_world *w)
{
  if (w == NULL)
    return AOI_EINVAL;
  if (!w->in_flight)
    return aoi__busy(w) != 0 ? AOI_EBUSY : AOI_EINVAL;
  aoi__job_wait(w->job);
  w->in_flight = false;
  return w->tick_rc;
}

int aoi_tick_begin(aoi_world *w)
{
  return tick_begin(w, false);
}

int aoi_tick(aoi_world *w)
{
  int rc = tick_begin(w, true);
  return rc != 0 ? rc : aoi_tick_end(w);
}

/* ---- many worlds -------------------------------------------------------- */

/* A world whose start is taken alone (pool.h): its lanes, or its whole
   tick, are a large task. */
#define BIG_WORLD 4096u

/* The checks of aoi_tick_many and aoi_tick_many_begin, in one pass that
   marks every world listed: AOI_EINVAL, else AOI_EBUSY, else 0. A world
   stays marked until begin_many (or, on an error, this) clears it. */
static int check_many(aoi_world *const *worlds, size_t n)
{
  if ((n > 0 && worlds == NULL) || n > UINT32_MAX)
    return AOI_EINVAL;
  int rc = 0;
  size_t marked = 0;
  for (; marked < n; marked++) {
    aoi_world *w = worlds[marked];
    if (marked + 8 < n && worlds[marked + 8] != NULL)
      __builtin_prefetch(worlds[marked + 8], 1);
    if (w == NULL || w->listed) {
      rc = AOI_EINVAL;
      break;
    }
    w->listed = true;
    if (rc == 0)
      rc = aoi__busy(w);
  }
  if (rc != 0)
    for (size_t i = 0; i < marked; i++)
      worlds[i]->listed = false;
  return rc;
}

/* A run of start tasks for one pool, pushed in one go. */
typedef struct chain {
  aoi_pool *pool;
  aoi__task *first, *last;
  uint32_t count;
} chain;

static void chain_flush(chain *c)
{
  if (c->count > 0)
    aoi__pool_push(c->pool, c->first, c->last, c->count, false);
  c->count = 0;
}

static void chain_add(chain *c, aoi_pool *pool, aoi__task *t)
{
  if (c->count == 0)
    c->first = t;
  else
    c->last->next = t;
  c->last = t;
  c->pool = pool;
  c->count++;
}

/* Starts every world of a checked list, and clears its mark: those on
   pools as tasks counted in `job` (each in its own when NULL), pushed
   to their pool a run at a time, large ones (a task alone, pool.h)
   ahead of the small ones; those without a pool on this thread. */
static void begin_many(aoi_world *const *worlds, size_t n, aoi__job *job)
{
  chain big = {0}, small = {0};
  aoi_pool *pool = NULL;
  uint32_t quiet = 0;
  for (size_t i = 0; i < n; i++) {
    aoi_world *w = worlds[i];
    if (i + 8 < n)
      __builtin_prefetch(worlds[i + 8]); /* (the line read here) */
    w->listed = false;
    w->in_flight = true;
    w->job = job != NULL ? job : &w->solo;
    w->quieted = quiet_tick(w);
    if (w->quieted) {
      w->tick_rc = 0;
      if (job == NULL)
        aoi__job_arm(&w->solo, 0);
      quiet++;
      continue;
    }
    if (job == NULL)
      aoi__job_arm(&w->solo, 1);
    if (w->pool == NULL)
      continue;
    if (w->pool != pool) {
      chain_flush(&big); /* (worlds of one pool run in order) */
      chain_flush(&small);
      pool = w->pool;
    }
    w->start.big = w->threads > 1 || w->live > BIG_WORLD;
    chain_add(w->start.big ? &big : &small, w->pool, &w->start);
    if (small.count == UINT32_MAX || big.count == UINT32_MAX) {
      chain_flush(&big);
      chain_flush(&small);
    }
  }
  chain_flush(&big);
  chain_flush(&small);
  if (job != NULL)
    aoi__job_done_some(job, quiet);
  for (size_t i = 0; i < n; i++) {
    aoi_world *w = worlds[i];
    if (w->pool != NULL || w->quieted)
      continue;
    int how;
    int rc = start(w, true, &how);
    if (rc != 0) {
      w->tick_rc = rc;
      complete(w);
    } else {
      go(w, how, false);
    }
  }
}

int aoi_tick_many(aoi_world *const *worlds, size_t n, int *results)
{
  if (n > 0 && results == NULL)
    return AOI_EINVAL;
  int rc = check_many(worlds, n);
  if (rc != 0)
    return rc;
  aoi__job job;
  if (aoi__job_init(&job, n > 0 && worlds[0]->pool != NULL
                              ? worlds[0]->pool->host_spin_ns
                              : 0) != 0) {
    for (size_t i = 0; i < n; i++)
      worlds[i]->listed = false;
    return AOI_ESYS;
  }
  aoi__job_arm(&job, (uint32_t)n);
  begin_many(worlds, n, &job);
  aoi__job_wait(&job);
  aoi__job_destroy(&job);
  for (size_t i = 0; i < n; i++) {
    aoi_world *w = worlds[i];
    w->in_flight = false;
    results[i] = w->tick_rc;
    if (rc == 0)
      rc = w->tick_rc;
  }
  return rc;
}

int aoi_tick_many_begin(aoi_world *const *worlds, size_t n)
{
  int rc = check_many(worlds, n);
  if (rc != 0)
    return rc;
  begin_many(worlds, n, NULL);
  return 0;
}

int aoi_tick_many_end(aoi_world *const *worlds, size_t n, int *results)
{
  if ((n > 0 && (worlds == NULL || results == NULL)) || n > UINT32_MAX)
    return AOI_EINVAL;
  int rc = 0;
  size_t marked = 0;
  for (; marked < n; marked++) {
    aoi_world *w = worlds[marked];
    if (w == NULL || w->listed) {
      rc = AOI_EINVAL;
      break;
    }
    w->listed = true;
  }
  for (size_t i = 0; i < marked; i++)
    worlds[i]->listed = false;
  /* then AOI_EBUSY (a delivery runs), then one with no tick in flight */
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (!worlds[i]->in_flight && aoi__busy(worlds[i]) != 0)
      rc = AOI_EBUSY;
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (!worlds[i]->in_flight)
      rc = AOI_EINVAL;
  if (rc != 0)
    return rc;
  for (size_t i = 0; i < n; i++) {
    results[i] = aoi_tick_end(worlds[i]);
    if (rc == 0)
      rc = results[i];
  }
  return rc;
}

/* ---- delivering many worlds --------------------------------------------- */

/* aoi_deliver_many, and with `slots` aoi_deliver_many_slots (`fn` then
   the backlogs' callback). */
static int deliver_many(aoi_world *const *worlds, size_t n,
                        aoi_deliver_slots_fn slots, aoi_deliver_fn fn,
                        void *user, int *results)
{
  if (n > 0 && (results == NULL || fn == NULL))
    return AOI_EINVAL;
  int rc = check_many(worlds, n);
  if (rc != 0)
    return rc;
  uint64_t segments = 0;
  for (size_t i = 0; i < n; i++) {
    aoi_world *w = worlds[i];
    w->listed = false;
    if (w->pool != NULL)
      segments += w->threads;
  }
  if (segments > UINT32_MAX)
    return AOI_EINVAL;
  aoi__job job;
  if (aoi__job_init(&job, n > 0 && worlds[0]->pool != NULL
                              ? worlds[0]->pool->host_spin_ns
                              : 0) != 0)
    return AOI_ESYS;
  aoi__job_arm(&job, (uint32_t)segments);
  /* Every segment a task, a pool's run of them in one push; those of a
     large world alone, ahead. */
  chain big = {0}, small = {0};
  aoi_pool *pool = NULL;
  for (size_t i = 0; i < n; i++) {
    aoi_world *w = worlds[i];
    if (w->pool == NULL)
      continue;
    if (w->pool != pool) {
      chain_flush(&big);
      chain_flush(&small);
      pool = w->pool;
    }
    w->deliver_fn = fn;
    w->deliver_slots = slots;
    w->deliver_user = user;
    w->deliver_job = &job;
    bool is_big = w->live > BIG_WORLD;
    for (unsigned s = 0; s < w->threads; s++) {
      aoi__task *t = &w->workers[s].deliver;
      t->big = is_big;
      chain_add(is_big ? &big : &small, pool, t);
    }
  }
  chain_flush(&big);
  chain_flush(&small);
  for (size_t i = 0; i < n; i++) {
    aoi_world *w = worlds[i];
    if (w->pool != NULL)
      continue;
    int r = 0;
    for (unsigned s = 0; s < w->threads && r == 0; s++)
      r = slots != NULL ? aoi_deliver_slots(w, s, slots, fn, user)
                        : aoi_deliver(w, s, fn, user);
    results[i] = r;
  }
  aoi__job_wait(&job);
  aoi__job_destroy(&job);
  for (size_t i = 0; i < n; i++) {
    aoi_world *w = worlds[i];
    if (w->pool != NULL) {
      results[i] = 0;
      for (unsigned s = 0; s < w->threads; s++)
        if (results[i] == 0)
          results[i] = w->workers[s].deliver_rc;
    }
    if (rc == 0)
      rc = results[i];
  }
  return rc;
}

int aoi_deliver_many(aoi_world *const *worlds, size_t n, aoi_deliver_fn fn,
                     void *user, int *results)
{
  return deliver_many(worlds, n, NULL, fn, user, results);
}

int aoi_deliver_many_slots(aoi_world *const *worlds, size_t n,
                           aoi_deliver_slots_fn fn, aoi_deliver_fn backlog_fn,
                           void *user, int *results)
{
  if (n > 0 && fn == NULL)
    return AOI_EINVAL;
  return deliver_many(worlds, n, fn, backlog_fn, user, results);
}
