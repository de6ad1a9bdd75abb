/*
 * exchange.c: step 2 of a tick, on each worker for its own shards: ghost
 * publishing.
 *
 * Every owned marker within ghost reach of another shard's rectangle is
 * copied there as a ghost: stored directly in a shard of this worker, or
 * appended to the ghost batch for the owning worker, one batch per peer
 * (worker.c). A shard's ghost reach is its own widest watcher's (per axis,
 * shape-aware), or the marker's appeal where that is wider, and a shard
 * without watchers is sent none: one far-sighted watcher widens the band
 * of ghosts around its own shard, not around every shard. The apply step
 * notes each shard's widest watcher (the ones it held at the last exchange,
 * and those added, widened or handed to it since: apply.c), and every
 * worker reads the notes once the handoff batches are in. Since a
 * watcher's position lies in its own shard's rectangle, every marker it
 * could see is then in that shard, owned or ghosted. Each departure this
 * tick's ops made (where a marker that moved or was removed stood at the
 * end of the last tick) goes the same way to every other shard near where
 * it stood; this one's grid reads its own in place (index.c).
 *
 * A shard that misses a ghost (out of memory, here or in a peer's batch)
 * is degraded for the tick: its watchers keep their views and get no
 * events until a tick that is complete.
 */
#include "internal.h"

#include <math.h>

/* Adds a ghost to one of this worker's shards; a shard that misses one
   computes no view this tick. */
static void store_ghost(aoi__worker *k, aoi__shard *t, const aoi__ghost *g)
{
  AOI__ASSERT(aoi__worker_of(k->world, t->index) == k->index);
  int rc = aoi__reserve(&k->world->allocator, (void **)&t->ghosts,
                        &t->ghost_capacity, t->ghost_count + 1,
                        sizeof(aoi__ghost));
  if (rc != 0) {
    aoi__fail(k, rc);
    t->degraded = true;
    return;
  }
  t->ghosts[t->ghost_count++] = *g;
  if (!(g->kind & AOI__GHOST_DEPARTED))
    t->ghost_markers++;
}

/* Whether (x, y) lies within d of the rectangle r per axis: what the cut
   lookups of aoi__layout_col and aoi__layout_row say, as comparisons. */
static inline bool near_rect(const double r[4], double x, double y, double d)
{
  return r[0] <= x + d && x - d < r[2] && r[1] <= y + d && y - d < r[3];
}

/* Whether (x, y) lies more than d inside every edge of r: then it is
   within d of no other shard. */
static inline bool deep_inside(const double r[4], double x, double y,
                               double d)
{
  return x - d >= r[0] && x + d < r[2] && y - d >= r[1] && y + d < r[3];
}

static void send(aoi__worker *k, aoi__ghost g, unsigned to)
{
  aoi_world *w = k->world;
  g.shard = to;
  unsigned owner = aoi__worker_of(w, to);
  if (owner != k->index)
    aoi__batch_append(k, &k->ghosts_out[owner], &g, sizeof(g));
  else
    store_ghost(k, &w->shards[to], &g);
}

/* Sends a copy of g to every shard but `skip` whose watchers could see it:
   every shard t with watchers that g lies within max(ghost_reach[t],
   appeal) of, per axis (appeal: the ghost reach of the marker's own
   appeal, or -1). The shards up to near_reach are found from the cuts,
   the far ones (`far`, which may leave out those g cannot reach) one by
   one. `rect` is the rectangle of the shard sending. Returns how many
   copies it sent. */
static uint32_t send_around(aoi__worker *k, aoi__ghost g, double appeal,
                            const double rect[4], const uint32_t *far,
                            unsigned nfar, unsigned skip)
{
  const aoi__layout *l = &k->world->layout;
  const double *reach = k->ghost_reach, near = k->near_reach;
  double x = g.x, y = g.y;
  uint32_t sent = 0;
  double d = aoi__max(near, appeal);
  if (near >= 0 && !deep_inside(rect, x, y, d)) {
    unsigned c0 = aoi__layout_col(l, x - d), c1 = aoi__layout_col(l, x + d);
    for (unsigned col = c0; col <= c1; col++) {
      unsigned r0 = aoi__layout_row(l, col, y - d);
      unsigned r1 = aoi__layout_row(l, col, y + d);
      for (unsigned row = r0; row <= r1; row++) {
        unsigned to = row * l->cols + col;
        /* none without watchers; the far ones come below */
        if (to == skip || reach[to] < 0 || reach[to] > near)
          continue;
        double e = aoi__max(reach[to], appeal), r[4];
        if (e < d) { /* (at d the cuts have said so) */
          aoi__layout_rect(l, to, r);
          if (!near_rect(r, x, y, e))
            continue;
        }
        send(k, g, to);
        sent++;
      }
    }
  }
  for (unsigned i = 0; i < nfar; i++) {
    unsigned to = far[i];
    double r[4];
    aoi__layout_rect(l, to, r);
    if (to != skip && near_rect(r, x, y, aoi__max(reach[to], appeal))) {
      send(k, g, to);
      sent++;
    }
  }
  return sent;
}

