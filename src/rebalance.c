/*
 * rebalance.c: moving the shard cuts, on the host thread at the start of a
 * tick (tick.c).
 *
 * A crowd that gathers in one city would leave its work on one core. Every
 * rebalance_interval ticks the host weighs each shard's load (each entity
 * weighs 1 plus its view's size); when the busiest shard carries more than
 * 1.25x the mean, it plans new cuts at the quantiles of a weighted sample
 * of the entities' coordinates, and counts the entities the new cuts may
 * hand off (from where each stands, and from where this tick's ops put
 * it: an upper bound), so that the tick can reserve for them before
 * anything changes. The tick then commits the cuts and tells the workers to check
 * every entity's shard (aoi__tick_command.relayout). Rebalancing is only
 * an optimisation: a plan that cannot get memory is skipped.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int compare_samples(const void *a, const void *b)
{
  float x = ((const aoi__sample *)a)->v, y = ((const aoi__sample *)b)->v;
  return (x > y) - (x < y);
}

/* Cuts that split the sampled coordinates into `bands` parts of equal
   weight. */
static void quantile_cuts(aoi__sample *sample, uint32_t n, uint64_t total,
                          unsigned bands, double *cut)
{
  AOI__ASSERT(n > 0 && bands >= 1);
  qsort(sample, n, sizeof(*sample), compare_samples);
  uint64_t sum = 0;
  uint32_t i = 0;
  for (unsigned c = 1; c < bands; c++) {
    uint64_t want = total * c / bands;
    while (i + 1 < n && sum + sample[i].weight <= want)
      sum += sample[i++].weight;
    double v = sample[i].v;
    if (c > 1 && !(v > cut[c - 2]))
      v = nextafter(cut[c - 2], INFINITY); /* strictly increasing */
    cut[c - 1] = v;
  }
}

/* The work an entity brings its shard each tick: itself, plus the view it
   walks when it is a watcher. A crowd's dense quarter costs more than its
   head count says. */
static uint32_t entity_load(const aoi__entity *e)
{
  return 1 + e->view.count;
}

/* Counts an entity in shard `from` at (x, y) that the new cuts `next` may
   hand off. */
static void plan_arrival(aoi_world *w, const aoi__layout *next, unsigned from,
                         float x, float y)
{
  unsigned to = aoi__layout_shard(next, x, y);
  AOI__ASSERT(from < w->shard_count && to < w->shard_count);
  if (to == from)
    return;
  w->plan.arrivals[to]++;
  unsigned from_worker = aoi__worker_of(w, from);
  unsigned to_worker = aoi__worker_of(w, to);
  if (from_worker != to_worker)
    w->plan.bound[from_worker * w->threads + to_worker]++;
}

/* Whether the cuts are due to move this tick: every rebalance_interval
   ticks, when the busiest shard carries more than 1.25x the mean load.
   Writes the entities counted. */
static bool rebalance_due(const aoi_world *w, uint64_t *count)
{
  AOI__ASSERT(aoi__lanes_idle(w)); /* between ticks, or a tick's start */
  unsigned interval = w->config.rebalance_interval;
  unsigned shards = w->shard_count;
  if (interval == 0 || shards < 2 || (w->tick + 1) % interval != 0)
    return false;
  uint64_t total = 0, most = 0;
  *count = 0;
  for (unsigned s = 0; s < shards; s++) {
    uint64_t load = 0;
    for (uint32_t i = 0; i < w->shards[s].count; i++)
      load += entity_load(&w->shards[s].entities[i]);
    total += load;
    *count += w->shards[s].count;
    if (load > most)
      most = load;
  }
  /* busiest shard within 1.25x of the mean load: no move */
  return !(*count < 4ull * shards || most * 4 <= total * 5 / shards);
}

/* The plan's arrays, allocated at the first plan: false without memory. */
static bool plan_reserve(aoi_world *w, uint32_t n)
{
  const aoi_allocator *a = &w->allocator;
  aoi__plan *p = &w->plan;
  if (p->xcut == NULL) {
    p->xcut = aoi__calloc(a, sizeof(double) * w->layout.cols);
    p->ycut = aoi__calloc(a, sizeof(double) * w->layout.cols * w->layout.rows);
    p->arrivals = aoi__calloc(a, sizeof(uint32_t) * w->shard_count);
    p->bound = aoi__calloc(a, sizeof(uint32_t) * w->threads * w->threads);
    if (!p->xcut || !p->ycut || !p->arrivals || !p->bound)
      return false;
  }
  return aoi__reserve(a, (void **)&p->xs, &p->xs_capacity, n,
                      sizeof(aoi__sample)) == 0 &&
         aoi__reserve(a, (void **)&p->ys, &p->ys_capacity, n,
                      sizeof(aoi__sample)) == 0;
}

/* Plans the new cuts at the quantiles of every step-th entity's
   coordinates (at most n), weighted by their loads: the column cuts at
   the x quantiles of them all, then each column's row cuts at the y
   quantiles of those in it, so that every cell carries an equal share. */
