/*
 * world.c: one world across the ranks of an MPI communicator (aoi_mpi.h
 * is the contract, docs/distributed.md the design).
 *
 * Each rank owns a vertical strip of the map and holds, in a world of its
 * own (`local`), the entities standing in it and ghosts of the entities
 * of other ranks that stand within `band` (max_radius + hysteresis, more
 * for the cells shape) of it: every marker an owned watcher can see. A
 * ghost is a whole entity there, a watcher too when it is one, so that a
 * watcher arriving by a transfer is already in place; the events of
 * watchers this rank does not own are computed and dropped.
 *
 * A tick, on every rank at once:
 * 1. Encode. For every owned entity that changed since the last tick,
 *    and every one removed, a record to each rank that holds or must
 *    now hold it: a ghost (its whole state), a move (only its position,
 *    to a rank that holds it already), a drop (it left that rank's band)
 *    or a removal. One that now stands in another rank's strip goes
 *    there as a transfer, with its view as of the last tick, and stays
 *    here as a ghost if it is still within the band.
 * 2. Exchange: one message to each peer (transport.h).
 * 3. Apply, in rank order, in three rounds: the ghosts, moves and
 *    transfers of entities this rank holds or newly holds; then each
 *    transferred watcher's view is installed in the local world
 *    (aoi__view_install), its entries named by the ids this rank holds
 *    as of the last tick; an entry this rank does not hold stood beyond
 *    the band, so beyond the watcher's reach, and becomes a leave here;
 *    then the drops and removals, and the entities added again.
 * 4. Tick the local world and keep the events of the owned watchers,
 *    with the leaves of step 3 merged in, for aoi_mpi_deliver.
 *
 * Why it is exact: a watcher's events at tick t depend on its view at
 * t - 1 and on the markers within its reach at t. The rank that owns it
 * at t holds every such marker (they stand within the band of its
 * strip), and its view, computed there at t - 1 or carried to it by the
 * transfer. A ghost added to a rank at t is new to every watcher there
 * that owned no view holding it (it stood beyond the band at t - 1), and
 * a marker that moved into the band did move, so the moved stamps the
 * local world sets are the single world's.
 */
#include "aoi_mpi.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "transport.h"
#include "transport_mpi.h"
#include "wire.h"

enum { CH_POS = 1, CH_STATE = 2 };

/* An entity this rank holds: owned, or a ghost. */
typedef struct ment {
  wire_entity s;   /* its state, as a ghost carries it (flags: its role) */
  uint8_t owned;
  uint8_t fresh;   /* added (again) this tick: new to every view */
  uint8_t changed; /* owned: CH_* since the last tick */
  uint8_t respawn; /* a fresh copy waits in the apply step's last round */
  uint8_t sent;    /* owned: ghosts were sent from (px, py) */
  float px, py;    /* owned: where it stood at the end of the last tick */
} ment;

/* A record of a peer's message, and the peer. */
typedef struct inbound_record {
  wire_record rec;
  int from;
} inbound_record;

typedef struct removed {
  uint64_t id;
  float px, py;
} removed;

typedef struct transfer_note {
  uint64_t id, tag;
  int rank, in;
} transfer_note;

/* A leave an install made (the view held an id this rank does not). */
typedef struct extra_leave {
  uint64_t watcher, id, tag;
  bool told; /* delivered (marked on a watcher's first) */
} extra_leave;

struct aoi_mpi_world {
  aoi_config config;
  aoi_mpi_config mpi;
  aoi_world *local;
  transport *t;
  int rank, ranks;
  double band;
  /* The strips (layouts, see owner_in): `cut` now; `prev`, the last
     tick's; `next`, agreed at this tick's start when `moving`, and `cut`
     from the next tick on. `moved` says the last tick was moving: its
     ghosts went to the bands of both layouts. */
  double *cut, *prev, *next;
  double span[2]; /* the first layout's cuts run over [span[0], span[1]] */
  bool moving, moved;
  uint64_t rebalances;
  ment *ents;
  size_t count, capacity;
  aoi_allocator allocator; /* the config's, or malloc's */
  aoi__idmap map;          /* id -> index in ents */
  removed *gone;
  size_t gone_count, gone_capacity;
  /* ghosts an add here replaced since the last tick: their owners' drops
     and removals may still come */
  uint64_t *replaced;
  size_t replaced_count, replaced_capacity;
  wire_buf *out, *in;
  uint64_t tick;
  bool failed;
  bool undelivered; /* the last tick's events wait for aoi_mpi_deliver */
  bool deliver_failed; /* a merge could not get memory: that watcher's
                          events of the tick are lost (AOI_ENOMEM) */
  /* delivery: the host's callback, and a watcher's events with the
     leaves of its install merged in */
  aoi_deliver_fn deliver_fn;
  void *deliver_user;
  aoi_event *merged;
  size_t merged_capacity;
  /* the watchers held as ghosts after the tick, ascending: their events
     are dropped (a lookup in this short list, not in every entity's) */
  uint64_t *ghost_watchers;
  size_t ghost_watcher_count, ghost_watcher_capacity;
  extra_leave *leaves;
  size_t leave_count, leave_capacity;
  transfer_note *transfers;
  size_t transfer_count, transfer_capacity;
  /* scratch: a view going out or coming in */
  uint64_t *view_ids;
  float *view_told;
  wire_view_entry *view_out;
  size_t view_capacity;
  /* the apply step's records, every peer's message decoded once */
  inbound_record *inbound;
  size_t inbound_count, inbound_capacity;
  aoi_mpi_stats stats;
};

/* ---- small helpers ------------------------------------------------------ */

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
  if (need <= *cap)
    return 0;
  size_t c = *cap < 16 ? 16 : *cap;
  while (c < need)
    c *= 2;
  void *q = realloc(*p, c * size);
  if (q == NULL)
    return AOI_ENOMEM;
  *p = q;
  *cap = c;
  return 0;
}

