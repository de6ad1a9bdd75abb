/*
 * test_misuse.c: what a host gets when it uses the API in ways it should
 * not, or in ways that stretch it: every call made while a tick is in
 * flight, ticks begun twice or ended without beginning, a world destroyed
 * mid-tick or with undrained events, queries of removed ids, outboxes never
 * drained for many ticks, far more threads than cores, and more shards than
 * the map can sensibly hold. Each must have its documented result, and the
 * events must be exactly those of a world used properly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aoi.h"
#include "support.h"

#define WM (AOI_WATCHER | AOI_MARKER)
#define ALL UINT32_MAX

typedef struct stream {
  uint64_t *words; /* watcher, id, kind, tick, x bits, y bits per event */
  size_t count, capacity;
} stream;

static void stream_push(stream *s, uint64_t v)
{
  if (s->count == s->capacity) {
    s->capacity = s->capacity ? s->capacity * 2 : 1024;
    s->words = realloc(s->words, sizeof(uint64_t) * s->capacity);
    assert_non_null(s->words);
  }
  s->words[s->count++] = v;
}

static void drain_into(aoi_world *w, stream *s)
{
  const uint64_t *ids;
  size_t n;
  assert_int_equal(aoi_pending(w, &ids, &n), 0);
  for (size_t i = 0; i < n; i++) {
    const aoi_event *e;
    size_t count;
    assert_int_equal(aoi_drain(w, ids[i], &e, &count), 0);
    for (size_t j = 0; j < count; j++) {
      uint32_t xb, yb;
      memcpy(&xb, &e[j].x, 4);
      memcpy(&yb, &e[j].y, 4);
      stream_push(s, ids[i]);
      stream_push(s, e[j].id);
      stream_push(s, ((uint64_t)e[j].kind << 32) | e[j].tick);
      stream_push(s, ((uint64_t)xb << 32) | yb);
    }
  }
}

static void expect_same(const stream *a, const stream *b)
{
  assert_int_equal(a->count, b->count);
  assert_memory_equal(a->words, b->words, sizeof(uint64_t) * a->count);
}

static aoi_world *make(unsigned threads, unsigned shards, float side)
{
  aoi_config c;
  aoi_config_default(&c);
  c.threads = threads;
  c.shards = shards;
  c.max_x = side;
  c.max_y = side;
  c.max_radius = 40;
  c.hysteresis = 2;
  aoi_world *w = NULL;
  assert_int_equal(aoi_create(&c, &w), 0);
  return w;
}

/* A crowd of 120 entities, walking and churning: the same calls for every
   world, step by step. */
static void crowd_step(aoi_world *w, int step, float side)
{
  uint64_t state = 0x2545f4914f6cdd1dull ^ (uint64_t)step * 0x9e3779b97f4a7c15ull;
  for (uint64_t id = 1; id <= 120; id++) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    float x = (float)(state % 1000) * side / 1000;
    float y = (float)((state >> 20) % 1000) * side / 1000;
    if (step == 0) {
      assert_int_equal(test_add(w, id, x, y, (float)(5 + id % 30),
                               id % 7 == 0 ? AOI_MARKER : WM, ALL, ALL), 0);
    } else if (id % 11 == (uint64_t)step % 11) {
      assert_int_equal(aoi_remove(w, id), 0);
      assert_int_equal(test_add(w, id, x, y, 10, WM, ALL, ALL), 0);
    } else if (id % 3 == (uint64_t)step % 3) {
      assert_int_equal(aoi_move(w, id, x, y), 0);
    }
  }
}

