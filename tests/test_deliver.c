/*
 * test_deliver.c: parallel delivery (aoi_deliver) against the simple path
 * (aoi_pending + aoi_drain). Two worlds get the same operations; one is
 * delivered by as many host threads as it has segments, all at once, the
 * other drained by id. Every watcher must receive the same events in the
 * same order, whatever the mix: watchers drained by id before the parallel
 * delivery, ticks nobody delivers (the events wait in the outboxes), and
 * watchers removed with events undelivered. Labelled `threaded`, so the
 * ThreadSanitizer build runs it: the delivery threads share the world.
 * Also: a watcher with more than 1023 events of one kind in a tick (its
 * record takes the long header) gets each of them, delivered or drained
 * from its outbox after a tick nobody delivered. The same runs deliver
 * through aoi_deliver_slots too, each watcher's slots expanded here as
 * aoi_deliver would (the backlogs of the skipped ticks through its
 * backlog callback).
 *
 * Only the main thread calls cmocka's asserts; delivery threads record.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aoi.h"
#include "support.h"

#define ENTITIES 300u
#define TICKS 40u
#define ALL UINT32_MAX
#define WM (AOI_WATCHER | AOI_MARKER)

/* Per watcher, every event received so far, in order. */
typedef struct inbox {
  aoi_event *events;
  size_t count, capacity;
} inbox;

static void inbox_push(inbox *in, const aoi_event *events, size_t count)
{
  if (count == 0)
    return;
  if (in->count + count > in->capacity) {
    in->capacity = (in->count + count) * 2 + 16;
    in->events = realloc(in->events, in->capacity * sizeof(aoi_event));
    if (in->events == NULL)
      abort();
  }
  memcpy(in->events + in->count, events, count * sizeof(aoi_event));
  in->count += count;
}

typedef struct side {
  aoi_world *world;
  inbox inboxes[ENTITIES];
  bool twice[ENTITIES]; /* a watcher delivered twice in one round */
  bool delivered[ENTITIES];
  bool slots; /* delivered through aoi_deliver_slots */
} side;

/* Whether the watcher and every event carry their entity's tag. */
static bool tags_right(uint64_t watcher, uint64_t tag, const aoi_event *events,
                       size_t count)
{
  if (tag != test_tag(watcher))
    return false;
  for (size_t i = 0; i < count; i++)
    if (events[i].tag != test_tag(events[i].id))
      return false;
  return true;
}

static void take(void *user, uint64_t watcher, uint64_t tag,
                 const aoi_event *events, size_t count)
{
  side *s = user;
  if (watcher >= ENTITIES || count == 0 ||
      !tags_right(watcher, tag, events, count)) {
    s->twice[0] = true; /* reported on the main thread */
    return;
  }
  if (s->delivered[watcher])
    s->twice[watcher] = true;
  s->delivered[watcher] = true;
  inbox_push(&s->inboxes[watcher], events, count);
}

/* aoi_deliver_slots's callback: the slots expanded as aoi_deliver does. */
static void take_slots(void *user, const aoi_slot_events *e)
{
  aoi_event events[3 * ENTITIES];
  uint32_t n = e->leaves + e->enters + e->moves;
  if (n > 3 * ENTITIES || n == 0) {
    ((side *)user)->twice[0] = true; /* reported on the main thread */
    return;
  }
  take(user, e->watcher, e->watcher_tag, events,
       slot_events_expand(e, events));
}

typedef struct job {
  side *s;
  unsigned segment;
  int rc;
} job;

static void *deliver_thread(void *arg)
{
  job *j = arg;
  j->rc = j->s->slots
              ? aoi_deliver_slots(j->s->world, j->segment, take_slots, take,
                                  j->s)
              : aoi_deliver(j->s->world, j->segment, take, j->s);
  return NULL;
}

/* Every segment on its own thread at once. The inboxes are per watcher and
   each watcher belongs to one segment, so the threads never share one. */
static void deliver_all(side *s)
{
  unsigned n = aoi_delivery_segments(s->world);
  assert_true(n >= 1);
  memset(s->delivered, 0, sizeof(s->delivered));
  pthread_t threads[16];
  job jobs[16];
  assert_true(n <= 16);
  for (unsigned i = 0; i < n; i++) {
    jobs[i] = (job){s, i, -1};
    assert_int_equal(pthread_create(&threads[i], NULL, deliver_thread,
                                     &jobs[i]),
                     0);
  }
  for (unsigned i = 0; i < n; i++) {
    pthread_join(threads[i], NULL);
    assert_int_equal(jobs[i].rc, 0);
  }
  for (unsigned i = 0; i < ENTITIES; i++)
    assert_false(s->twice[i]);
}

