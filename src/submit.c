/*
 * submit.c: the host's half of an operation, between ticks: aoi_add,
 * aoi_move, aoi_move_many, aoi_set_* (aoi_set_tag included), aoi_remove,
 * references, the handles and their tables, and the op records queued for
 * the shards.
 *
 * Each operation is validated against the state as submitted so far, every
 * allocation it needs is made first (so a failure changes nothing), then it
 * is recorded in the host's handle table and folded into the entity's
 * record in the queue of the shard that owns it (route()): one record per
 * handle per tick, holding the latest position and, in an extra beside it
 * when there is more than a move, the latest masks and cap (the latest
 * radius and appeal are the host entry's, read at the tick), so a queue
 * holds at most one record per live entity plus one per entity removed
 * since the last tick, however many calls were made. An add and a
 * remove of the same handle between two ticks cancel out, and the handle
 * is free again at once. The host keeps, per record, the bounds the tick
 * reserves for (an arrival in the shard its position names, a slot in a
 * handoff batch), and moves them when a later move names another shard.
 *
 * A long aoi_move_many on a world with a pool is spread over the pool's
 * threads (spread_moves): the lookups and checks in parts of the batch,
 * then the records by shard, each shard's in the batch's order, so the
 * queues hold exactly what the moves one by one would have left.
 *
 * A reference (aoi_ref_of, aoi_move_ref) is a handle and its generation,
 * which every removal bumps, so a reference outlives neither its entity
 * nor the handle's reuse, scrambled by the world's key, so that another
 * world's reference names nothing here; a handle whose generation runs
 * out is retired, never taken again. A move by reference is aoi_move
 * without the id lookup (move_handle serves both).
 *
 * The per-handle tables (types.h) live in one block, grown here. This file
 * also frees everything the host side holds (aoi__host_free).
 */
#include "internal.h"

#include <math.h>
#include <string.h>

/* The inverse of ref_encode's multiplication: the key's inverse modulo
   2^64, by Newton's iteration (each step doubles the bits that hold). */
static uint64_t key_inverse(uint64_t key)
{
  uint64_t inv = key; /* right in the low 3 bits for an odd key */
  for (int i = 0; i < 5; i++)
    inv *= 2 - key * inv;
  return inv;
}

int aoi__host_init(aoi_world *w)
{
  aoi__idmap_init(&w->ids);
  /* The references' key comes from the id map's, which is drawn at random
     per world; odd, so that it never maps two generations to one. */
  w->ref_key = (w->ids.key[0] ^ (w->ids.key[1] << 1)) | 1;
  w->ref_inverse = key_inverse(w->ref_key);
  return 0;
}

/* The per-handle tables live in one block, so growing them is one
   allocation: it succeeds or changes nothing. */
typedef struct handle_tables {
  aoi__host_entity *host;
  aoi__location *location;
  aoi__mark *mark;
  float *appeal;
  aoi__outbox *outbox;
  uint64_t *tag, *tag_next;
  uint32_t *tag_queued;
  uint32_t *event_at, *queued, *generation, *released,
      *backlog, *assigned;
  uint8_t *handle_bits;
} handle_tables;

static size_t align16(size_t n)
{
  return (n + 15) & ~(size_t)15;
}

/* The block's size for `cap` handles; with `block`, where each table is. */
static size_t handle_block(uint32_t cap, char *block, handle_tables *t)
{
  size_t at = 0;
#define TABLE(field, elem)                                                     \
  do {                                                                         \
    if (block != NULL)                                                         \
      t->field = (void *)(block + at);                                         \
    at += align16(sizeof(elem) * (size_t)cap);                                 \
  } while (0)
  TABLE(host, aoi__host_entity);
  TABLE(location, aoi__location);
  TABLE(mark, aoi__mark);
  TABLE(appeal, float);
  TABLE(outbox, aoi__outbox);
  TABLE(tag, uint64_t);
  TABLE(tag_next, uint64_t);
  TABLE(tag_queued, uint32_t);
  TABLE(event_at, uint32_t);
  TABLE(queued, uint32_t);
  TABLE(generation, uint32_t);
  TABLE(released, uint32_t);
  TABLE(backlog, uint32_t);
  TABLE(assigned, uint32_t);
  TABLE(handle_bits, uint8_t);
#undef TABLE
  return at;
}

void aoi__host_free(aoi_world *w)
{
  const aoi_allocator *a = &w->allocator;
  aoi__idmap_free(a, &w->ids);
  if (w->outbox != NULL)
    for (uint32_t h = 0; h < w->handle_capacity; h++)
      aoi__outbox_free(a, &w->outbox[h]);
  if (w->host != NULL)
    aoi__free(a, w->host, handle_block(w->handle_capacity, NULL, NULL));
  aoi__pending_free(a, &w->pending);
  /* Records still queued (submitted, never ticked) go with their queues. */
  if (w->shards != NULL)
    for (unsigned s = 0; s < w->shard_count; s++) {
      aoi__queue *q = &w->shards[s].queue;
      aoi__free(a, q->records, sizeof(aoi__record) * q->capacity);
      aoi__free(a, q->extras, sizeof(aoi__record_extra) * q->extra_capacity);
      memset(q, 0, sizeof(*q));
    }
  aoi__free(a, w->query_ids, sizeof(uint64_t) * w->query_capacity);
  aoi__free(a, w->spread_moves,
            sizeof(*w->spread_moves) * w->spread_capacity);
  aoi__free(a, w->spread_fresh, sizeof(uint32_t) * w->spread_fresh_capacity);
  aoi__free(a, w->spread_seen, sizeof(uint32_t) * w->spread_seen_capacity);
  aoi__plan *p = &w->plan;
  aoi__free(a, p->xcut, sizeof(double) * w->layout.cols);
  aoi__free(a, p->ycut, sizeof(double) * w->layout.cols * w->layout.rows);
  aoi__free(a, p->arrivals, sizeof(uint32_t) * w->shard_count);
  aoi__free(a, p->bound, sizeof(uint32_t) * w->threads * w->threads);
  aoi__free(a, p->xs, sizeof(aoi__sample) * p->xs_capacity);
  aoi__free(a, p->ys, sizeof(aoi__sample) * p->ys_capacity);
}

