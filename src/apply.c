/*
 * apply.c: step 1 of a tick, on each worker for its own shards. Everything
 * here runs on the worker that owns the shard, or on the host thread in a
 * tick it runs itself (aoi__tick_on_host).
 *
 * Apply. Take each shard's queue from its op ring and apply its records,
 * one per entity: adds, moves, radius and layer changes, removes (see
 * apply_record). Each moved or removed marker leaves a departure where it
 * stood at the end of the last tick, unless the tick leaves none (only an
 * unchanged watcher reads departures, push.c and compute_changes, and
 * with few of them each scans its reach instead: tick.c), and each
 * applied entity its mark
 * (the position and layers any worker reads in the compute step, and the
 * tick it last moved).
 *
 * Hand off. Every entity the records added or moved is checked against the
 * layout (every entity, when the cuts moved); one that now lies in another
 * shard is handed off: moved directly when that shard is this worker's, or
 * else appended to the handoff batch for the owning worker, which inserts
 * it when it takes the batch (worker.c). After this every entity sits in
 * the shard its position names.
 *
 * The host reserved, before the tick, room for everything this step adds
 * (entities, touched handles, departures, handoff batches), so no operation
 * and no handoff is lost to a failed allocation here.
 */
#include "internal.h"

#include <string.h>

