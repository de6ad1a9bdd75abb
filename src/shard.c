/*
 * shard.c: the worker threads and the phases of a tick, each run by every
 * worker on its own shards.
 *
 * A worker sleeps on its bell until the host pushes a tick command onto its
 * control ring. Then, for its shards (shard i belongs to worker
 * i % threads):
 *
 *  1. Apply. Take each shard's queue from its op ring and apply its records,
 *     one per entity: adds, moves, radius and layer changes, removes (see
 *     apply_record). Every entity the records added or moved
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
 *     is now in that shard, owned or ghosted. Each departure this tick's ops
 *     made (where a marker that moved or was removed stood at the end of the
 *     last tick) goes the same way to every shard near where it stood, this
 *     one included.
 *
 *  3. Compute. The shard indexes its owned entities, ghosts and departures
 *     in a uniform grid (the markers that changed this tick first in each
 *     cell, departures apart). A watcher that changed, or whose view is
 *     stale, checks its previous view (sorted by id) against the markers'
 *     current marks: leaves, moves and kept entries come out in id order;
 *     its enters are the markers within its radius, found in the grid, that
 *     the view does not hold. Any other watcher only looks at the changed
 *     markers and departures within its reach, and one with none is skipped
 *     without reading its view. Events go straight into the watcher's
 *     outbox, which this worker owns while it owns the watcher.
 *
 * Batches are owned by their producer and reused every tick; the consumer is
 * done with one before it reports the tick done, and the host starts the
 * next tick only after every worker has, so reuse never races. Each ring is
 * FIFO and carries one handoff batch then one ghost batch per tick, so a
 * consumer that takes exactly one message per peer per phase never confuses
 * phases. No phase needs a barrier: the batches are the synchronisation.
 *
 * A small tick is run by the host thread instead (aoi__tick_on_host), with
 * the same code and the same rings: each step for every worker in turn,
 * while the worker threads sleep.
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
    aoi__view_free(a, &s->entities[i].view);
  aoi__free(a, s->entities, sizeof(aoi__entity) * s->capacity);
  aoi__free(a, s->ghosts, sizeof(aoi__ghost) * s->ghost_capacity);
  aoi__free(a, s->touched, sizeof(uint32_t) * s->touched_capacity);
  aoi__free(a, s->departed, sizeof(aoi__ghost) * s->departed_capacity);
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
    aoi__free(a, k->hits, sizeof(uint32_t) * k->hit_capacity);
    aoi__free(a, k->work, sizeof(uint32_t) * k->work_capacity);
    aoi__free(a, k->events, sizeof(aoi_event) * k->event_capacity);
    aoi__free(a, k->member, sizeof(uint64_t) * k->member_words);
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
    if (!w->command.on_host) /* else the peer sleeps on, and nobody waits */
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

static void set_mark(aoi_world *w, const aoi__entity *e)
{
  aoi__mark *m = &w->mark[e->handle];
  m->x = e->x;
  m->y = e->y;
  m->layers = (e->flags & AOI_MARKER) ? e->layers : 0;
}

/* Records where a marker stood at the end of the last tick, before its
   first move or its removal this tick (room was reserved by the host). */
static void depart(aoi__shard *s, const aoi__entity *e)
{
  if (!(e->flags & AOI_MARKER))
    return;
  aoi__ghost *d = &s->departed[s->departed_count++];
  d->id = e->id;
  d->handle = e->handle;
  d->layers = 0;
  d->x = e->x;
  d->y = e->y;
  d->shard = s->index;
  d->kind = AOI__GHOST_DEPARTED;
}

/* Applies one entity's record: what a run of operations on it since the
   last tick adds up to. The first move of a tick departs from where the
   entity stood and touches it; a record moves it once, to where the last
   move put it, which is what the run of moves did. */
