/*
 * shard.c: the worker threads and the phases of a tick, each run by every
 * worker on its own shards.
 *
 * A worker sleeps on its bell until the host pushes a tick command onto its
 * control ring. Then, for its shards (shard i belongs to worker
 * i % threads):
 *
 *  1. Apply. Drain each shard's op ring up to the end marker: adds, moves,
 *     radius and layer changes, removes. Every entity the ops added or moved
 *     is checked against the layout; one that now lies in another shard is
 *     handed off: moved directly when that shard is this worker's, or else
 *     appended to the handoff batch for the owning worker. Each worker then
 *     pushes exactly one handoff batch (maybe empty) to every peer and takes
 *     exactly one from every peer, inserting the entities it receives. After
 *     this every entity sits in the shard its position names.
 *
 *  2. Exchange. Every owned marker within ghost reach (the largest watcher
 *     reach, per axis, shape-aware) of another shard's rectangle is copied
 *     there as a ghost, again with one batch per peer. Since a watcher's
 *     position lies in its own shard's rectangle, every marker it could see
 *     is now in that shard, owned or ghosted.
 *
 *  3. Compute. The shard indexes its owned entities and ghosts in a uniform
 *     grid, then for each owned watcher gathers the markers within its reach
 *     plus hysteresis, sorts them by id, and merges them with its previous
 *     view (also sorted by id): that merge yields the leaves, enters and
 *     moves in output order, and the new view. Events go straight into the
 *     watcher's outbox, which this worker owns while it owns the watcher.
 *
 * Batches are owned by their producer and reused every tick; the consumer is
 * done with one before it reports the tick done, and the host starts the
 * next tick only after every worker has, so reuse never races. Each ring is
 * FIFO and carries one handoff batch then one ghost batch per tick, so a
 * consumer that takes exactly one message per peer per phase never confuses
 * phases. No phase needs a barrier: the batches are the synchronisation.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define INNER (1u << 16)

unsigned aoi__worker_of(const aoi_world *w, unsigned shard)
{
  return shard % w->threads;
}

int aoi__shard_insert(const aoi_allocator *a, aoi__shard *s,
                      aoi__location *location, const aoi__entity *entity)
{
  int rc = aoi__reserve(a, (void **)&s->entities, &s->capacity, s->count + 1,
                        sizeof(aoi__entity));
  if (rc != 0)
    return rc;
  uint32_t slot = s->count++;
  s->entities[slot] = *entity;
  location[entity->handle].shard = s->index;
  location[entity->handle].slot = slot;
  return 0;
}

/* Removes the entity at `slot`, moving the last one into its place. */
static void shard_take(aoi__shard *s, aoi__location *location, uint32_t slot)
{
  uint32_t last = s->count - 1;
  if (slot != last) {
    s->entities[slot] = s->entities[last];
    location[s->entities[slot].handle].slot = slot;
  }
  s->count--;
}

void aoi__shard_free(const aoi_allocator *a, aoi__shard *s)
{
  for (uint32_t i = 0; i < s->count; i++)
    aoi__free(a, s->entities[i].view.items,
              sizeof(aoi__seen) * s->entities[i].view.capacity);
  aoi__free(a, s->entities, sizeof(aoi__entity) * s->capacity);
  aoi__free(a, s->ghosts, sizeof(aoi__ghost) * s->ghost_capacity);
  aoi__free(a, s->touched, sizeof(uint32_t) * s->touched_capacity);
  aoi__free(a, s->items, sizeof(aoi__grid_item) * s->items_capacity);
  aoi__grid_free(a, &s->grid);
  aoi__ring_destroy(a, s->ops);
  memset(s, 0, sizeof(*s));
}