static uint64_t mix(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

static ment *find(const aoi_mpi_world *w, uint64_t id)
{
  uint32_t i = aoi__idmap_get(&w->map, id);
  return i == AOI__NONE ? NULL : &w->ents[i];
}

/* Adds a record for e (not held yet); NULL when out of memory. */
static ment *hold(aoi_mpi_world *w, const ment *e)
{
  if (w->count >= UINT32_MAX - 1 ||
      grow((void **)&w->ents, &w->capacity, w->count + 1, sizeof(ment)) != 0 ||
      aoi__idmap_reserve(&w->allocator, &w->map, e->s.id) != 0)
    return NULL;
  aoi__idmap_put(&w->map, e->s.id, (uint32_t)w->count);
  w->ents[w->count] = *e;
  return &w->ents[w->count++];
}

static void forget(aoi_mpi_world *w, uint64_t id)
{
  uint32_t i = aoi__idmap_get(&w->map, id);
  if (i == AOI__NONE)
    return;
  aoi__idmap_del(&w->map, id);
  size_t last = w->count - 1;
  if (i != last) {
    w->ents[i] = w->ents[last];
    aoi__idmap_put(&w->map, w->ents[i].s.id, i); /* held: no room needed */
  }
  w->count--;
}

/* ---- the strips --------------------------------------------------------- */

/* A layout is ranks + 1 bounds, ascending: strip q is [c[q], c[q + 1]),
   c[0] = -inf and c[ranks] = +inf. */

static int owner_in(const aoi_mpi_world *w, const double *c, double x)
{
  int q = 0;
  while (q + 1 < w->ranks && x >= c[q + 1])
    q++;
  return q;
}

static int owner_of(const aoi_mpi_world *w, double x)
{
  return owner_in(w, w->cut, x);
}

static bool band_in(const aoi_mpi_world *w, const double *c, double x, int q)
{
  return x >= c[q] - w->band && x <= c[q + 1] + w->band;
}

/* Whether rank q holds (or must hold) an entity at x in a tick of layout
   `c`, and of `next` too when it is not NULL (the tick before the cuts
   move: the ranks of the next layout get their ghosts a tick ahead). */
static bool holds(const aoi_mpi_world *w, const double *c, const double *next,
                  double x, int q)
{
  return band_in(w, c, x, q) || (next != NULL && band_in(w, next, x, q));
}

/* The ranks that may hold x under c and next: [*first, *last] (a band
   holds a run of ranks; the two runs overlap at x's owners). */
static void holders_span(const aoi_mpi_world *w, const double *c,
                         const double *next, double x, int *first, int *last)
{
  int a = owner_in(w, c, x), b = a;
  if (next != NULL) {
    int o = owner_in(w, next, x);
    a = o < a ? o : a;
    b = o > b ? o : b;
  }
  while (a > 0 && holds(w, c, next, x, a - 1))
    a--;
  while (b + 1 < w->ranks && holds(w, c, next, x, b + 1))
    b++;
  *first = a;
  *last = b;
}

/* ---- create, destroy, small queries ------------------------------------- */

void aoi_mpi_config_default(aoi_mpi_config *mpi)
{
  if (mpi != NULL)
    *mpi = (aoi_mpi_config){.timeout_ms = 10000, .rebalance_interval = 16};
}

/* A digest of the config, which every rank must share. */
static uint64_t config_digest(const aoi_config *c, const aoi_mpi_config *m)
{
  float f[] = {c->min_x,      c->min_y,      c->max_x,     c->max_y,
               c->max_radius, c->hysteresis, c->cell_size};
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
    uint32_t bits;
    memcpy(&bits, &f[i], sizeof(bits));
    h = mix(h ^ bits);
  }
  h = mix(h ^ (uint64_t)c->move_events);
  h = mix(h ^ (uint64_t)c->shape);
  h = mix(h ^ (uint64_t)c->move_band_count);
  for (unsigned i = 0; i < c->move_band_count && i < AOI_MAX_MOVE_BANDS; i++) {
    uint32_t bits;
    memcpy(&bits, &c->move_bands[i].distance, sizeof(bits));
    h = mix(h ^ bits ^ ((uint64_t)c->move_bands[i].period << 32));
  }
  return mix(h ^ m->timeout_ms ^ (uint64_t)m->rebalance_interval << 32);
}

