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

void aoi__shard_free(const aoi_allocator *a, aoi__shard *s, bool told)
{
  for (uint32_t i = 0; i < s->count; i++)
    aoi__view_free(a, &s->entities[i].view, told);
  aoi__free(a, s->entities, sizeof(aoi__entity) * s->capacity);
  aoi__free(a, s->ghosts, sizeof(aoi__ghost) * s->ghost_capacity);
  aoi__free(a, s->touched, sizeof(uint32_t) * s->touched_capacity);
  aoi__free(a, s->departed, sizeof(aoi__ghost) * s->departed_capacity);
  aoi__free(a, s->items, sizeof(aoi__grid_item) * s->items_capacity);
  aoi__grid_free(a, &s->grid);
  aoi__grid_free(a, &s->fine);
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
    aoi__free(a, k->candidates,
              sizeof(aoi__candidate) * 2 * (size_t)k->candidate_capacity);
    aoi__free(a, k->hits, sizeof(uint32_t) * k->hit_capacity);
    aoi__free(a, k->work, sizeof(uint64_t) * k->work_capacity);
    aoi__free(a, k->member, sizeof(uint64_t) * k->member_words);
    aoi__free(a, k->picks, sizeof(aoi__pick) * k->pick_capacity);
    aoi__free(a, k->appeal_start, sizeof(uint32_t) * k->appeal_start_capacity);
    aoi__free(a, k->appeal_pairs, sizeof(uint64_t) * k->appeal_pair_capacity);
    aoi__free(a, k->appeal, sizeof(uint32_t) * k->appeal_capacity);
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
  w->appeal[e->handle] = (e->flags & AOI_MARKER) ? e->appeal : 0;
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
    e.appeal = r->appeal;
    e.layers = r->layers;
    e.interest = r->interest;
    e.cap = r->cap;
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
  if (r->what & AOI__RECORD_APPEAL)
    e->appeal = r->appeal;
  if (r->what & AOI__RECORD_CAP)
    e->cap = r->cap;
  if (r->what & AOI__RECORD_REMOVE) {
    if (e->touched != tick)
      depart(s, e);
    aoi__view_free(&w->allocator, &e->view, aoi__bands(w));
    w->mark[r->handle] = (aoi__mark){0, 0, 0, 0};
    w->appeal[r->handle] = 0;
    shard_take(s, w->location, loc->slot);
    loc->shard = loc->slot = AOI__NONE;
    return;
  }
  set_mark(w, e);
}

/* Marks the markers whose position changed this tick: each left a
   departure where it stood at the end of the last one. Run by the worker
   that applied them, before any handoff carries them away. A departure of
   a marker that is back where it stood is dropped: nobody needs to look
   there for it (a removed one always keeps its departure). */
static void mark_moved(aoi__worker *k, aoi__shard *s, uint64_t tick)
{
  aoi_world *w = k->world;
  uint32_t kept = 0;
  for (uint32_t i = 0; i < s->departed_count; i++) {
    const aoi__ghost *d = &s->departed[i];
    aoi__mark *m = &w->mark[d->handle];
    bool removed = w->location[d->handle].shard == AOI__NONE;
    if (removed || m->x != d->x || m->y != d->y) {
      m->moved = (uint32_t)tick;
      s->departed[kept++] = *d;
    }
  }
  s->departed_count = kept;
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
    if (e->appeal > 0)
      g.kind |= AOI__GHOST_APPEAL;
    if (e->touched == tick && k->world->mark[e->handle].moved == (uint32_t)tick)
      g.kind |= AOI__GHOST_MOVED;
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
  const aoi__mark *mark = k->world->mark;
  uint32_t moved = (uint32_t)tick;
  uint32_t n = s->count + s->ghost_count;
  int rc = aoi__reserve(a, (void **)&s->items, &s->items_capacity, n + 1,
                        sizeof(aoi__grid_item));
  if (rc != 0)
    return rc;
  s->capped = 0;
  for (uint32_t i = 0; i < s->count; i++) {
    const aoi__entity *e = &s->entities[i];
    s->capped += e->cap > 0 && (e->flags & AOI_WATCHER);
    aoi__grid_item *it = &s->items[i];
    it->x = e->x;
    it->y = e->y;
    it->id = e->id;
    it->handle = e->handle;
    it->layers = e->layers;
    it->slot = i;
    it->radius = e->radius;
    it->info = AOI__ENTRY_OWNED;
    if (e->flags & AOI_MARKER) {
      it->info |= AOI__ENTRY_MARKER;
      if (e->appeal > 0)
        it->info |= AOI__ENTRY_APPEAL;
      if (e->touched == tick && mark[e->handle].moved == moved)
        it->info |= AOI__ENTRY_MOVED;
    }
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
    it->radius = 0;
    it->info = (g->kind & AOI__GHOST_DEPARTED) ? AOI__ENTRY_DEPARTED
               : (g->kind & AOI__GHOST_CHANGED)
                   ? AOI__ENTRY_MARKER | AOI__ENTRY_CHANGED
                   : AOI__ENTRY_MARKER;
    if (g->kind & AOI__GHOST_MOVED)
      it->info |= AOI__ENTRY_MOVED;
    if (g->kind & AOI__GHOST_APPEAL)
      it->info |= AOI__ENTRY_APPEAL;
  }
  return aoi__grid_build(a, &s->grid, s->items, n, cell_size);
}

/* Two bits per handle, in two bitsets, all clear between watchers: held by
   the view being computed (member), and, for a held marker the scan found,
   whether it moved. Membership is then one load from a small array. */