void aoi__worker_free(const aoi_allocator *a, aoi__worker *workers,
                      unsigned threads)
{
  for (unsigned i = 0; i < threads; i++) {
    aoi__worker *k = &workers[i];
    aoi__ring_destroy(a, k->control);
    aoi__ring_destroy(a, k->done);
    if (k->handoffs_out != NULL)
      for (unsigned j = 0; j < threads; j++)
        aoi__free(a, k->handoffs_out[j].items,
                  sizeof(aoi__handoff) * k->handoffs_out[j].capacity);
    if (k->ghosts_out != NULL)
      for (unsigned j = 0; j < threads; j++)
        aoi__free(a, k->ghosts_out[j].items,
                  sizeof(aoi__ghost) * k->ghosts_out[j].capacity);
    aoi__free(a, k->handoffs_out, sizeof(aoi__batch) * threads);
    aoi__free(a, k->ghosts_out, sizeof(aoi__batch) * threads);
    aoi__free(a, k->candidates, sizeof(aoi__candidate) * k->candidate_capacity);
    aoi__free(a, k->spare, sizeof(aoi__candidate) * k->spare_capacity);
    aoi__free(a, k->runs, sizeof(uint32_t) * k->run_capacity);
    aoi__free(a, k->events, sizeof(aoi_event) * k->event_capacity);
    aoi__free(a, k->next_view, sizeof(aoi__seen) * k->next_view_capacity);
    aoi__free(a, k->new_pending, sizeof(uint32_t) * k->new_pending_capacity);
    if (k->world != NULL)
      aoi__bell_destroy(&k->bell);
  }
}

static void fail(aoi__worker *k, int rc)
{
  if (k->error == 0)
    k->error = rc;
}

/* ---- messaging ---------------------------------------------------------- */

static void batch_append(aoi__worker *k, aoi__batch *b, const void *item,
                         size_t size)
{
  int rc = aoi__reserve(&k->world->allocator, &b->items, &b->capacity,
                        b->count + 1, size);
  if (rc != 0) {
    fail(k, rc);
    b->incomplete = true;
    return;
  }
  memcpy((char *)b->items + size * b->count++, item, size);
}

/* Pushes this worker's batch for `phase` to every peer. */
static void send_batches(aoi__worker *k, aoi__batch *out, uint32_t phase)
{
  aoi_world *w = k->world;
  for (unsigned j = 0; j < w->threads; j++) {
    if (j == k->index)
      continue;
    out[j].phase = phase;
    aoi__ring *ring = w->peer[k->index * w->threads + j];
    /* The ring holds 7 and at most 2 are ever in flight. */
    while (aoi__ring_push(ring, &out[j]) != 0)
      ;
    aoi__bell_ring(&w->workers[j].bell);
  }
}

typedef void (*batch_handler)(aoi__worker *k, const aoi__batch *b);

/* Takes exactly one batch from every peer, in whatever order they come. */
static void receive_batches(aoi__worker *k, uint32_t phase,
                            batch_handler handle)
{
  aoi_world *w = k->world;
  bool have[AOI__MAX_THREADS] = {false};
  unsigned got = 0;
  while (got + 1 < w->threads) {
    uint32_t seen = aoi__bell_read(&k->bell);
    bool progress = false;
    for (unsigned i = 0; i < w->threads; i++) {
      if (i == k->index || have[i])
        continue;
      aoi__batch *b = aoi__ring_pop(w->peer[i * w->threads + k->index]);
      if (b == NULL)
        continue;
      if (b->phase != phase)
        fail(k, AOI_EINVAL); /* cannot happen: rings are FIFO */
      handle(k, b);
      have[i] = true;
      got++;
      progress = true;
    }
    if (!progress)
      aoi__bell_wait(&k->bell, seen);
  }
}

/* ---- phase 1: apply ----------------------------------------------------- */

static void touch(aoi__worker *k, aoi__shard *s, uint32_t handle)
{
  int rc = aoi__reserve(&k->world->allocator, (void **)&s->touched,
                        &s->touched_capacity, s->touched_count + 1,
                        sizeof(uint32_t));
  if (rc != 0) {
    fail(k, rc);
    return;
  }
  s->touched[s->touched_count++] = handle;
}