/* ---- handles ------------------------------------------------------------ */

/* An aoi_ref is (generation << 32 | handle) times the world's odd key, a
   bijection of 64-bit words: another world's reference, or a guessed one,
   decodes to a handle and generation that match a live entity only by
   chance (about one in 2^32 for a crowd of a million). */
static aoi_ref ref_encode(const aoi_world *w, uint32_t h, uint32_t generation)
{
  return ((uint64_t)generation << 32 | h) * w->ref_key;
}

/* The generation after `g` for handle h: never one whose reference would
   be 0, and 0 (the handle is retired) once they run out. */
static uint32_t next_generation(const aoi_world *w, uint32_t h, uint32_t g)
{
  do {
    if (g == UINT32_MAX)
      return 0;
    g++;
  } while (ref_encode(w, h, g) == 0);
  return g;
}

/* The index of place i of the released ring (types.h), counted from its
   head; -1 is the place before the head. */
static uint32_t released_at(const aoi_world *w, int64_t i)
{
  int64_t cap = w->handle_capacity;
  return (uint32_t)(((int64_t)w->released_head + i + cap) % cap);
}

/* Makes sure one more handle can be taken. A retired handle (its
   generations ran out: aoi_remove) is released like any other, and leaves
   the ring for good when it reaches the head of the free handles. */
static int reserve_handle(aoi_world *w)
{
  while (w->free_count > 0 &&
         w->generation[w->released[w->released_head]] == 0) {
    w->released_head = released_at(w, 1);
    w->free_count--;
  }
  if (w->free_count > 0 || w->handle_count < w->handle_capacity)
    return 0;
  const aoi_allocator *a = &w->allocator;
  uint32_t old = w->handle_capacity;
  /* A quarter more: each handle costs every table, so they keep little
     slack, and the copies still come once per quarter grown. */
  uint64_t grown = old ? (uint64_t)old + old / 4 : 64;
  if (grown >= AOI__RECORD_TAKEN) /* (handles stay below it) */
    return AOI_ENOMEM;
  uint32_t cap = (uint32_t)grown;
  char *block = aoi__alloc(a, handle_block(cap, NULL, NULL));
  if (block == NULL)
    return AOI_ENOMEM;
  handle_tables t;
  handle_block(cap, block, &t);
  if (old > 0) {
    memcpy(t.host, w->host, sizeof(*t.host) * old);
    memcpy(t.location, w->location, sizeof(*t.location) * old);
    memcpy(t.mark, w->mark, sizeof(*t.mark) * old);
    memcpy(t.appeal, w->appeal, sizeof(*t.appeal) * old);
    memcpy(t.outbox, w->outbox, sizeof(*t.outbox) * old);
    memcpy(t.tag, w->tag, sizeof(*t.tag) * old);
    memcpy(t.tag_next, w->tag_next, sizeof(*t.tag_next) * old);
    memcpy(t.tag_queued, w->tag_queued,
           sizeof(*t.tag_queued) * w->tag_queued_count);
    memcpy(t.event_at, w->event_at, sizeof(*t.event_at) * old);
    memcpy(t.queued, w->queued, sizeof(*t.queued) * old);
    memcpy(t.generation, w->generation, sizeof(*t.generation) * old);
    memcpy(t.handle_bits, w->handle_bits, old);
    /* the ring starts over at 0 */
    uint32_t n = w->free_count + w->limbo_old_count + w->limbo_count;
    for (uint32_t i = 0; i < n; i++)
      t.released[i] = w->released[released_at(w, i)];
    memcpy(t.backlog, w->backlog, sizeof(uint32_t) * w->backlog_count);
    memcpy(t.assigned, w->assigned, sizeof(uint32_t) * old);
  }
  memset(t.host + old, 0, sizeof(*t.host) * (cap - old));
  memset(t.location + old, 0xff, sizeof(*t.location) * (cap - old));
  memset(t.mark + old, 0, sizeof(*t.mark) * (cap - old));
  memset(t.appeal + old, 0, sizeof(*t.appeal) * (cap - old));
  memset(t.outbox + old, 0, sizeof(*t.outbox) * (cap - old));
  memset(t.tag + old, 0, sizeof(*t.tag) * (cap - old));
  memset(t.tag_next + old, 0, sizeof(*t.tag_next) * (cap - old));
  memset(t.event_at + old, 0, sizeof(*t.event_at) * (cap - old));
  memset(t.queued + old, 0xff, sizeof(*t.queued) * (cap - old));
  for (uint32_t h = old; h < cap; h++)
    t.generation[h] = next_generation(w, h, 0);
  memset(t.handle_bits + old, 0, cap - old);
  aoi__free(a, w->host, old > 0 ? handle_block(old, NULL, NULL) : 0);
  w->host = t.host;
  w->location = t.location;
  w->mark = t.mark;
  w->appeal = t.appeal;
  w->outbox = t.outbox;
  w->tag = t.tag;
  w->tag_next = t.tag_next;
  w->tag_queued = t.tag_queued;
  w->event_at = t.event_at;
  w->queued = t.queued;
  w->generation = t.generation;
  w->handle_bits = t.handle_bits;
  w->released = t.released;
  w->released_head = 0;
  w->backlog = t.backlog;
  w->assigned = t.assigned;
  w->handle_capacity = cap;
  return 0;
}

