/*
 * test_ring.c: the ring wrapper, whichever ring the build selected (ck_ring,
 * or the C11 one under TSan): FIFO order, full and empty, growth keeping the
 * items, and a two-thread run in which the consumer must see every item in
 * order along with the data written before each push.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <cmocka.h>

#include "internal.h"
#include "support.h"

static const aoi_allocator A = {plain_alloc, plain_realloc, plain_free, NULL};

static void fifo_full_empty_grow(void **state)
{
  (void)state;
  aoi__ring *r = aoi__ring_create(&A, 5);
  assert_non_null(r);
  unsigned capacity = aoi__ring_capacity(r);
  assert_true(capacity >= 5);
  assert_null(aoi__ring_pop(r));
  uintptr_t v;
  for (v = 1; v <= capacity; v++)
    assert_int_equal(aoi__ring_push(r, (void *)v), 0);
  assert_int_equal(aoi__ring_push(r, (void *)v), -1);
  assert_int_equal(aoi__ring_count(r), capacity);
  assert_true(aoi__ring_valid(r));
  assert_int_equal(aoi__ring_grow(&A, &r), 0);
  assert_true(aoi__ring_capacity(r) > capacity);
  assert_int_equal(aoi__ring_push(r, (void *)v), 0);
  for (uintptr_t want = 1; want <= v; want++)
    assert_ptr_equal(aoi__ring_pop(r), (void *)want);
  assert_null(aoi__ring_pop(r));
  assert_true(aoi__ring_valid(r));
  aoi__ring_destroy(&A, r);
}

enum { ITEMS = 200000 };

typedef struct message {
  uint64_t sequence;
  uint64_t payload;
} message;

typedef struct pair {
  aoi__ring *ring;
  aoi__bell bell;
  message *messages;
  uint64_t first_error; /* recorded by the consumer, asserted by main */
} pair;

static void *consume(void *arg)
{
  pair *p = arg;
  for (uint64_t want = 0; want < ITEMS;) {
    uint32_t seen = aoi__bell_read(&p->bell);
    message *m = aoi__ring_pop(p->ring);
    if (m == NULL) {
      aoi__bell_wait(&p->bell, seen);
      continue;
    }
    if (p->first_error == 0 &&
        (m->sequence != want || m->payload != want * 2654435761u))
      p->first_error = want + 1;
    want++;
  }
  return NULL;
}

static void two_threads(void **state)
{
  (void)state;
  pair p = {0};
  p.ring = aoi__ring_create(&A, 60);
  assert_non_null(p.ring);
  assert_int_equal(aoi__bell_init(&p.bell), 0);
  p.messages = calloc(ITEMS, sizeof(message));
  assert_non_null(p.messages);
  pthread_t consumer;
  assert_int_equal(pthread_create(&consumer, NULL, consume, &p), 0);
  for (uint64_t i = 0; i < ITEMS; i++) {
    p.messages[i].sequence = i;
    p.messages[i].payload = i * 2654435761u;
    while (aoi__ring_push(p.ring, &p.messages[i]) != 0)
      ;
    aoi__bell_ring(&p.bell);
  }
  pthread_join(consumer, NULL);
  assert_int_equal(p.first_error, 0);
  assert_null(aoi__ring_pop(p.ring));
  aoi__bell_destroy(&p.bell);
  aoi__ring_destroy(&A, p.ring);
  free(p.messages);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fifo_full_empty_grow),
      cmocka_unit_test(two_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