static void apply_op(aoi__worker *k, aoi__shard *s, const aoi__op *op,
                     uint64_t tick)
{
  aoi_world *w = k->world;
  if (op->kind == AOI__OP_ADD) {
    aoi__entity e = {0};
    e.id = op->id;
    e.handle = op->handle;
    e.flags = op->flags;
    e.x = op->x;
    e.y = op->y;
    e.radius = op->radius;
    e.layers = op->layers;
    e.interest = op->interest;
    e.touched = tick;
    int rc = aoi__shard_insert(&w->allocator, s, w->location, &e);
    if (rc != 0) {
      fail(k, rc);
      return;
    }
    touch(k, s, op->handle);
    return;
  }
  aoi__location *loc = &w->location[op->handle];
  aoi__entity *e = &s->entities[loc->slot];
  switch (op->kind) {
  case AOI__OP_MOVE:
    if (e->touched != tick) {
      e->touched = tick;
      touch(k, s, op->handle);
    }
    e->x = op->x;
    e->y = op->y;
    break;
  case AOI__OP_RADIUS:
    e->radius = op->radius;
    break;
  case AOI__OP_LAYERS:
    e->layers = op->layers;
    e->interest = op->interest;
    break;
  case AOI__OP_REMOVE:
    aoi__free(&w->allocator, e->view.items,
              sizeof(aoi__seen) * e->view.capacity);
    shard_take(s, w->location, loc->slot);
    loc->shard = loc->slot = AOI__NONE;
    break;
  default:
    break;
  }
}

static void apply_ops(aoi__worker *k, aoi__shard *s, uint64_t tick)
{
  s->touched_count = 0;
  for (;;) {
    aoi__chunk *c = aoi__ring_pop(s->ops);
    if (c == NULL)
      continue; /* cannot happen: the host pushed all before the command */
    if (c == &aoi__chunk_end)
      break;
    for (uint32_t i = 0; i < c->count; i++)
      apply_op(k, s, &c->ops[i], tick);
  }
}

/* Hands the entity at `slot` to the shard its position names, if that is
   not this one: moved directly to a shard of this worker, or appended to the
   batch for the owning worker. Room for both was reserved by the host. */
static void hand_off(aoi__worker *k, aoi__shard *s, uint32_t slot)
{
  aoi_world *w = k->world;
  aoi__entity e = s->entities[slot];
  unsigned to = aoi__layout_shard(&w->layout, e.x, e.y);
  if (to == s->index)
    return;
  AOI__STRESS();
  unsigned owner = aoi__worker_of(w, to);
  if (owner == k->index) {
    /* Insert first: if that fails the entity stays where it is. */
    int rc = aoi__shard_insert(&w->allocator, &w->shards[to], w->location, &e);
    if (rc != 0) {
      fail(k, rc);
      return;
    }
    shard_take(s, w->location, slot);
  } else {
    aoi__batch *b = &k->handoffs_out[owner];
    uint32_t before = b->count;
    aoi__handoff message = {to, e};
    batch_append(k, b, &message, sizeof(message));
    if (b->count == before)
      return;
    shard_take(s, w->location, slot);
  }
  k->handoffs++;
}

/* The entities this tick's ops added or moved; all of them when the layout
   changed. */
static void find_handoffs(aoi__worker *k, aoi__shard *s, bool relayout)
{
  aoi_world *w = k->world;
  if (relayout) {
    /* Downwards: a take moves the last entity, already seen, into `i`. */
    for (uint32_t i = s->count; i-- > 0;)
      hand_off(k, s, i);
    return;
  }
  for (uint32_t i = 0; i < s->touched_count; i++) {
    const aoi__location *loc = &w->location[s->touched[i]];
    if (loc->shard == s->index) /* else removed since */
      hand_off(k, s, loc->slot);
  }
}