static void apply_record(aoi__worker *k, aoi__shard *s, const aoi__record *r,
                         uint64_t tick)
{
  aoi_world *w = k->world;
  if (r->what & AOI__RECORD_ADD) {
    aoi__entity e = {0};
    e.id = r->id;
    e.handle = r->handle;
    e.flags = r->flags;
    e.x = r->x;
    e.y = r->y;
    e.radius = r->radius;
    e.layers = r->layers;
    e.interest = r->interest;
    e.touched = e.changed = tick;
    int rc = aoi__shard_insert(&w->allocator, s, w->location, &e);
    if (rc != 0) {
      fail(k, rc);
      return;
    }
    touch(k, s, r->handle);
    set_mark(w, &e);
    return;
  }
  aoi__location *loc = &w->location[r->handle];
  aoi__entity *e = &s->entities[loc->slot];
  e->changed = tick;
  if (r->what & AOI__RECORD_MOVE) {
    if (e->touched != tick) {
      depart(s, e);
      e->touched = tick;
      touch(k, s, r->handle);
    }
    e->x = r->x;
    e->y = r->y;
  }
  if (r->what & AOI__RECORD_RADIUS)
    e->radius = r->radius;
  if (r->what & AOI__RECORD_LAYERS) {
    e->layers = r->layers;
    e->interest = r->interest;
  }
  if (r->what & AOI__RECORD_REMOVE) {
    if (e->touched != tick)
      depart(s, e);
    aoi__view_free(&w->allocator, &e->view);
    w->mark[r->handle] = (aoi__mark){0, 0, 0};
    shard_take(s, w->location, loc->slot);
    loc->shard = loc->slot = AOI__NONE;
    return;
  }
  set_mark(w, e);
}

static void apply_ops(aoi__worker *k, aoi__shard *s, uint64_t tick)
{
  s->touched_count = s->departed_count = 0;
  const aoi__queue *q;
  while ((q = aoi__ring_pop(s->ops)) == NULL)
    ; /* cannot happen: the host pushed it before the command */
  for (uint32_t i = 0; i < q->count; i++)
    apply_record(k, s, &q->records[i], tick);
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

/* The entities this tick's records added or moved; all of them when the
   layout changed. */
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
  if (!(g->kind & AOI__GHOST_DEPARTED))
    t->ghost_markers++;
}

/* Sends a copy of g to every shard whose rectangle lies within `reach` of
   (g->x, g->y) per axis, except shard `skip`. Returns how many it sent. */
static uint32_t send_around(aoi__worker *k, aoi__ghost g, double reach,
                            unsigned skip)
{
  aoi_world *w = k->world;
  const aoi__layout *l = &w->layout;
  unsigned c0 = aoi__layout_col(l, (double)g.x - reach);
  unsigned c1 = aoi__layout_col(l, (double)g.x + reach);
  unsigned r0 = aoi__layout_row(l, (double)g.y - reach);
  unsigned r1 = aoi__layout_row(l, (double)g.y + reach);
  uint32_t sent = 0;
  for (unsigned row = r0; row <= r1; row++)
    for (unsigned col = c0; col <= c1; col++) {
      unsigned to = row * l->cols + col;
      if (to == skip)
        continue;
      g.shard = to;
      sent++;
      unsigned owner = aoi__worker_of(w, to);
      if (owner != k->index)
        batch_append(k, &k->ghosts_out[owner], &g, sizeof(g));
      else
        store_ghost(k, &w->shards[to], &g);
    }
  return sent;
}

/* Ghosts every marker near another shard, and sends this tick's departures
   to every shard (this one included) whose watchers could have seen the
   marker where it stood. */
static void publish_ghosts(aoi__worker *k, aoi__shard *s, double reach,
                           uint64_t tick)
{
  for (uint32_t i = 0; i < s->count; i++) {
    const aoi__entity *e = &s->entities[i];
    if (!(e->flags & AOI_MARKER))
      continue;
    aoi__ghost g;
    g.id = e->id;
    g.handle = e->handle;
    g.layers = e->layers;
    g.x = e->x;
    g.y = e->y;
    g.shard = s->index;
    g.kind = e->changed == tick ? AOI__GHOST_CHANGED : 0;
    k->ghosts += send_around(k, g, reach, s->index);
  }
  for (uint32_t i = 0; i < s->departed_count; i++)
    send_around(k, s->departed[i], reach, AOI__NONE);
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

static int index_shard(aoi__worker *k, aoi__shard *s, double cell_size,
                       uint64_t tick)
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
    if (e->changed == tick)
      it->info |= AOI__ENTRY_CHANGED;
    if (e->stale)
      it->info |= AOI__ENTRY_STALE;
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
    it->info = (g->kind & AOI__GHOST_DEPARTED) ? AOI__ENTRY_DEPARTED
               : (g->kind & AOI__GHOST_CHANGED)
                   ? AOI__ENTRY_MARKER | AOI__ENTRY_CHANGED
                   : AOI__ENTRY_MARKER;
  }
  return aoi__grid_build(a, &s->grid, s->items, n, cell_size);
}