int aoi_mpi_create(const aoi_config *config, const aoi_mpi_config *mpi,
                   MPI_Comm comm, aoi_mpi_world **out)
{
  if (config == NULL || out == NULL ||
      (config->run != AOI_RUN_OWN && config->run != AOI_RUN_CALLER))
    return AOI_EINVAL;
  aoi_mpi_config m;
  aoi_mpi_config_default(&m);
  if (mpi != NULL)
    m = *mpi;
  if (m.timeout_ms == 0)
    return AOI_EINVAL;
  aoi_mpi_world *w = calloc(1, sizeof(*w));
  if (w == NULL)
    return AOI_ENOMEM;
  w->config = *config;
  w->mpi = m;
  w->allocator = config->allocator != NULL ? *config->allocator
                                           : aoi__malloc_hooks;
  aoi__idmap_init(&w->map);
  int rc = transport_mpi_create(comm, m.timeout_ms, &w->t);
  if (rc != 0) {
    free(w);
    return rc;
  }
  w->rank = w->t->rank;
  w->ranks = w->t->ranks;
  size_t bounds = (size_t)w->ranks + 1;
  if ((w->cut = calloc(3 * bounds, sizeof(double))) == NULL) {
    aoi_mpi_destroy(w);
    return AOI_ENOMEM;
  }
  w->prev = w->cut + bounds;
  w->next = w->prev + bounds;
  double min_x = config->min_x, max_x = config->max_x;
  if (!(min_x < max_x)) {
    min_x = 0;
    max_x = 1000;
  }
  for (int q = 0; q <= w->ranks; q++)
    w->cut[q] = q == 0            ? -INFINITY
                : q == w->ranks   ? INFINITY
                                  : min_x + (max_x - min_x) * q / w->ranks;
  memcpy(w->prev, w->cut, bounds * sizeof(double));
  w->span[0] = min_x;
  w->span[1] = max_x;
  double reach = (double)config->max_radius + (double)config->hysteresis;
  if (config->shape == AOI_SHAPE_CELLS)
    reach = (ceil(reach / config->cell_size) + 1) * config->cell_size;
  w->band = reach * (1 + 1e-6) + 1e-3;
  /* The local world's first layout covers this rank's strip and band. */
  aoi_config local = *config;
  double lo = w->cut[w->rank], hi = w->cut[w->rank + 1];
  local.min_x = (float)(isfinite(lo) ? lo - w->band : min_x);
  local.max_x = (float)(isfinite(hi) ? hi + w->band : max_x);
  if (!(local.min_x < local.max_x))
    local.max_x = local.min_x + 1;
  if ((rc = w->t->agree(w->t, config_digest(config, &m))) != 0 ||
      (rc = aoi_create(&local, &w->local)) != 0) {
    aoi_mpi_destroy(w);
    return rc;
  }
  w->out = calloc((size_t)w->ranks, sizeof(wire_buf));
  w->in = calloc((size_t)w->ranks, sizeof(wire_buf));
  if (w->out == NULL || w->in == NULL) {
    aoi_mpi_destroy(w);
    return AOI_ENOMEM;
  }
  *out = w;
  return 0;
}

int aoi_mpi_destroy(aoi_mpi_world *w)
{
  if (w == NULL)
    return 0;
  aoi_destroy(w->local);
  if (w->t != NULL)
    w->t->destroy(w->t);
  for (int q = 0; w->out != NULL && q < w->ranks; q++)
    wire_buf_free(&w->out[q]);
  for (int q = 0; w->in != NULL && q < w->ranks; q++)
    wire_buf_free(&w->in[q]);
  free(w->out);
  free(w->in);
  free(w->cut);
  free(w->ents);
  aoi__idmap_free(&w->allocator, &w->map);
  free(w->gone);
  free(w->replaced);
  free(w->merged);
  free(w->ghost_watchers);
  free(w->leaves);
  free(w->transfers);
  free(w->view_ids);
  free(w->view_told);
  free(w->view_out);
  free(w->inbound);
  free(w);
  return 0;
}

int aoi_mpi_rank(const aoi_mpi_world *w) { return w == NULL ? -1 : w->rank; }
int aoi_mpi_ranks(const aoi_mpi_world *w) { return w == NULL ? 0 : w->ranks; }

int aoi_mpi_rank_of(const aoi_mpi_world *w, float x, float y)
{
  if (w == NULL || !isfinite(x) || !isfinite(y))
    return -1;
  return owner_of(w, x);
}

int aoi_mpi_owns(const aoi_mpi_world *w, uint64_t id)
{
  const ment *e = w == NULL ? NULL : find(w, id);
  return e != NULL && e->owned;
}

aoi_world *aoi_mpi_local(aoi_mpi_world *w)
{
  return w == NULL ? NULL : w->local;
}

int aoi_mpi_stats_get(const aoi_mpi_world *w, aoi_mpi_stats *stats)
{
  if (w == NULL || stats == NULL)
    return AOI_EINVAL;
  *stats = w->stats;
  return 0;
}

/* ---- operations --------------------------------------------------------- */

/* The owned entity `id`, or NULL with *rc. */
static ment *owned(aoi_mpi_world *w, uint64_t id, int *rc)
{
  if (w == NULL) {
    *rc = AOI_EINVAL;
    return NULL;
  }
  if (w->failed) {
    *rc = AOI_EPEER;
    return NULL;
  }
  ment *e = find(w, id);
  *rc = e == NULL ? AOI_ENOENT : !e->owned ? AOI_EREMOTE : 0;
  return *rc == 0 ? e : NULL;
}

static bool radius_ok(const aoi_mpi_world *w, float r)
{
  return isfinite(r) && r >= 0 && r <= w->config.max_radius;
}

int aoi_mpi_add(aoi_mpi_world *w, const aoi_entity *entity)
{
  if (w == NULL || entity == NULL)
    return AOI_EINVAL;
  if (w->failed)
    return AOI_EPEER;
  ment *was = find(w, entity->id);
  if (was != NULL && was->owned)
    return AOI_EEXIST;
  /* aoi_add's checks, in its order, before the strip's */
  unsigned role = entity->flags;
  if (role == 0 || (role & ~(AOI_WATCHER | AOI_MARKER)) != 0)
    return AOI_EFLAGS;
  if (!isfinite(entity->x) || !isfinite(entity->y))
    return AOI_ECOORD;
  if (!radius_ok(w, entity->radius))
    return AOI_ERADIUS;
  if (owner_of(w, entity->x) != w->rank)
    return AOI_EREMOTE;
  if (grow((void **)&w->ents, &w->capacity, w->count + 1, sizeof(ment)) != 0 ||
      grow((void **)&w->replaced, &w->replaced_capacity,
           w->replaced_count + 1, sizeof(uint64_t)) != 0)
    return AOI_ENOMEM;
  if (was != NULL) {
    /* a ghost: its owner removed it this tick, and it is added here */
    int rc = aoi_remove(w->local, entity->id);
    if (rc != 0)
      return rc;
    forget(w, entity->id);
    w->replaced[w->replaced_count++] = entity->id;
  }
  int rc = aoi_add(w->local, entity);
  if (rc != 0)
    return rc;
  ment e = {{entity->id, entity->tag, entity->x, entity->y, entity->radius, 0,
             entity->layers, entity->interest, 0, (uint8_t)role},
            .owned = 1, .fresh = 1, .changed = CH_POS | CH_STATE};
  if (hold(w, &e) == NULL) {
    (void)aoi_remove(w->local, entity->id);
    return AOI_ENOMEM;
  }
  return 0;
}