static void take_handoffs(aoi__worker *k, const aoi__batch *b)
{
  aoi_world *w = k->world;
  const aoi__handoff *items = b->items;
  for (uint32_t i = 0; i < b->count; i++) {
    AOI__STRESS();
    int rc = aoi__shard_insert(&w->allocator, &w->shards[items[i].shard],
                               w->location, &items[i].entity);
    if (rc != 0)
      fail(k, rc);
  }
}

/* ---- phase 2: exchange -------------------------------------------------- */

/* Adds a ghost to one of this worker's shards; a shard that misses one
   computes no view this tick. */
static void store_ghost(aoi__worker *k, aoi__shard *t, const aoi__ghost *g)
{
  int rc = aoi__reserve(&k->world->allocator, (void **)&t->ghosts,
                        &t->ghost_capacity, t->ghost_count + 1,
                        sizeof(aoi__ghost));
  if (rc != 0) {
    fail(k, rc);
    t->degraded = true;
    return;
  }
  t->ghosts[t->ghost_count++] = *g;
}

static void publish_ghosts(aoi__worker *k, aoi__shard *s, double reach)
{
  aoi_world *w = k->world;
  const aoi__layout *l = &w->layout;
  for (uint32_t i = 0; i < s->count; i++) {
    const aoi__entity *e = &s->entities[i];
    if (!(e->flags & AOI_MARKER))
      continue;
    unsigned c0 = aoi__layout_col(l, (double)e->x - reach);
    unsigned c1 = aoi__layout_col(l, (double)e->x + reach);
    unsigned r0 = aoi__layout_row(l, (double)e->y - reach);
    unsigned r1 = aoi__layout_row(l, (double)e->y + reach);
    if (c0 == c1 && r0 == r1)
      continue; /* deep inside its own shard */
    aoi__ghost g;
    g.id = e->id;
    g.handle = e->handle;
    g.layers = e->layers;
    g.x = e->x;
    g.y = e->y;
    for (unsigned row = r0; row <= r1; row++)
      for (unsigned col = c0; col <= c1; col++) {
        unsigned to = row * l->cols + col;
        if (to == s->index)
          continue;
        g.shard = to;
        k->ghosts++;
        unsigned owner = aoi__worker_of(w, to);
        if (owner != k->index)
          batch_append(k, &k->ghosts_out[owner], &g, sizeof(g));
        else
          store_ghost(k, &w->shards[to], &g);
      }
  }
}

static void take_ghosts(aoi__worker *k, const aoi__batch *b)
{
  aoi_world *w = k->world;
  const aoi__ghost *items = b->items;
  if (b->incomplete) /* the peer dropped a ghost for one of these shards */
    for (unsigned s = k->index; s < w->shard_count; s += w->threads)
      w->shards[s].degraded = true;
  for (uint32_t i = 0; i < b->count; i++)
    store_ghost(k, &w->shards[items[i].shard], &items[i]);
}

/* ---- phase 3: compute --------------------------------------------------- */

/* Merges the sorted runs of c[0, n) (run r is [runs[r], runs[r + 1])) into
   one sorted run, ping-ponging with `spare`. Returns where the result is. */
static aoi__candidate *merge_runs(aoi__candidate *c, aoi__candidate *spare,
                                  uint32_t *runs, uint32_t nr, uint32_t n)
{
  while (nr > 1) {
    uint32_t merged = 0;
    for (uint32_t r = 0; r < nr; r += 2) {
      uint32_t lo = runs[r];
      uint32_t mid = r + 1 < nr ? runs[r + 1] : n;
      uint32_t hi = r + 2 < nr ? runs[r + 2] : n;
      uint32_t i = lo, j = mid, out = lo;
      while (i < mid && j < hi)
        spare[out++] = c[j].id < c[i].id ? c[j++] : c[i++];
      while (i < mid)
        spare[out++] = c[i++];
      while (j < hi)
        spare[out++] = c[j++];
      runs[merged++] = lo;
    }
    nr = merged;
    runs[nr] = n;
    aoi__candidate *swap = c;
    c = spare;
    spare = swap;
  }
  return c;
}

