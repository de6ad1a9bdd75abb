/*
 * check.c: the invariant walks. aoi__world_valid checks every structure of
 * a world against the others (the id map, the handle tables, each shard's
 * entities and views, the op queues and the bounds the host reserves by,
 * the delivery segments); the tests call it, and builds with
 * AOI_CHECK_INVARIANTS defined (the sanitizer builds) run it after every
 * tick (aoi__check_tick). Host only, between ticks: then no worker writes
 * anything, and every write a worker made in the tick was published by its
 * done report (a ring push, which the host's pop acquires).
 *
 * Each invariant is one CHECK: a walk stops at the first that does not
 * hold and records which (its condition as written, its line here, and
 * the shard, handle or segment concerned), for aoi__check_failure, so
 * that a failed walk says what broke rather than only that something did.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The calling thread's last walk's first failure ("" when it passed): per
   thread, so that two hosts may walk their worlds at once. */
static _Thread_local char failure[256];

const char *aoi__check_failure(void)
{
  return failure;
}

/* Records a failed invariant: "check.c:LINE: CONDITION (SUBJECT)", where
   the subject is printf's of `format`. Returns false, the walk's answer. */
static bool __attribute__((format(printf, 3, 4)))
check_fail(const char *condition, int line, const char *format, ...)
{
  char subject[96];
  va_list args;
  va_start(args, format);
  vsnprintf(subject, sizeof(subject), format, args);
  va_end(args);
  snprintf(failure, sizeof(failure), "check.c:%d: %s (%s)", line, condition,
           subject);
  return false;
}

/* One invariant: when `cond` does not hold, the walk records it and the
   calling function returns false. The arguments after it name what the
   invariant concerns, printf-style. A walk that calls a walk of this file
   returns at once when that one fails (WALK), keeping its record. */
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      return check_fail(#cond, __LINE__, __VA_ARGS__);                         \
  } while (0)
#define WALK(call)                                                             \
  do {                                                                         \
    if (!(call))                                                               \
      return false;                                                            \
  } while (0)

/* Shard s's op queue: one record per handle, found by its index, in the
   queue of the shard that owns the handle; each extra belongs to one
   record that points at it, and says more than a move; records that add
   carry nothing else to do, ones that remove nothing else at all. */
static bool queue_valid(const aoi_world *w, unsigned s)
{
  const aoi__queue *q = &w->shards[s].queue;
  CHECK(q->count <= q->capacity, "shard %u", s);
  CHECK(q->extra_count <= q->extra_capacity, "shard %u", s);
  uint32_t extras = 0;
  for (uint32_t i = 0; i < q->count; i++) {
    const aoi__record *r = &q->records[i];
    uint32_t h = r->handle;
    if (r->extra < AOI__RECORD_JUST_REMOVE) {
      extras++;
      CHECK(r->extra < q->extra_count, "shard %u, record %u", s, i);
      const aoi__record_extra *x = &q->extras[r->extra];
      CHECK(x->record == i, "shard %u, record %u", s, i);
      CHECK((x->what & ~AOI__RECORD_MOVE) != 0, "shard %u, record %u", s, i);
      CHECK(!(x->what & AOI__RECORD_REMOVE), "shard %u, record %u", s, i);
    }
    uint32_t what = aoi__record_what(q, r);
    CHECK(h < w->handle_count, "shard %u, record %u, handle %u", s, i, h);
    CHECK(w->queued[h] == i, "shard %u, record %u, handle %u", s, i, h);
    const aoi__host_entity *e = &w->host[h];
    unsigned owner = e->born > w->tick ? e->shard : w->location[h].shard;
    CHECK(owner == s, "shard %u, record %u, handle %u", s, i, h);
    if (what & AOI__RECORD_ADD) {
      CHECK(e->flags & AOI__LIVE, "shard %u, handle %u", s, h);
      CHECK(e->born > w->tick, "shard %u, handle %u", s, h);
    }
    if (what & AOI__RECORD_REMOVE) {
      CHECK(what == AOI__RECORD_REMOVE, "shard %u, handle %u", s, h);
      CHECK(!(e->flags & AOI__LIVE), "shard %u, handle %u", s, h);
    } else {
      CHECK(e->flags & AOI__LIVE, "shard %u, handle %u", s, h);
    }
  }
  CHECK(extras == q->extra_count, "shard %u", s);
  return true;
}

/* The bounds the host keeps for the tick's reservation are exactly what
   the records count: recounted from them. */