/* One membership bit per handle, all clear. */
static int reserve_members(aoi__worker *k)
{
  uint32_t old = k->member_words;
  uint32_t need = (k->world->handle_count + 63) / 64;
  if (need <= old)
    return 0;
  int rc = aoi__reserve(&k->world->allocator, (void **)&k->member,
                        &k->member_words, need, sizeof(uint64_t));
  if (rc != 0)
    return rc;
  memset(k->member + old, 0, sizeof(uint64_t) * (k->member_words - old));
  return 0;
}

static inline bool is_member(const aoi__worker *k, uint32_t h)
{
  return (k->member[h / 64] >> (h % 64)) & 1;
}

static inline void set_member(aoi__worker *k, uint32_t h)
{
  k->member[h / 64] |= (uint64_t)1 << (h % 64);
}

static inline void clear_member(aoi__worker *k, uint32_t h)
{
  k->member[h / 64] &= ~((uint64_t)1 << (h % 64));
}

static void clear_members(aoi__worker *k, const aoi__seen *items, uint32_t v)
{
  for (uint32_t i = 0; i < v; i++)
    clear_member(k, items[i].handle);
}

/* Sorts enters by id in place, without allocating: insertion sort for the
   usual handful, heapsort for a first tick's crowd. */
static void sift_down(aoi__candidate *c, uint32_t at, uint32_t n)
{
  aoi__candidate v = c[at];
  for (;;) {
    uint32_t child = 2 * at + 1;
    if (child >= n)
      break;
    if (child + 1 < n && c[child + 1].id > c[child].id)
      child++;
    if (c[child].id <= v.id)
      break;
    c[at] = c[child];
    at = child;
  }
  c[at] = v;
}

static void sort_by_id(aoi__candidate *c, uint32_t n)
{
  if (n > 32) {
    for (uint32_t i = n / 2; i-- > 0;)
      sift_down(c, i, n);
    for (uint32_t end = n; end-- > 1;) {
      aoi__candidate top = c[0];
      c[0] = c[end];
      c[end] = top;
      sift_down(c, 0, end);
    }
    return;
  }
  for (uint32_t i = 1; i < n; i++) {
    aoi__candidate v = c[i];
    uint32_t j = i;
    while (j > 0 && c[j - 1].id > v.id) {
      c[j] = c[j - 1];
      j--;
    }
    c[j] = v;
  }
}

/* The entries of [begin, begin + n) within `reach` of (ax, ay), written to
   hits[]: their count. Branch-free for circles, where about a third of a
   cell's entries pass, at random. */
static uint32_t within_run(const aoi__shape *shape, const aoi__grid *g,
                           uint32_t begin, uint32_t n, float ax, float ay,
                           double reach, uint32_t *hits)
{
  uint32_t found = 0;
  if (shape->kind == AOI_SHAPE_CIRCLE) {
    const float *xs = g->x + begin, *ys = g->y + begin;
    double x = ax, y = ay, r2 = reach * reach;
    for (uint32_t i = 0; i < n; i++) {
      double dx = (double)xs[i] - x, dy = (double)ys[i] - y;
      hits[found] = begin + i;
      found += dx * dx + dy * dy <= r2;
    }
    return found;
  }
  for (uint32_t i = begin; i < begin + n; i++)
    if (aoi__within(shape, ax, ay, g->x[i], g->y[i], reach))
      hits[found++] = i;
  return found;
}

/* Appends to k->candidates the entries [begin, end) of the grid that enter
   the view of watcher e: markers within its radius that the view does not
   hold. Returns false when the candidates cannot grow. */
static bool find_enters(aoi__worker *k, const aoi__entity *e,
                        const aoi__grid *g, uint32_t begin, uint32_t end,
                        uint32_t *n)
{
  enum { BLOCK = 256 };
  uint32_t hits[BLOCK];
  for (uint32_t at = begin; at < end; at += BLOCK) {
    uint32_t len = end - at < BLOCK ? end - at : BLOCK;
    uint32_t found = within_run(&k->world->shape, g, at, len, e->x, e->y,
                                e->radius, hits);
    for (uint32_t f = 0; f < found; f++) {
      uint32_t i = hits[f];
      if (!(g->info[i] & AOI__ENTRY_MARKER) ||
          (g->layers[i] & e->interest) == 0 || g->handle[i] == e->handle ||
          is_member(k, g->handle[i]))
        continue;
      if (*n == k->candidate_capacity &&
          aoi__reserve(&k->world->allocator, (void **)&k->candidates,
                       &k->candidate_capacity, *n + 1,
                       sizeof(aoi__candidate)) != 0)
        return false;
      aoi__candidate *c = &k->candidates[(*n)++];
      c->id = g->id[i];
      c->handle = g->handle[i];
      c->x = g->x[i];
      c->y = g->y[i];
    }
  }
  return true;
}