void aoi__ghost_reaches(aoi__worker *k)
{
  aoi_world *w = k->world;
  unsigned n = w->shard_count;
  double *reach = k->ghost_reach;
  k->far_count = 0;
  k->near_reach = -1;
  if (n == 1)
    return; /* nowhere to send */
  /* each shard's widest watcher: its own worker's note, and the notes of
     the workers that handed it theirs (read after their handoff batch) */
  for (unsigned t = 0; t < n; t++)
    reach[t] = w->shards[t].reach_radius;
  for (unsigned j = 0; j < w->threads; j++) {
    const aoi__worker *p = &w->workers[j];
    for (uint32_t i = 0; i < p->reach_to_count; i++) {
      uint32_t t = p->reach_to[i];
      reach[t] = aoi__max(reach[t], p->reach_put[t]);
    }
  }
  /* The AOI__FAR_SHARDS + 1 largest ghost reaches, in descending order:
     the shards above the last are far, and the last is near_reach. */
  double top[AOI__FAR_SHARDS + 1];
  unsigned ntop = 0;
  for (unsigned t = 0; t < n; t++) {
    if (reach[t] < 0) {
      reach[t] = -1;
      continue;
    }
    double g = reach[t] = aoi__ghost_reach(w, reach[t]);
    if (ntop == AOI__FAR_SHARDS + 1 && g <= top[AOI__FAR_SHARDS])
      continue;
    unsigned at = ntop < AOI__FAR_SHARDS + 1 ? ntop++ : AOI__FAR_SHARDS;
    for (; at > 0 && top[at - 1] < g; at--)
      top[at] = top[at - 1];
    top[at] = g;
  }
  /* (with at most AOI__FAR_SHARDS shards of watchers, all are far) */
  double near = ntop == AOI__FAR_SHARDS + 1 ? top[AOI__FAR_SHARDS] : -1;
  for (unsigned t = 0; t < n; t++)
    if (reach[t] > near) {
      AOI__ASSERT(k->far_count < AOI__FAR_SHARDS);
      k->far[k->far_count++] = t;
    }
  k->near_reach = near;
}

/* The far shards that a marker of shard s without appeal can reach
   (written to far[]: their count), and the distance inside s's edges
   beyond which such a marker goes to no other shard (*inside: send_around
   would find none): its own rectangle `rect` tells so without searching
   the cuts. */
static inline unsigned far_shards_near(const aoi__worker *k,
                                       const aoi__shard *s,
                                       const double rect[4], uint32_t *far,
                                       double *inside)
{
  const aoi_world *w = k->world;
  unsigned nfar = 0;
  double deep = k->near_reach;
  for (unsigned i = 0; i < k->far_count; i++) {
    double r[4], d = k->ghost_reach[k->far[i]];
    aoi__layout_rect(&w->layout, k->far[i], r);
    if (k->far[i] != s->index && r[0] - d <= rect[2] &&
        rect[0] <= r[2] + d && r[1] - d <= rect[3] && rect[1] <= r[3] + d) {
      far[nfar++] = k->far[i];
      deep = aoi__max(deep, d);
    }
  }
  *inside = deep;
  return nfar;
}

/* What the pass over a shard's entities counts, for its compute step and
   the next exchange (aoi__publish_ghosts stores it in the shard). */
typedef struct shard_count {
  double box[4];      /* of the owned entities' positions */
  uint32_t capped;    /* capped watchers, but the far-sighted */
  uint32_t unchanged; /* watchers neither changed nor stale */
  uint32_t reaching;  /* watchers that reach far_candidate */
  float widest;       /* the widest watcher's radius, but the far-sighted */
  float widest_all;   /* the widest watcher's radius */
} shard_count;

/* Counts entity e, at tick stamp `now`, into c: `hysteresis`, `far_reach`
   and `candidate` are the world's, in the caller's locals. */
static inline __attribute__((always_inline)) void
count_entity(shard_count *c, const aoi__entity *e, uint32_t now,
             double hysteresis, double far_reach, double candidate)
{
  aoi__box_add(c->box, e->x, e->y);
  if (!(e->flags & AOI_WATCHER))
    return;
  c->unchanged += e->changed != now && !e->stale;
  c->widest_all = aoi__maxf(c->widest_all, e->radius);
  c->reaching += aoi__reaches(e->radius, hysteresis, candidate);
  /* (a far-sighted one with a cap picks from the marks: no fine grid for
     it) */
  if (!aoi__reaches(e->radius, hysteresis, far_reach)) {
    c->widest = aoi__maxf(c->widest, e->radius);
    c->capped += e->cap > 0;
  }
}