int aoi__shard_insert(const aoi_allocator *a, aoi__shard *s,
                      aoi__location *location, const aoi__entity *entity)
{
  int rc = aoi__reserve_lined(a, &s->entity_block, (void **)&s->entities,
                              &s->capacity, s->count + 1, sizeof(aoi__entity));
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

/* Notes a handle moved or added this tick (room was reserved by the host:
   a record touches at most once). */
static void touch(aoi__shard *s, uint32_t handle)
{
  AOI__ASSERT(s->touched_count < s->touched_capacity);
  s->touched[s->touched_count++] = handle;
}

static void set_mark(aoi_world *w, const aoi__entity *e)
{
  aoi__mark *m = &w->mark[e->handle];
  m->x = e->x;
  m->y = e->y;
  m->layers = (e->flags & AOI_MARKER) ? e->layers : 0;
}

/* An entity's appeal, the host's: whether it has one is the entity's
   flag, the appeal itself the world's by handle (for a marker). */
static void set_appeal(aoi_world *w, aoi__entity *e, float appeal)
{
  w->appeal[e->handle] = (e->flags & AOI_MARKER) ? appeal : 0;
  e->flags = (uint8_t)((e->flags & ~AOI__ENTITY_APPEAL) |
                       (appeal > 0 ? AOI__ENTITY_APPEAL : 0));
}

/* Records where a marker stood at the end of the last tick, before its
   move or its removal this tick (room was reserved by the host: a record
   departs at most once). */
static void depart(aoi__shard *s, const aoi__entity *e)
{
  if (!(e->flags & AOI_MARKER))
    return;
  AOI__ASSERT(s->departed_count < s->departed_capacity);
  aoi__ghost *d = &s->departed[s->departed_count++];
  d->id = e->id;
  d->handle = e->handle;
  d->layers = e->layers; /* as the last tick saw it (push.c) */
  d->x = e->x;
  d->y = e->y;
  d->shard = s->index;
  d->kind = AOI__GHOST_DEPARTED;
}

/* Notes that shard s holds watcher e this tick, with the radius its
   record left: its reach sizes the shard's ghosts (exchange.c), unless it
   is far-sighted and needs none. */
static void note_reach(const aoi_world *w, aoi__shard *s,
                       const aoi__entity *e)
{
  if ((e->flags & AOI_WATCHER) && !aoi__far_sighted(w, e->radius))
    s->reach_radius = aoi__maxf(s->reach_radius, e->radius);
}

/* Applies one entity's record: what a run of operations on it since the
   last tick adds up to. A record moves it once, to where the last move put
   it, which is what the run of moves did: a marker that ends elsewhere
   departs from where it stood (one back where it stood needs no
   departure: nobody must look there for it), and a removed one always
   does. */
static void apply_record(aoi__worker *k, aoi__shard *s, const aoi__queue *q,
                         const aoi__record *r, uint64_t tick, bool departures)
{
  aoi_world *w = k->world;
  uint32_t what = aoi__record_what(q, r);
  const aoi__record_extra *more =
      r->extra < AOI__RECORD_JUST_REMOVE ? &q->extras[r->extra] : NULL;
  const aoi__host_entity *host = &w->host[r->handle];
  if (what & AOI__RECORD_ADD) {
    aoi__entity e = {0};
    e.id = w->mark[r->handle].id;
    e.handle = r->handle;
    e.flags = host->flags & (AOI_WATCHER | AOI_MARKER);
    e.x = r->x;
    e.y = r->y;
    e.radius = host->radius;
    e.layers = more->layers;
    e.interest = more->interest;
    e.cap = more->cap;
    e.touched = e.changed = aoi__stamp(tick);
    /* New to every view but one installed this tick (transfer.c), where
       it stood elsewhere at the last tick: moved. */
    if (e.flags & AOI_MARKER)
      e.flags |= AOI__ENTITY_MOVED;
    int rc = aoi__shard_insert(&w->allocator, s, w->location, &e);
    if (rc != 0) {
      aoi__fail(k, rc);
      return;
    }
    touch(s, r->handle);
    set_mark(w, &e);
    w->mark[r->handle].moved = e.touched;
    set_appeal(w, &s->entities[w->location[r->handle].slot], host->appeal);
    note_reach(w, s, &e);
    return;
  }
  aoi__location *loc = &w->location[r->handle];
  AOI__ASSERT(loc->shard == s->index && loc->slot < s->count);
  aoi__entity *e = &s->entities[loc->slot];
  uint32_t now = aoi__stamp(tick);
  e->changed = now;
  if (what & AOI__RECORD_MOVE) {
    /* one record an entity a tick: not touched yet */
    AOI__ASSERT(e->touched != now);
    e->touched = now;
    touch(s, r->handle);
    /* moved this tick: not where it stood at the end of the last one (the
       exchange clears the flag the next tick it is not touched) */
    bool moved = (e->flags & AOI_MARKER) && (e->x != r->x || e->y != r->y);
    if (moved) {
      if (departures)
        depart(s, e);
      w->mark[r->handle].moved = now;
    }
    e->flags = (uint8_t)((e->flags & ~AOI__ENTITY_MOVED) |
                         (moved ? AOI__ENTITY_MOVED : 0));
    e->x = r->x;
    e->y = r->y;
  }
  if (what & AOI__RECORD_RADIUS)
    e->radius = host->radius;
  if (what & AOI__RECORD_LAYERS) {
    e->layers = more->layers;
    e->interest = more->interest;
  }
  if (what & AOI__RECORD_APPEAL)
    set_appeal(w, e, host->appeal);
  if (what & AOI__RECORD_CAP)
    e->cap = more->cap;
  if (what & (AOI__RECORD_RADIUS | AOI__RECORD_CAP))
    note_reach(w, s, e);
  if (what & AOI__RECORD_REMOVE) {
    if (departures)
      depart(s, e);
    aoi__view_recycle(k, &e->view);
    w->mark[r->handle] = (aoi__mark){w->mark[r->handle].id, 0, 0, 0, now};
    w->appeal[r->handle] = 0;
    shard_take(s, w->location, loc->slot);
    loc->shard = loc->slot = AOI__NONE;
    return;
  }
  set_mark(w, e);
}

void aoi__apply_ops(aoi__worker *k, aoi__shard *s, uint64_t tick,
                    bool departures)
{
  AOI__ASSERT(aoi__worker_of(k->world, s->index) == k->index);
  s->touched_count = s->departed_count = 0;
  /* The watchers it held, and those the records add or widen (handoffs
     add theirs as they come: hand_off); far-sighted ones need no ghosts.
     Those held that were far-sighted at the last exchange are so now
     unless the far reach rose since. */
  s->reach_radius = k->world->command.far_reach <= s->far_held
                        ? s->radius_held
                        : s->radius_held_all;
  const aoi__queue *q;
  while ((q = aoi__ring_pop(s->ops)) == NULL)
    ; /* cannot happen: the host pushed it before the command */
  const aoi__location *location = k->world->location;
  for (uint32_t i = 0; i < q->count; i++) {
    /* the records come in the host's order, the entities in their
       grid's (order_entities, index.c): fetch ahead */
    if (i + 8 < q->count) {
      uint32_t slot = location[q->records[i + 8].handle].slot;
      if (slot < s->count) /* one line */
        __builtin_prefetch(&s->entities[slot]);
    }
    apply_record(k, s, q, &q->records[i], tick, departures);
  }
}

/* ---- handoffs ----------------------------------------------------------- */

/* Notes that shard `to` may hold a watcher of `radius` this tick: in the
   shard itself when it is this worker's, else in reach_put for the
   exchange step, where every worker reads it (exchange.c). Noted before
   the handoff is made, and kept if it fails: too wide a reach costs
   ghosts, too narrow one would lose them. */
static void reach_to(aoi__worker *k, unsigned to, float radius)
{
  aoi_world *w = k->world;
  if (aoi__worker_of(w, to) == k->index) {
    w->shards[to].reach_radius = aoi__maxf(w->shards[to].reach_radius, radius);
    return;
  }
  if (k->reach_put[to] < 0) {
    AOI__ASSERT(k->reach_to_count < w->shard_count);
    k->reach_to[k->reach_to_count++] = to;
  }
  k->reach_put[to] = aoi__maxf(k->reach_put[to], radius);
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
  if ((e.flags & AOI_WATCHER) && !aoi__far_sighted(w, e.radius))
    reach_to(k, to, e.radius);
  if (owner == k->index) {
    /* Insert first: if that fails the entity stays where it is. */
    int rc = aoi__shard_insert(&w->allocator, &w->shards[to], w->location, &e);
    if (rc != 0) {
      aoi__fail(k, rc);
      return;
    }
    shard_take(s, w->location, slot);
  } else {
    aoi__batch *b = &k->handoffs_out[owner];
    uint32_t before = b->count;
    aoi__handoff message = {to, e};
    aoi__batch_append(k, b, &message, sizeof(message));
    if (b->count == before)
      return;
    shard_take(s, w->location, slot);
  }
  k->handoffs++;
}

/* The entities this tick's records added or moved; all of them when the
   layout changed. */
void aoi__find_handoffs(aoi__worker *k, aoi__shard *s, bool relayout,
                        uint64_t tick)
{
  aoi_world *w = k->world;
  if (relayout || s->touched_count > s->count / 4) {
    /* Downwards: a take moves the last entity, already seen, into `i`. In
       order, when many moved: the touched come in handle order, which
       says nothing of where their entities lie. */
    for (uint32_t i = s->count; i-- > 0;)
      if (relayout || s->entities[i].touched == aoi__stamp(tick))
        hand_off(k, s, i);
    return;
  }
  for (uint32_t i = 0; i < s->touched_count; i++) {
    if (i + 8 < s->touched_count) { /* in handle order: fetch ahead */
      uint32_t slot = w->location[s->touched[i + 8]].slot;
      if (slot < s->count)
        __builtin_prefetch(&s->entities[slot]);
    }
    const aoi__location *loc = &w->location[s->touched[i]];
    if (loc->shard == s->index) /* else removed since */
      hand_off(k, s, loc->slot);
  }
}

void aoi__take_handoffs(aoi__worker *k, const aoi__batch *b)
{
  aoi_world *w = k->world;
  const aoi__handoff *items = b->items;
  for (uint32_t i = 0; i < b->count; i++) {
    AOI__ASSERT(aoi__worker_of(w, items[i].shard) == k->index);
    AOI__STRESS();
    int rc = aoi__shard_insert(&w->allocator, &w->shards[items[i].shard],
                               w->location, &items[i].entity);
    if (rc != 0)
      aoi__fail(k, rc);
  }
}
