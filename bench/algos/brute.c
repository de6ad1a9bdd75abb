/*
 * brute.c: brute force, every watcher against every marker, O(N x M) a
 * tick: the simplest reference there is, and the cost the others exist to
 * avoid.
 *
 * A tick lists the live markers sorted by id (positions and layers side by
 * side, what the inner loop reads), then for each watcher walks the whole
 * list once: the markers that pass the layer test and the spec's test at
 * radius + hysteresis come out already in id order, and are diffed with
 * the watcher's view (algo_diff_full). Nothing is kept between ticks but
 * the views.
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
  algo_candidate *order;
  size_t order_capacity;
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
  free(b->order);
  free(b->xs);
  free(b->ys);
  free(b->layers);
  algo_delete(a);
}

/* The live markers, sorted by id, into order / xs / ys / layers. */
static size_t list_markers(brute *b)
{
  algo *a = &b->base;
  size_t n = 0;
  ALGO_RESERVE(a, b->order, b->order_capacity, a->entity_count);
  for (size_t s = 0; s < a->entity_count; s++)
    if (algo_is_live(&a->entities[s], AOI_MARKER))
      b->order[n++] = (algo_candidate){a->entities[s].id, (uint32_t)s};
  algo_sort_candidates(b->order, n);
  if (n > b->marker_capacity) {
    size_t old = b->marker_capacity;
    b->xs = algo_resize(a, b->xs, old * sizeof(float), n * sizeof(float));
    b->ys = algo_resize(a, b->ys, old * sizeof(float), n * sizeof(float));
    b->layers = algo_resize(a, b->layers, old * sizeof(uint32_t),
                            n * sizeof(uint32_t));
    b->marker_capacity = n;
  }
  for (size_t i = 0; i < n; i++) {
    const algo_entity *e = &a->entities[b->order[i].slot];
    b->xs[i] = e->x;
    b->ys[i] = e->y;
    b->layers[i] = e->layers;
  }
  return n;
}

/* Watcher `slot` against every marker: the candidates, in id order. */
static size_t scan(brute *b, uint32_t slot, size_t markers)
{
  algo *a = &b->base;
  const algo_entity *w = &a->entities[slot];
  double reach = algo_keep_reach(a, w);
  ALGO_RESERVE(a, a->candidates, a->candidate_capacity, markers);
  size_t n = 0;
  if (a->shape == AOI_SHAPE_CIRCLE) {
    /* algo_within's circle, inlined: the one loop brute force is. */
    double wx = w->x, wy = w->y, limit = reach * reach;
    for (size_t i = 0; i < markers; i++) {
      double dx = wx - (double)b->xs[i], dy = wy - (double)b->ys[i];
      if (dx * dx + dy * dy <= limit && (w->interest & b->layers[i]) &&
          b->order[i].slot != slot)
        a->candidates[n++] = b->order[i];
    }
    return n;
  }
  for (size_t i = 0; i < markers; i++)
    if ((w->interest & b->layers[i]) && b->order[i].slot != slot &&
        algo_within(a, w->x, w->y, b->xs[i], b->ys[i], reach))
      a->candidates[n++] = b->order[i];
  return n;
}

static void brute_tick(algo *a)
{
  brute *b = (brute *)a;
  algo_begin_tick(a);
  size_t markers = list_markers(b);
  for (size_t s = 0; s < a->entity_count; s++)
    if (algo_is_live(&a->entities[s], AOI_WATCHER))
      algo_diff_full(a, (uint32_t)s, scan(b, (uint32_t)s, markers));
  algo_end_tick(a);
}

const algo_class algo_brute = {
    "brute",
    "every watcher against every marker, every tick: O(N x M)",
    brute_create, brute_destroy, algo_plain_add, algo_plain_move,
    algo_plain_remove, brute_tick};
