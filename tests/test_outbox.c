/*
 * test_outbox.c: outboxes keep every event in order across appends, and an
 * append that cannot grow the outbox changes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "internal.h"
#include "support.h"

static int failing;
static void *t_alloc(void *u, size_t n) { (void)u; return failing ? NULL : malloc(n); }
static void *t_realloc(void *u, void *p, size_t o, size_t n) { (void)u; (void)o; return failing ? NULL : realloc(p, n); }
static const aoi_allocator A = {t_alloc, t_realloc, plain_free, NULL};

static void appends_keep_order(void **state)
{
  (void)state;
  aoi__outbox o = {0};
  aoi_event batch[7];
  uint64_t next_id = 0;
  for (int round = 0; round < 500; round++) {
    uint32_t n = (uint32_t)(round % 8);
    for (uint32_t i = 0; i < n; i++)
      batch[i] = (aoi_event){next_id++, 0, (float)i, -(float)i,
                             (aoi_event_kind)(i % 3), (uint32_t)round};
    assert_int_equal(aoi__outbox_append(&A, &o, batch, n), 0);
  }
  assert_int_equal(o.count, next_id);
  assert_true(o.capacity >= o.count);
  for (uint32_t i = 0; i < o.count; i++)
    assert_int_equal(o.events[i].id, i);
  aoi__outbox_free(&A, &o);
  assert_null(o.events);
  assert_int_equal(o.count, 0);
}

static void failed_append_changes_nothing(void **state)
{
  (void)state;
  aoi__outbox o = {0};
  aoi_event e = {42, 7, 1, 2, AOI_ENTER, 1};
  assert_int_equal(aoi__outbox_append(&A, &o, &e, 1), 0);
  while (o.count < o.capacity)
    assert_int_equal(aoi__outbox_append(&A, &o, &e, 1), 0);
  uint32_t count = o.count, capacity = o.capacity;
  aoi_event *events = o.events;
  failing = 1;
  assert_int_equal(aoi__outbox_append(&A, &o, &e, 1), AOI_ENOMEM);
  failing = 0;
  assert_int_equal(o.count, count);
  assert_int_equal(o.capacity, capacity);
  assert_ptr_equal(o.events, events);
  assert_int_equal(aoi__outbox_append(&A, &o, &e, 0), 0);
  assert_int_equal(o.count, count);
  aoi__outbox_free(&A, &o);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(appends_keep_order),
      cmocka_unit_test(failed_append_changes_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