static uint32_t take_handle(aoi_world *w)
{
  if (w->free_count > 0) {
    uint32_t h = w->released[w->released_head];
    w->released_head = released_at(w, 1);
    w->free_count--;
    AOI__ASSERT(w->generation[h] != 0); /* (reserve_handle drops retired ones) */
    return h;
  }
  AOI__ASSERT(w->handle_count < w->handle_capacity);
  return w->handle_count++;
}

/* ---- op queues ---------------------------------------------------------- */

/* The shard whose queue gets this entity's record: the one that owns it
   at the start of the next tick. */
static unsigned route(const aoi_world *w, uint32_t h)
{
  if (w->host[h].born > w->tick)
    return w->host[h].shard;
  return w->location[h].shard;
}

/* Makes sure the queue of `shard` has room for a record, unless the
   entity has one there already (`at`, its index, else AOI__NONE), and with
   `extra` room for the extra of a record that does more than move (a
   failure may leave more room, and changes nothing else). */
static int reserve_record(aoi_world *w, unsigned shard, uint32_t at,
                          bool extra)
{
  aoi__queue *q = &w->shards[shard].queue;
  int rc;
  if (at == AOI__NONE && q->count == q->capacity &&
      (rc = aoi__reserve(&w->allocator, (void **)&q->records, &q->capacity,
                         q->count + 1, sizeof(aoi__record))) != 0)
    return rc;
  if (extra &&
      (at == AOI__NONE || q->records[at].extra >= AOI__RECORD_JUST_REMOVE) &&
      q->extra_count == q->extra_capacity)
    return aoi__reserve(&w->allocator, (void **)&q->extras,
                        &q->extra_capacity, q->extra_count + 1,
                        sizeof(aoi__record_extra));
  return 0;
}

/* Gives record `at` of q a new extra that says `what` (room reserved). */
static aoi__record_extra *new_extra(aoi__queue *q, uint32_t at, uint32_t what)
{
  AOI__ASSERT(q->extra_count < q->extra_capacity);
  uint32_t i = q->extra_count++;
  aoi__record_extra *x = &q->extras[i];
  memset(x, 0, sizeof(*x));
  x->what = what;
  x->record = at;
  q->records[at].extra = i;
  return x;
}

/* Takes extra i out of q, the last one taking its place. */
static void drop_extra(aoi__queue *q, uint32_t i)
{
  uint32_t last = --q->extra_count;
  if (i != last) {
    q->extras[i] = q->extras[last];
    q->records[q->extras[i].record].extra = i;
  }
}

/* Handle h's record in the queue of `shard`, made if it had none, now
   noting that it changes `what` (room reserved by reserve_record): a
   removal drops everything else it held. */
static aoi__record *record_of(aoi_world *w, uint32_t h, unsigned shard,
                              uint32_t what)
{
  aoi__queue *q = &w->shards[shard].queue;
  uint32_t at = w->queued[h];
  if (at == AOI__NONE) {
    AOI__ASSERT(q->count < q->capacity);
    at = w->queued[h] = q->count++;
    w->records++;
    q->records[at] = (aoi__record){h, AOI__RECORD_JUST_MOVE, 0, 0};
    if (what == AOI__RECORD_REMOVE)
      q->records[at].extra = AOI__RECORD_JUST_REMOVE;
    else if (what != AOI__RECORD_MOVE)
      new_extra(q, at, what);
    return &q->records[at];
  }
  aoi__record *r = &q->records[at];
  AOI__ASSERT(r->extra != AOI__RECORD_JUST_REMOVE);
  if (what == AOI__RECORD_REMOVE) {
    if (r->extra != AOI__RECORD_JUST_MOVE)
      drop_extra(q, r->extra);
    r->extra = AOI__RECORD_JUST_REMOVE;
  } else if (r->extra != AOI__RECORD_JUST_MOVE)
    q->extras[r->extra].what |= what;
  else if (what != AOI__RECORD_MOVE)
    new_extra(q, at, what | AOI__RECORD_MOVE);
  return r;
}

/* The extra of a record that has one. */
static aoi__record_extra *extra_of(aoi_world *w, unsigned shard,
                                   const aoi__record *r)
{
  AOI__ASSERT(r->extra < AOI__RECORD_JUST_REMOVE);
  return &w->shards[shard].queue.extras[r->extra];
}

/* The shard handle h's record in the queue of `shard` names now: `shard`
   itself when it has none. */
static unsigned target_of(const aoi_world *w, uint32_t h, unsigned shard)
{
  const aoi__queue *q = &w->shards[shard].queue;
  uint32_t at = w->queued[h];
  return at == AOI__NONE ? shard
                         : aoi__record_target(w, q, &q->records[at], shard);
}

/* Adds delta to a bound; `shared` when other threads of a spread batch
   add to the same bounds (few moves change shard: the atomics are rare). */
static inline void bound_add(uint32_t *bound, int delta, bool shared)
{
  if (shared)
    __atomic_fetch_add(bound, (uint32_t)delta, __ATOMIC_RELAXED);
  else
    *bound += (uint32_t)delta;
}

/* Counts (delta 1) or uncounts (delta -1) the handoff from `from` to `to`
   that a record may cause: an arrival there and, between two workers, a
   slot in their handoff batch. */