static bool bounds_valid(const aoi_world *w)
{
  uint32_t arrivals[AOI__MAX_SHARDS] = {0};
  for (unsigned s = 0; s < w->shard_count; s++) {
    const aoi__queue *q = &w->shards[s].queue;
    for (uint32_t i = 0; i < q->count; i++) {
      const aoi__record *r = &q->records[i];
      unsigned target = aoi__record_target(w, q, r, s);
      if (aoi__record_what(q, r) & AOI__RECORD_ADD)
        arrivals[s]++;
      if (target != s)
        arrivals[target]++;
    }
  }
  for (unsigned s = 0; s < w->shard_count; s++)
    CHECK(arrivals[s] == w->shards[s].arrivals_bound, "shard %u", s);
  for (unsigned i = 0; i < w->threads; i++) {
    uint32_t bound[AOI__MAX_THREADS] = {0};
    for (unsigned s = i; s < w->shard_count; s += w->threads) {
      const aoi__queue *q = &w->shards[s].queue;
      for (uint32_t k = 0; k < q->count; k++) {
        unsigned to =
            aoi__worker_of(w, aoi__record_target(w, q, &q->records[k], s));
        if (to != i)
          bound[to]++;
      }
    }
    for (unsigned j = 0; j < w->threads; j++)
      CHECK(bound[j] == w->workers[i].handoffs_out[j].bound,
            "worker %u to worker %u", i, j);
  }
  return true;
}

/* The op queues (queue_valid) hold w->records in all, their bounds are
   right, and every handle's queued index names a record of its owner. */
static bool queues_valid(const aoi_world *w)
{
  uint32_t total = 0;
  for (unsigned s = 0; s < w->shard_count; s++) {
    WALK(queue_valid(w, s));
    total += w->shards[s].queue.count;
  }
  CHECK(total == w->records, "world: %u queued", total);
  WALK(bounds_valid(w));
  for (uint32_t h = 0; h < w->handle_count; h++)
    if (w->queued[h] != AOI__NONE) {
      unsigned owner = w->host[h].born > w->tick ? w->host[h].shard
                                                 : w->location[h].shard;
      CHECK(owner < w->shard_count, "handle %u", h);
      CHECK(w->queued[h] < w->shards[owner].queue.count,
            "handle %u, shard %u", h, owner);
    }
  return true;
}

/* The delivery segments: records that end where the segment does, each
   of a handle below the high-water mark, the delivered offset within the
   segment; and the index by handle (event_at) either built, naming each
   record, or all clear (outbox.c). */
static bool records_valid(const aoi_world *w)
{
  uint32_t indexed = 0;
  for (unsigned i = 0; i < w->threads; i++) {
    const aoi__segment *seg = &w->segments[i];
    CHECK(seg->delivered <= seg->count, "segment %u", i);
    CHECK(seg->taken <= seg->records, "segment %u", i);
    uint32_t at = 0, records = 0;
    while (at < seg->count) {
      const uint32_t *rec = seg->words + at;
      uint32_t h = aoi__record_handle(rec);
      CHECK(h < w->handle_count, "segment %u, offset %u, handle %u", i, at,
            h);
      CHECK(!w->records_indexed || w->event_at[h] == at + 1,
            "segment %u, offset %u, handle %u", i, at, h);
      aoi__record_head head = aoi__record_read(rec);
      at += aoi__record_words(&head);
      records++;
      indexed++;
    }
    CHECK(at == seg->count, "segment %u", i);
    CHECK(records == seg->records, "segment %u", i);
  }
  uint32_t named = 0;
  for (uint32_t h = 0; h < w->handle_count; h++)
    named += w->event_at[h] != 0;
  CHECK(named == (w->records_indexed ? indexed : 0), "world: %u named",
        named);
  return true;
}

/* Live handle h: not retired nor gone, found by its id, and (once a tick
   applied it) where its location says, under its id. */
static bool handle_valid(const aoi_world *w, uint32_t h)
{
  const aoi__host_entity *e = &w->host[h];
  CHECK(w->generation[h] != 0, "handle %u", h); /* a live one's not retired */
  CHECK(!(w->handle_bits[h] & AOI__HANDLE_GONE), "handle %u", h);
  CHECK(aoi__idmap_get(&w->ids, w->mark[h].id) == h, "handle %u", h);
  if (e->born > w->tick)
    return true;
  const aoi__location *loc = &w->location[h];
  CHECK(loc->shard < w->shard_count, "handle %u", h);
  const aoi__shard *s = &w->shards[loc->shard];
  CHECK(loc->slot < s->count, "handle %u, shard %u", h, loc->shard);
  CHECK(s->entities[loc->slot].handle == h, "handle %u, shard %u", h,
        loc->shard);
  CHECK(s->entities[loc->slot].id == w->mark[h].id, "handle %u, shard %u", h,
        loc->shard);
  return true;
}

/* The released ring (types.h): from its head, the free handles, then
   those waiting for the next tick or two; each is a handle taken before,
   not live, and listed once. A spare bit of handle_bits marks the ones
   seen, and is cleared before the verdict. */
#define RELEASED_SEEN 0x80u
static bool released_valid(aoi_world *w)
{
  uint32_t n = w->free_count + w->limbo_old_count + w->limbo_count;
  CHECK(n <= w->handle_count, "world: %u released of %u", n, w->handle_count);
  uint32_t i = 0, h = 0;
  bool in_range = true, dead = true, once = true;
  for (; i < n; i++) {
    h = w->released[(w->released_head + i) % w->handle_capacity];
    in_range = h < w->handle_count;
    dead = in_range && !(w->host[h].flags & AOI__LIVE);
    once = in_range && !(w->handle_bits[h] & RELEASED_SEEN);
    if (!in_range || !dead || !once)
      break;
    w->handle_bits[h] |= RELEASED_SEEN;
  }
  for (uint32_t j = 0; j < i; j++)
    w->handle_bits[w->released[(w->released_head + j) % w->handle_capacity]] &=
        (uint8_t)~RELEASED_SEEN;
  CHECK(in_range, "released %u: handle %u", i, h);
  CHECK(dead, "released %u: handle %u", i, h);
  CHECK(once, "released %u: handle %u", i, h);
  return true;
}