/* The setters: the owned entity's local operation, and on success its
   record takes the change. */

int aoi_mpi_move(aoi_mpi_world *w, uint64_t id, float x, float y)
{
  int rc;
  ment *e = owned(w, id, &rc);
  if (e != NULL && (rc = aoi_move(w->local, id, x, y)) == 0) {
    e->s.x = x;
    e->s.y = y;
    e->changed |= CH_POS;
  }
  return rc;
}

int aoi_mpi_set_radius(aoi_mpi_world *w, uint64_t id, float radius)
{
  int rc;
  ment *e = owned(w, id, &rc);
  if (e != NULL && (rc = aoi_set_radius(w->local, id, radius)) == 0) {
    e->s.radius = radius;
    e->changed |= CH_STATE;
  }
  return rc;
}

int aoi_mpi_set_layers(aoi_mpi_world *w, uint64_t id, uint32_t layers,
                       uint32_t interest)
{
  int rc;
  ment *e = owned(w, id, &rc);
  if (e != NULL &&
      (rc = aoi_set_layers(w->local, id, layers, interest)) == 0) {
    e->s.layers = layers;
    e->s.interest = interest;
    e->changed |= CH_STATE;
  }
  return rc;
}

int aoi_mpi_set_appeal(aoi_mpi_world *w, uint64_t id, float appeal)
{
  int rc;
  ment *e = owned(w, id, &rc);
  if (e != NULL && (rc = aoi_set_appeal(w->local, id, appeal)) == 0) {
    e->s.appeal = appeal;
    e->changed |= CH_STATE;
  }
  return rc;
}

int aoi_mpi_set_cap(aoi_mpi_world *w, uint64_t id, uint32_t cap)
{
  int rc;
  ment *e = owned(w, id, &rc);
  if (e != NULL && (rc = aoi_set_cap(w->local, id, cap)) == 0) {
    e->s.cap = cap;
    e->changed |= CH_STATE;
  }
  return rc;
}

int aoi_mpi_set_tag(aoi_mpi_world *w, uint64_t id, uint64_t tag)
{
  int rc;
  ment *e = owned(w, id, &rc);
  if (e != NULL && (rc = aoi_set_tag(w->local, id, tag)) == 0) {
    e->s.tag = tag;
    e->changed |= CH_STATE;
  }
  return rc;
}

int aoi_mpi_remove(aoi_mpi_world *w, uint64_t id)
{
  int rc;
  ment *e = owned(w, id, &rc);
  if (e == NULL)
    return rc;
  if (!e->fresh && grow((void **)&w->gone, &w->gone_capacity,
                        w->gone_count + 1, sizeof(removed)) != 0)
    return AOI_ENOMEM;
  if ((rc = aoi_remove(w->local, id)) != 0)
    return rc;
  /* One added since the last tick was never seen anywhere: nothing to
     tell. Else every rank that holds its ghost drops it. */
  if (!e->fresh && e->sent)
    w->gone[w->gone_count++] = (removed){id, e->px, e->py};
  forget(w, id);
  return 0;
}

/* ---- a tick: encode ----------------------------------------------------- */

/* e's state as a ghost or a transfer carries it. */
static wire_entity entity_of(const ment *e)
{
  wire_entity x = e->s;
  if (e->fresh)
    x.flags |= WIRE_FRESH;
  return x;
}

static int note_transfer(aoi_mpi_world *w, uint64_t id, uint64_t tag,
                         int rank, int in)
{
  if (grow((void **)&w->transfers, &w->transfer_capacity,
           w->transfer_count + 1, sizeof(transfer_note)) != 0)
    return AOI_ENOMEM;
  w->transfers[w->transfer_count++] = (transfer_note){id, tag, rank, in};
  return 0;
}

/* Room for a view of n entries in the scratch arrays. */
static int reserve_view(aoi_mpi_world *w, size_t n)
{
  if (n <= w->view_capacity)
    return 0;
  size_t ids = w->view_capacity, told = 2 * w->view_capacity,
         out = w->view_capacity;
  if (grow((void **)&w->view_ids, &ids, n, sizeof(uint64_t)) != 0 ||
      grow((void **)&w->view_told, &told, 2 * n, sizeof(float)) != 0 ||
      grow((void **)&w->view_out, &out, n, sizeof(wire_view_entry)) != 0)
    return AOI_ENOMEM;
  w->view_capacity = n;
  return 0;
}

/* Owned watcher e's view as of the last tick, into w->view_out. */
static int export_view(aoi_mpi_world *w, const ment *e, uint32_t *n)
{
  *n = 0;
  if (!(e->s.flags & AOI_WATCHER) || e->fresh)
    return 0;
  size_t count = 0;
  int rc = aoi__view_export(w->local, e->s.id, w->view_ids, w->view_told,
                            w->view_capacity, &count);
  if (rc == 0 && count > w->view_capacity &&
      (rc = reserve_view(w, count)) == 0)
    rc = aoi__view_export(w->local, e->s.id, w->view_ids, w->view_told,
                          w->view_capacity, &count);
  if (rc != 0)
    return rc;
  for (size_t i = 0; i < count; i++) {
    /* every marker a view holds is held here, or was removed since (its
       tag is not needed: the new owner holds it neither) */
    const ment *m = find(w, w->view_ids[i]);
    w->view_out[i] = (wire_view_entry){w->view_ids[i], m != NULL ? m->s.tag : 0,
                                       w->view_told[2 * i],
                                       w->view_told[2 * i + 1]};
  }
  *n = (uint32_t)count;
  return 0;
}