static void count_handoff(aoi_world *w, unsigned from, unsigned to, int delta,
                          bool shared)
{
  if (to == from)
    return;
  bound_add(&w->shards[to].arrivals_bound, delta, shared);
  unsigned from_worker = aoi__worker_of(w, from);
  unsigned to_worker = aoi__worker_of(w, to);
  if (from_worker != to_worker)
    bound_add(&w->workers[from_worker].handoffs_out[to_worker].bound, delta,
              shared);
}

/* A record of `shard` that named `was` now names `to`: the counted handoff
   moves with it. */
static inline void retarget(aoi_world *w, unsigned shard, unsigned was,
                            unsigned to, bool shared)
{
  if (was == to)
    return;
  count_handoff(w, shard, was, -1, shared);
  count_handoff(w, shard, to, 1, shared);
}

/* Takes handle h's record (one that adds it) out of the queue of `shard`
   with everything counted for it: the entity is never seen. */
static void cancel_record(aoi_world *w, uint32_t h, unsigned shard)
{
  aoi__queue *q = &w->shards[shard].queue;
  uint32_t at = w->queued[h];
  AOI__ASSERT(at < q->count && q->records[at].handle == h);
  aoi__record *r = &q->records[at];
  retarget(w, shard, aoi__record_target(w, q, r, shard), shard, false);
  w->shards[shard].arrivals_bound--; /* its insertion */
  if (r->extra < AOI__RECORD_JUST_REMOVE)
    drop_extra(q, r->extra);
  uint32_t last = --q->count;
  if (at != last) {
    *r = q->records[last];
    w->queued[r->handle] = at;
    if (r->extra < AOI__RECORD_JUST_REMOVE)
      q->extras[r->extra].record = at;
  }
  w->queued[h] = AOI__NONE;
  w->records--;
}

/* ---- operations --------------------------------------------------------- */

/* aoi_add's checks after the world's, in their documented order. */
static int add_check(const aoi_world *w, const aoi_entity *d)
{
  if (aoi__idmap_get(&w->ids, d->id) != AOI__NONE)
    return AOI_EEXIST;
  if (d->flags == 0 || (d->flags & ~(AOI_WATCHER | AOI_MARKER)) != 0)
    return AOI_EFLAGS;
  if (!isfinite(d->x) || !isfinite(d->y))
    return AOI_ECOORD;
  if (!aoi__radius_ok(w, d->radius))
    return AOI_ERADIUS;
  return 0;
}

/* Makes every room aoi_add of `d` needs in `shard`: the id map's, a
   handle's and its record's. */
static int add_reserve(aoi_world *w, const aoi_entity *d, unsigned shard)
{
  int rc;
  if ((rc = aoi__idmap_reserve(&w->allocator, &w->ids, d->id)) != 0 ||
      (rc = reserve_handle(w)) != 0)
    return rc;
  /* The handle it will take is free, so it has no record: make room. */
  return reserve_record(w, shard, AOI__NONE, true);
}

/* Counts a new live entity in the world's totals. */
static void add_count(aoi_world *w, unsigned flags, float radius)
{
  w->live++;
  if (flags & AOI_WATCHER) {
    w->watchers++;
    w->radius_sum += radius;
    if (radius > w->radius_high)
      w->radius_high = radius;
  }
}

int aoi_add(aoi_world *w, const aoi_entity *d)
{
  if (w == NULL || d == NULL)
    return AOI_EINVAL;
  int rc = aoi__busy(w);
  if (rc != 0 || (rc = add_check(w, d)) != 0)
    return rc;
  unsigned shard = aoi__layout_shard(&w->layout, d->x, d->y);
  if ((rc = add_reserve(w, d, shard)) != 0)
    return rc;
  uint32_t h = take_handle(w);
  aoi__host_entity *e = &w->host[h];
  e->born = w->tick + 1;
  e->radius = d->radius;
  e->appeal = 0;
  e->flags = d->flags | AOI__LIVE;
  e->shard = shard;
  w->outbox[h].count = 0;
  w->mark[h].id = d->id;
  /* (no event can name the handle's last entity now: its leaves were
     laid out before the tick that freed the handle) */
  w->tag[h] = w->tag_next[h] = d->tag;
  w->handle_bits[h] &= (uint8_t)~AOI__HANDLE_GONE;
  aoi__idmap_put(&w->ids, d->id, h);
  add_count(w, d->flags, d->radius);
  aoi__record *r = record_of(w, h, shard, AOI__RECORD_ADD);
  r->x = d->x;
  r->y = d->y;
  aoi__record_extra *more = extra_of(w, shard, r);
  more->layers = d->layers;
  more->interest = d->interest;
  w->shards[shard].arrivals_bound++; /* its insertion */
  return 0;
}

/* The first checks of an operation on a live entity named by its id, in
   their documented order after the world's: AOI_EBUSY, AOI_ENOENT. */
static int find_handle(const aoi_world *w, uint64_t id, uint32_t *h)
{
  int rc = aoi__busy(w);
  if (rc != 0)
    return rc;
  *h = aoi__live_handle(w, id);
  return *h == AOI__NONE ? AOI_ENOENT : 0;
}

/* The rest of an operation's prologue once its live handle h is found:
   the argument check's verdict (`invalid`), then room for its record in
   the queue of the shard that owns the entity (and, with `extra`, for an
   extra). */
static int prepare_op(aoi_world *w, uint32_t h, int invalid, bool extra,
                      unsigned *shard)
{
  if (invalid != 0)
    return invalid;
  *shard = route(w, h);
  return reserve_record(w, *shard, w->queued[h], extra);
}

/* The prologue of an operation on a live entity: the checks in their
   documented order, then room for its record. */