/* Ghosts marker e of shard s (rectangle `rect`) to the shards whose
   watchers could see it: one seen by its appeal to any shard it may
   reach; any other to the near shards and the `nfar` far ones, unless it
   lies `inside` deep in the rectangle (far_shards_near). Its moved flag
   goes first if it did not move at tick stamp `now`. */
static inline __attribute__((always_inline)) void
publish_marker(aoi__worker *k, const aoi__shard *s, aoi__entity *e,
               const double rect[4], const uint32_t *far, unsigned nfar,
               double inside, uint32_t now)
{
  aoi_world *w = k->world;
  /* apply set the moved flag of a marker it moved this tick; one that
     moved in an earlier tick and not in this one loses it (stored only
     then: an entity's line stays clean) */
  if ((e->flags & AOI__ENTITY_MOVED) && e->touched != now)
    e->flags &= (uint8_t)~AOI__ENTITY_MOVED;
  bool appeal = (e->flags & AOI__ENTITY_APPEAL) != 0;
  if (!appeal && (inside < 0 || deep_inside(rect, e->x, e->y, inside)))
    return;
  aoi__ghost g;
  g.id = e->id;
  g.handle = e->handle;
  g.layers = e->layers;
  g.x = e->x;
  g.y = e->y;
  g.shard = s->index;
  g.kind = e->changed == now ? AOI__GHOST_CHANGED : 0;
  if (appeal)
    g.kind |= AOI__GHOST_APPEAL;
  if (e->flags & AOI__ENTITY_MOVED)
    g.kind |= AOI__GHOST_MOVED;
  /* one seen by its appeal may reach any far shard */
  k->ghosts +=
      appeal ? send_around(k, g, aoi__ghost_reach(w, w->appeal[e->handle]),
                           rect, k->far, k->far_count, s->index)
             : send_around(k, g, -1, rect, far, nfar, s->index);
}

/* Ghosts every marker near another shard's watchers, and sends this
   tick's departures to every other shard whose watchers could have seen
   the marker where it stood. The same pass counts the shard's entities
   (shard_count). */
void aoi__publish_ghosts(aoi__worker *k, aoi__shard *s, uint64_t tick)
{
  AOI__ASSERT(aoi__worker_of(k->world, s->index) == k->index);
  aoi_world *w = k->world;
  double rect[4], inside;
  aoi__layout_rect(&w->layout, s->index, rect);
  uint32_t far[AOI__FAR_SHARDS];
  unsigned nfar = far_shards_near(k, s, rect, far, &inside);
  uint32_t now = aoi__stamp(tick);
  /* (locals: the byte stored to an entity's flags may alias anything,
     and the world's fields would be loaded again after it) */
  double hysteresis = w->config.hysteresis;
  double far_reach = w->command.far_reach;
  double candidate = w->command.far_candidate;
  shard_count c = {{INFINITY, INFINITY, -INFINITY, -INFINITY}, 0, 0, 0,
                   -1, -1};
  for (uint32_t i = 0; i < s->count; i++) {
    aoi__entity *e = &s->entities[i];
    count_entity(&c, e, now, hysteresis, far_reach, candidate);
    if (e->flags & AOI_MARKER)
      publish_marker(k, s, e, rect, far, nfar, inside, now);
  }
  /* A departure serves the unchanged watchers that held the marker, which
     saw it by their own radius: a watcher that sees one by its appeal is
     computed whole every tick (scan.c). Where it stood may lie outside
     this shard's rectangle when the cuts moved: every far shard. */
  for (uint32_t i = 0; i < s->departed_count; i++)
    send_around(k, s->departed[i], -1, rect, k->far, k->far_count,
                s->index);
  s->capped = c.capped;
  s->unchanged = c.unchanged;
  s->radius_held = c.widest;
  s->radius_held_all = c.widest_all;
  s->far_held = far_reach;
  s->far_count = c.reaching;
  /* (never written with one shard: 0) */
  s->ghost_reach = k->ghost_reach[s->index] > 0 ? k->ghost_reach[s->index] : 0;
  memcpy(s->box, c.box, sizeof(c.box));
}

void aoi__take_ghosts(aoi__worker *k, const aoi__batch *b)
{
  aoi_world *w = k->world;
  const aoi__ghost *items = b->items;
  if (b->incomplete) /* the peer dropped a ghost for one of these shards */
    for (unsigned s = k->index; s < w->shard_count; s += w->threads)
      w->shards[s].degraded = true;
  for (uint32_t i = 0; i < b->count; i++)
    store_ghost(k, &w->shards[items[i].shard], &items[i]);
}