/* The layouts whose bands hold the ghosts of this tick (`c`, `n`) and of
   the last one (`pc`, `pn`): see holds. */
typedef struct bands {
  const double *c, *n, *pc, *pn;
} bands;

static bands bands_now(const aoi_mpi_world *w)
{
  return (bands){w->cut, w->moving ? w->next : NULL, w->prev,
                 w->moved ? w->cut : NULL};
}

static int encode(aoi_mpi_world *w)
{
  int rc = 0;
  for (int q = 0; q < w->ranks; q++)
    if ((rc = wire_begin(&w->out[q], w->tick, (uint32_t)w->rank)) != 0)
      return rc;
  bands h = bands_now(w);
  for (size_t i = 0; i < w->gone_count; i++) {
    int a, b;
    double px = w->gone[i].px;
    holders_span(w, h.pc, h.pn, px, &a, &b);
    for (int q = a; q <= b; q++)
      if (q != w->rank && holds(w, h.pc, h.pn, px, q) &&
          (rc = wire_put_id(&w->out[q], WIRE_REMOVE, w->gone[i].id)) != 0)
        return rc;
  }
  /* when the cuts move, or moved at the last tick, where every entity's
     ghosts go changes: look at every one */
  bool all = w->moving || w->moved;
  for (size_t i = 0; i < w->count; i++) {
    ment *e = &w->ents[i];
    if (!e->owned || (!e->changed && !e->fresh && !all))
      continue;
    int to = owner_of(w, e->s.x);
    wire_entity we = entity_of(e);
    if (to != w->rank) {
      uint32_t n;
      if ((rc = export_view(w, e, &n)) != 0 ||
          (rc = wire_put_transfer(&w->out[to], &we, w->view_out, n)) != 0 ||
          (rc = note_transfer(w, e->s.id, e->s.tag, to, 0)) != 0)
        return rc;
    }
    /* the ranks that hold it (from where it stood) and those that must */
    int a, b;
    holders_span(w, h.c, h.n, e->s.x, &a, &b);
    if (e->sent) {
      int pa, pb;
      holders_span(w, h.pc, h.pn, e->px, &pa, &pb);
      a = pa < a ? pa : a;
      b = pb > b ? pb : b;
    }
    for (int q = a; q <= b; q++) {
      bool now = holds(w, h.c, h.n, e->s.x, q);
      bool before = e->sent && holds(w, h.pc, h.pn, e->px, q);
      if (q == w->rank || q == to || (!now && !before) ||
          (now && before && !e->changed && !e->fresh))
        continue;
      if (!now)
        rc = wire_put_id(&w->out[q], WIRE_DROP, e->s.id);
      else if (before && !e->fresh && e->changed == CH_POS)
        rc = wire_put_move(&w->out[q], e->s.id, e->s.x, e->s.y);
      else
        rc = wire_put_ghost(&w->out[q], &we);
      if (rc != 0)
        return rc;
    }
  }
  for (int q = 0; q < w->ranks; q++)
    wire_finish(&w->out[q]);
  return 0;
}

/* The entities transferred out: ghosts here, or gone when beyond the
   bands. After encode, which read their views. */
static int demote(aoi_mpi_world *w)
{
  bands h = bands_now(w);
  for (size_t i = 0; i < w->count;) {
    ment *e = &w->ents[i];
    if (!e->owned || owner_of(w, e->s.x) == w->rank) {
      i++;
      continue;
    }
    e->owned = 0;
    if (holds(w, h.c, h.n, e->s.x, w->rank)) {
      i++;
      continue;
    }
    int rc = aoi_remove(w->local, e->s.id);
    if (rc != 0)
      return rc;
    forget(w, e->s.id); /* the last one moved into i */
  }
  return 0;
}

/* ---- moving the strips -------------------------------------------------- */

enum { BINS = 4096 };

/* At the start of a tick that rebalance_interval names: every rank adds
   its owned entities to a histogram of x over the first layout's span
   (those beyond it in the end bins) and its count; the sums are the same
   on every rank, so each computes the same cuts, at the histogram's
   quantiles, when one rank owns over 1.25x the mean. They take effect
   at the next tick, and this tick sends ghosts to their bands already
   (`moving`), so that each entity is held, and each watcher's view is
   whole, on its new owner when it is transferred there. */
static int plan_cuts(aoi_mpi_world *w)
{
  unsigned every = w->mpi.rebalance_interval;
  if (every == 0 || w->ranks < 2 || w->tick % every != 0)
    return 0;
  size_t n = BINS + (size_t)w->ranks;
  double *v = calloc(n, sizeof(double));
  if (v == NULL)
    return AOI_ENOMEM;
  double lo = w->span[0], width = (w->span[1] - w->span[0]) / BINS;
  for (size_t i = 0; i < w->count; i++) {
    if (!w->ents[i].owned)
      continue;
    double bin = floor((w->ents[i].s.x - lo) / width);
    v[bin < 0 ? 0 : bin >= BINS ? BINS - 1 : (size_t)bin]++;
    v[BINS + (size_t)w->rank]++;
  }
  int rc = w->t->sum(w->t, v, n);
  double total = 0, most = 0;
  for (int q = 0; rc == 0 && q < w->ranks; q++) {
    total += v[BINS + q];
    most = v[BINS + q] > most ? v[BINS + q] : most;
  }
  if (rc == 0 && total > 0 && most > 1.25 * total / w->ranks) {
    /* cut q at the right edge of the bin that completes the q-th share */
    double seen = 0;
    int q = 1;
    w->next[0] = -INFINITY;
    w->next[w->ranks] = INFINITY;
    for (size_t bin = 0; bin < BINS && q < w->ranks; bin++) {
      seen += v[bin];
      while (q < w->ranks && seen >= total * q / w->ranks)
        w->next[q++] = lo + width * (double)(bin + 1);
    }
    while (q < w->ranks)
      w->next[q++] = w->span[1];
    w->moving = memcmp(w->next, w->cut, sizeof(double) * (w->ranks + 1)) != 0;
  }
  free(v);
  return rc;
}