static int reserve_members(aoi__worker *k)
{
  uint32_t old = k->member_words;
  uint32_t need = 2 * ((k->world->handle_count + 63) / 64);
  if (need <= old)
    return 0;
  uint64_t *bits = aoi__calloc(&k->world->allocator, sizeof(uint64_t) * need);
  if (bits == NULL)
    return AOI_ENOMEM;
  aoi__free(&k->world->allocator, k->member, sizeof(uint64_t) * old);
  k->member = bits;
  k->member_words = need;
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

/* The second bitset lies after the first. */
static inline void set_moved(aoi__worker *k, uint32_t h)
{
  k->member[k->member_words / 2 + h / 64] |= (uint64_t)1 << (h % 64);
}

static inline bool take_moved(aoi__worker *k, uint32_t h)
{
  uint64_t *word = &k->member[k->member_words / 2 + h / 64];
  uint64_t bit = (uint64_t)1 << (h % 64);
  bool was = (*word & bit) != 0;
  *word &= ~bit;
  return was;
}

/* Sorts enters by id in place, without allocating: insertion sort for the
   usual handful, an LSD radix sort on the bytes that differ for a crowd
   (a first tick among thousands), with `spare` as its second buffer. */
static void sort_by_id(aoi__candidate *c, uint32_t n, aoi__candidate *spare)
{
  if (n > 64 && spare != NULL) {
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    for (uint32_t i = 0; i < n; i++) {
      all_or |= c[i].id;
      all_and &= c[i].id;
    }
    uint64_t differ = all_or ^ all_and;
    aoi__candidate *from = c, *to = spare;
    for (unsigned shift = 0; shift < 64; shift += 8) {
      if (((differ >> shift) & 0xff) == 0)
        continue;
      uint32_t count[257] = {0};
      for (uint32_t i = 0; i < n; i++)
        count[((from[i].id >> shift) & 0xff) + 1]++;
      for (unsigned b = 0; b < 256; b++)
        count[b + 1] += count[b];
      for (uint32_t i = 0; i < n; i++)
        to[count[(from[i].id >> shift) & 0xff]++] = from[i];
      aoi__candidate *swap = from;
      from = to;
      to = swap;
    }
    if (from != c)
      memcpy(c, from, sizeof(*c) * n);
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

/* Room for one more candidate; false when it cannot grow. The spare half
   (for the radix sort) grows with it. */
static bool reserve_candidate(aoi__worker *k, uint32_t n)
{
  if (n < k->candidate_capacity)
    return true;
  const aoi_allocator *a = &k->world->allocator;
  uint32_t old = k->candidate_capacity;
  uint32_t cap = old ? old * 2 : 64;
  aoi__candidate *c = aoi__alloc(a, sizeof(aoi__candidate) * 2 * (size_t)cap);
  if (c == NULL)
    return false;
  if (n > 0)
    memcpy(c, k->candidates, sizeof(aoi__candidate) * n);
  aoi__free(a, k->candidates, sizeof(aoi__candidate) * 2 * (size_t)old);
  k->candidates = c;
  k->candidate_capacity = cap;
  return true;
}

static inline aoi__candidate *spare_candidates(aoi__worker *k)
{
  return k->candidates == NULL ? NULL : k->candidates + k->candidate_capacity;
}

/* Merges `n` enters (by id) into the view's first `kept` handles (by id),
   in place from the back; the view has room for both. Each enter finds
   its place by a binary search (ids are read from idof, scattered), then
   the runs between places move up in one pass without reading an id. */
static void merge_enters(aoi__view *view, float *told, uint32_t kept,
                         aoi__candidate *enters, uint32_t n,
                         const uint64_t *idof, const aoi__mark *mark)
{
  uint32_t *hs = view->handles;
  uint32_t lo = 0;
  /* enters[j].id is no longer needed once placed: keep the place there */
  for (uint32_t j = 0; j < n; j++) {
    uint64_t id = enters[j].id;
    uint32_t hi = kept;
    while (lo < hi) {
      uint32_t mid = (lo + hi) / 2;
      if (idof[hs[mid]] < id)
        lo = mid + 1;
      else
        hi = mid;
    }
    enters[j].id = lo; /* the number of kept handles before it */
  }
  uint32_t i = kept, to = kept + n;
  if (told != NULL) { /* the same moves, and an enter tells its position */
    for (uint32_t j = n; j-- > 0;) {
      uint32_t place = (uint32_t)enters[j].id;
      while (i > place) {
        hs[--to] = hs[--i];
        told[2 * to] = told[2 * i];
        told[2 * to + 1] = told[2 * i + 1];
      }
      uint32_t h = enters[j].handle;
      hs[--to] = h;
      told[2 * to] = mark[h].x;
      told[2 * to + 1] = mark[h].y;
    }
    view->count = kept + n;
    return;
  }
  for (uint32_t j = n; j-- > 0;) {
    uint32_t place = (uint32_t)enters[j].id;
    while (i > place)
      hs[--to] = hs[--i];
    hs[--to] = enters[j].handle;
  }
  view->count = kept + n;
}

void aoi__view_free(const aoi_allocator *a, aoi__view *view, bool told)
{
  aoi__free(a, view->handles, aoi__view_bytes(view->capacity, told));
  memset(view, 0, sizeof(*view));
}

uint32_t aoi__view_find(const aoi__view *view, const uint64_t *idof,
                        uint64_t id)
{
  const uint32_t *hs = view->handles;
  uint32_t lo = 0, hi = view->count;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (idof[hs[mid]] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < view->count && idof[hs[lo]] == id ? lo : view->count;
}

/* Room for `need` entries (and their told positions, with `told`); a
   growth takes aoi__roomy(need, hint). 0 or AOI_ENOMEM (then nothing
   changed). */
static int view_reserve(const aoi_allocator *a, aoi__view *view,
                        uint32_t need, uint32_t hint, bool told)
{
  if (need <= view->capacity)
    return 0;
  uint32_t capacity = aoi__roomy(need, hint);
  if (!told) {
    uint32_t *bigger = aoi__realloc(a, view->handles,
                                    sizeof(uint32_t) * view->capacity,
                                    sizeof(uint32_t) * capacity);
    if (bigger == NULL)
      return AOI_ENOMEM;
    view->handles = bigger;
    view->capacity = capacity;
    return 0;
  }
  /* the told positions follow the handles: both move */
  aoi__view bigger = {NULL, view->count, capacity};
  bigger.handles = aoi__alloc(a, aoi__view_bytes(capacity, true));
  if (bigger.handles == NULL)
    return AOI_ENOMEM;
  if (view->count > 0) {
    memcpy(bigger.handles, view->handles, sizeof(uint32_t) * view->count);
    memcpy(aoi__view_told(&bigger, true), aoi__view_told(view, true),
           2 * sizeof(float) * view->count);
  }
  aoi__free(a, view->handles, aoi__view_bytes(view->capacity, true));
  *view = bigger;
  return 0;
}

/* The growth hint of a view: room for 2/3 of the entries of the scanned
   block or 1.5x the worker's mean view, but at most 4x what it needs, so
   that the ups and downs of density do not make it grow again and again. */
static uint32_t view_hint(const aoi__worker *k, uint32_t block, uint32_t need)
{
  uint32_t hint = block / 3 * 2, most = 4 * need + 16;
  uint64_t sizes = k->view_sum + k->last_view_sum;
  uint64_t views = k->view_n + k->last_view_n;
  uint32_t mean = views > 0 ? (uint32_t)(sizes / views) : 0;
  uint32_t usual = 2 * mean;
  hint = hint > usual ? hint : usual;
  return hint < most ? hint : most;
}

/* Room in this worker's segment for a record of up to `events` events, or
   NULL (then nothing changed). The record is written there, then kept by
   commit_events. */
static uint32_t *reserve_events(aoi__worker *k, uint32_t events)
{
  aoi__segment *seg = &k->world->segments[k->index];
  uint64_t need = (uint64_t)seg->count + AOI__RECORD_HEADER + events;
  if (need > UINT32_MAX / 2 ||
      aoi__reserve_roomy(&k->world->allocator, (void **)&seg->words,
                         &seg->capacity, (uint32_t)need,
                         sizeof(uint32_t)) != 0)
    return NULL;
  return seg->words + seg->count;
}

/* Keeps the record just written for watcher e, if it holds any event. */
static void commit_events(aoi__worker *k, const aoi__entity *e, uint32_t nl,
                          uint32_t ne, uint32_t nm)
{
  uint32_t total = nl + ne + nm;
  if (total == 0)
    return;
  aoi__segment *seg = &k->world->segments[k->index];
  uint32_t *rec = seg->words + seg->count;
  rec[0] = e->handle;
  rec[1] = nl;
  rec[2] = ne;
  rec[3] = nm;
  k->world->event_at[e->handle] = seg->count + 1;
  seg->count += AOI__RECORD_HEADER + total;
  seg->records++;
  k->events_made += total;
}

/* ---- interest policies -------------------------------------------------- */

/* Whether watcher a is told now of kept marker m, last told at (tx, ty):
   with move bands, only on the ticks its band's period allows. */
enum { TELL_NOTHING, TELL_NOW, TELL_LATER };
static int tell_move(const aoi_world *w, const aoi__entity *a,
                     const aoi__mark *m, float tx, float ty, uint64_t tick)
{
  if (m->x == tx && m->y == ty) /* as floats: -0 is +0 */
    return TELL_NOTHING;
  double dx = (double)m->x - (double)a->x, dy = (double)m->y - (double)a->y;
  double d = sqrt(dx * dx + dy * dy);
  uint64_t period = 1;
  for (unsigned b = w->config.move_band_count; b-- > 0;)
    if (d > (double)w->config.move_bands[b].distance) {
      period = w->config.move_bands[b].period;
      break;
    }
  if (period == 1 || (a->id % period + tick % period) % period == 0)
    return TELL_NOW;
  return TELL_LATER;
}

/* A watcher whose view cannot be computed from the grid (its shard missed a
   ghost or has no index): its leaves and moves come from the marks, which
   are exact; its enters wait for a tick that scans. */
static int compute_marks(aoi__worker *k, aoi__entity *e, uint64_t tick)
{
  aoi_world *w = k->world;
  aoi__view *view = &e->view;
  uint32_t v = view->count, *hs = view->handles;
  bool resync = (e->stale & AOI__STALE_RESYNC) != 0;
  uint32_t *rec = reserve_events(k, v);
  if (rec == NULL)
    return AOI_ENOMEM;
  if (aoi__reserve(&w->allocator, (void **)&k->hits, &k->hit_capacity, v + 1,
                   sizeof(uint32_t)) != 0)
    return AOI_ENOMEM;
  const aoi__mark *mark = w->mark;
  double radius = e->radius, hysteresis = w->config.hysteresis;
  bool move_events = w->config.move_events != 0;
  float *told = aoi__view_told(view, aoi__bands(w));
  bool lagging = false;
  uint32_t *leaves = rec + AOI__RECORD_HEADER, *moves = k->hits;
  uint32_t nl = 0, nm = 0, kept = 0;
  for (uint32_t i = 0; i < v; i++) {
    uint32_t h = hs[i];
    const aoi__mark *m = &mark[h];
    double outer = fmax(radius, w->appeal[h]) + hysteresis;
    if ((m->layers & e->interest) == 0 ||
        !aoi__within(&w->shape, e->x, e->y, m->x, m->y, outer)) {
      leaves[nl++] = h;
      continue;
    }
    if (told != NULL) {
      float tx = told[2 * i], ty = told[2 * i + 1];
      told[2 * kept] = tx;
      told[2 * kept + 1] = ty;
      switch (tell_move(w, e, m, tx, ty, tick)) {
      case TELL_NOW:
        moves[nm++] = h;
        told[2 * kept] = m->x;
        told[2 * kept + 1] = m->y;
        break;
      case TELL_LATER:
        lagging = true;
        break;
      default:
        break;
      }
    } else if (move_events && (resync || m->moved == (uint32_t)tick)) {
      moves[nm++] = h;
    }
    hs[kept++] = h;
  }
  if (nm > 0)
    memcpy(leaves + nl, moves, sizeof(uint32_t) * nm);
  view->count = kept;
  commit_events(k, e, nl, 0, nm);
  e->stale = AOI__STALE_WHOLE | (lagging ? AOI__STALE_POLICY : 0);
  k->lagging += lagging;
  return 0;
}

/* Computes one watcher's events and new view from a scan of the grid.
   Every marker of interest within its outer reach (radius plus hysteresis)
   is met once: one its view holds is kept (and told if it moved), one it
   does not hold enters if it lies within the radius itself. What the view
   holds and the scan did not meet leaves. Leaves and moves come out in the
   view's order (by id), the enters are sorted. Returns 0 or AOI_ENOMEM:
   when the record cannot be stored the watcher keeps its view and gets no
   event (a resync next tick); when only its enters cannot be stored, they
   wait for the next tick (and the worker reports AOI_ENOMEM). */
static int compute_whole(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                         uint64_t tick)
{
  (void)tick;
  aoi_world *w = k->world;
  const aoi__shape *shape = &w->shape;
  aoi__view *view = &e->view;
  uint32_t v = view->count;
  const uint32_t *held = view->handles;
  for (uint32_t i = 0; i < v; i++)
    set_member(k, held[i]);

  double inner = e->radius, outer = inner + w->config.hysteresis;
  bool hysteresis = outer != inner;
  uint32_t interest = e->interest, self = e->handle;
  double box[4];
  uint32_t r[4], n = 0, block = 0;
  bool complete = true;
  aoi__reach_box(shape, e->x, e->y, outer, box);
  aoi__grid_range(g, box, r);
  enum { BLOCK = 256 };
  uint32_t hits[BLOCK];
  for (uint32_t cy = r[1]; cy <= r[3]; cy++) {
    uint32_t begin = aoi__grid_row_begin(g, cy, r[0]);
    uint32_t end = aoi__grid_row_end(g, cy, r[2]);
    block += end - begin;
    for (uint32_t at = begin; at < end; at += BLOCK) {
      uint32_t len = end - at < BLOCK ? end - at : BLOCK;
      uint32_t found = within_run(shape, g, at, len, e->x, e->y, outer, hits);
      for (uint32_t f = 0; f < found; f++) {
        uint32_t i = hits[f];
        uint32_t h = g->handle[i];
        if (!(g->info[i] & AOI__ENTRY_MARKER) ||
            (g->layers[i] & interest) == 0 || h == self)
          continue;
        if (is_member(k, h)) {
          clear_member(k, h); /* met: kept */
          if (g->info[i] & AOI__ENTRY_MOVED)
            set_moved(k, h);
          continue;
        }
        if (hysteresis &&
            !aoi__within(shape, e->x, e->y, g->x[i], g->y[i], inner))
          continue;
        if (!complete || !reserve_candidate(k, n)) {
          complete = false;
          continue;
        }
        k->candidates[n++] = (aoi__candidate){g->id[i], h};
      }
    }
  }
  bool resync = (e->stale & AOI__STALE_RESYNC) != 0;
  if (!complete)
    n = 0;
  uint32_t *rec = NULL;
  if (v + n > 0 &&
      ((rec = reserve_events(k, v + n)) == NULL ||
       aoi__reserve(&w->allocator, (void **)&k->hits, &k->hit_capacity,
                    v + 1, sizeof(uint32_t)) != 0)) {
    /* keep the view; the bits go back to clear */
    for (uint32_t i = 0; i < v; i++) {
      clear_member(k, held[i]);
      take_moved(k, held[i]);
    }
    return AOI_ENOMEM;
  }
  if (n > 0 &&
      view_reserve(&w->allocator, view, v + n, view_hint(k, block, v + n),
                   false) != 0) {
    complete = false;
    n = 0;
  }
  uint32_t *hs = view->handles; /* may have moved */
  bool move_events = w->config.move_events != 0;
  if (v + n == 0) {
    k->view_n++;
    if (!complete)
      fail(k, AOI_ENOMEM); /* its enters come next tick */
    e->stale = complete ? 0 : AOI__STALE_WHOLE;
    return 0;
  }
  uint32_t *out = rec + AOI__RECORD_HEADER, *moves = k->hits;
  uint32_t nl = 0, nm = 0, kept = 0;
  for (uint32_t i = 0; i < v; i++) {
    uint32_t h = hs[i];
    if (is_member(k, h)) { /* not met: it leaves */
      clear_member(k, h);
      out[nl++] = h;
      continue;
    }
    if (take_moved(k, h) | resync) {
      if (move_events)
        moves[nm++] = h;
    }
    hs[kept++] = h;
  }
  if (n > 0) {
    aoi__candidate *enters = k->candidates;
    sort_by_id(enters, n, spare_candidates(k));
    for (uint32_t j = 0; j < n; j++)
      out[nl + j] = enters[j].handle;
    merge_enters(view, NULL, kept, enters, n, w->idof, w->mark);
  } else {
    view->count = kept;
  }
  if (nm > 0)
    memcpy(out + nl + n, moves, sizeof(uint32_t) * nm);
  if (v + n > 0)
    commit_events(k, e, nl, n, nm);
  k->view_sum += view->count;
  k->view_n++;
  if (!complete) {
    fail(k, AOI_ENOMEM);
    e->stale = AOI__STALE_WHOLE; /* its enters come next tick */
    return 0;
  }
  e->stale = 0;
  return 0;
}

/* Clears both bits of every handle of a view. */
static void clear_view_bits(aoi__worker *k, const uint32_t *hs, uint32_t v)
{
  for (uint32_t i = 0; i < v; i++) {
    clear_member(k, hs[i]);
    take_moved(k, hs[i]);
  }
}

/* Computes the events of a watcher that did not change this tick and whose
   view the last tick computed: only markers that changed can enter, leave
   or move, and each one that the view holds stood within the watcher's
   reach at the end of the last tick, so it is in the grid near the watcher
   as a changed marker or as a departure. The view's handles get their
   membership bit; each changed one met is marked in the second bitset
   (a move keeps its membership bit, a leave loses it), and one walk of the
   view then writes the leaves and moves in id order. Cost follows change:
   a watcher with nothing changed near it is not computed at all, and one
   with a few changes reads its view and a few cells. Returns 0 or
   AOI_ENOMEM (then nothing changed). */
static int compute_changes(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                           uint64_t tick)
{
  aoi_world *w = k->world;
  const aoi_allocator *a = &w->allocator;
  const aoi__shape *shape = &w->shape;
  const aoi__mark *mark = w->mark;
  aoi__view *view = &e->view;
  const uint32_t *held = view->handles;
  uint32_t v = view->count;
  for (uint32_t i = 0; i < v; i++)
    set_member(k, held[i]);
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
          if (h == e->handle || take_moved(k, h)) {
            if (h != e->handle)
              set_moved(k, h); /* met before: a hit is taken once */
            continue;
          }
          if (is_member(k, h)) {
            /* held: it leaves or moves */
            const aoi__mark *m = &mark[h];
            if ((m->layers & e->interest) == 0 ||
                !aoi__within(shape, e->x, e->y, m->x, m->y, outer)) {
              clear_member(k, h);
              nl++;
            } else if (!move_events || m->moved != (uint32_t)tick) {
              continue;
            }
            set_moved(k, h);
            nh++;
            continue;
          }
          /* not held: a changed marker (each is listed once) may enter */
          if (pass != 0 || (g->layers[i] & e->interest) == 0 ||
              !aoi__within(shape, e->x, e->y, g->x[i], g->y[i], inner))
            continue;
          if (!reserve_candidate(k, n)) {
            clear_view_bits(k, held, v);
            return AOI_ENOMEM;
          }
          k->candidates[n++] = (aoi__candidate){g->id[i], h};
        }
      }
    }
  if (nh + n == 0) {
    clear_view_bits(k, held, v);
    return 0;
  }
  uint32_t *rec = reserve_events(k, nh + n);
  if (rec == NULL || view_reserve(a, view, v - nl + n, 0, false) != 0 ||
      aoi__reserve(a, (void **)&k->hits, &k->hit_capacity, nh + 1,
                   sizeof(uint32_t)) != 0) {
    clear_view_bits(k, view->handles, v);
    return AOI_ENOMEM;
  }
  AOI__STRESS();
  aoi__candidate *enters = k->candidates;
  sort_by_id(enters, n, spare_candidates(k));
  uint32_t *hs = view->handles, *moves = k->hits;
  uint32_t *out = rec + AOI__RECORD_HEADER;
  uint32_t ql = 0, nm = 0, kept = 0;
  for (uint32_t i = 0; i < v; i++) {
    uint32_t h = hs[i];
    bool member = is_member(k, h), hit = take_moved(k, h);
    clear_member(k, h);
    if (hit && !member) {
      out[ql++] = h;
      continue;
    }
    if (hit)
      moves[nm++] = h;
    hs[kept++] = h;
  }
  for (uint32_t j = 0; j < n; j++)
    out[nl + j] = enters[j].handle;
  if (nm > 0)
    memcpy(out + nl + n, moves, sizeof(uint32_t) * nm);
  merge_enters(view, NULL, kept, enters, n, w->idof, w->mark);
  commit_events(k, e, nl, n, nm);
  return 0;
}


static inline bool pick_before(const aoi__pick *a, const aoi__pick *b)
{
  return a->key < b->key || (a->key == b->key && a->id < b->id);
}

/* Puts the k picks that come first (smallest key, then smallest id) in
   p[0 .. k), in no order: a quickselect, O(n) expected. Keys and ids
   order the picks totally, so which k they are does not depend on the
   pivots. */
static void select_nearest(aoi__pick *p, uint32_t n, uint32_t k)
{
  uint32_t lo = 0, hi = n; /* the k-th lies in [lo, hi) */
  while (hi - lo > 1) {
    /* median of three as the pivot, moved to the end */
    uint32_t mid = lo + (hi - lo) / 2, last = hi - 1;
    if (pick_before(&p[mid], &p[lo])) {
      aoi__pick t = p[mid]; p[mid] = p[lo]; p[lo] = t;
    }
    if (pick_before(&p[last], &p[lo])) {
      aoi__pick t = p[last]; p[last] = p[lo]; p[lo] = t;
    }
    if (pick_before(&p[mid], &p[last])) {
      aoi__pick t = p[mid]; p[mid] = p[last]; p[last] = t;
    }
    aoi__pick pivot = p[last];
    uint32_t store = lo;
    for (uint32_t i = lo; i < last; i++)
      if (pick_before(&p[i], &pivot)) {
        aoi__pick t = p[i]; p[i] = p[store]; p[store] = t;
        store++;
      }
    p[last] = p[store];
    p[store] = pivot;
    /* p[lo .. store) come before the pivot, p[store + 1 .. hi) after */
    if (store == k - 1 || store == k)
      return;
    if (store < k)
      lo = store + 1;
    else
      hi = store;
  }
}

static bool reserve_pick(aoi__worker *k, uint32_t n)
{
  if (n < k->pick_capacity)
    return true;
  return aoi__reserve(&k->world->allocator, (void **)&k->picks,
                      &k->pick_capacity, n + 1, sizeof(aoi__pick)) == 0;
}

/* Lists, for every owned watcher of the shard, the markers whose appeal
   is larger than its radius and reaches it (their appeal plus the
   hysteresis): only those can be seen beyond the watcher's own reach.
   Each marker with an appeal looks around itself once, so a few of them
   cost the watchers near them, and no watcher scans further than its
   own radius. 0 or AOI_ENOMEM. */
static int find_appeals(aoi__worker *k, aoi__shard *s)
{
  aoi_world *w = k->world;
  const aoi_allocator *a = &w->allocator;
  const aoi__grid *g = &s->grid;
  uint32_t slots = s->count, pairs = 0;
  int rc = aoi__reserve(a, (void **)&k->appeal_start,
                        &k->appeal_start_capacity, slots + 2,
                        sizeof(uint32_t));
  if (rc != 0)
    return rc;
  memset(k->appeal_start, 0, sizeof(uint32_t) * (slots + 2));
  uint32_t end = g->width == 0 ? 0 : aoi__grid_row_end(g, g->height - 1,
                                                        g->width - 1);
  const uint32_t want = AOI__ENTRY_OWNED | AOI__ENTRY_WATCHER;
  for (uint32_t i = 0; i < end; i++) {
    const uint32_t appealing = AOI__ENTRY_MARKER | AOI__ENTRY_APPEAL;
    if ((g->info[i] & appealing) != appealing)
      continue;
    float appeal = w->appeal[g->handle[i]];
    double reach = (double)appeal + w->config.hysteresis, box[4];
    uint32_t r[4];
    aoi__reach_box(&w->shape, g->x[i], g->y[i], reach, box);
    aoi__grid_range(g, box, r);
    for (uint32_t cy = r[1]; cy <= r[3]; cy++)
      for (uint32_t j = aoi__grid_row_begin(g, cy, r[0]);
           j < aoi__grid_row_end(g, cy, r[2]); j++) {
        if ((g->info[j] & want) != want || !(g->radius[j] < appeal) ||
            g->handle[j] == g->handle[i] ||
            !aoi__within(&w->shape, g->x[j], g->y[j], g->x[i], g->y[i],
                         reach))
          continue;
        if ((rc = aoi__reserve(a, (void **)&k->appeal_pairs,
                               &k->appeal_pair_capacity, pairs + 1,
                               sizeof(uint64_t))) != 0)
          return rc;
        k->appeal_pairs[pairs++] = (uint64_t)g->slot[j] << 32 | i;
        k->appeal_start[g->slot[j] + 2]++;
      }
  }
  if ((rc = aoi__reserve(a, (void **)&k->appeal, &k->appeal_capacity,
                         pairs + 1, sizeof(uint32_t))) != 0)
    return rc;
  for (uint32_t i = 0; i < slots; i++)
    k->appeal_start[i + 2] += k->appeal_start[i + 1];
  /* appeal_start[slot + 1] is the running cursor, then the start of the
     next slot */
  for (uint32_t p = 0; p < pairs; p++) {
    uint32_t slot = (uint32_t)(k->appeal_pairs[p] >> 32);
    k->appeal[k->appeal_start[slot + 1]++] = (uint32_t)k->appeal_pairs[p];
  }
  return 0;
}

/* Adds marker h (id, at x, y) to watcher e's picks if e could see it:
   `base` is max(e's radius, its appeal). False when out of memory. */
static bool add_pick_at(aoi__worker *k, const aoi__entity *e, uint32_t h,
                        uint64_t id, float x, float y, double base,
                        uint32_t how, uint32_t *n)
{
  aoi_world *w = k->world;
  if (is_member(k, h))
    how |= AOI__PICK_MEMBER;
  double hysteresis = w->config.hysteresis;
  double reach = (how & AOI__PICK_MEMBER) ? base + hysteresis : base;
  if (!aoi__within(&w->shape, e->x, e->y, x, y, reach))
    return true;
  if (!reserve_pick(k, *n))
    return false;
  aoi__pick *p = &k->picks[(*n)++];
  p->id = id;
  p->handle = h;
  p->how = how;
  p->key = 0;
  if (e->cap > 0) {
    double dx = (double)x - (double)e->x, dy = (double)y - (double)e->y;
    p->key = sqrt(dx * dx + dy * dy);
    if (how & AOI__PICK_MEMBER)
      p->key -= hysteresis;
  }
  return true;
}

static inline bool add_pick(aoi__worker *k, const aoi__entity *e,
                            const aoi__grid *g, uint32_t i, double base,
                            uint32_t how, uint32_t *n)
{
  return add_pick_at(k, e, g->handle[i], g->id[i], g->x[i], g->y[i], base,
                     how, n);
}

/* Whether grid entry i is a marker that watcher e's own radius must find:
   not e itself, of interest, and not one whose appeal reaches further
   (the appeal list has those). */
static inline bool own_marker(const aoi_world *w, const aoi__entity *e,
                              const aoi__grid *g, uint32_t i, bool any_appeal)
{
  uint32_t info = g->info[i];
  return (info & AOI__ENTRY_MARKER) && (g->layers[i] & e->interest) != 0 &&
         g->handle[i] != e->handle &&
         !(any_appeal && (info & AOI__ENTRY_APPEAL) &&
           w->appeal[g->handle[i]] > e->radius);
}

/* The picks of a watcher: every marker it could see, from a scan of its
   reach and its appeal list. `block` counts the entries scanned. */
static bool gather_reach(aoi__worker *k, const aoi__entity *e,
                         const aoi__grid *g, const uint32_t *appeals,
                         uint32_t nappeals, bool any_appeal, uint32_t *n,
                         uint32_t *block)
{
  aoi_world *w = k->world;
  double radius = e->radius, box[4];
  uint32_t r[4];
  aoi__reach_box(&w->shape, e->x, e->y, radius + w->config.hysteresis, box);
  aoi__grid_range(g, box, r);
  for (uint32_t cy = r[1]; cy <= r[3]; cy++) {
    uint32_t begin = aoi__grid_row_begin(g, cy, r[0]);
    uint32_t end = aoi__grid_row_end(g, cy, r[2]);
    *block += end - begin;
    for (uint32_t i = begin; i < end; i++)
      if (own_marker(w, e, g, i, any_appeal) &&
          !add_pick(k, e, g, i, radius, 0, n))
        return false;
  }
  for (uint32_t j = 0; j < nappeals; j++) {
    uint32_t i = appeals[j];
    if ((g->layers[i] & e->interest) != 0 &&
        !add_pick(k, e, g, i, w->appeal[g->handle[i]], AOI__PICK_APPEAL, n))
      return false;
  }
  return true;
}

/* Keeps the cap nearest picks of n, if there are more: the others can
   never be among the nearest, however many more come. */
static uint32_t keep_nearest(aoi__worker *k, uint32_t n, uint32_t cap)
{
  if (n <= cap)
    return n;
  select_nearest(k->picks, n, cap);
  return cap;
}

/* The markers of one cell of the fine grid that watcher e's own radius
   finds, and that its view does not hold, as picks. */
static bool pick_cell(aoi__worker *k, const aoi__entity *e,
                      const aoi__grid *fine, uint32_t cell, bool any_appeal,
                      uint32_t *n, uint32_t *block)
{
  uint32_t begin = fine->start[AOI__GRID_CLASSES * cell];
  uint32_t end = fine->start[AOI__GRID_CLASSES * cell + 2];
  *block += end - begin;
  for (uint32_t i = begin; i < end; i++)
    if (own_marker(k->world, e, fine, i, any_appeal) &&
        !is_member(k, fine->handle[i]) &&
        !add_pick(k, e, fine, i, e->radius, 0, n))
      return false;
  return true;
}

/* The picks of a capped watcher, nearest first: the members it held
   (from the marks), its appeal list, then the fine grid's cells in rings
   around it, until the cap-th nearest so far is nearer than anything the
   next ring can hold, or its radius is passed. A crowd then costs each
   capped watcher about the cells that hold its cap nearest, not its whole
   reach. Only the cap nearest are left in the picks. */
static bool gather_nearest(aoi__worker *k, const aoi__entity *e,
                           const aoi__grid *g, const aoi__grid *fine,
                           const uint32_t *appeals, uint32_t nappeals,
                           bool any_appeal, uint32_t *n, uint32_t *block)
{
  aoi_world *w = k->world;
  const aoi__view *view = &e->view;
  double radius = e->radius;
  uint32_t cap = e->cap;
  for (uint32_t j = 0; j < view->count; j++) {
    uint32_t h = view->handles[j];
    const aoi__mark *m = &w->mark[h];
    float appeal = w->appeal[h];
    if ((m->layers & e->interest) != 0 &&
        !add_pick_at(k, e, h, w->idof[h], m->x, m->y,
                     appeal > radius ? appeal : radius,
                     appeal > e->radius ? AOI__PICK_APPEAL : 0, n))
      return false;
  }
  for (uint32_t j = 0; j < nappeals; j++) {
    uint32_t i = appeals[j];
    if ((g->layers[i] & e->interest) != 0 && !is_member(k, g->handle[i]) &&
        !add_pick(k, e, g, i, w->appeal[g->handle[i]], AOI__PICK_APPEAL, n))
      return false;
  }
  double at[4] = {e->x, e->y, e->x, e->y};
  uint32_t c[4];
  aoi__grid_range(fine, at, c);
  double side = 1 / fine->inverse;
  double rx = floor(((double)e->x - fine->x0) * fine->inverse);
  double ry = floor(((double)e->y - fine->y0) * fine->inverse);
  /* outside the grid's box, its edge cells hold what lies beyond: no ring
     bounds the distance then */
  bool inside = rx == (double)c[0] && ry == (double)c[1];
  /* how far apart, per axis, its radius can see a marker */
  double reach = aoi__reach_extent(&w->shape, radius) * (1 + 1e-9) + 1e-9;
  uint32_t cx = c[0], cy = c[1];
  for (uint32_t ring = 0;; ring++) {
    uint32_t x0 = cx >= ring ? cx - ring : 0, y0 = cy >= ring ? cy - ring : 0;
    uint32_t x1 = cx + ring < fine->width ? cx + ring : fine->width - 1;
    uint32_t y1 = cy + ring < fine->height ? cy + ring : fine->height - 1;
    for (uint32_t y = y0; y <= y1; y++) {
      /* the ring's top and bottom rows whole, its sides' two cells */
      uint32_t row = y * fine->width;
      bool ok = true;
      if (y + ring == cy || y == cy + ring) {
        for (uint32_t x = x0; x <= x1 && ok; x++)
          ok = pick_cell(k, e, fine, row + x, any_appeal, n, block);
      } else {
        if (cx >= ring)
          ok = pick_cell(k, e, fine, row + cx - ring, any_appeal, n, block);
        if (ok && cx + ring < fine->width)
          ok = pick_cell(k, e, fine, row + cx + ring, any_appeal, n, block);
      }
      if (!ok)
        return false;
    }
    bool all = x0 == 0 && y0 == 0 && x1 == fine->width - 1 &&
               y1 == fine->height - 1;
    if (all)
      return true;
    /* nothing beyond this ring lies nearer than `beyond`, per axis */
    double beyond = inside ? (double)ring * side * (1 - 1e-9) : 0;
    if (beyond > reach)
      return true; /* past its own reach: no new pick */
    if (*n >= cap) {
      *n = keep_nearest(k, *n, cap);
      double kth = 0;
      for (uint32_t j = 0; j < *n; j++)
        kth = k->picks[j].key > kth ? k->picks[j].key : kth;
      if (kth < beyond)
        return true;
    }
  }
}

/* Computes a watcher under the interest policies, from scratch: the
   markers within its own reach (but those whose appeal is larger, which
   find_appeals listed), the markers that reach it by their appeal, then,
   under a cap, the nearest of them, and with move bands, the moves its
   bands allow this tick. Events and failures as compute_whole. */
static int compute_policy(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                          const aoi__grid *fine, const uint32_t *appeals,
                          uint32_t nappeals, bool any_appeal, uint64_t tick)
{
  aoi_world *w = k->world;
  const aoi_allocator *a = &w->allocator;
  const aoi__mark *mark = w->mark;
  aoi__view *view = &e->view;
  uint32_t v = view->count;
  for (uint32_t i = 0; i < v; i++)
    set_member(k, view->handles[i]);
  uint32_t n = 0, block = 0;
  bool complete = e->cap > 0 && fine != NULL
                      ? gather_nearest(k, e, g, fine, appeals, nappeals,
                                       any_appeal, &n, &block)
                      : gather_reach(k, e, g, appeals, nappeals, any_appeal,
                                     &n, &block);
  if (!complete) { /* keep the view; a resync next tick */
    clear_view_bits(k, view->handles, v);
    return AOI_ENOMEM;
  }
  if (e->cap > 0)
    n = keep_nearest(k, n, e->cap);
  /* The picks that the view held stay: their bit goes. The others enter. */
  uint32_t ne = 0;
  bool far = false;
  for (uint32_t j = 0; j < n; j++) {
    const aoi__pick *p = &k->picks[j];
    far |= (p->how & AOI__PICK_APPEAL) != 0;
    if (p->how & AOI__PICK_MEMBER) {
      clear_member(k, p->handle);
      continue;
    }
    if (!reserve_candidate(k, ne)) {
      clear_view_bits(k, view->handles, v);
      return AOI_ENOMEM;
    }
    k->candidates[ne++] = (aoi__candidate){p->id, p->handle};
  }
  bool told = aoi__bands(w);
  uint32_t *rec = NULL;
  if (v + ne > 0 &&
      ((rec = reserve_events(k, v + ne)) == NULL ||
       aoi__reserve(a, (void **)&k->hits, &k->hit_capacity, v + 1,
                    sizeof(uint32_t)) != 0 ||
       view_reserve(a, view, v + ne, view_hint(k, block, v + ne), told) !=
           0)) {
    clear_view_bits(k, view->handles, v);
    return AOI_ENOMEM;
  }
  bool resync = (e->stale & AOI__STALE_RESYNC) != 0;
  bool move_events = w->config.move_events != 0, lagging = false;
  uint32_t *hs = view->handles;
  float *tp = aoi__view_told(view, told);
  uint32_t *out = rec + AOI__RECORD_HEADER, *moves = k->hits;
  uint32_t nl = 0, nm = 0, kept = 0;
  for (uint32_t i = 0; i < v; i++) {
    uint32_t h = hs[i];
    if (is_member(k, h)) { /* not picked: it leaves */
      clear_member(k, h);
      out[nl++] = h;
      continue;
    }
    const aoi__mark *m = &mark[h];
    if (told) {
      float tx = tp[2 * i], ty = tp[2 * i + 1];
      int tell = tell_move(w, e, m, tx, ty, tick);
      if (tell == TELL_NOW) {
        moves[nm++] = h;
        tx = m->x;
        ty = m->y;
      }
      lagging |= tell == TELL_LATER;
      tp[2 * kept] = tx;
      tp[2 * kept + 1] = ty;
    } else if (move_events && (resync || m->moved == (uint32_t)tick)) {
      moves[nm++] = h;
    }
    hs[kept++] = h;
  }
  if (ne > 0) {
    aoi__candidate *enters = k->candidates;
    sort_by_id(enters, ne, spare_candidates(k));
    for (uint32_t j = 0; j < ne; j++)
      out[nl + j] = enters[j].handle;
    merge_enters(view, tp, kept, enters, ne, w->idof, mark);
  } else {
    view->count = kept;
  }
  if (nm > 0)
    memcpy(out + nl + ne, moves, sizeof(uint32_t) * nm);
  if (v + ne > 0)
    commit_events(k, e, nl, ne, nm);
  k->view_sum += view->count;
  k->view_n++;
  e->stale = (far || lagging) ? AOI__STALE_POLICY : 0;
  k->lagging += lagging;
  return 0;
}

/* A watcher whose record cannot be stored keeps its view and is resynced
   by its next compute; one whose enters wait is scanned whole next tick. */
/* `dirty` is the number of changed markers and departures within its
   reach, or UINT32_MAX for a watcher that changed or missed a tick (the
   grid's flags say so). Where most of what it sees changed (a spectator
   over a walking crowd), one scan is cheaper than a probe per change. */
/* A watcher under a policy (a cap, move bands, a marker seen by its
   appeal now or at the last tick) is computed by compute_policy; the
   others by the plain paths, which the policies then cannot affect. */
static void compute_watcher(aoi__worker *k, aoi__entity *e, const aoi__grid *g,
                            const aoi__grid *fine, uint32_t dirty,
                            uint32_t slot, bool appeals, uint64_t tick)
{
  const uint32_t *listed = NULL;
  uint32_t nlisted = 0;
  if (appeals && g != NULL) {
    listed = k->appeal + k->appeal_start[slot];
    nlisted = k->appeal_start[slot + 1] - k->appeal_start[slot];
  }
  int rc;
  if (g == NULL)
    rc = compute_marks(k, e, tick);
  else if (nlisted > 0 || e->cap > 0 || (e->stale & AOI__STALE_POLICY) ||
           aoi__bands(k->world))
    rc = compute_policy(k, e, g, fine, listed, nlisted, appeals, tick);
  else if (dirty > e->view.count / 2 + 16)
    rc = compute_whole(k, e, g, tick);
  else
    rc = compute_changes(k, e, g, tick);
  if (rc != 0) {
    fail(k, rc);
    e->stale |= AOI__STALE_WHOLE | AOI__STALE_RESYNC;
  }
}

/* Every owned watcher of a shard that cannot scan: leaves and moves from
   the marks, enters later. */
static void compute_from_marks(aoi__worker *k, aoi__shard *s, uint64_t tick)
{
  for (uint32_t i = 0; i < s->count; i++)
    if (s->entities[i].flags & AOI_WATCHER)
      compute_watcher(k, &s->entities[i], NULL, NULL, UINT32_MAX, i, false,
                      tick);
}

static void compute_shard(aoi__worker *k, aoi__shard *s,
                          const aoi__tick_command *cmd)
{
  uint64_t started = aoi__now_ns();
  int rc = index_shard(k, s, cmd->cell_size, cmd->tick);
  if (rc != 0) {
    /* No index: queries see this shard as empty until the next tick. */
    fail(k, rc);
    s->grid.count = 0;
    s->grid.width = s->grid.height = 0;
    compute_from_marks(k, s, cmd->tick);
    return;
  }
  const aoi__grid *g = &s->grid;
  if (s->degraded) {
    compute_from_marks(k, s, cmd->tick); /* indexed for queries */
    return;
  }
  bool appeals = cmd->appeals;
  /* Capped watchers look for their nearest in a grid of cells about as
     small as the entries are dense (its cells are bounded by the entries,
     as the main grid's), built only where there are capped watchers. */
  const aoi__grid *fine = NULL;
  if (s->capped == 0) {
    if (s->fine.capacity > 0)
      aoi__grid_free(&k->world->allocator, &s->fine);
  } else if (aoi__grid_build_dense(&k->world->allocator, &s->fine, s->items,
                                   s->count + s->ghost_count, 3) == 0) {
    fine = &s->fine;
  } /* else: they scan their reach */
  if ((rc = reserve_members(k)) != 0 ||
      (rc = aoi__reserve(&k->world->allocator, (void **)&k->work,
                         &k->work_capacity, s->count + 1,
                         sizeof(uint64_t))) != 0 ||
      (appeals && (rc = find_appeals(k, s)) != 0)) {
    fail(k, rc);
    compute_from_marks(k, s, cmd->tick);
    return;
  }
  /* The watchers with work: those that changed or missed a tick, and those
     with a changed marker or a departure within their own reach. The
     others keep their views untouched: nothing they see changed. Each is
     listed by its slot, with the number of changes in its reach
     (UINT32_MAX: computed whole anyway), which compute_watcher reuses. */
  const uint32_t want = AOI__ENTRY_OWNED | AOI__ENTRY_WATCHER;
  uint64_t *work = k->work;
  uint32_t nw = 0;
  uint32_t end = g->width == 0 ? 0 : aoi__grid_row_end(g, g->height - 1,
                                                        g->width - 1);
  double hysteresis = k->world->config.hysteresis;
  for (uint32_t i = 0; i < end; i++) {
    uint32_t info = g->info[i];
    if ((info & want) != want)
      continue;
    uint32_t dirty = UINT32_MAX;
    if (!(info & (AOI__ENTRY_CHANGED | AOI__ENTRY_STALE))) {
      double box[4];
      uint32_t r[4];
      double reach = (double)g->radius[i] + hysteresis;
      aoi__reach_box(&k->world->shape, g->x[i], g->y[i], reach, box);
      aoi__grid_range(g, box, r);
      uint32_t slot = g->slot[i];
      if ((dirty = aoi__grid_dirty(g, r)) == 0 &&
          (!appeals ||
           k->appeal_start[slot + 1] == k->appeal_start[slot]))
        continue;
    }
    work[nw++] = (uint64_t)dirty << 32 | g->slot[i];
  }
  for (uint32_t j = 0; j < nw; j++) {
    /* Views and entities are scattered: fetch ahead. */
    if (j + 8 < nw)
      __builtin_prefetch(&s->entities[(uint32_t)work[j + 8]]);
    if (j + 4 < nw) {
      const aoi__entity *ahead = &s->entities[(uint32_t)work[j + 4]];
      const char *hs = (const char *)ahead->view.handles;
      size_t n = ahead->view.count;
      for (size_t at = 0; at < sizeof(uint32_t) * n && at < 512; at += 64)
        __builtin_prefetch(hs + at);
    }
    compute_watcher(k, &s->entities[(uint32_t)work[j]], g, fine,
                    (uint32_t)(work[j] >> 32), (uint32_t)work[j], appeals,
                    cmd->tick);
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
  k->handoffs = k->ghosts = k->events_made = k->lagging = 0;
  for (unsigned j = 0; j < w->threads; j++) {
    k->handoffs_out[j].count = k->ghosts_out[j].count = 0;
    k->handoffs_out[j].incomplete = k->ghosts_out[j].incomplete = false;
  }
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    w->shards[s].degraded = false;

  k->phase_started = aoi__now_ns();
  for (unsigned s = k->index; s < w->shard_count; s += w->threads) {
    apply_ops(k, &w->shards[s], cmd->tick);
    mark_moved(k, &w->shards[s], cmd->tick);
  }
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
      if (w->idof[e->view.handles[j - 1]] >= w->idof[e->view.handles[j]])
        return false;
  }
  return s->grid.width == 0 || aoi__grid_valid(&s->grid);
}