static int begin_op(aoi_world *w, uint64_t id, int invalid, bool extra,
                    uint32_t *h, unsigned *shard)
{
  int rc = find_handle(w, id, h);
  return rc != 0 ? rc : prepare_op(w, *h, invalid, extra, shard);
}

/* The record of a set_* operation on live entity `id`: the prologue
   (begin_op, `invalid` being the argument check's verdict), then the
   extra of the entity's record with `what` noted. NULL, with *rc, when a
   check fails; nothing can fail after it. */
static aoi__record_extra *set_record(aoi_world *w, uint64_t id, int invalid,
                                     uint32_t what, uint32_t *h, int *rc)
{
  unsigned shard;
  if ((*rc = begin_op(w, id, invalid, true, h, &shard)) != 0)
    return NULL;
  return extra_of(w, shard, record_of(w, *h, shard, what));
}

/* aoi_move of live handle h, from its coordinate check on: aoi_move and
   aoi_move_ref differ only in how they find h. */
static int move_handle(aoi_world *w, uint32_t h, float x, float y)
{
  unsigned shard;
  int rc = prepare_op(w, h, isfinite(x) && isfinite(y) ? 0 : AOI_ECOORD,
                      false, &shard);
  if (rc != 0)
    return rc;
  unsigned was = target_of(w, h, shard);
  aoi__record *r = record_of(w, h, shard, AOI__RECORD_MOVE);
  r->x = x;
  r->y = y;
  /* If it ends up in another shard, that shard and the batch between the
     two workers need room for it: count it, to reserve before the tick. */
  retarget(w, shard, was, aoi__layout_shard(&w->layout, x, y), false);
  return 0;
}

int aoi_move(aoi_world *w, uint64_t id, float x, float y)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  int rc = find_handle(w, id, &h);
  return rc != 0 ? rc : move_handle(w, h, x, y);
}

/* aoi_move_many of ops[0] .. ops[n - 1] on the calling thread, the id
   lookups fetched ahead; *done as aoi_move_many's. */
static int move_many_here(aoi_world *w, const aoi_move_op *ops, size_t n,
                          size_t *done)
{
  /* The id lookups are scattered: each is fetched this far ahead, and
     where it starts is kept (moves leave the id map as it is). */
  enum { AHEAD = 32 };
  uint32_t home[AHEAD];
  for (size_t i = 0; i < n && i < AHEAD; i++)
    home[i] = aoi__idmap_prefetch(&w->ids, ops[i].id);
  for (size_t i = 0; i < n; i++) {
    uint32_t h = aoi__idmap_get_from(&w->ids, ops[i].id, home[i % AHEAD]);
    if (i + AHEAD < n)
      home[i % AHEAD] = aoi__idmap_prefetch(&w->ids, ops[i + AHEAD].id);
    int rc = h == AOI__NONE ? AOI_ENOENT
                            : move_handle(w, h, ops[i].x, ops[i].y);
    if (rc != 0) {
      *done = i;
      return rc;
    }
  }
  *done = n;
  return 0;
}

/* ---- a batch of moves spread over the pool ------------------------------ */

/* A batch at least this long, on a world with a pool, is spread over the
   pool's threads: below it the handing out costs more than it saves. */
#define SPREAD_MOVES 16384u
/* The most parts a window is cut into. */
#define SPREAD_PARTS 64u
/* A handle's mark in spread_seen: the window's stamp above, the part that
   met it below. */
#define SPREAD_PART_BITS 6u
#define SPREAD_STAMPS (UINT32_MAX >> SPREAD_PART_BITS)

/* One window of a spread batch, ops[0] .. ops[count - 1], cut into
   `parts` parts of consecutive moves. */
typedef struct spread_window {
  aoi_world *w;
  const aoi_move_op *ops;
  uint32_t count;
  unsigned parts;
  uint32_t stamp;
  unsigned stop_part;  /* the parts that stand: those before the failure */
  uint32_t stop;       /* the moves that stand: those before the failure */
  _Atomic bool shared; /* a handle moved in two parts */
  uint32_t failed[SPREAD_PARTS]; /* per part, its first failure, or count */
  int rc[SPREAD_PARTS];          /* its error */
} spread_window;

static void spread_bounds(const spread_window *m, unsigned part,
                          uint32_t *from, uint32_t *to)
{
  *from = (uint32_t)((uint64_t)m->count * part / m->parts);
  *to = (uint32_t)((uint64_t)m->count * (part + 1) / m->parts);
}

/* Part `part`'s lookups and checks, in aoi_move's order (AOI_ENOENT,
   AOI_ECOORD), up to its first failure: each move's handle and shard, and
   the records the part would make in each shard (spread_fresh). A handle
   met in another part of the window too marks the window `shared`.
   Reads the host tables only, but for the marks. Two stages, as the
   entries are scattered: the id lookups fetched AHEAD moves ahead, and
   each handle's entries LAG moves before they are read. */