/* ---- a tick: apply ------------------------------------------------------ */

/* Adds entity we to the local world and holds it. */
static int add_local(aoi_mpi_world *w, const wire_entity *we, bool own)
{
  unsigned role = we->flags & (AOI_WATCHER | AOI_MARKER);
  aoi_entity a = {we->id,     we->tag, we->x,      we->y,
                  we->radius, role,    we->layers, we->interest};
  int rc = aoi_add(w->local, &a);
  if (rc == 0 && we->appeal != 0)
    rc = aoi_set_appeal(w->local, we->id, we->appeal);
  if (rc == 0 && we->cap != 0)
    rc = aoi_set_cap(w->local, we->id, we->cap);
  if (rc != 0)
    return rc == AOI_ENOMEM ? rc : AOI_EPEER;
  ment e = {*we, .owned = own, .fresh = (we->flags & WIRE_FRESH) != 0};
  e.s.flags = (uint8_t)role;
  return hold(w, &e) == NULL ? AOI_ENOMEM : 0;
}

/* Brings held entity e to state we in the local world. */
static int update_local(aoi_mpi_world *w, ment *e, const wire_entity *we)
{
  const wire_entity *was = &e->s;
  aoi_world *l = w->local;
  uint64_t id = we->id;
  unsigned role = we->flags & (AOI_WATCHER | AOI_MARKER);
  if (role != was->flags)
    return AOI_EPEER; /* roles never change */
  int rc = 0;
  if (was->x != we->x || was->y != we->y)
    rc = aoi_move(l, id, we->x, we->y);
  if (rc == 0 && was->radius != we->radius)
    rc = aoi_set_radius(l, id, we->radius);
  if (rc == 0 && (was->layers != we->layers || was->interest != we->interest))
    rc = aoi_set_layers(l, id, we->layers, we->interest);
  if (rc == 0 && was->appeal != we->appeal)
    rc = aoi_set_appeal(l, id, we->appeal);
  if (rc == 0 && was->cap != we->cap)
    rc = aoi_set_cap(l, id, we->cap);
  if (rc == 0 && was->tag != we->tag)
    rc = aoi_set_tag(l, id, we->tag);
  if (rc != 0)
    return rc == AOI_ENOMEM ? rc : AOI_EPEER;
  e->s = *we;
  e->s.flags = (uint8_t)role;
  e->fresh = (we->flags & WIRE_FRESH) != 0;
  return 0;
}

/* Installs transferred watcher rec's view: the entries this rank held at
   the last tick go into the local world, the others become leaves. */
static int install(aoi_mpi_world *w, const wire_record *rec)
{
  uint32_t n = rec->view_count, kept = 0;
  if (reserve_view(w, n) != 0)
    return AOI_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    wire_view_entry v = wire_view_at(rec, i);
    const ment *m = find(w, v.id);
    if (m != NULL && !m->fresh && !m->respawn && (m->s.flags & AOI_MARKER)) {
      w->view_ids[kept] = v.id;
      w->view_told[2 * kept] = v.told_x;
      w->view_told[2 * kept + 1] = v.told_y;
      kept++;
      continue;
    }
    if (grow((void **)&w->leaves, &w->leave_capacity, w->leave_count + 1,
             sizeof(extra_leave)) != 0)
      return AOI_ENOMEM;
    w->leaves[w->leave_count++] = (extra_leave){rec->e.id, v.id, v.tag, false};
  }
  int rc = aoi__view_install(w->local, rec->e.id, w->view_ids, w->view_told,
                             kept);
  return rc == 0 || rc == AOI_ENOMEM ? rc : AOI_EPEER;
}