static void calls_in_flight_are_busy(void **state)
{
  (void)state;
  aoi_world *w = make(2, 5, 100), *ref = make(1, 1, 100);
  stream got = {0}, want = {0};
  for (int step = 0; step < 20; step++) {
    crowd_step(w, step, 100);
    crowd_step(ref, step, 100);
    assert_int_equal(aoi_tick_end(w), AOI_EINVAL); /* none in flight */
    assert_int_equal(aoi_tick_poll(w), AOI_EINVAL);
    aoi_ref one = 0, unwritten = 77;
    assert_int_equal(aoi_ref_of(w, 1, &one), 0);
    assert_int_equal(aoi_tick_begin(w), 0);
    /* Everything but poll, end and destroy is refused, and changes nothing. */
    const aoi_event *e = NULL;
    const uint64_t *ids = NULL;
    uint64_t buffer[4];
    size_t n = 77;
    aoi_stats st;
    assert_int_equal(aoi_tick_begin(w), AOI_EBUSY);
    assert_int_equal(aoi_tick(w), AOI_EBUSY);
    assert_int_equal(test_add(w, 5000, 1, 1, 1, WM, ALL, ALL), AOI_EBUSY);
    assert_int_equal(aoi_move(w, 1, 50, 50), AOI_EBUSY);
    assert_int_equal(aoi_move_ref(w, one, 50, 50), AOI_EBUSY);
    assert_int_equal(aoi_move_ref(w, 0, NAN, 50), AOI_EBUSY);
    aoi_move_op batch[] = {{1, 50, 50}, {99999, NAN, 0}};
    size_t done = 99;
    assert_int_equal(aoi_move_many(w, batch, 2, &done), AOI_EBUSY);
    assert_int_equal(done, 0);
    assert_int_equal(aoi_ref_of(w, 1, &unwritten), AOI_EBUSY);
    assert_int_equal(aoi_ref_of(w, 99999, &unwritten), AOI_EBUSY);
    assert_int_equal(aoi_set_radius(w, 1, 3), AOI_EBUSY);
    assert_int_equal(aoi_set_layers(w, 1, 0, 0), AOI_EBUSY);
    assert_int_equal(aoi_set_appeal(w, 1, 40), AOI_EBUSY);
    assert_int_equal(aoi_set_appeal(w, 99999, NAN), AOI_EBUSY);
    assert_int_equal(aoi_set_cap(w, 1, 1), AOI_EBUSY);
    assert_int_equal(aoi_set_cap(w, 99999, 1), AOI_EBUSY);
    assert_int_equal(aoi_remove(w, 2), AOI_EBUSY);
    assert_int_equal(aoi_drain(w, 1, &e, &n), AOI_EBUSY);
    assert_int_equal(aoi_pending(w, &ids, &n), AOI_EBUSY);
    assert_int_equal(aoi_view(w, 1, buffer, 4, &n), AOI_EBUSY);
    assert_int_equal(aoi_watchers_of(w, 1, buffer, 4, &n), AOI_EBUSY);
    assert_int_equal(aoi_query_circle(w, 0, 0, 10, ALL, buffer, 4, &n),
                     AOI_EBUSY);
    assert_int_equal(aoi_world_stats(w, &st), AOI_EBUSY);
    assert_null(e);
    assert_null(ids);
    assert_int_equal(n, 77);
    assert_true(unwritten == 77);
    /* The host's own logic runs meanwhile; poll until done. */
    int polled;
    while ((polled = aoi_tick_poll(w)) == 0)
      usleep(50);
    assert_int_equal(polled, 1);
    assert_int_equal(aoi_tick_end(w), 0);
    assert_int_equal(aoi_tick(ref), 0);
    drain_into(w, &got);
    drain_into(ref, &want);
  }
  expect_same(&got, &want);
  assert_true(got.count > 0);
  free(got.words);
  free(want.words);
  aoi_destroy(w);
  aoi_destroy(ref);
}

/* aoi_destroy waits for a tick in flight, and frees undrained events and
   queued operations (ASan's leak check holds it to that). */
static void destroy_mid_tick_and_undrained(void **state)
{
  (void)state;
  for (int mode = 0; mode < 3; mode++) {
    aoi_world *w = make(3, 7, 100);
    crowd_step(w, 0, 100);
    assert_int_equal(aoi_tick(w), 0);
    crowd_step(w, 1, 100);
    if (mode == 0)
      assert_int_equal(aoi_tick_begin(w), 0); /* destroyed in flight */
    else if (mode == 1)
      assert_int_equal(aoi_tick(w), 0); /* undrained events */
    /* mode 2: operations queued, never ticked */
    aoi_destroy(w);
  }
}

