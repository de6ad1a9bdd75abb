/*
 * test_check.c: the invariant walk (check.c) names what broke. A small
 * world ticks until its views are full, the walk passes and reports
 * nothing; then each test breaks one invariant by poking one internal
 * field (a live handle's location slot, an entity's id, a watcher's view
 * order, the live count, the queued record count), checks that
 * aoi__world_valid fails and that aoi__check_failure names the invariant
 * (its condition as check.c writes it) and the handle or shard concerned,
 * then puts the field back, walks again (it passes, and the report is
 * cleared) and destroys the world.
 *
 * Host thread only: the pokes are made between ticks, when the host owns
 * everything (types.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "aoi.h"
#include "internal.h" /* aoi__world_valid, aoi__check_failure, the tables */

#define ALL UINT32_MAX
#define WM (AOI_WATCHER | AOI_MARKER)
#define CROWD 300u

/* A world of 2 threads and 4 shards over (0, 0) - (100, 100), a crowd of
   watcher-markers scattered over it, ticked twice. */
static aoi_world *ticked_world(void)
{
  aoi_config config;
  aoi_config_default(&config);
  config.threads = 2;
  config.shards = 4;
  config.max_x = 100;
  config.max_y = 100;
  config.max_radius = 20;
  aoi_world *w = NULL;
  assert_int_equal(aoi_create(&config, &w), 0);
  for (uint64_t id = 1; id <= CROWD; id++) {
    aoi_entity e = {.id = id,
                    .x = (float)((id * 37) % 100) + 0.5f,
                    .y = (float)((id * 61) % 97) + 0.25f,
                    .radius = 10,
                    .flags = WM,
                    .layers = ALL,
                    .interest = ALL};
    assert_int_equal(aoi_add(w, &e), 0);
  }
  assert_int_equal(aoi_tick(w), 0);
  assert_int_equal(aoi_tick(w), 0);
  assert_true(aoi__world_valid(w));
  assert_string_equal(aoi__check_failure(), "");
  return w;
}

/* The walk fails, and its report holds `condition` and `subject`. */
static void expect_failure(aoi_world *w, const char *condition,
                           const char *subject)
{
  assert_false(aoi__world_valid(w));
  const char *report = aoi__check_failure();
  if (strstr(report, condition) == NULL || strstr(report, subject) == NULL)
    fail_msg("the walk reported \"%s\", not \"%s\" (%s)", report, condition,
             subject);
  assert_non_null(strstr(report, "check.c:"));
}

/* The field is back: the walk passes and clears the report. */
static void expect_mended(aoi_world *w)
{
  assert_true(aoi__world_valid(w));
  assert_string_equal(aoi__check_failure(), "");
}

/* A live, applied handle and where it lies. */
static uint32_t handle_of(aoi_world *w, uint64_t id, aoi__shard **shard)
{
  uint32_t h = aoi__live_handle(w, id);
  assert_int_not_equal(h, AOI__NONE);
  *shard = &w->shards[w->location[h].shard];
  assert_true((*shard)->count > 1);
  return h;
}

static void test_location_slot(void **state)
{
  (void)state;
  aoi_world *w = ticked_world();
  aoi__shard *s;
  uint32_t h = handle_of(w, 42, &s);
  uint32_t slot = w->location[h].slot;
  w->location[h].slot = (slot + 1) % s->count; /* another entity's */
  char subject[64];
  snprintf(subject, sizeof(subject), "handle %u, shard %u", h, s->index);
  expect_failure(w, "s->entities[loc->slot].handle == h", subject);
  w->location[h].slot = s->count; /* past the shard's entities */
  expect_failure(w, "loc->slot < s->count", subject);
  w->location[h].slot = slot;
  expect_mended(w);
  aoi_destroy(w);
}

static void test_entity_id(void **state)
{
  (void)state;
  aoi_world *w = ticked_world();
  aoi__shard *s;
  uint32_t h = handle_of(w, 7, &s);
  aoi__entity *e = &s->entities[w->location[h].slot];
  e->id ^= 1u << 20;
  char subject[64];
  snprintf(subject, sizeof(subject), "handle %u, shard %u", h, s->index);
  expect_failure(w, "s->entities[loc->slot].id == w->mark[h].id", subject);
  e->id ^= 1u << 20;
  expect_mended(w);
  aoi_destroy(w);
}

static void test_view_order(void **state)
{
  (void)state;
  aoi_world *w = ticked_world();
  /* the first watcher of shard 0 with two markers in view */
  aoi__shard *s = &w->shards[0];
  aoi__entity *e = NULL;
  for (uint32_t i = 0; i < s->count && e == NULL; i++)
    if (s->entities[i].view.count >= 2)
      e = &s->entities[i];
  assert_non_null(e);
  uint32_t *v = e->view.handles, first = v[0];
  v[0] = v[1];
  v[1] = first;
  char subject[64];
  snprintf(subject, sizeof(subject), "shard 0, handle %u, view entry 1",
           e->handle);
  expect_failure(w, "w->mark[e->view.handles[j - 1]].id <", subject);
  v[1] = v[0];
  v[0] = first;
  expect_mended(w);
  aoi_destroy(w);
}

static void test_live_count(void **state)
{
  (void)state;
  aoi_world *w = ticked_world();
  w->live++;
  char subject[64];
  snprintf(subject, sizeof(subject), "world: %u live handles", CROWD);
  expect_failure(w, "live == w->live", subject);
  w->live--;
  expect_mended(w);
  aoi_destroy(w);
}

static void test_record_count(void **state)
{
  (void)state;
  aoi_world *w = ticked_world();
  assert_int_equal(aoi_move(w, 5, 50, 50), 0);
  assert_true(aoi__world_valid(w));
  w->records++; /* one record more than the queues hold */
  expect_failure(w, "total == w->records", "world: 1 queued");
  w->records--;
  expect_mended(w);
  assert_int_equal(aoi_tick(w), 0);
  expect_mended(w);
  aoi_destroy(w);
}

static void test_released_ring(void **state)
{
  (void)state;
  aoi_world *w = ticked_world();
  assert_int_equal(aoi_remove(w, 9), 0);
  assert_int_equal(aoi_remove(w, 10), 0);
  assert_int_equal(aoi_tick(w), 0);
  expect_mended(w);
  uint32_t at = w->released_head, was = w->released[at];
  uint32_t live = aoi__live_handle(w, 11);
  w->released[at] = live; /* a live handle listed as released */
  char subject[64];
  snprintf(subject, sizeof(subject), "released 0: handle %u", live);
  expect_failure(w, "dead", subject);
  uint32_t next = w->released[(at + 1) % w->handle_capacity];
  w->released[at] = next; /* a handle listed twice */
  snprintf(subject, sizeof(subject), "released 1: handle %u", next);
  expect_failure(w, "once", subject);
  w->released[at] = was;
  expect_mended(w);
  aoi_destroy(w);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_location_slot),
      cmocka_unit_test(test_entity_id),
      cmocka_unit_test(test_view_order),
      cmocka_unit_test(test_live_count),
      cmocka_unit_test(test_record_count),
      cmocka_unit_test(test_released_ring),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