static void spread_look(void *context, unsigned part)
{
  spread_window *m = context;
  aoi_world *w = m->w;
  uint32_t from, to;
  spread_bounds(m, part, &from, &to);
  uint32_t *fresh = w->spread_fresh + (size_t)part * w->shard_count;
  memset(fresh, 0, sizeof(uint32_t) * w->shard_count);
  m->failed[part] = m->count;
  m->rc[part] = 0;
  uint32_t mark = m->stamp << SPREAD_PART_BITS | part;
  bool shared = false;
  enum { AHEAD = 32, LAG = 16 };
  uint32_t home[AHEAD];
  for (uint32_t i = from; i < to && i - from < AHEAD; i++)
    home[i % AHEAD] = aoi__idmap_prefetch(&w->ids, m->ops[i].id);
  uint32_t end = to; /* the moves looked up: up to the first failure */
  for (uint32_t i = from; i < end + LAG; i++) {
    if (i < end) {
      const aoi_move_op *op = &m->ops[i];
      uint32_t h = aoi__idmap_get_from(&w->ids, op->id, home[i % AHEAD]);
      if (i + AHEAD < to)
        home[i % AHEAD] = aoi__idmap_prefetch(&w->ids, m->ops[i + AHEAD].id);
      int rc = h == AOI__NONE                         ? AOI_ENOENT
               : !isfinite(op->x) || !isfinite(op->y) ? AOI_ECOORD
                                                      : 0;
      if (rc != 0) {
        m->failed[part] = i;
        m->rc[part] = rc;
        end = i;
      } else {
        w->spread_moves[i].handle = h;
        __builtin_prefetch(&w->host[h]);
        __builtin_prefetch(&w->location[h]);
        __builtin_prefetch(&w->queued[h]);
        __builtin_prefetch(&w->spread_seen[h], 1);
      }
    }
    if (i >= from + LAG && i - LAG < end) {
      aoi__spread_move *mv = &w->spread_moves[i - LAG];
      uint32_t h = mv->handle;
      mv->shard = route(w, h);
      /* (relaxed: the parts' order is the job's; only the values count) */
      uint32_t was = __atomic_exchange_n(&w->spread_seen[h], mark,
                                         __ATOMIC_RELAXED);
      if (was >> SPREAD_PART_BITS != m->stamp)
        fresh[mv->shard] += w->queued[h] == AOI__NONE;
      else if (was != mark)
        shared = true;
    }
  }
  if (shared)
    atomic_store_explicit(&m->shared, true, memory_order_relaxed);
}

/* Part `part`'s records, each shard's new ones from the part's offset in
   that shard's queue (spread_fresh, made offsets by spread_place), so
   that every queue ends as the moves one by one would leave it: no
   handle is in two parts (not `shared`), so each record is one part's. A
   record the handle had already is moved as aoi_move moves it (record_of
   makes none, so counts nothing). */
static void spread_record(void *context, unsigned part)
{
  spread_window *m = context;
  aoi_world *w = m->w;
  uint32_t from, to;
  spread_bounds(m, part, &from, &to);
  if (to > m->stop)
    to = m->stop;
  uint32_t *at = w->spread_fresh + (size_t)part * w->shard_count;
  enum { AHEAD = 16 };
  for (uint32_t i = from; i < to; i++) {
    if (i + AHEAD < to)
      __builtin_prefetch(&w->queued[w->spread_moves[i + AHEAD].handle], 1);
    aoi__spread_move mv = w->spread_moves[i];
    unsigned was = target_of(w, mv.handle, mv.shard);
    aoi__record *r;
    if (w->queued[mv.handle] == AOI__NONE) {
      uint32_t k = w->queued[mv.handle] = at[mv.shard]++;
      r = &w->shards[mv.shard].queue.records[k];
      *r = (aoi__record){mv.handle, AOI__RECORD_JUST_MOVE, 0, 0};
    } else
      r = record_of(w, mv.handle, mv.shard, AOI__RECORD_MOVE);
    r->x = m->ops[i].x;
    r->y = m->ops[i].y;
    retarget(w, mv.shard, was, aoi__layout_shard(&w->layout, r->x, r->y),
             true);
  }
}

/* Room in every shard's queue for the records the standing parts make,
   and each part's offset in each queue in place of its count (in the
   parts' order). A window with a `shared` handle is recorded on the host
   (spread_record_here), which needs the room only. */
static int spread_place(aoi_world *w, spread_window *m)
{
  for (unsigned s = 0; s < w->shard_count; s++) {
    aoi__queue *q = &w->shards[s].queue;
    uint64_t at = q->count;
    for (unsigned p = 0; p < m->stop_part; p++) {
      uint32_t *fresh = &w->spread_fresh[(size_t)p * w->shard_count + s];
      uint32_t n = *fresh;
      *fresh = (uint32_t)(at < UINT32_MAX ? at : UINT32_MAX);
      at += n;
    }
    if (at > q->capacity &&
        (at > UINT32_MAX ||
         aoi__reserve(&w->allocator, (void **)&q->records, &q->capacity,
                      (uint32_t)at, sizeof(aoi__record)) != 0))
      return AOI_ENOMEM;
  }
  return 0;
}

/* The standing moves of a window that moves a handle in two parts, one by
   one on this thread (room made: they cannot fail). */
static void spread_record_here(aoi_world *w, const spread_window *m)
{
  for (uint32_t i = 0; i < m->stop; i++) {
    int rc = move_handle(w, w->spread_moves[i].handle, m->ops[i].x,
                         m->ops[i].y);
    AOI__ASSERT(rc == 0);
    (void)rc;
  }
}

/* How many of the pool's threads a batch may ask to help: those of a
   world's own pool, or of a shared one with nothing queued (one busy with
   other worlds' ticks would keep the host waiting), that have a core
   beside the host's; 0 when it should not be spread: a short batch, or
   fewer than SPREAD_THREADS such threads (the two rounds cost about twice
   the work of the moves one by one, which a few threads, or threads that
   share cores, do not win back: on 2 cores, 1M moves took 13-19 ms spread
   over 3-4 threads against 10 ms one by one). aoi__spread_cores, when
   not 0, stands for the online cores (the tests' way to spread on any
   machine). */
#define SPREAD_THREADS 3u
unsigned aoi__spread_cores;