bool aoi__world_valid(aoi_world *w)
{
  AOI__ASSERT(aoi__lanes_idle(w));
  failure[0] = '\0';
  CHECK(aoi__idmap_valid(&w->ids), "world");
  uint64_t live = 0, watchers = 0, unborn = 0;
  for (uint32_t h = 0; h < w->handle_count; h++) {
    const aoi__host_entity *e = &w->host[h];
    if (!(e->flags & AOI__LIVE))
      continue;
    WALK(handle_valid(w, h));
    live++;
    watchers += (e->flags & AOI_WATCHER) != 0;
    unborn += e->born > w->tick;
  }
  CHECK(live == w->live, "world: %llu live handles", (unsigned long long)live);
  CHECK(watchers == w->watchers, "world: %llu live watchers",
        (unsigned long long)watchers);
  CHECK(live == w->ids.count, "world: %llu live handles",
        (unsigned long long)live);
  /* Membership bits are scratch for one watcher at a time: all clear. */
  for (unsigned i = 0; i < w->threads; i++)
    for (uint32_t j = 0; j < w->workers[i].member_count; j++)
      CHECK(w->workers[i].member[j] == 0, "worker %u, handle %u", i, j);
  uint64_t owned = 0;
  for (unsigned i = 0; i < w->shard_count; i++) {
    WALK(aoi__shard_valid(w, &w->shards[i]));
    owned += w->shards[i].count;
  }
  WALK(queues_valid(w));
  WALK(records_valid(w));
  WALK(released_valid(w));
  /* Entities added since the last tick are not in any shard yet. */
  CHECK(owned + unborn >= live, "world: %llu owned",
        (unsigned long long)owned);
  return true;
}

bool aoi__shard_valid(const aoi_world *w, const aoi__shard *s)
{
  failure[0] = '\0';
  unsigned n = s->index;
  CHECK(aoi__ring_valid(s->ops), "shard %u", n);
  /* an entity a line (aoi__reserve_lined) */
  CHECK((uintptr_t)s->entities % AOI__LINE == 0, "shard %u", n);
  for (uint32_t i = 0; i < s->count; i++) {
    const aoi__entity *e = &s->entities[i];
    uint32_t h = e->handle;
    const aoi__location *loc = &w->location[h];
    CHECK(loc->shard == s->index, "shard %u, slot %u, handle %u", n, i, h);
    CHECK(loc->slot == i, "shard %u, slot %u, handle %u", n, i, h);
    /* a marker's appeal is the world's, and its flag says whether it has
       one; any other entity has none there */
    float appeal = w->appeal[h];
    if (e->flags & AOI_MARKER)
      CHECK(((e->flags & AOI__ENTITY_APPEAL) != 0) == (appeal > 0),
            "shard %u, handle %u", n, h);
    else
      CHECK(appeal == 0, "shard %u, handle %u", n, h);
    CHECK(aoi__layout_shard(&w->layout, e->x, e->y) == s->index,
          "shard %u, handle %u", n, h);
    const aoi__mark *m = &w->mark[h];
    CHECK(m->x == e->x && m->y == e->y, "shard %u, handle %u", n, h);
    CHECK(m->layers == ((e->flags & AOI_MARKER) ? e->layers : 0),
          "shard %u, handle %u", n, h);
    CHECK((e->flags & AOI_WATCHER) || e->view.count == 0,
          "shard %u, handle %u", n, h);
    for (uint32_t j = 1; j < e->view.count; j++)
      CHECK(w->mark[e->view.handles[j - 1]].id <
                w->mark[e->view.handles[j]].id,
            "shard %u, handle %u, view entry %u", n, h, j);
  }
  CHECK(s->grid.width == 0 || aoi__grid_valid(&s->grid), "shard %u", n);
  return true;
}

/* A world of up to this many live entities is walked after every tick; a
   larger one after every CHECK_PERIOD-th, so that a checked build's large
   tests (the bench's verification runs, the soak) stay quick. */
#define CHECK_EVERY_TICK_UP_TO 20000u
#define CHECK_PERIOD 16u

void aoi__check_tick(aoi_world *w)
{
  if (w->live > CHECK_EVERY_TICK_UP_TO && w->tick % CHECK_PERIOD != 0)
    return;
  if (!aoi__world_valid(w)) {
    fprintf(stderr,
            "aoi: the world's invariants do not hold after tick %llu "
            "(AOI_CHECK_INVARIANTS): %s\n",
            (unsigned long long)w->tick, aoi__check_failure());
    abort();
  }
}