static void drain_all(side *s)
{
  const uint64_t *ids;
  size_t n;
  assert_int_equal(aoi_pending(s->world, &ids, &n), 0);
  for (size_t i = 0; i < n; i++) {
    const aoi_event *events;
    size_t count;
    assert_true(ids[i] < ENTITIES);
    assert_int_equal(aoi_drain(s->world, ids[i], &events, &count), 0);
    assert_true(count > 0);
    inbox_push(&s->inboxes[ids[i]], events, count);
  }
}

static void drain_one(side *s, uint64_t id)
{
  const aoi_event *events;
  size_t count;
  int rc = aoi_drain(s->world, id, &events, &count);
  if (rc == AOI_ENOENT)
    return;
  assert_int_equal(rc, 0);
  inbox_push(&s->inboxes[id], events, count);
}

static uint64_t next(uint64_t *state)
{
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void test_parallel_equals_drain(unsigned threads, unsigned shards,
                                       uint64_t seed, bool slots)
{
  side *a = calloc(1, sizeof(side)), *b = calloc(1, sizeof(side));
  assert_non_null(a);
  assert_non_null(b);
  a->slots = slots;
  aoi_config config;
  aoi_config_default(&config);
  config.threads = threads;
  config.shards = shards;
  config.max_radius = 100;
  config.hysteresis = 2;
  config.min_x = config.min_y = 0;
  config.max_x = config.max_y = 200;
  assert_int_equal(aoi_create(&config, &a->world), 0);
  assert_int_equal(aoi_create(&config, &b->world), 0);
  side *both[2] = {a, b};
  float x[ENTITIES], y[ENTITIES];
  bool live[ENTITIES];
  uint64_t rng = seed;
  for (unsigned i = 0; i < ENTITIES; i++) {
    x[i] = (float)(next(&rng) % 200);
    y[i] = (float)(next(&rng) % 200);
    live[i] = true;
    unsigned flags = i % 5 == 0 ? AOI_MARKER : WM;
    for (int k = 0; k < 2; k++)
      assert_int_equal(test_add(both[k]->world, i, x[i], y[i],
                               (float)(10 + i % 30), flags, ALL, ALL),
                       0);
  }
  for (unsigned t = 1; t <= TICKS; t++) {
    for (unsigned i = 0; i < ENTITIES; i++) {
      uint64_t r = next(&rng);
      if (!live[i]) {
        if (r % 4 == 0) {
          live[i] = true;
          for (int k = 0; k < 2; k++)
            assert_int_equal(test_add(both[k]->world, i, x[i], y[i], 20, WM,
                                     ALL, ALL),
                             0);
        }
        continue;
      }
      if (r % 97 == 0) { /* removed, maybe with events undelivered */
        live[i] = false;
        for (int k = 0; k < 2; k++) {
          assert_int_equal(aoi_remove(both[k]->world, i), 0);
          both[k]->inboxes[i].count = 0; /* compare the next incarnation */
        }
        continue;
      }
      if (r % 3 != 0) {
        x[i] += (float)((int)(r >> 8) % 7 - 3);
        y[i] += (float)((int)(r >> 16) % 7 - 3);
        for (int k = 0; k < 2; k++)
          assert_int_equal(aoi_move(both[k]->world, i, x[i], y[i]), 0);
      }
    }
    for (int k = 0; k < 2; k++)
      assert_int_equal(aoi_tick(both[k]->world), 0);
    /* Now and then a few are removed between the tick and its delivery:
       their records die with them (a path only such a removal takes),
       and the events that name them as markers stay. */
    if (t % 6 == 2)
      for (unsigned i = t % 11; i < ENTITIES; i += 37) {
        if (!live[i])
          continue;
        live[i] = false;
        for (int k = 0; k < 2; k++) {
          assert_int_equal(aoi_remove(both[k]->world, i), 0);
          both[k]->inboxes[i].count = 0;
        }
      }
    /* Side b takes every tick's events by id. Side a skips every fifth
       tick, drains a few watchers by id first on some, and delivers the
       rest in parallel. */
    drain_all(b);
    if (t % 5 == 3)
      continue;
    if (t % 4 == 1)
      for (uint64_t id = 0; id < ENTITIES; id += 7)
        drain_one(a, id);
    deliver_all(a);
    /* nothing is left to drain by id either (a lookup after delivery
       finds every record taken) */
    for (uint64_t id = t % 3; t % 2 == 0 && id < ENTITIES; id += 5) {
      const aoi_event *events;
      size_t count;
      int rc = aoi_drain(a->world, id, &events, &count);
      assert_true(rc == 0 || rc == AOI_ENOENT);
      if (rc == 0 && count != 0)
        fail_msg("tick %u: watcher %llu drained %zu events after delivery",
                 t, (unsigned long long)id, count);
    }
    const uint64_t *ids;
    size_t n;
    assert_int_equal(aoi_pending(a->world, &ids, &n), 0);
    assert_int_equal(n, 0); /* delivery left nothing behind */
  }
  /* Whatever is still pending on a (nothing, unless the last tick was
     skipped) goes out too, then both sides must agree, watcher by
     watcher, event by event. */
  deliver_all(a);
  for (unsigned i = 0; i < ENTITIES; i++) {
    const inbox *p = &a->inboxes[i], *q = &b->inboxes[i];
    if (p->count != q->count)
      fail_msg("watcher %u: %zu events delivered, %zu drained", i, p->count,
               q->count);
    for (size_t j = 0; j < p->count; j++) {
      const aoi_event *e = &p->events[j], *f = &q->events[j];
      if (memcmp(e, f, sizeof(*e)) != 0)
        fail_msg("watcher %u, event %zu: delivered %u %llu, drained %u %llu",
                 i, j, e->kind, (unsigned long long)e->id, f->kind,
                 (unsigned long long)f->id);
    }
  }
  for (int k = 0; k < 2; k++) {
    aoi_destroy(both[k]->world);
    for (unsigned i = 0; i < ENTITIES; i++)
      free(both[k]->inboxes[i].events);
    free(both[k]);
  }
}

static void test_one_thread(void **state)
{
  (void)state;
  for (int slots = 0; slots < 2; slots++) {
    test_parallel_equals_drain(1, 1, 1, slots);
    test_parallel_equals_drain(1, 4, 2, slots);
  }
}

static void test_many_threads(void **state)
{
  (void)state;
  for (int slots = 0; slots < 2; slots++) {
    test_parallel_equals_drain(2, 2, 3, slots);
    test_parallel_equals_drain(3, 7, 4, slots);
    test_parallel_equals_drain(4, 16, 5, slots);
  }
}

/* What watcher 0 got: its events, by kind, each marker once. */
#define CROWD 1500u
typedef struct tally {
  unsigned kinds[4];
  unsigned seen[CROWD + 1];
  bool other; /* an event for another watcher, or a stray id */
} tally;

static void count_events(tally *t, const aoi_event *events, size_t count)
{
  for (size_t i = 0; i < count; i++) {
    const aoi_event *e = &events[i];
    if (e->id == 0 || e->id > CROWD || e->kind > 3) {
      t->other = true;
      continue;
    }
    t->kinds[e->kind]++;
    t->seen[e->id]++;
  }
}

static void take_tally(void *user, uint64_t watcher, uint64_t tag,
                       const aoi_event *events, size_t count)
{
  tally *t = user;
  if (watcher != 0 || !tags_right(watcher, tag, events, count)) {
    t->other = true;
    return;
  }
  count_events(t, events, count);
}

/* Every segment delivered from this thread, then the tally checked: `n`
   events of `kind` for markers first .. last, each once. */
static void expect_delivered(aoi_world *w, unsigned kind, unsigned first,
                             unsigned last)
{
  tally *t = calloc(1, sizeof(tally));
  assert_non_null(t);
  for (unsigned g = 0; g < aoi_delivery_segments(w); g++)
    assert_int_equal(aoi_deliver(w, g, take_tally, t), 0);
  assert_false(t->other);
  for (unsigned k = 0; k < 4; k++)
    assert_int_equal(t->kinds[k], k == kind ? last - first + 1 : 0);
  for (unsigned id = 1; id <= CROWD; id++)
    assert_int_equal(t->seen[id], id >= first && id <= last ? 1 : 0);
  free(t);
}

static void test_long_records(void **state)
{
  (void)state;
  aoi_config config;
  aoi_config_default(&config);
  config.threads = 2;
  config.shards = 2;
  config.max_radius = 100;
  config.min_x = config.min_y = 0;
  config.max_x = config.max_y = 1000;
  aoi_world *w;
  assert_int_equal(aoi_create(&config, &w), 0);
  assert_int_equal(test_add(w, 0, 500, 500, 100, AOI_WATCHER, ALL, ALL), 0);
  for (unsigned i = 1; i <= CROWD; i++)
    assert_int_equal(test_add(w, i, 480 + (float)(i % 40),
                             480 + (float)(i / 40), 0, AOI_MARKER, ALL, ALL),
                     0);
  /* 1500 enters (the view record), 1500 moves, 1100 leaves */
  assert_int_equal(aoi_tick(w), 0);
  expect_delivered(w, AOI_ENTER, 1, CROWD);
  for (unsigned i = 1; i <= CROWD; i++)
    assert_int_equal(aoi_move(w, i, 481 + (float)(i % 40),
                              480 + (float)(i / 40)),
                     0);
  assert_int_equal(aoi_tick(w), 0);
  expect_delivered(w, AOI_MOVE, 1, CROWD);
  for (unsigned i = 1; i <= 1100; i++)
    assert_int_equal(aoi_move(w, i, 900, 900), 0);
  assert_int_equal(aoi_tick(w), 0);
  expect_delivered(w, AOI_LEAVE, 1, 1100);
  /* 1100 enters and 400 moves in one record, and 400 moves in the next:
     the first goes to the outbox undelivered, then both are drained */
  for (unsigned i = 1; i <= CROWD; i++)
    assert_int_equal(aoi_move(w, i, 482 + (float)(i % 40),
                              480 + (float)(i / 40)),
                     0);
  assert_int_equal(aoi_tick(w), 0);
  for (unsigned i = 1101; i <= CROWD; i++)
    assert_int_equal(aoi_move(w, i, 483 + (float)(i % 40),
                              480 + (float)(i / 40)),
                     0);
  assert_int_equal(aoi_tick(w), 0);
  const aoi_event *events;
  size_t count;
  assert_int_equal(aoi_drain(w, 0, &events, &count), 0);
  tally *t = calloc(1, sizeof(tally));
  assert_non_null(t);
  count_events(t, events, count);
  assert_false(t->other);
  assert_int_equal(t->kinds[AOI_ENTER], 1100);
  assert_int_equal(t->kinds[AOI_MOVE], 800);
  assert_int_equal(t->kinds[AOI_LEAVE], 0);
  for (unsigned id = 1; id <= CROWD; id++)
    assert_int_equal(t->seen[id], id <= 1100 ? 1 : 2);
  /* the first tick's events come first */
  for (size_t i = 0; i < count; i++)
    assert_int_equal(events[i].tick, i < 1500 ? 4 : 5);
  free(t);
  aoi_destroy(w);
}

static void test_arguments(void **state)
{
  (void)state;
  aoi_config config;
  aoi_config_default(&config);
  config.threads = 2;
  aoi_world *w;
  assert_int_equal(aoi_create(&config, &w), 0);
  assert_int_equal(aoi_delivery_segments(w), 2);
  assert_int_equal(aoi_delivery_segments(NULL), 0);
  assert_int_equal(aoi_deliver(NULL, 0, take, NULL), AOI_EINVAL);
  assert_int_equal(aoi_deliver(w, 0, NULL, NULL), AOI_EINVAL);
  assert_int_equal(aoi_deliver(w, 2, take, NULL), AOI_EINVAL);
  assert_int_equal(aoi_deliver(w, 1, take, NULL), 0); /* nothing yet */
  assert_int_equal(aoi_deliver_slots(NULL, 0, take_slots, take, NULL),
                   AOI_EINVAL);
  assert_int_equal(aoi_deliver_slots(w, 0, NULL, take, NULL), AOI_EINVAL);
  assert_int_equal(aoi_deliver_slots(w, 0, take_slots, NULL, NULL),
                   AOI_EINVAL);
  assert_int_equal(aoi_deliver_slots(w, 2, take_slots, take, NULL),
                   AOI_EINVAL);
  assert_int_equal(aoi_deliver_slots(w, 1, take_slots, take, NULL), 0);
  assert_int_equal(aoi_tick_begin(w), 0);
  assert_int_equal(aoi_deliver(w, 0, take, NULL), AOI_EBUSY);
  assert_int_equal(aoi_deliver_slots(w, 0, take_slots, take, NULL),
                   AOI_EBUSY);
  assert_int_equal(aoi_tick_end(w), 0);
  aoi_destroy(w);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_one_thread),
      cmocka_unit_test(test_many_threads),
      cmocka_unit_test(test_long_records),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