static unsigned spread_helpers(const aoi_world *w, size_t n)
{
  if (w->pool == NULL || n < SPREAD_MOVES)
    return 0;
  unsigned cores = aoi__spread_cores ? aoi__spread_cores : aoi__online_cores();
  unsigned helpers = w->pool->threads < cores ? w->pool->threads : cores - 1;
  if (helpers < SPREAD_THREADS)
    return 0;
  if (!w->own_pool && atomic_load_explicit(&w->pool->queued,
                                           memory_order_relaxed) != 0)
    return 0;
  return helpers;
}

/* The scratch for windows of up to `count` moves in `parts` parts; false
   when it cannot be had (the batch then runs on the calling thread). */
static bool spread_scratch(aoi_world *w, uint32_t count, unsigned parts)
{
  if (w->spread_seen_capacity < w->handle_capacity) {
    uint32_t *seen = aoi__calloc(&w->allocator,
                                 sizeof(uint32_t) * w->handle_capacity);
    if (seen == NULL)
      return false;
    aoi__free(&w->allocator, w->spread_seen,
              sizeof(uint32_t) * w->spread_seen_capacity);
    w->spread_seen = seen;
    w->spread_seen_capacity = w->handle_capacity;
    w->spread_stamp = 0;
  }
  return aoi__reserve(&w->allocator, (void **)&w->spread_moves,
                      &w->spread_capacity, count,
                      sizeof(*w->spread_moves)) == 0 &&
         aoi__reserve(&w->allocator, (void **)&w->spread_fresh,
                      &w->spread_fresh_capacity,
                      (uint32_t)parts * w->shard_count, sizeof(uint32_t)) == 0;
}

/* The next window's stamp: the marks of earlier windows never equal it. */
static uint32_t spread_stamp(aoi_world *w)
{
  if (w->spread_stamp == SPREAD_STAMPS) {
    memset(w->spread_seen, 0, sizeof(uint32_t) * w->spread_seen_capacity);
    w->spread_stamp = 0;
  }
  return ++w->spread_stamp;
}

/* aoi_move_many spread over the pool's threads and the calling one
   (`helpers` of the pool's), a window at a time. */
static int move_many_spread(aoi_world *w, const aoi_move_op *ops, size_t n,
                            size_t *done, unsigned helpers)
{
  /* A window holds at most a move per handle, and at least SPREAD_MOVES,
     so the scratch follows the world's size, not the batch's. */
  uint32_t window = w->handle_capacity > SPREAD_MOVES ? w->handle_capacity
                                                      : SPREAD_MOVES;
  /* Four parts a thread, so that a thread the system holds back delays
     a small part, which the others wait for, and not a large one. */
  unsigned parts = 4 * (helpers + 1) > SPREAD_PARTS ? SPREAD_PARTS
                                                    : 4 * (helpers + 1);
  if (!spread_scratch(w, n < window ? (uint32_t)n : window, parts))
    return move_many_here(w, ops, n, done);
  spread_window m;
  for (size_t start = 0; start < n; start += m.count) {
    size_t left = n - start;
    m = (spread_window){.w = w,
                        .ops = ops + start,
                        .count = left < window ? (uint32_t)left : window,
                        .parts = parts,
                        .stamp = spread_stamp(w)};
    atomic_init(&m.shared, false);
    aoi__pool_spread(w->pool, &w->solo, helpers, parts, spread_look, &m);
    int rc = 0;
    m.stop = m.count;
    m.stop_part = parts;
    for (unsigned p = 0; p < parts && rc == 0; p++)
      if ((rc = m.rc[p]) != 0) {
        m.stop = m.failed[p];
        m.stop_part = p + 1;
      }
    int room = spread_place(w, &m);
    if (room != 0) {
      *done = start;
      return room;
    }
    if (atomic_load_explicit(&m.shared, memory_order_relaxed))
      spread_record_here(w, &m);
    else if (m.stop > 0) {
      aoi__pool_spread(w->pool, &w->solo, helpers, m.stop_part,
                       spread_record, &m);
      /* The last part's offsets end where each queue now does. */
      const uint32_t *end =
          w->spread_fresh + (size_t)(m.stop_part - 1) * w->shard_count;
      for (unsigned sh = 0; sh < w->shard_count; sh++) {
        w->records += end[sh] - w->shards[sh].queue.count;
        w->shards[sh].queue.count = end[sh];
      }
    }
    if (rc != 0) {
      *done = start + m.stop;
      return rc;
    }
  }
  *done = n;
  return 0;
}

int aoi_move_many(aoi_world *w, const aoi_move_op *ops, size_t n,
                  size_t *done)
{
  if (done != NULL)
    *done = 0;
  if (w == NULL || done == NULL || (ops == NULL && n > 0))
    return AOI_EINVAL;
  int busy = aoi__busy(w);
  if (busy != 0)
    return busy;
  unsigned helpers = spread_helpers(w, n);
  return helpers > 0 ? move_many_spread(w, ops, n, done, helpers)
                     : move_many_here(w, ops, n, done);
}

/* Keeps *high at or above every live value as one goes from `was` to
   `now`: it grows at once; when the largest one shrinks, *dirty asks the
   next tick to find the largest again. */
static void track_high(float *high, bool *dirty, float was, float now)
{
  if (now > *high)
    *high = now;
  else if (was == *high && now < was)
    *dirty = true;
}

int aoi_set_radius(aoi_world *w, uint64_t id, float radius)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  int rc;
  aoi__record_extra *r =
      set_record(w, id, aoi__radius_ok(w, radius) ? 0 : AOI_ERADIUS,
                 AOI__RECORD_RADIUS, &h, &rc);
  if (r == NULL)
    return rc;
  aoi__host_entity *e = &w->host[h]; /* the tick reads the radius there */
  if (e->flags & AOI_WATCHER) {
    w->radius_sum += (double)radius - (double)e->radius;
    track_high(&w->radius_high, &w->radius_high_dirty, e->radius, radius);
  }
  e->radius = radius;
  return 0;
}