/* Merges `n` enters (by id) into the view's first `kept` entries (by id),
   in place from the back; the view has room for kept + n. */
static void merge_enters(aoi__view *view, uint32_t kept,
                         const aoi__candidate *enters, uint32_t n)
{
  uint64_t *ids = view->ids;
  aoi__seen *items = aoi__view_items(view);
  uint32_t i = kept, j = n, to = kept + n;
  while (j > 0) {
    to--;
    if (i > 0 && ids[i - 1] > enters[j - 1].id) {
      i--;
      ids[to] = ids[i];
      items[to] = items[i];
    } else {
      const aoi__candidate *c = &enters[--j];
      ids[to] = c->id;
      items[to] = (aoi__seen){c->handle, c->x, c->y};
    }
  }
  view->count = kept + n;
}

void aoi__view_free(const aoi_allocator *a, aoi__view *view)
{
  aoi__free(a, view->ids, aoi__view_bytes(view->capacity));
  memset(view, 0, sizeof(*view));
}

uint32_t aoi__view_find(const aoi__view *view, uint64_t id)
{
  const uint64_t *ids = view->ids;
  uint32_t lo = 0, hi = view->count;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (ids[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < view->count && ids[lo] == id ? lo : view->count;
}

/* Room for `need` entries; a growth takes aoi__roomy(need, hint). 0 or
   AOI_ENOMEM (then nothing changed). */
static int view_reserve(const aoi_allocator *a, aoi__view *view,
                        uint32_t need, uint32_t hint)
{
  if (need <= view->capacity)
    return 0;
  uint32_t capacity = aoi__roomy(need, hint);
  if (capacity > UINT32_MAX / aoi__view_bytes(1))
  return AOI_ENOMEM;
  aoi__view bigger = {NULL, view->count, capacity};
  bigger.ids = aoi__alloc(a, aoi__view_bytes(bigger.capacity));
  if (bigger.ids == NULL)
  return AOI_ENOMEM;
  if (view->count > 0) {
    memcpy(bigger.ids, view->ids, sizeof(uint64_t) * view->count);
    memcpy(aoi__view_items(&bigger), aoi__view_items(view),
           sizeof(aoi__seen) * view->count);
  }
  aoi__view_free(a, view);
  *view = bigger;
  return 0;
}

/* Makes room for `count` events in e's outbox and for its new view, and
   notes e as pending if its outbox was empty. NULL when out of memory (then
   nothing changed). */
static aoi_event *reserve_output(aoi__worker *k, aoi__entity *e,
                                 uint32_t count, uint32_t view_size,
                                 uint32_t hint)
{
  const aoi_allocator *a = &k->world->allocator;
  aoi__outbox *outbox = &k->world->outbox[e->handle];
  aoi_event *out;
  if (view_reserve(a, &e->view, view_size, hint) != 0 ||
      (out = aoi__outbox_reserve(a, outbox, count, hint)) == NULL ||
      (outbox->count == 0 &&
       aoi__reserve(a, (void **)&k->new_pending, &k->new_pending_capacity,
                    k->new_pending_count + 1, sizeof(uint32_t)) != 0))
    return NULL;
  return out;
}

/* Counts `total` events written at the end of e's outbox. */
static void commit_output(aoi__worker *k, aoi__entity *e, uint32_t total)
{
  aoi__outbox *outbox = &k->world->outbox[e->handle];
  if (total == 0)
    return;
  if (outbox->count == 0)
    k->new_pending[k->new_pending_count++] = e->handle;
  outbox->count += total;
  k->events_made += total;
}

/* Computes one watcher's events and new view from scratch. Returns 0 or
   AOI_ENOMEM. Every allocation comes before any change: on failure the
   watcher keeps its view and gets no events this tick, and its next tick's
   diff covers both ticks.

   Its view holds (id, handle, the position it was last told), by id. Each
   entry is checked against the marker's current mark: a leave when it is
   gone, out of reach (hysteresis included) or no longer of interest, else
   kept, with a move when it is not where the watcher was told. Enters come
   from the grid: markers within the radius whose handle the view does not
   hold. */
static int compute_whole(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                         uint64_t tick)
{
  aoi_world *w = k->world;
  const aoi__shape *shape = &w->shape;
  aoi__view *view = &e->view;
  const aoi__seen *seen = aoi__view_items(view);
  uint32_t v = view->count;
  for (uint32_t i = 0; i < v; i++)
    set_member(k, seen[i].handle);

  double box[4];
  uint32_t r[4], n = 0;
  aoi__reach_box(shape, e->x, e->y, e->radius, box);
  aoi__grid_range(g, box, r);
  uint32_t block = 0; /* entries in the scanned rows */
  for (uint32_t cy = r[1]; cy <= r[3]; cy++) {
    uint32_t begin = aoi__grid_row_begin(g, cy, r[0]);
    uint32_t end = aoi__grid_row_end(g, cy, r[2]);
    block += end - begin;
    if (!find_enters(k, e, g, begin, end, &n)) {
      clear_members(k, seen, v);
      return AOI_ENOMEM;
    }
  }
  if (v + n == 0) {
    e->stale = false;
    return 0;
  }
  aoi__candidate *enters = k->candidates;
  sort_by_id(enters, n);
  /* A view or outbox that grows takes room for 2/3 of the entries of the
     scanned block (with a cell as wide as the reach, about twice the
     expected view) or for 1.5x the worker's mean view, but at most 4x
     what it needs: the ups and downs of density (a walk away from the
     map's edge, into a crowd) then do not make it grow again and again. */
  uint32_t hint = block / 3 * 2, most = 4 * (v + n) + 16;
  uint64_t sizes = k->view_sum + k->last_view_sum;
  uint64_t views = k->view_n + k->last_view_n;
  uint32_t mean = views > 0 ? (uint32_t)(sizes / views) : 0;
  uint32_t usual = mean + mean / 2;
  hint = hint > usual ? hint : usual;
  hint = hint < most ? hint : most;
  aoi_event *out;
  if (aoi__reserve(&w->allocator, (void **)&k->events, &k->event_capacity,
                   v + 1, sizeof(aoi_event)) != 0 ||
      (out = reserve_output(k, e, v + n, v + n, hint)) == NULL) {
    /* the view may have grown (and moved) before the outbox failed */
    clear_members(k, aoi__view_items(view), v);
    return AOI_ENOMEM;
  }
  AOI__STRESS();
  uint64_t *ids = view->ids;
  aoi__seen *items = aoi__view_items(view);

  /* Leaves go straight to the outbox, moves to k->events until the enters
     are in; kept entries close up in place. */
  const aoi__mark *mark = w->mark;
  double outer = (double)e->radius + w->config.hysteresis;
  bool move_events = w->config.move_events != 0;
  uint32_t stamp = (uint32_t)tick;
  aoi_event *moves = k->events;
  uint32_t nl = 0, nm = 0, kept = 0;
  for (uint32_t i = 0; i < v; i++) {
    uint64_t id = ids[i];
    aoi__seen s = items[i];
    clear_member(k, s.handle);
    if (i + 8 < v)
      __builtin_prefetch(&mark[items[i + 8].handle]);
    const aoi__mark *m = &mark[s.handle];
    if ((m->layers & e->interest) == 0 ||
        !aoi__within(shape, e->x, e->y, m->x, m->y, outer)) {
      aoi__put_event(&out[nl++], (aoi_event){id, 0, 0, AOI_LEAVE, stamp});
      continue;
    }
    if (move_events && (m->x != s.x || m->y != s.y)) {
      moves[nm++] = (aoi_event){id, m->x, m->y, AOI_MOVE, stamp};
      s.x = m->x;
      s.y = m->y;
    }
    ids[kept] = id;
    items[kept++] = s;
  }
  for (uint32_t j = 0; j < n; j++)
    aoi__put_event(&out[nl + j], (aoi_event){enters[j].id, enters[j].x,
                                             enters[j].y, AOI_ENTER, stamp});
  for (uint32_t q = 0; q < nm; q++)
    aoi__put_event(&out[nl + n + q], moves[q]);
  merge_enters(view, kept, enters, n);
  commit_output(k, e, nl + n + nm);
  e->stale = false;
  k->view_sum += view->count;
  k->view_n++;
  return 0;
}

static void sort_u32(uint32_t *a, uint32_t n)
{
  for (uint32_t i = 1; i < n; i++) {
    uint32_t v = a[i], j = i;
    while (j > 0 && a[j - 1] > v) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = v;
  }
}

#define HIT_LEAVE (1u << 31)

/* Clears the membership bits of the first nh hits. */
static void clear_hits(aoi__worker *k, const aoi__seen *seen, uint32_t nh)
{
  for (uint32_t q = 0; q < nh; q++)
    clear_member(k, seen[k->hits[q] & ~HIT_LEAVE].handle);
}

/* Computes the events of a watcher that did not change this tick and whose
   view the last tick computed: only markers that changed can enter, leave
   or move, and each one that the view holds stood within the watcher's
   reach at the end of the last tick, so it is in the grid near the watcher
   as a changed marker or as a departure. Cost follows change: a watcher
   with no change nearby reads nothing of its view but a few probes.
   Returns 0 or AOI_ENOMEM (then nothing changed). */
static int compute_changes(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                           uint64_t tick)
{
  aoi_world *w = k->world;
  const aoi_allocator *a = &w->allocator;
  const aoi__shape *shape = &w->shape;
  const aoi__mark *mark = w->mark;
  aoi__view *view = &e->view;
  const aoi__seen *seen = aoi__view_items(view);
  uint32_t v = view->count;
  double inner = e->radius, outer = inner + w->config.hysteresis;
  bool move_events = w->config.move_events != 0;
  double box[4];
  uint32_t r[4], n = 0, nh = 0, nl = 0;
  aoi__reach_box(shape, e->x, e->y, outer, box);
  aoi__grid_range(g, box, r);
  uint32_t cells = g->width * g->height;
  for (uint32_t cy = r[1]; cy <= r[3]; cy++)
    for (uint32_t cx = r[0]; cx <= r[2]; cx++) {
      uint32_t c = cy * g->width + cx;
      /* the cell's changed markers, then its departures */
      for (int pass = 0; pass < 2; pass++) {
        uint32_t from = pass == 0 ? AOI__GRID_CLASSES * c
                                  : AOI__GRID_CLASSES * cells + c;
        for (uint32_t i = g->start[from]; i < g->start[from + 1]; i++) {
          /* Where a held marker stood is within reach, so a changed
             marker out of reach is no enter and, if held, has moved and
             left a departure in reach. */
          if (!aoi__within(shape, e->x, e->y, g->x[i], g->y[i], outer))
            continue;
          uint32_t h = g->handle[i];
          if (h == e->handle || is_member(k, h))
            continue;
          uint32_t p = aoi__view_find(view, g->id[i]);
          if (p < v && seen[p].handle == h) {
            /* held: it leaves or moves (a hit is taken once, though a
               marker may be met as marker and as departure) */
            const aoi__mark *m = &mark[h];
            uint32_t hit;
            if ((m->layers & e->interest) == 0 ||
                !aoi__within(shape, e->x, e->y, m->x, m->y, outer))
              hit = p | HIT_LEAVE;
            else if (move_events && (m->x != seen[p].x || m->y != seen[p].y))
              hit = p;
            else
              continue;
            if (nh == k->hit_capacity &&
                aoi__reserve(a, (void **)&k->hits, &k->hit_capacity, nh + 1,
                             sizeof(uint32_t)) != 0) {
              clear_hits(k, seen, nh);
              return AOI_ENOMEM;
            }
            set_member(k, h);
            k->hits[nh++] = hit;
            nl += (hit & HIT_LEAVE) != 0;
            continue;
          }
          /* not held: a changed marker (each is listed once) may enter */
          if (pass != 0 || (g->layers[i] & e->interest) == 0 ||
              !aoi__within(shape, e->x, e->y, g->x[i], g->y[i], inner))
            continue;
          if (n == k->candidate_capacity &&
              aoi__reserve(a, (void **)&k->candidates, &k->candidate_capacity,
                           n + 1, sizeof(aoi__candidate)) != 0) {
            clear_hits(k, seen, nh);
            return AOI_ENOMEM;
          }
          k->candidates[n++] =
              (aoi__candidate){g->id[i], h, g->x[i], g->y[i]};
        }
      }
    }
  clear_hits(k, seen, nh);
  if (nh + n == 0)
    return 0;
  aoi__candidate *enters = k->candidates;
  sort_by_id(enters, n);
  uint32_t *hits = k->hits;
  aoi_event *out = reserve_output(k, e, nh + n, v - nl + n, 0);
  if (out == NULL)
    return AOI_ENOMEM;
  AOI__STRESS();
  uint64_t *ids = view->ids;
  aoi__seen *items = aoi__view_items(view);
  uint32_t stamp = (uint32_t)tick;
  /* Each view index is hit once: sorted, the moves come by index (so by
     id), then the leaves, which carry the high bit. */
  sort_u32(hits, nh);
  uint32_t nm = nh - nl;
  for (uint32_t q = 0; q < nl; q++)
    out[q] = (aoi_event){ids[hits[nm + q] & ~HIT_LEAVE], 0, 0, AOI_LEAVE,
                         stamp};
  for (uint32_t j = 0; j < n; j++)
    out[nl + j] = (aoi_event){enters[j].id, enters[j].x, enters[j].y,
                              AOI_ENTER, stamp};
  for (uint32_t q = 0; q < nm; q++) {
    aoi__seen *s = &items[hits[q]];
    const aoi__mark *m = &mark[s->handle];
    s->x = m->x;
    s->y = m->y;
    out[nl + n + q] = (aoi_event){ids[hits[q]], m->x, m->y, AOI_MOVE, stamp};
  }
  uint32_t kept = v;
  if (nl > 0) {
    /* close up the leaves, which are by index */
    uint32_t to = hits[nm] & ~HIT_LEAVE, q = 0;
    for (uint32_t i = to; i < v; i++) {
      if (q < nl && i == (hits[nm + q] & ~HIT_LEAVE)) {
        q++;
        continue;
      }
      ids[to] = ids[i];
      items[to++] = items[i];
    }
    kept = to;
  }
  merge_enters(view, kept, enters, n);
  commit_output(k, e, nh + n);
  return 0;
}

/* A watcher whose compute fails keeps its view, which is then stale. */
static void compute_watcher(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                            uint64_t tick)
{
  int rc = e->changed == tick || e->stale ? compute_whole(k, e, g, tick)
                                          : compute_changes(k, e, g, tick);
  if (rc != 0) {
    fail(k, rc);
    e->stale = true;
  }
}

/* Every owned watcher of the shard keeps its view this tick. */
static void hold_views(aoi__shard *s)
{
  for (uint32_t i = 0; i < s->count; i++)
    if (s->entities[i].flags & AOI_WATCHER)
      s->entities[i].stale = true;
}

static void compute_shard(aoi__worker *k, aoi__shard *s,
                          const aoi__tick_command *cmd)
{
  uint64_t started = aoi__now_ns();
  int rc = index_shard(k, s, cmd->cell_size, cmd->tick);
  if (rc != 0) {
    /* No index: queries see this shard as empty until the next tick, and
       its watchers keep their views. */
    fail(k, rc);
    s->grid.count = 0;
    s->grid.width = s->grid.height = 0;
    hold_views(s);
    return;
  }
  const aoi__grid *g = &s->grid;
  if (s->degraded) {
    hold_views(s); /* indexed for queries; its watchers keep their views */
    return;
  }
  if ((rc = reserve_members(k)) != 0 ||
      (rc = aoi__reserve(&k->world->allocator, (void **)&k->work,
                         &k->work_capacity, g->count + 1,
                         sizeof(uint32_t))) != 0) {
    fail(k, rc);
    hold_views(s);
    return;
  }
  /* The watchers with work: those that changed or missed a tick, and those
     with a changed marker or a departure within the largest reach. The
     others keep their views untouched: nothing they see changed. */
  const uint32_t want = AOI__ENTRY_OWNED | AOI__ENTRY_WATCHER;
  uint32_t *work = k->work, nw = 0;
  uint32_t end = g->width == 0 ? 0 : aoi__grid_row_end(g, g->height - 1,
                                                        g->width - 1);
  for (uint32_t i = 0; i < end; i++) {
    uint32_t info = g->info[i];
    if ((info & want) != want)
      continue;
    if (!(info & (AOI__ENTRY_CHANGED | AOI__ENTRY_STALE))) {
      double box[4];
      uint32_t r[4];
      aoi__reach_box(&k->world->shape, g->x[i], g->y[i], cmd->watch_reach,
                     box);
      aoi__grid_range(g, box, r);
      if (aoi__grid_dirty(g, r) == 0)
        continue;
    }
    work[nw++] = i;
  }
  for (uint32_t j = 0; j < nw; j++) {
    /* Views, outboxes and entities are scattered: fetch ahead. */
    if (j + 8 < nw)
      __builtin_prefetch(&s->entities[g->slot[work[j + 8]]]);
    if (j + 4 < nw) {
      const aoi__entity *ahead = &s->entities[g->slot[work[j + 4]]];
      const char *ids = (const char *)ahead->view.ids;
      const char *items = (const char *)aoi__view_items(&ahead->view);
      size_t n = ahead->view.count;
      for (size_t at = 0; at < sizeof(uint64_t) * n && at < 512; at += 64)
        __builtin_prefetch(ids + at);
      for (size_t at = 0; at < sizeof(aoi__seen) * n && at < 768; at += 64)
        __builtin_prefetch(items + at);
      __builtin_prefetch(&k->world->outbox[ahead->handle]);
    }
    compute_watcher(k, &s->entities[g->slot[work[j]]], g, cmd->tick);
  }
  s->compute_ns = aoi__now_ns() - started;
}

/* ---- the tick ----------------------------------------------------------- */

/* A tick is three steps, each ending with the batches it sends to every
   peer: apply (and hand off), exchange (after taking the handoffs), and
   compute (after taking the ghosts). A worker runs them one after another,
   waiting for its peers' batches at the start of the second and the third.
   The host runs a small tick itself (aoi__tick_on_host): each step for
   every worker in turn, so every batch a step takes was sent by the step
   before, and nobody waits. */
static void tick_apply(aoi__worker *k, const aoi__tick_command *cmd)
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

  k->phase_started = aoi__now_ns();
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    apply_ops(k, &w->shards[s], cmd->tick);
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    find_handoffs(k, &w->shards[s], cmd->relayout);
  send_batches(k, k->handoffs_out, AOI_PHASE_APPLY);
}

static void tick_exchange(aoi__worker *k, const aoi__tick_command *cmd)
{
  aoi_world *w = k->world;
  receive_batches(k, AOI_PHASE_APPLY, take_handoffs);

  uint64_t t1 = aoi__now_ns();
  k->phase_ns[AOI_PHASE_APPLY] = t1 - k->phase_started;
  k->phase_started = t1;
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    w->shards[s].ghost_count = w->shards[s].ghost_markers = 0;
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    publish_ghosts(k, &w->shards[s], cmd->ghost_reach, cmd->tick);
  send_batches(k, k->ghosts_out, AOI_PHASE_EXCHANGE);
}

static void tick_compute(aoi__worker *k, const aoi__tick_command *cmd)
{
  aoi_world *w = k->world;
  receive_batches(k, AOI_PHASE_EXCHANGE, take_ghosts);

  uint64_t t2 = aoi__now_ns();
  k->last_view_sum = k->view_sum;
  k->last_view_n = k->view_n;
  k->view_sum = k->view_n = 0;
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    compute_shard(k, &w->shards[s], cmd);
  uint64_t t3 = aoi__now_ns();
  k->phase_ns[AOI_PHASE_EXCHANGE] = t2 - k->phase_started;
  k->phase_ns[AOI_PHASE_COMPUTE] = t3 - t2;
}

static void run_tick(aoi__worker *k, const aoi__tick_command *cmd)
{
  tick_apply(k, cmd);
  tick_exchange(k, cmd);
  tick_compute(k, cmd);
}

void aoi__tick_on_host(aoi_world *w, const aoi__tick_command *cmd)
{
  for (unsigned i = 0; i < w->threads; i++)
    tick_apply(&w->workers[i], cmd);
  for (unsigned i = 0; i < w->threads; i++)
    tick_exchange(&w->workers[i], cmd);
  for (unsigned i = 0; i < w->threads; i++)
    tick_compute(&w->workers[i], cmd);
  aoi__put_fence(); /* the outboxes' streaming stores, before any worker
                       runs a later tick */
}

void *aoi__worker_main(void *arg)
{
  aoi__worker *k = arg;
  aoi_world *w = k->world;
  for (;;) {
    uint32_t seen = aoi__bell_read(&k->bell);
    const aoi__tick_command *cmd = aoi__ring_pop(k->control);
    if (cmd == NULL) {
      aoi__bell_wait_for(&k->bell, seen, w->idle_spin_ns);
      continue;
    }
    if (cmd->shutdown)
      break;
    run_tick(k, cmd);
    aoi__put_fence(); /* the outboxes' streaming stores, before the report */
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
    const aoi__mark *m = &w->mark[e->handle];
    if (m->x != e->x || m->y != e->y ||
        m->layers != ((e->flags & AOI_MARKER) ? e->layers : 0))
      return false;
    if (!(e->flags & AOI_WATCHER) && e->view.count != 0)
      return false;
    for (uint32_t j = 1; j < e->view.count; j++)
      if (e->view.ids[j - 1] >= e->view.ids[j])
        return false;
  }
  return s->grid.width == 0 || aoi__grid_valid(&s->grid);
}