static void removed_ids(void **state)
{
  (void)state;
  aoi_world *w = make(2, 4, 100);
  assert_int_equal(test_add(w, 1, 10, 10, 20, WM, ALL, ALL), 0);
  assert_int_equal(test_add(w, 2, 12, 10, 20, WM, ALL, ALL), 0);
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(aoi_remove(w, 1), 0);
  const aoi_event *e;
  uint64_t ids[4];
  size_t n = 99;
  /* Removed: not live, even before the next tick applies it. */
  assert_int_equal(aoi_drain(w, 1, &e, &n), AOI_ENOENT);
  assert_int_equal(aoi_view(w, 1, ids, 4, &n), AOI_ENOENT);
  assert_int_equal(aoi_watchers_of(w, 1, ids, 4, &n), AOI_ENOENT);
  assert_int_equal(aoi_move(w, 1, 0, 0), AOI_ENOENT);
  assert_int_equal(aoi_remove(w, 1), AOI_ENOENT);
  assert_int_equal(n, 99);
  /* 2 still sees 1 in the last tick's state; the next tick says leave. */
  assert_int_equal(aoi_view(w, 2, ids, 4, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(ids[0], 1);
  assert_int_equal(aoi_drain(w, 2, &e, &n), 0); /* tick 1: enter 1 */
  assert_int_equal(n, 1);
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(aoi_drain(w, 2, &e, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(e[0].kind, AOI_LEAVE);
  assert_int_equal(e[0].id, 1);
  assert_int_equal(aoi_view(w, 2, ids, 4, &n), 0);
  assert_int_equal(n, 0);
  aoi_destroy(w);
}

/* An outbox never drained keeps every event, in order, with its tick: after
   200 ticks each watcher's outbox holds exactly what a host that drained
   every tick received, tick after tick. */
static void never_drained(void **state)
{
  (void)state;
  aoi_world *lazy = make(2, 3, 100), *eager = make(2, 3, 100);
  stream got = {0}, want = {0};
  for (int step = 0; step < 200; step++) {
    for (uint64_t id = 1; id <= 60; id++) {
      float x = (float)((id * 37 + (uint64_t)step * 13) % 100);
      float y = (float)((id * 61 + (uint64_t)step * 7) % 100);
      if (step == 0) {
        assert_int_equal(test_add(lazy, id, x, y, 25, WM, ALL, ALL), 0);
        assert_int_equal(test_add(eager, id, x, y, 25, WM, ALL, ALL), 0);
      } else {
        assert_int_equal(aoi_move(lazy, id, x, y), 0);
        assert_int_equal(aoi_move(eager, id, x, y), 0);
      }
    }
    assert_int_equal(aoi_tick(lazy), 0);
    assert_int_equal(aoi_tick(eager), 0);
    drain_into(eager, &want);
  }
  drain_into(lazy, &got);
  /* The eager stream is ordered by tick then watcher, the lazy one by
     watcher then tick: compare watcher by watcher. */
  assert_int_equal(got.count, want.count);
  size_t at = 0;
  for (uint64_t watcher = 1; watcher <= 60; watcher++)
    for (size_t i = 0; i < want.count; i += 4)
      if (want.words[i] == watcher) {
        assert_memory_equal(&got.words[at], &want.words[i],
                            4 * sizeof(uint64_t));
        at += 4;
      }
  assert_int_equal(at, got.count);
  assert_true(got.count > 0);
  free(got.words);
  free(want.words);
  aoi_destroy(lazy);
  aoi_destroy(eager);
}

/* Many more threads than cores, and more shards than a small map can
   sensibly hold: slower, but the same events. */
static void oversubscribed_and_overcut(void **state)
{
  (void)state;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned threads = (unsigned)(cores > 0 ? cores : 1) * 8;
  if (threads > 64)
    threads = 64;
  aoi_world *ref = make(1, 1, 10);
  aoi_world *many = make(threads, threads, 10);
  aoi_world *cut = make(2, 4096, 10);
  stream a = {0}, b = {0}, c = {0};
  for (int step = 0; step < 8; step++) {
    crowd_step(ref, step, 10);
    crowd_step(many, step, 10);
    crowd_step(cut, step, 10);
    assert_int_equal(aoi_tick(ref), 0);
    assert_int_equal(aoi_tick(many), 0);
    assert_int_equal(aoi_tick(cut), 0);
    drain_into(ref, &a);
    drain_into(many, &b);
    drain_into(cut, &c);
  }
  aoi_stats st;
  assert_int_equal(aoi_world_stats(cut, &st), 0);
  assert_int_equal(st.shards, 4096);
  assert_int_equal(aoi_world_stats(many, &st), 0);
  assert_int_equal(st.threads, threads);
  expect_same(&b, &a);
  expect_same(&c, &a);
  assert_true(a.count > 0);
  free(a.words);
  free(b.words);
  free(c.words);
  aoi_destroy(ref);
  aoi_destroy(many);
  aoi_destroy(cut);
}

/* An allocator that refuses every request while `refusing` is set. */
static _Atomic int refusing;
static void *r_alloc(void *u, size_t n)
{
  (void)u;
  return refusing ? NULL : malloc(n);
}
static void *r_realloc(void *u, void *p, size_t o, size_t n)
{
  (void)u;
  (void)o;
  return refusing ? NULL : realloc(p, n);
}
static void r_free(void *u, void *p, size_t n)
{
  (void)u;
  (void)n;
  free(p);
}

/* aoi.h: of an entity's operations between two ticks only the first, and
   the first that is neither a move nor a removal, may need memory. With
   the allocator refusing everything, each entity's later operations
   succeed; the first set_* fails for some (the queue's room for them was
   given back after the adds), and once retried with memory, the rest
   succeed without. */
static void ops_after_the_first_need_no_memory(void **state)
{
  (void)state;
  aoi_allocator refuser = {r_alloc, r_realloc, r_free, NULL};
  aoi_config config;
  aoi_config_default(&config);
  config.threads = 2;
  config.shards = 3;
  config.allocator = &refuser;
  aoi_world *w;
  refusing = 0;
  assert_int_equal(aoi_create(&config, &w), 0);
  enum { N = 600 };
  for (uint64_t id = 1; id <= N; id++)
    assert_int_equal(test_add(w, id, (float)(id % 50) * 20,
                             (float)(id / 50) * 20, 30,
                             AOI_WATCHER | AOI_MARKER, ~0u, ~0u),
                     0);
  for (int t = 0; t < 13; t++) /* past a shrink of the queues' room */
    assert_int_equal(aoi_tick(w), 0);
  unsigned refused = 0;
  for (uint64_t id = 1; id <= N; id++) {
    float x = (float)(id % 50) * 20 + 1, y = (float)(id / 50) * 20;
    int rc = aoi_move(w, id, x, y);
    if (rc == AOI_ENOMEM) { /* the first: may need memory */
      refusing = 0;
      rc = aoi_move(w, id, x, y);
    }
    assert_int_equal(rc, 0);
    refusing = 1;
    assert_int_equal(aoi_move(w, id, x + 1, y), 0);
    rc = aoi_set_radius(w, id, 40);
    if (rc == AOI_ENOMEM) { /* the first set_*: may need memory */
      refused++;
      refusing = 0;
      rc = aoi_set_radius(w, id, 40);
      refusing = 1;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(aoi_set_layers(w, id, ~0u, ~0u), 0);
    assert_int_equal(aoi_set_appeal(w, id, 0), 0);
    assert_int_equal(aoi_set_cap(w, id, 0), 0);
    assert_int_equal(aoi_move(w, id, x + 2, y), 0);
    if (id % 5 == 0)
      assert_int_equal(aoi_remove(w, id), 0);
  }
  assert_true(refused > 0);
  refusing = 0;
  assert_int_equal(aoi_tick(w), 0);
  aoi_destroy(w);
}

/* ---- delivery: re-entrant calls and two threads on one segment --------- */

/* What the re-entrant callback saw: each call it made, by the line of its
   first result other than AOI_EBUSY (0: none), and whether any out-
   parameter was written. */
typedef struct reentry {
  aoi_world *world;
  aoi_ref ref;
  int wrong_line;
  bool wrote;
  stream *got;
} reentry;

static void deliver_noop(void *user, uint64_t watcher, uint64_t tag,
                         const aoi_event *events, size_t count)
{
  (void)user, (void)watcher, (void)tag, (void)events, (void)count;
}

static void deliver_slots_noop(void *user, const aoi_slot_events *events)
{
  (void)user, (void)events;
}

#define REENTER(r, call)                                                      \
  do {                                                                        \
    if ((call) != AOI_EBUSY && (r)->wrong_line == 0)                          \
      (r)->wrong_line = __LINE__;                                             \
  } while (0)

/* Calls every function on its own world from inside the callback; each
   must be refused, change nothing and write nothing. */
static void deliver_reentering(void *user, uint64_t watcher, uint64_t tag,
                               const aoi_event *events, size_t count)
{
  reentry *r = user;
  aoi_world *w = r->world;
  uint64_t ids[4] = {0};
  size_t n = 77, done = 77;
  const aoi_event *e = NULL;
  const uint64_t *pending = NULL;
  aoi_ref ref = 77;
  aoi_stats st = {0};
  aoi_shard_info info = {0};
  aoi_move_op op = {1, 5, 5};
  REENTER(r, aoi_tick(w));
  REENTER(r, aoi_tick_begin(w));
  REENTER(r, aoi_tick_poll(w));
  REENTER(r, aoi_tick_end(w));
  REENTER(r, aoi_destroy(w));
  REENTER(r, test_add(w, 9999, 1, 1, 1, WM, ALL, ALL));
  REENTER(r, aoi_move(w, 1, 5, 5));
  REENTER(r, aoi_move_many(w, &op, 1, &done));
  REENTER(r, aoi_move_ref(w, r->ref, 5, 5));
  REENTER(r, aoi_ref_of(w, 1, &ref));
  REENTER(r, aoi_set_radius(w, 1, 3));
  REENTER(r, aoi_set_layers(w, 1, 1, 1));
  REENTER(r, aoi_set_appeal(w, 1, 3));
  REENTER(r, aoi_set_cap(w, 1, 3));
  REENTER(r, aoi_set_tag(w, 1, 3));
  REENTER(r, aoi_remove(w, 1));
  REENTER(r, aoi_drain(w, watcher, &e, &n));
  REENTER(r, aoi_pending(w, &pending, &n));
  REENTER(r, aoi_deliver(w, 0, deliver_noop, NULL));
  REENTER(r, aoi_deliver(w, 1, deliver_noop, NULL));
  REENTER(r, aoi_deliver_slots(w, 0, deliver_slots_noop, deliver_noop, NULL));
  REENTER(r, aoi_query_circle(w, 50, 50, 10, ALL, ids, 4, &n));
  REENTER(r, aoi_view(w, watcher, ids, 4, &n));
  REENTER(r, aoi_watchers_of(w, watcher, ids, 4, &n));
  REENTER(r, aoi_world_stats(w, &st));
  REENTER(r, aoi_shard(w, 0, &info));
  REENTER(r, aoi_shard_ghosts(w, 0, ids, 4, &n));
  if (n != 77 || done != 0 || e != NULL || pending != NULL || ref != 77 ||
      st.tick != 0 || info.worker != 0 || ids[0] != 0)
    r->wrote = true;
  (void)tag;
  for (size_t j = 0; j < count; j++) {
    uint32_t xb, yb;
    memcpy(&xb, &events[j].x, 4);
    memcpy(&yb, &events[j].y, 4);
    stream_push(r->got, watcher);
    stream_push(r->got, events[j].id);
    stream_push(r->got, ((uint64_t)events[j].kind << 32) | events[j].tick);
    stream_push(r->got, ((uint64_t)xb << 32) | yb);
  }
}

/* The events of every watcher, in id order, from a stream of deliveries
   (which come in worker order): sorted by watcher, each watcher's events
   kept in their order. */
static void sort_by_watcher(stream *s)
{
  size_t n = s->count / 4;
  uint64_t *sorted = malloc(sizeof(uint64_t) * s->count + 1);
  assert_non_null(sorted);
  size_t at = 0;
  uint64_t last = 0;
  for (;;) {
    uint64_t next = UINT64_MAX;
    bool any = false;
    for (size_t i = 0; i < n; i++)
      if ((at == 0 || s->words[4 * i] > last) && s->words[4 * i] <= next) {
        next = s->words[4 * i];
        any = true;
      }
    if (!any)
      break;
    for (size_t i = 0; i < n; i++)
      if (s->words[4 * i] == next) {
        memcpy(&sorted[at], &s->words[4 * i], 4 * sizeof(uint64_t));
        at += 4;
      }
    last = next;
  }
  assert_int_equal(at, s->count);
  memcpy(s->words, sorted, sizeof(uint64_t) * s->count);
  free(sorted);
}

/* A delivery callback that calls back into its world is refused with
   AOI_EBUSY by every call, nothing changes, and the events delivered are
   exactly those of a world delivered without it. */
static void calls_from_a_callback_are_busy(void **state)
{
  (void)state;
  aoi_world *w = make(2, 5, 100), *ref = make(1, 1, 100);
  stream got = {0}, want = {0};
  reentry r = {w, 0, 0, false, &got};
  for (int step = 0; step < 12; step++) {
    crowd_step(w, step, 100);
    crowd_step(ref, step, 100);
    assert_int_equal(aoi_tick(w), 0);
    assert_int_equal(aoi_tick(ref), 0);
    assert_int_equal(aoi_ref_of(w, 2, &r.ref), 0);
    size_t before = got.count;
    for (unsigned g = 0; g < aoi_delivery_segments(w); g++)
      assert_int_equal(aoi_deliver(w, g, deliver_reentering, &r), 0);
    stream step_got = {got.words + before, got.count - before, 0};
    sort_by_watcher(&step_got);
    drain_into(ref, &want);
    if (r.wrong_line != 0)
      fail_msg("a call from the callback was not refused: line %d",
               r.wrong_line);
    assert_false(r.wrote);
  }
  expect_same(&got, &want);
  assert_int_equal(aoi_destroy(w), 0);
  assert_int_equal(aoi_destroy(ref), 0);
  free(got.words);
  free(want.words);
}

/* Two threads on one segment: the first delivers; the second, arriving
   while the first is inside its callback, is refused with AOI_EBUSY, and
   so is every other call but the delivery of another segment. Each
   watcher is delivered exactly once. */
typedef struct holder {
  aoi_world *world;
  atomic_int inside, release;
  atomic_int calls; /* callbacks made, on every thread */
  atomic_int watchers[200];
} holder;

static void deliver_holding(void *user, uint64_t watcher, uint64_t tag,
                            const aoi_event *events, size_t count)
{
  holder *h = user;
  (void)tag, (void)events, (void)count;
  if (watcher < 200)
    atomic_fetch_add(&h->watchers[watcher], 1);
  if (atomic_fetch_add(&h->calls, 1) == 0) {
    atomic_store(&h->inside, 1);
    while (atomic_load(&h->release) == 0)
      sched_yield();
  }
}

static void *deliver_segment_0(void *arg)
{
  holder *h = arg;
  intptr_t rc = aoi_deliver(h->world, 0, deliver_holding, h);
  return (void *)rc;
}

static void one_segment_two_threads(void **state)
{
  (void)state;
  aoi_world *w = make(2, 4, 100);
  for (int step = 0; step < 4; step++) {
    crowd_step(w, step, 100);
    assert_int_equal(aoi_tick(w), 0);
    holder *h = calloc(1, sizeof(*h));
    assert_non_null(h);
    h->world = w;
    const uint64_t *ids;
    size_t pending;
    assert_int_equal(aoi_pending(w, &ids, &pending), 0);
    assert_true(pending > 0);
    pthread_t first;
    assert_int_equal(pthread_create(&first, NULL, deliver_segment_0, h), 0);
    /* segment 0 may have no watcher this tick: then it returns at once */
    while (atomic_load(&h->inside) == 0 && atomic_load(&h->calls) == 0)
      sched_yield();
    if (atomic_load(&h->inside)) {
      assert_int_equal(aoi_deliver(w, 0, deliver_holding, h), AOI_EBUSY);
      assert_int_equal(aoi_move(w, 1, 3, 3), AOI_EBUSY);
      assert_int_equal(aoi_tick(w), AOI_EBUSY);
      assert_int_equal(aoi_destroy(w), AOI_EBUSY);
      /* another segment may be delivered at the same time */
      assert_int_equal(aoi_deliver(w, 1, deliver_holding, h), 0);
    }
    atomic_store(&h->release, 1);
    void *rc;
    assert_int_equal(pthread_join(first, &rc), 0);
    assert_int_equal((intptr_t)rc, 0);
    assert_int_equal(aoi_deliver(w, 1, deliver_holding, h), 0);
    /* every pending watcher exactly once */
    for (size_t i = 0; i < pending; i++)
      assert_int_equal(atomic_load(&h->watchers[ids[i]]), 1);
    assert_int_equal(atomic_load(&h->calls), (int)pending);
    free(h);
  }
  assert_int_equal(aoi_destroy(w), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(calls_in_flight_are_busy),
      cmocka_unit_test(destroy_mid_tick_and_undrained),
      cmocka_unit_test(removed_ids),
      cmocka_unit_test(never_drained),
      cmocka_unit_test(oversubscribed_and_overcut),
      cmocka_unit_test(ops_after_the_first_need_no_memory),
      cmocka_unit_test(calls_from_a_callback_are_busy),
      cmocka_unit_test(one_segment_two_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