static int index_shard(aoi__worker *k, aoi__shard *s, double cell_size)
{
  const aoi_allocator *a = &k->world->allocator;
  uint32_t n = s->count + s->ghost_count;
  int rc = aoi__reserve(a, (void **)&s->items, &s->items_capacity, n + 1,
                        sizeof(aoi__grid_item));
  if (rc != 0)
    return rc;
  for (uint32_t i = 0; i < s->count; i++) {
    const aoi__entity *e = &s->entities[i];
    aoi__grid_item *it = &s->items[i];
    it->x = e->x;
    it->y = e->y;
    it->id = e->id;
    it->handle = e->handle;
    it->layers = e->layers;
    it->slot = i;
    it->info = AOI__ENTRY_OWNED;
    if (e->flags & AOI_MARKER)
      it->info |= AOI__ENTRY_MARKER;
    if (e->flags & AOI_WATCHER)
      it->info |= AOI__ENTRY_WATCHER;
  }
  for (uint32_t i = 0; i < s->ghost_count; i++) {
    const aoi__ghost *g = &s->ghosts[i];
    aoi__grid_item *it = &s->items[s->count + i];
    it->x = g->x;
    it->y = g->y;
    it->id = g->id;
    it->handle = g->handle;
    it->layers = g->layers;
    it->slot = AOI__NONE;
    it->info = AOI__ENTRY_MARKER;
  }
  return aoi__grid_build(a, &s->grid, s->items, n, cell_size);
}

/* Computes one watcher's new view and events. Every allocation comes before
   any change: on failure the watcher keeps its view and gets no events this
   tick, and its next tick's diff covers both ticks. */