static void plan_cuts(aoi_world *w, uint32_t step, uint32_t n)
{
  aoi__plan *p = &w->plan;
  const aoi__layout *l = &w->layout;
  unsigned cols = l->cols, rows = l->rows;
  AOI__ASSERT(step >= 1 && n <= p->xs_capacity && n <= p->ys_capacity);
  uint32_t m = 0, seen = 0;
  uint64_t sampled = 0;
  for (unsigned s = 0; s < w->shard_count; s++)
    for (uint32_t i = 0; i < w->shards[s].count; i++)
      if (seen++ % step == 0 && m < n) {
        const aoi__entity *e = &w->shards[s].entities[i];
        uint32_t load = entity_load(e);
        p->xs[m] = (aoi__sample){e->x, load};
        sampled += load;
        m++;
      }
  quantile_cuts(p->xs, m, sampled, cols, p->xcut);
  if (rows == 1)
    return;
  /* The same samples again, by the new column they fall in: ys holds
     column 0's, then column 1's, ... (`start`, in arrivals' room). */
  aoi__layout next = {cols, rows, p->xcut, NULL};
  uint32_t *start = p->arrivals; /* cols + 1 <= shards + 1 words: below */
  uint64_t weight[AOI__MAX_SHARDS];
  memset(start, 0, sizeof(uint32_t) * cols);
  memset(weight, 0, sizeof(uint64_t) * cols);
  for (int pass = 0; pass < 2; pass++) {
    uint32_t put = 0;
    seen = 0;
    if (pass == 1) /* counts to starts */
      for (unsigned c = 0, at = 0; c < cols; c++) {
        uint32_t count = start[c];
        start[c] = at;
        at += count;
      }
    for (unsigned s = 0; s < w->shard_count; s++)
      for (uint32_t i = 0; i < w->shards[s].count; i++)
        if (seen++ % step == 0 && put++ < m) {
          const aoi__entity *e = &w->shards[s].entities[i];
          unsigned c = aoi__layout_col(&next, e->x);
          if (pass == 0) {
            start[c]++;
            weight[c] += entity_load(e);
          } else {
            p->ys[start[c]++] = (aoi__sample){e->y, entity_load(e)};
          }
        }
  }
  /* start[c] is now where column c's samples end */
  for (unsigned c = 0, from = 0; c < cols; c++) {
    double *cut = p->ycut + (size_t)c * (rows - 1);
    uint32_t count = start[c] - from;
    if (count > 0)
      quantile_cuts(p->ys + from, count, weight[c], rows, cut);
    else /* nobody: the column keeps its cuts */
      memcpy(cut, aoi__layout_ycut(l, c), sizeof(double) * (rows - 1));
    from = start[c];
  }
}

/* Counts where the planned cuts send the entities: per shard, the
   arrivals; per worker pair, the handoffs. Under the new cuts an entity
   may leave from where it is now, or from where this tick's ops put it:
   both are counted, an upper bound. */
static void plan_arrivals(aoi_world *w)
{
  aoi__plan *p = &w->plan;
  unsigned shards = w->shard_count;
  aoi__layout next = {w->layout.cols, w->layout.rows, p->xcut, p->ycut};
  memset(p->arrivals, 0, sizeof(uint32_t) * shards);
  memset(p->bound, 0, sizeof(uint32_t) * w->threads * w->threads);
  for (unsigned s = 0; s < shards; s++)
    for (uint32_t i = 0; i < w->shards[s].count; i++) {
      const aoi__entity *e = &w->shards[s].entities[i];
      plan_arrival(w, &next, s, e->x, e->y);
    }
  for (unsigned s = 0; s < shards; s++) {
    const aoi__queue *q = &w->shards[s].queue;
    for (uint32_t i = 0; i < q->count; i++) {
      const aoi__record *r = &q->records[i];
      if (aoi__record_what(q, r) & (AOI__RECORD_ADD | AOI__RECORD_MOVE))
        plan_arrival(w, &next, s, r->x, r->y);
    }
  }
}

/* Decides whether this tick moves the shard cuts and, if so, plans the new
   ones and counts where every entity may go, so that the tick can
   reserve for the handoffs. Nothing is changed yet; false when no move is
   due, or when the plan cannot get memory (rebalancing is only an
   optimisation). */
bool aoi__plan_relayout(aoi_world *w)
{
  uint64_t count;
  if (!rebalance_due(w, &count))
    return false;
  uint32_t step = (uint32_t)(count / 65536 + 1);
  uint32_t n = (uint32_t)(count / step + w->shard_count);
  if (!plan_reserve(w, n))
    return false;
  plan_cuts(w, step, n);
  plan_arrivals(w);
  return true;
}

void aoi__commit_relayout(aoi_world *w)
{
  AOI__ASSERT(aoi__lanes_idle(w) && w->plan.xcut != NULL);
  if (w->layout.cols > 1)
    memcpy(w->layout.xcut, w->plan.xcut, sizeof(double) * (w->layout.cols - 1));
  if (w->layout.rows > 1)
    memcpy(w->layout.ycut, w->plan.ycut,
           sizeof(double) * w->layout.cols * (w->layout.rows - 1));
  w->stats.rebalances++;
}