int aoi_set_layers(aoi_world *w, uint64_t id, uint32_t layers,
                   uint32_t interest)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  int rc;
  aoi__record_extra *r = set_record(w, id, 0, AOI__RECORD_LAYERS, &h, &rc);
  if (r == NULL)
    return rc;
  r->layers = layers;
  r->interest = interest;
  return 0;
}

int aoi_set_appeal(aoi_world *w, uint64_t id, float appeal)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  int rc;
  aoi__record_extra *r =
      set_record(w, id, aoi__radius_ok(w, appeal) ? 0 : AOI_ERADIUS,
                 AOI__RECORD_APPEAL, &h, &rc);
  if (r == NULL)
    return rc;
  aoi__host_entity *e = &w->host[h]; /* the tick reads the appeal there */
  track_high(&w->appeal_high, &w->appeal_high_dirty, e->appeal, appeal);
  e->appeal = appeal;
  return 0;
}

int aoi_set_cap(aoi_world *w, uint64_t id, uint32_t cap)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  int rc;
  aoi__record_extra *r = set_record(w, id, 0, AOI__RECORD_CAP, &h, &rc);
  if (r == NULL)
    return rc;
  r->cap = cap;
  return 0;
}

int aoi_set_tag(aoi_world *w, uint64_t id, uint64_t tag)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  int rc = find_handle(w, id, &h);
  if (rc != 0)
    return rc;
  /* The tag is the host's alone: it waits beside the handle, not in a
     record, and the next tick makes it the one delivered (tick.c). */
  w->tag_next[h] = tag;
  if (!(w->handle_bits[h] & AOI__HANDLE_TAG)) {
    w->handle_bits[h] |= AOI__HANDLE_TAG;
    w->tag_queued[w->tag_queued_count++] = h;
  }
  return 0;
}

int aoi_remove(aoi_world *w, uint64_t id)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  unsigned shard;
  int rc = begin_op(w, id, 0, false, &h, &shard);
  if (rc != 0)
    return rc;
  aoi__host_entity *e = &w->host[h];
  aoi__idmap_del(&w->ids, id);
  e->flags &= ~AOI__LIVE;
  /* its record of the last tick, if any, is dead */
  w->handle_bits[h] |= AOI__HANDLE_GONE;
  /* Every reference to it is refused from now on, whoever takes the handle
     next; a handle out of generations is retired (0), never taken again. */
  w->generation[h] = next_generation(w, h, w->generation[h]);
  w->live--;
  if (e->appeal > 0 && e->appeal == w->appeal_high)
    w->appeal_high_dirty = true;
  if (e->flags & AOI_WATCHER) {
    w->watchers--;
    w->radius_sum -= e->radius;
    if (e->radius == w->radius_high)
      w->radius_high_dirty = true;
    /* A removed watcher's undrained events are dropped now, with their
       memory: the handle's next owner may need none. (Its record of the
       last tick, if any, is dead with its handle: see aoi__segment.) */
    aoi__outbox_free(&w->allocator, &w->outbox[h]);
  }
  if (e->born > w->tick) {
    /* Added since the last tick: no tick, no view, no query has seen it,
       so the add and the remove cancel out and the handle is free now. */
    cancel_record(w, h, shard);
    w->released_head = released_at(w, -1);
    w->released[w->released_head] = h;
    w->free_count++;
    return 0;
  }
  /* Whatever else the record held is moot now; where it stood at the end of
     the last tick is what its watchers must leave. */
  retarget(w, shard, target_of(w, h, shard), shard, false);
  record_of(w, h, shard, AOI__RECORD_REMOVE);
  w->released[released_at(w, (int64_t)w->free_count + w->limbo_old_count +
                                  w->limbo_count)] = h;
  w->limbo_count++;
  return 0;
}

/* ---- references --------------------------------------------------------- */

static aoi_ref ref_of_handle(const aoi_world *w, uint32_t h)
{
  AOI__ASSERT(w->generation[h] != 0);
  return ref_encode(w, h, w->generation[h]);
}

/* The first checks of an operation on a live entity named by a reference,
   as find_handle's: AOI_EBUSY, then AOI_ENOENT for anything but a live
   entity's reference (a handle never taken, a generation bumped by a
   removal since, or one no add has issued yet). */
static int find_ref(const aoi_world *w, aoi_ref ref, uint32_t *h)
{
  int rc = aoi__busy(w);
  if (rc != 0)
    return rc;
  uint64_t plain = ref * w->ref_inverse;
  uint32_t at = (uint32_t)plain, generation = (uint32_t)(plain >> 32);
  if (ref == 0 || generation == 0 || at >= w->handle_count ||
      w->generation[at] != generation || !(w->host[at].flags & AOI__LIVE))
    return AOI_ENOENT;
  *h = at;
  return 0;
}

int aoi_ref_of(aoi_world *w, uint64_t id, aoi_ref *ref)
{
  if (w == NULL || ref == NULL)
    return AOI_EINVAL;
  uint32_t h;
  int rc = find_handle(w, id, &h);
  if (rc != 0)
    return rc;
  *ref = ref_of_handle(w, h);
  return 0;
}

int aoi_move_ref(aoi_world *w, aoi_ref ref, float x, float y)
{
  if (w == NULL)
    return AOI_EINVAL;
  uint32_t h;
  int rc = find_ref(w, ref, &h);
  return rc != 0 ? rc : move_handle(w, h, x, y);
}