static void compute_watcher(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                            uint64_t tick)
{
  aoi_world *w = k->world;
  const aoi_allocator *a = &w->allocator;
  const aoi__shape *shape = &w->shape;
  double hysteresis = w->config.hysteresis;
  double inner = e->radius, outer = inner + hysteresis;
  double box[4];
  uint32_t r[4];
  aoi__reach_box(shape, e->x, e->y, outer, box);
  aoi__grid_range(g, box, r);

  /* Gather the markers in reach. Each cell holds its entries by id, so the
     candidates come as sorted runs, one per non-empty cell. */
  uint32_t n = 0, nr = 0;
  for (uint32_t cy = r[1]; cy <= r[3]; cy++)
    for (uint32_t cx = r[0]; cx <= r[2]; cx++) {
      uint32_t cell = cy * g->width + cx, begin = n;
      for (uint32_t i = g->start[cell]; i < g->start[cell + 1]; i++) {
        if (!(g->info[i] & AOI__ENTRY_MARKER) || g->handle[i] == e->handle ||
            (g->layers[i] & e->interest) == 0)
          continue;
        if (!aoi__within(shape, e->x, e->y, g->x[i], g->y[i], outer))
          continue;
        if (n == k->candidate_capacity &&
            aoi__reserve(a, (void **)&k->candidates, &k->candidate_capacity,
                         n + 1, sizeof(aoi__candidate)) != 0) {
          fail(k, AOI_ENOMEM);
          return;
        }
        aoi__candidate *c = &k->candidates[n++];
        c->id = g->id[i];
        c->handle = g->handle[i];
        c->x = g->x[i];
        c->y = g->y[i];
        c->inner = hysteresis == 0 ||
                   aoi__within(shape, e->x, e->y, g->x[i], g->y[i], inner);
      }
      if (n == begin)
        continue;
      if (nr + 2 > k->run_capacity &&
          aoi__reserve(a, (void **)&k->runs, &k->run_capacity, nr + 2,
                       sizeof(uint32_t)) != 0) {
        fail(k, AOI_ENOMEM);
        return;
      }
      k->runs[nr++] = begin;
    }
  if (k->spare_capacity < n &&
      aoi__reserve(a, (void **)&k->spare, &k->spare_capacity, n,
                   sizeof(aoi__candidate)) != 0) {
    fail(k, AOI_ENOMEM);
    return;
  }
  if (nr > 0)
    k->runs[nr] = n;
  const aoi__candidate *cand =
      merge_runs(k->candidates, k->spare, k->runs, nr, n);

  aoi__view *view = &e->view;
  uint32_t v = view->count;
  if (aoi__reserve(a, (void **)&k->events, &k->event_capacity, v + 2 * n + 1,
                   sizeof(aoi_event)) != 0 ||
      aoi__reserve(a, (void **)&k->next_view, &k->next_view_capacity,
                   v + n + 1, sizeof(aoi__seen)) != 0) {
    fail(k, AOI_ENOMEM);
    return;
  }
  /* leaves at [0, v), enters at [v, v + n), moves at [v + n, v + 2n) */
  aoi_event *leaves = k->events, *enters = leaves + v, *moves = enters + n;
  aoi__seen *next = k->next_view;
  uint32_t nl = 0, ne = 0, nm = 0, nv = 0;
  uint32_t stamp = (uint32_t)tick;
  bool move_events = w->config.move_events != 0;
  const aoi__seen *old = view->items;
  uint32_t i = 0, j = 0;
  while (i < v || j < n) {
    if (j == n || (i < v && old[i].id < cand[j].id)) {
      leaves[nl++] = (aoi_event){old[i].id, 0, 0, AOI_LEAVE, stamp};
      i++;
      continue;
    }
    const aoi__candidate *c = &cand[j];
    bool same = i < v && old[i].id == c->id;
    if (same && old[i].handle == c->handle) {
      /* still seen (hysteresis applies): a move if it is not where this
         watcher was last told it is */
      next[nv++] = (aoi__seen){c->id, c->handle, c->x, c->y};
      if (c->x != old[i].x || c->y != old[i].y) {
        if (move_events)
          moves[nm++] = (aoi_event){c->id, c->x, c->y, AOI_MOVE, stamp};
        else
          next[nv - 1] = old[i]; /* nothing was told */
      }
    } else {
      if (same) /* the id was removed and added again: a new entity */
        leaves[nl++] = (aoi_event){old[i].id, 0, 0, AOI_LEAVE, stamp};
      if (c->inner) {
        enters[ne++] = (aoi_event){c->id, c->x, c->y, AOI_ENTER, stamp};
        next[nv++] = (aoi__seen){c->id, c->handle, c->x, c->y};
      }
    }
    if (same)
      i++;
    j++;
  }

  uint32_t total = nl + ne + nm;
  aoi__outbox *outbox = &w->outbox[e->handle];
  bool was_empty = outbox->count == 0;
  if (aoi__reserve(a, (void **)&view->items, &view->capacity, nv,
                   sizeof(aoi__seen)) != 0 ||
      (total > 0 && was_empty &&
       aoi__reserve(a, (void **)&k->new_pending, &k->new_pending_capacity,
                    k->new_pending_count + 1, sizeof(uint32_t)) != 0)) {
    fail(k, AOI_ENOMEM);
    return;
  }
  AOI__STRESS();
  if (total > 0) {
    /* Close the gaps so the three groups go to the outbox in one copy. */
    memmove(leaves + nl, enters, sizeof(aoi_event) * ne);
    memmove(leaves + nl + ne, moves, sizeof(aoi_event) * nm);
    if (aoi__outbox_append(a, outbox, leaves, total) != 0) {
      fail(k, AOI_ENOMEM);
      return;
    }
    k->events_made += total;
    if (was_empty)
      k->new_pending[k->new_pending_count++] = e->handle;
  }
  if (nv > 0)
    memcpy(view->items, next, sizeof(aoi__seen) * nv);
  view->count = nv;
}