/* Decodes every peer's message, in rank order, into w->inbound. */
static int decode(aoi_mpi_world *w)
{
  w->inbound_count = 0;
  for (int q = 0; q < w->ranks; q++) {
    if (q == w->rank)
      continue;
    wire_reader r;
    int rc = wire_open(&r, w->in[q].data, w->in[q].size, w->tick,
                       (uint32_t)q, w->config.max_radius);
    if (rc != 0)
      return rc;
    for (;;) {
      if (grow((void **)&w->inbound, &w->inbound_capacity,
               w->inbound_count + 1, sizeof(inbound_record)) != 0)
        return AOI_ENOMEM;
      inbound_record *in = &w->inbound[w->inbound_count];
      if ((rc = wire_next(&r, &in->rec)) != 1)
        break;
      in->from = q;
      w->inbound_count++;
    }
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* Round one: ghosts, moves, transfers. A fresh copy of an id held here
   waits for the last round (*deferred). `from` is the record's sender. */
static int apply_entity(aoi_mpi_world *w, const wire_record *rec, int from,
                        size_t *deferred)
{
  ment *e = find(w, rec->e.id);
  if (rec->kind == WIRE_MOVE) {
    if (e == NULL || e->owned || e->fresh)
      return AOI_EPEER;
    int rc = aoi_move(w->local, e->s.id, rec->e.x, rec->e.y);
    if (rc != 0)
      return rc == AOI_ENOMEM ? rc : AOI_EPEER;
    e->s.x = rec->e.x;
    e->s.y = rec->e.y;
    return 0;
  }
  bool own = rec->kind == WIRE_TRANSFER;
  if (own && note_transfer(w, rec->e.id, rec->e.tag, from, 1) != 0)
    return AOI_ENOMEM;
  if (e == NULL)
    return add_local(w, &rec->e, own);
  if (e->owned && !e->fresh)
    return AOI_EPEER; /* another rank claims what this one owns */
  if (rec->e.flags & WIRE_FRESH) {
    e->respawn = 1;
    (*deferred)++;
    return 0;
  }
  if (e->fresh)
    return AOI_EPEER; /* an update of an id added here this tick */
  int rc = update_local(w, e, &rec->e);
  if (rc == 0 && own && (e->s.flags & AOI_WATCHER)) {
    /* one that crossed only because the cuts moved stood still: it still
       needs a record for its view's install */
    rc = aoi_move(w->local, e->s.id, e->s.x, e->s.y);
    if (rc != 0 && rc != AOI_ENOMEM)
      rc = AOI_EPEER;
  }
  if (rc == 0)
    e->owned = own;
  return rc;
}

static int by_id(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Round three: a drop or removal of what was held at the last tick. */
static int apply_drop(aoi_mpi_world *w, const wire_record *rec)
{
  ment *e = find(w, rec->e.id);
  if (e == NULL)
    return bsearch(&rec->e.id, w->replaced, w->replaced_count,
                   sizeof(uint64_t), by_id) != NULL
               ? 0 /* the ghost an add here replaced */
               : AOI_EPEER;
  if (e->fresh)
    return 0; /* added here again already */
  if (e->owned)
    return AOI_EPEER;
  int rc = aoi_remove(w->local, e->s.id);
  if (rc != 0)
    return rc;
  if (e->respawn)
    e->respawn = 2; /* gone here; its fresh copy comes next */
  else
    forget(w, rec->e.id);
  return 0;
}

/* Round four: a fresh copy of an id held here, which replaces it. */
static int apply_respawn(aoi_mpi_world *w, const wire_record *rec)
{
  ment *e = find(w, rec->e.id);
  if (e == NULL || !e->respawn)
    return 0; /* added in round one */
  int rc;
  if (e->respawn == 1 && (rc = aoi_remove(w->local, e->s.id)) != 0)
    return rc;
  forget(w, rec->e.id);
  return add_local(w, &rec->e, rec->kind == WIRE_TRANSFER);
}

static int apply(aoi_mpi_world *w)
{
  int rc = decode(w);
  if (rc != 0)
    return rc;
  qsort(w->replaced, w->replaced_count, sizeof(uint64_t), by_id);
  size_t deferred = 0;
  for (size_t i = 0; i < w->inbound_count && rc == 0; i++) {
    const wire_record *rec = &w->inbound[i].rec;
    if (rec->kind == WIRE_MOVE || rec->kind == WIRE_GHOST ||
        rec->kind == WIRE_TRANSFER)
      rc = apply_entity(w, rec, w->inbound[i].from, &deferred);
  }
  for (size_t i = 0; i < w->inbound_count && rc == 0; i++) {
    const wire_record *rec = &w->inbound[i].rec;
    if (rec->kind == WIRE_TRANSFER && !(rec->e.flags & WIRE_FRESH) &&
        (rec->e.flags & AOI_WATCHER))
      rc = install(w, rec);
  }
  for (size_t i = 0; i < w->inbound_count && rc == 0; i++) {
    const wire_record *rec = &w->inbound[i].rec;
    if (rec->kind == WIRE_DROP || rec->kind == WIRE_REMOVE)
      rc = apply_drop(w, rec);
  }
  for (size_t i = 0; i < w->inbound_count && rc == 0 && deferred > 0; i++) {
    const wire_record *rec = &w->inbound[i].rec;
    if ((rec->kind == WIRE_GHOST || rec->kind == WIRE_TRANSFER) &&
        (rec->e.flags & WIRE_FRESH))
      rc = apply_respawn(w, rec);
  }
  return rc;
}

/* ---- a tick: events ----------------------------------------------------- */

static int by_leave(const void *a, const void *b)
{
  const extra_leave *x = a, *y = b;
  if (x->watcher != y->watcher)
    return x->watcher < y->watcher ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static int by_transfer(const void *a, const void *b)
{
  const transfer_note *x = a, *y = b;
  if (x->in != y->in)
    return x->in - y->in;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* The first of watcher's leaves in w->leaves (sorted), or NULL. */
static extra_leave *leaves_of(const aoi_mpi_world *w, uint64_t watcher)
{
  size_t lo = 0, hi = w->leave_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (w->leaves[mid].watcher < watcher)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < w->leave_count && w->leaves[lo].watcher == watcher
             ? &w->leaves[lo]
             : NULL;
}

/* Hands watcher's events, `had` of them, to the host with its leaves
   from *first on merged in id order among its own. */
static void deliver_merged(aoi_mpi_world *w, uint64_t watcher, uint64_t tag,
                           const aoi_event *ev, size_t had, extra_leave *first)
{
  size_t more = 0;
  while (first + more < w->leaves + w->leave_count &&
         first[more].watcher == watcher)
    more++;
  first->told = true;
  if (grow((void **)&w->merged, &w->merged_capacity, had + more,
           sizeof(aoi_event)) != 0) {
    w->deliver_failed = true;
    return;
  }
  size_t n = 0, k = 0;
  for (size_t l = 0; l < more; l++) {
    while (k < had && ev[k].kind == AOI_LEAVE && ev[k].id < first[l].id)
      w->merged[n++] = ev[k++];
    w->merged[n++] = (aoi_event){first[l].id, first[l].tag, 0, 0, AOI_LEAVE,
                                 (uint32_t)w->tick};
  }
  while (k < had)
    w->merged[n++] = ev[k++];
  w->deliver_fn(w->deliver_user, watcher, tag, w->merged, n);
}

/* aoi_deliver's callback: an owned watcher's events go to the host, a
   ghost's are another rank's and dropped. */
static void pass_events(void *user, uint64_t watcher, uint64_t watcher_tag,
                        const aoi_event *events, size_t count)
{
  aoi_mpi_world *w = user;
  if (w->deliver_fn == NULL ||
      (w->ghost_watcher_count > 0 &&
       bsearch(&watcher, w->ghost_watchers, w->ghost_watcher_count,
               sizeof(uint64_t), by_id) != NULL))
    return;
  extra_leave *first = w->leave_count > 0 ? leaves_of(w, watcher) : NULL;
  if (first == NULL)
    w->deliver_fn(w->deliver_user, watcher, watcher_tag, events, count);
  else
    deliver_merged(w, watcher, watcher_tag, events, count, first);
}

/* Delivers the local world's events through pass_events to fn, or drops
   them all (fn NULL); then the watchers whose only events are leaves of
   their install. */
static int deliver(aoi_mpi_world *w, aoi_deliver_fn fn, void *user)
{
  w->deliver_fn = fn;
  w->deliver_user = user;
  unsigned segments = aoi_delivery_segments(w->local);
  int rc = 0;
  for (unsigned s = 0; s < segments && rc == 0; s++)
    rc = aoi_deliver(w->local, s, pass_events, w);
  for (size_t i = 0; i < w->leave_count && rc == 0 && fn != NULL; i++) {
    extra_leave *l = &w->leaves[i];
    if (l->told || (i > 0 && l[-1].watcher == l->watcher))
      continue;
    const ment *e = find(w, l->watcher);
    if (e != NULL && e->owned)
      deliver_merged(w, l->watcher, e->s.tag, NULL, 0, l);
  }
  w->deliver_fn = NULL;
  if (rc == 0 && w->deliver_failed)
    rc = AOI_ENOMEM;
  w->deliver_failed = false;
  if (rc == 0) {
    w->undelivered = false;
    w->leave_count = 0;
  }
  return rc;
}

int aoi_mpi_tick(aoi_mpi_world *w)
{
  if (w == NULL)
    return AOI_EINVAL;
  if (w->failed)
    return AOI_EPEER;
  /* what the host did not take of the last tick goes, ghosts' and all,
     so that nothing piles up in the local world's outboxes */
  int rc = w->undelivered ? deliver(w, NULL, NULL) : 0;
  if (rc != 0)
    return rc;
  w->tick++;
  w->transfer_count = w->leave_count = 0;
  memset(&w->stats, 0, sizeof(w->stats));
  rc = plan_cuts(w);
  if (rc == 0)
    rc = encode(w);
  if (rc == 0) {
    for (int q = 0; q < w->ranks; q++)
      if (q != w->rank && w->out[q].records > 0) {
        w->stats.messages++;
        w->stats.records += w->out[q].records;
        w->stats.bytes += w->out[q].size;
      }
    rc = w->t->exchange(w->t, w->out, w->in, &w->stats.wait_ns);
  }
  if (rc == 0)
    rc = demote(w);
  if (rc == 0)
    rc = apply(w);
  if (rc == 0)
    rc = aoi_tick(w->local);
  if (rc != 0) {
    w->failed = true;
    return rc;
  }
  w->ghost_watcher_count = 0;
  for (size_t i = 0; i < w->count; i++) {
    ment *e = &w->ents[i];
    e->fresh = e->changed = e->respawn = 0;
    if (!e->owned && (e->s.flags & AOI_WATCHER)) {
      if (grow((void **)&w->ghost_watchers, &w->ghost_watcher_capacity,
               w->ghost_watcher_count + 1, sizeof(uint64_t)) != 0) {
        w->failed = true;
        return AOI_ENOMEM;
      }
      w->ghost_watchers[w->ghost_watcher_count++] = e->s.id;
    }
    if (e->owned) {
      e->px = e->s.x;
      e->py = e->s.y;
      e->sent = 1;
    } else {
      e->sent = 0;
    }
    if (e->owned)
      w->stats.owned++;
    else
      w->stats.ghosts++;
  }
  w->gone_count = w->replaced_count = 0;
  w->undelivered = true;
  size_t bounds = sizeof(double) * ((size_t)w->ranks + 1);
  memcpy(w->prev, w->cut, bounds);
  w->moved = w->moving;
  if (w->moving) {
    memcpy(w->cut, w->next, bounds);
    w->moving = false;
    w->rebalances++;
  }
  w->stats.rebalances = w->rebalances;
  qsort(w->ghost_watchers, w->ghost_watcher_count, sizeof(uint64_t), by_id);
  qsort(w->leaves, w->leave_count, sizeof(extra_leave), by_leave);
  qsort(w->transfers, w->transfer_count, sizeof(transfer_note), by_transfer);
  for (size_t i = 0; i < w->transfer_count; i++) {
    if (w->transfers[i].in)
      w->stats.transfers_in++;
    else
      w->stats.transfers_out++;
  }
  return 0;
}

int aoi_mpi_deliver(aoi_mpi_world *w, aoi_deliver_fn fn, void *user)
{
  if (w == NULL || fn == NULL)
    return AOI_EINVAL;
  return w->failed ? AOI_EPEER : deliver(w, fn, user);
}

int aoi_mpi_transfers(aoi_mpi_world *w, aoi_mpi_transfer_fn fn, void *user)
{
  if (w == NULL || fn == NULL)
    return AOI_EINVAL;
  for (size_t i = 0; i < w->transfer_count; i++)
    fn(user, w->transfers[i].id, w->transfers[i].tag, w->transfers[i].rank,
       w->transfers[i].in);
  return 0;
}
