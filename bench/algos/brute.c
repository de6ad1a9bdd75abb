/*
 * brute.c: brute force, every watcher against every marker, O(N x M) a
 * tick: the simplest reference there is, and the cost the others exist to
 * avoid.
 *
 * A tick lists the live markers in id order (positions and layers side
 * by side, what the inner loop reads), then for each watcher walks the
 * whole list once, and diffs the markers that pass the layer test and the
 * spec's test at radius + hysteresis with its view (algo_diff_full).
 * Nothing is kept between ticks but the views.
 *
 * At 20,000 entities that is 4 x 10^8 tests a tick; aoi-bench refuses
 * brute force above that unless told --force-brute.
 */
#include "algo_core.h"

#include <stdlib.h>

#include "bench.h"

typedef struct brute {
  algo base;
  /* The live markers of this tick, by id: */
  algo_sighting *sights;
  float *xs, *ys;
  uint32_t *layers;
  size_t marker_capacity;
} brute;

static algo *brute_create(const algo_params *params)
{
  return algo_new(&algo_brute, params->config, sizeof(brute));
}

static void brute_destroy(algo *a)
{
  brute *b = (brute *)a;
  free(b->sights);
  free(b->xs);
  free(b->ys);
  free(b->layers);
  algo_delete(a);
}

/* The live markers, in id order, into sights / xs / ys / layers. */
static size_t list_markers(brute *b)
{
  algo *a = &b->base;
  if (a->order_count > b->marker_capacity) {
    size_t old = b->marker_capacity, n = a->order_count;
    b->sights = algo_resize(a, b->sights, old * sizeof(*b->sights),
                            n * sizeof(*b->sights));
    b->xs = algo_resize(a, b->xs, old * sizeof(float), n * sizeof(float));
    b->ys = algo_resize(a, b->ys, old * sizeof(float), n * sizeof(float));
    b->layers = algo_resize(a, b->layers, old * sizeof(uint32_t),
                            n * sizeof(uint32_t));
    b->marker_capacity = n;
  }
  size_t n = 0;
  for (size_t k = 0; k < a->order_count; k++) {
    uint32_t s = a->order[k].slot;
    const algo_entity *e = &a->entities[s];
    if (!(e->flags & AOI_MARKER))
      continue;
    b->sights[n] = algo_sight(a, s);
    b->xs[n] = e->x;
    b->ys[n] = e->y;
    b->layers[n] = e->layers;
    n++;
  }
  return n;
}

/* Watcher `slot` against every marker: the candidates. */
static size_t scan(brute *b, uint32_t slot, size_t markers)
{
  algo *a = &b->base;
  const algo_entity *w = &a->entities[slot];
  double reach = algo_keep_reach(a, w);
  ALGO_RESERVE(a, a->candidates, a->candidate_capacity, markers);
  size_t n = 0;
  if (a->shape == AOI_SHAPE_CIRCLE) {
    /* algo_within's circle, written out: the one loop brute force is. */
    double wx = w->x, wy = w->y, limit = reach * reach;
    for (size_t i = 0; i < markers; i++) {
      double dx = wx - (double)b->xs[i], dy = wy - (double)b->ys[i];
      if (dx * dx + dy * dy <= limit && (w->interest & b->layers[i]) &&
          b->sights[i].slot != slot)
        a->candidates[n++] = b->sights[i];
    }
    return n;
  }
  for (size_t i = 0; i < markers; i++)
    if ((w->interest & b->layers[i]) && b->sights[i].slot != slot &&
        algo_within(a, w->x, w->y, b->xs[i], b->ys[i], reach))
      a->candidates[n++] = b->sights[i];
  return n;
}

static void brute_tick(algo *a)
{
  brute *b = (brute *)a;
  algo_begin_tick(a);
  size_t markers = list_markers(b);
  for (size_t k = 0; k < a->order_count; k++) {
    uint32_t s = a->order[k].slot;
    if (a->entities[s].flags & AOI_WATCHER)
      algo_diff_full(a, s, scan(b, s, markers));
  }
  algo_end_tick(a);
}

const algo_class algo_brute = {
    "brute",
    "every watcher against every marker, every tick: O(N x M)",
    brute_create, brute_destroy, algo_plain_add, algo_plain_move,
    algo_plain_remove, brute_tick};