static void compute_shard(aoi__worker *k, aoi__shard *s,
                          const aoi__tick_command *cmd)
{
  uint64_t started = aoi__now_ns();
  int rc = index_shard(k, s, cmd->cell_size);
  if (rc != 0) {
    /* No index: queries see this shard as empty until the next tick, and
       its watchers keep their views. */
    fail(k, rc);
    s->grid.count = 0;
    s->grid.width = s->grid.height = 0;
    return;
  }
  const aoi__grid *g = &s->grid;
  if (s->degraded)
    return; /* indexed for queries; its watchers keep their views */
  const uint32_t want = AOI__ENTRY_OWNED | AOI__ENTRY_WATCHER;
  for (uint32_t i = 0; i < g->count; i++)
    if ((g->info[i] & want) == want)
      compute_watcher(k, &s->entities[g->slot[i]], g, cmd->tick);
  s->compute_ns = aoi__now_ns() - started;
}

/* ---- the tick ----------------------------------------------------------- */

static void run_tick(aoi__worker *k, const aoi__tick_command *cmd)
{
  aoi_world *w = k->world;
  k->error = 0;
  k->handoffs = k->ghosts = k->events_made = 0;
  for (unsigned j = 0; j < w->threads; j++) {
    k->handoffs_out[j].count = k->ghosts_out[j].count = 0;
    k->handoffs_out[j].incomplete = k->ghosts_out[j].incomplete = false;
  }
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    w->shards[s].degraded = false;

  uint64_t t0 = aoi__now_ns();
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    apply_ops(k, &w->shards[s], cmd->tick);
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    find_handoffs(k, &w->shards[s], cmd->relayout);
  send_batches(k, k->handoffs_out, AOI_PHASE_APPLY);
  receive_batches(k, AOI_PHASE_APPLY, take_handoffs);

  uint64_t t1 = aoi__now_ns();
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    w->shards[s].ghost_count = 0;
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    publish_ghosts(k, &w->shards[s], cmd->ghost_reach);
  send_batches(k, k->ghosts_out, AOI_PHASE_EXCHANGE);
  receive_batches(k, AOI_PHASE_EXCHANGE, take_ghosts);

  uint64_t t2 = aoi__now_ns();
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    compute_shard(k, &w->shards[s], cmd);
  uint64_t t3 = aoi__now_ns();
  k->phase_ns[AOI_PHASE_APPLY] = t1 - t0;
  k->phase_ns[AOI_PHASE_EXCHANGE] = t2 - t1;
  k->phase_ns[AOI_PHASE_COMPUTE] = t3 - t2;
}

void *aoi__worker_main(void *arg)
{
  aoi__worker *k = arg;
  aoi_world *w = k->world;
  for (;;) {
    uint32_t seen = aoi__bell_read(&k->bell);
    const aoi__tick_command *cmd = aoi__ring_pop(k->control);
    if (cmd == NULL) {
      aoi__bell_wait(&k->bell, seen);
      continue;
    }
    if (cmd->shutdown)
      break;
    run_tick(k, cmd);
    while (aoi__ring_push(k->done, k) != 0)
      ; /* holds 3; at most one report is ever in flight */
    aoi__bell_ring(&w->host_bell);
  }
  return NULL;
}

/* ---- invariants --------------------------------------------------------- */

bool aoi__shard_valid(const aoi_world *w, const aoi__shard *s)
{
  if (!aoi__ring_valid(s->ops))
    return false;
  for (uint32_t i = 0; i < s->count; i++) {
    const aoi__entity *e = &s->entities[i];
    const aoi__location *loc = &w->location[e->handle];
    if (loc->shard != s->index || loc->slot != i)
      return false;
    if (aoi__layout_shard(&w->layout, e->x, e->y) != s->index)
      return false;
    if (!(e->flags & AOI_WATCHER) && e->view.count != 0)
      return false;
    for (uint32_t j = 1; j < e->view.count; j++)
      if (e->view.items[j - 1].id >= e->view.items[j].id)
        return false;
  }
  return s->grid.width == 0 || aoi__grid_valid(&s->grid);
}
