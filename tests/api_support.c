/*
 * api_support.c: what the tests of the public API share (see
 * api_support.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "api_support.h"

const layout layouts[9] = {{1, 1}, {1, 3}, {1, 8}, {2, 1}, {2, 3},
                           {2, 8}, {4, 1}, {4, 3}, {4, 8}};

layout current_layout;

/* ---- worlds ------------------------------------------------------------- */

aoi_config config_for(layout l, float max_radius)
{
  aoi_config c;
  aoi_config_default(&c);
  c.threads = l.threads;
  c.shards = l.shards;
  c.max_x = 100;
  c.max_y = 100;
  c.max_radius = max_radius;
  current_layout = l;
  return c;
}

aoi_world *create_or_fail(const aoi_config *c)
{
  aoi_world *w = NULL;
  int rc = aoi_create(c, &w);
  if (rc != 0)
    fail_msg("aoi_create (threads %u, shards %u): %s", c->threads, c->shards,
             aoi_strerror(rc));
  assert_non_null(w);
  return w;
}

aoi_world *world_for(layout l, float max_radius)
{
  aoi_config c = config_for(l, max_radius);
  return create_or_fail(&c);
}

/* ---- events ------------------------------------------------------------- */

void drain_all(aoi_world *w, records *out)
{
  const uint64_t *ids;
  size_t n;
  assert_int_equal(aoi_pending(w, &ids, &n), 0);
  for (size_t i = 0; i < n; i++) {
    if (i > 0)
      assert_true(ids[i - 1] < ids[i]);
    const aoi_event *events;
    size_t count;
    assert_int_equal(aoi_drain(w, ids[i], &events, &count), 0);
    assert_true(count > 0);
    for (size_t j = 0; j < count; j++)
      records_push(out, ids[i], &events[j]);
  }
}

void tick_and_drain(aoi_world *w, records *out)
{
  out->count = 0;
  int rc = aoi_tick(w);
  if (rc != 0)
    fail_msg("aoi_tick: %s", aoi_strerror(rc));
  drain_all(w, out);
}

static void print_records(const char *title, const record *r, size_t n)
{
  print_message("%s (%zu):\n", title, n);
  for (size_t i = 0; i < n; i++)
    print_message("  %llu %s %llu %.9g %.9g tick %u\n",
                  (unsigned long long)r[i].watcher, kind_name(r[i].event.kind),
                  (unsigned long long)r[i].event.id, (double)r[i].event.x,
                  (double)r[i].event.y, r[i].event.tick);
}

void expect_records(const records *got, const record *want, size_t n)
{
  for (size_t i = 0; i < got->count; i++)
    if (got->items[i].event.tag != test_tag(got->items[i].event.id))
      fail_msg("event of %llu: tag %llu, not its own",
               (unsigned long long)got->items[i].event.id,
               (unsigned long long)got->items[i].event.tag);
  int same = got->count == n;
  for (size_t i = 0; same && i < n; i++)
    same = record_equal(&got->items[i], &want[i]);
  if (!same) {
    print_message("layout: threads %u, shards %u\n", current_layout.threads,
                  current_layout.shards);
    print_records("expected", want, n);
    print_records("got", got->items, got->count);
    fail_msg("events differ");
  }
}

void expect_drain(aoi_world *w, uint64_t watcher, const record *want,
                  size_t n)
{
  const aoi_event *events = NULL;
  size_t count = SIZE_MAX;
  assert_int_equal(aoi_drain(w, watcher, &events, &count), 0);
  records got = {0};
  for (size_t i = 0; i < count; i++)
    records_push(&got, watcher, &events[i]);
  expect_records(&got, want, n);
  records_free(&got);
}

void expect_no_events(aoi_world *w)
{
  const uint64_t *ids;
  size_t n = SIZE_MAX;
  assert_int_equal(aoi_pending(w, &ids, &n), 0);
  assert_int_equal(n, 0);
}

/* ---- query answers ------------------------------------------------------ */

void expect_ids(const answer *a, const uint64_t *want, size_t n)
{
  int same = a->count == n;
  for (size_t i = 0; same && i < n; i++)
    same = a->ids[i] == want[i];
  if (!same) {
    print_message("layout: threads %u, shards %u\n", current_layout.threads,
                  current_layout.shards);
    print_message("expected %zu ids:", n);
    for (size_t i = 0; i < n; i++)
      print_message(" %llu", (unsigned long long)want[i]);
    print_message("\ngot %zu ids:", a->count);
    for (size_t i = 0; i < a->count && i < MAX_IDS; i++)
      print_message(" %llu", (unsigned long long)a->ids[i]);
    print_message("\n");
    fail_msg("ids differ");
  }
}

void view_of(aoi_world *w, uint64_t id, answer *a)
{
  int rc = aoi_view(w, id, a->ids, MAX_IDS, &a->count);
  if (rc != 0)
    fail_msg("aoi_view(%llu): %s", (unsigned long long)id, aoi_strerror(rc));
  assert_true(a->count <= MAX_IDS);
}

void watchers_of(aoi_world *w, uint64_t id, answer *a)
{
  int rc = aoi_watchers_of(w, id, a->ids, MAX_IDS, &a->count);
  if (rc != 0)
    fail_msg("aoi_watchers_of(%llu): %s", (unsigned long long)id,
             aoi_strerror(rc));
  assert_true(a->count <= MAX_IDS);
}

void circle(aoi_world *w, float x, float y, float r, uint32_t mask, answer *a)
{
  assert_int_equal(aoi_query_circle(w, x, y, r, mask, a->ids, MAX_IDS,
                                    &a->count),
                   0);
  assert_true(a->count <= MAX_IDS);
}

/* ---- the counting allocator --------------------------------------------- */

void expect_all_freed(counter *c, const char *where)
{
  char layout_name[64];
  if (where == NULL) {
    snprintf(layout_name, sizeof(layout_name), "threads %u, shards %u",
             current_layout.threads, current_layout.shards);
    where = layout_name;
  }
  if (atomic_load(&c->live_blocks) != 0 || atomic_load(&c->live_bytes) != 0)
    fail_msg("%s: %lld blocks (%lld bytes) not freed", where,
             (long long)atomic_load(&c->live_blocks),
             (long long)atomic_load(&c->live_bytes));
  if (atomic_load(&c->wrong_sizes) != 0)
    fail_msg("%s: %lld frees or reallocs gave a wrong size, the last %lld "
             "for a block of %lld bytes",
             where, (long long)atomic_load(&c->wrong_sizes),
             (long long)atomic_load(&c->wrong_given),
             (long long)atomic_load(&c->wrong_actual));
}
