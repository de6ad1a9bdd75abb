/*
 * alloc.c: the allocator helpers every file uses (base.h). Every byte the
 * library holds comes through the world's allocator hooks (aoi_config's
 * allocator, else malloc), always with its size, so that a test can fail
 * the n-th allocation and check that nothing leaks. Arrays grow by half
 * again, or to an eighth over their need when that is more (aoi__reserve:
 * an array sized once for a known need keeps little slack, one that
 * creeps up still grows geometrically), or with room to spare where their
 * need wanders (aoi__reserve_roomy), and give back what a burst made them
 * take (aoi__shrink).
 */
#include "base.h"

#include <stdlib.h>

static void *malloc_alloc(void *user, size_t size)
{
  (void)user;
  return malloc(size);
}

static void *malloc_realloc(void *user, void *ptr, size_t old_size,
                            size_t new_size)
{
  (void)user;
  (void)old_size;
  return realloc(ptr, new_size);
}

static void malloc_free(void *user, void *ptr, size_t size)
{
  (void)user;
  (void)size;
  free(ptr);
}

const aoi_allocator aoi__malloc_hooks = {malloc_alloc, malloc_realloc,
                                         malloc_free, NULL};

void *aoi__alloc(const aoi_allocator *a, size_t size)
{
  return a->alloc(a->user, size ? size : 1);
}

void *aoi__calloc(const aoi_allocator *a, size_t size)
{
  void *p = aoi__alloc(a, size);
  if (p != NULL)
    memset(p, 0, size ? size : 1);
  return p;
}

void *aoi__realloc(const aoi_allocator *a, void *ptr, size_t old_size,
                   size_t new_size)
{
  if (ptr == NULL)
    return aoi__alloc(a, new_size);
  return a->realloc(a->user, ptr, old_size, new_size ? new_size : 1);
}

void aoi__free(const aoi_allocator *a, void *ptr, size_t size)
{
  if (ptr != NULL)
    a->free(a->user, ptr, size);
}

/* Grows *array to exactly `capacity` items. */
static int grow(const aoi_allocator *a, void **array, uint32_t *cap,
                uint64_t capacity, size_t elem)
{
  if (capacity > UINT32_MAX)
    capacity = UINT32_MAX;
  if (capacity * elem / elem != capacity)
    return AOI_ENOMEM;
  void *p = aoi__realloc(a, *array, elem * *cap, elem * capacity);
  if (p == NULL)
    return AOI_ENOMEM;
  *array = p;
  *cap = (uint32_t)capacity;
  return 0;
}

/* What aoi__reserve grows an array of capacity `cap` to, for `need`. */
static uint64_t reserve_capacity(uint32_t cap, uint32_t need)
{
  uint64_t capacity = (uint64_t)need + need / 8;
  uint64_t half_again = (uint64_t)cap + cap / 2;
  if (capacity < half_again)
    capacity = half_again;
  return capacity < 8 ? 8 : capacity;
}

int aoi__reserve(const aoi_allocator *a, void **array, uint32_t *cap,
                 uint32_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  return grow(a, array, cap, reserve_capacity(*cap, need), elem);
}

int aoi__reserve_roomy(const aoi_allocator *a, void **array, uint32_t *cap,
                       uint32_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  return grow(a, array, cap, aoi__roomy(need, 8), elem);
}

int aoi__reserve_snug(const aoi_allocator *a, void **array, uint32_t *cap,
                      uint32_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  uint64_t capacity = (uint64_t)need + need / 8;
  uint64_t eighth = (uint64_t)*cap + *cap / 8;
  if (capacity < eighth)
    capacity = eighth;
  return grow(a, array, cap, capacity < 64 ? 64 : capacity, elem);
}

uint32_t aoi__roomy(uint32_t need, uint32_t hint)
{
  uint64_t want = (uint64_t)need + need / 2;
  if (want < hint)
    want = hint;
  want = (want + 7) & ~(uint64_t)7;
  return want > UINT32_MAX - 7 ? UINT32_MAX - 7 : (uint32_t)want;
}

/* What aoi__shrink makes of an array of capacity `cap`: `cap` when it
   keeps it. */
static uint32_t shrink_capacity(uint32_t cap, uint32_t recent)
{
  if (cap <= 64 || cap / 4 <= recent)
    return cap;
  return aoi__roomy(recent, 32);
}

void aoi__shrink(const aoi_allocator *a, void **array, uint32_t *cap,
                 uint32_t recent, size_t elem)
{
  uint32_t capacity = shrink_capacity(*cap, recent);
  if (capacity == *cap)
    return;
  void *p = aoi__realloc(a, *array, elem * *cap, elem * capacity);
  if (p == NULL)
    return;
  *array = p;
  *cap = capacity;
}

/* ---- arrays on a line --------------------------------------------------- */

/* Resizes a lined array to `capacity` items: the block is reallocated, and
   the items move to the new block's first line boundary when the
   allocator put them elsewhere. */
static int resize_lined(const aoi_allocator *a, void **block, void **array,
                        uint32_t *cap, uint64_t capacity, size_t elem)
{
  if (capacity > UINT32_MAX)
    capacity = UINT32_MAX;
  if (capacity > (SIZE_MAX - AOI__LINE) / elem)
    return AOI_ENOMEM;
  size_t old = elem * *cap, now = elem * (size_t)capacity;
  size_t offset = *block ? (size_t)((char *)*array - (char *)*block) : 0;
  char *p = aoi__realloc(a, *block,
                         *block ? aoi__lined_bytes(*cap, elem) : 0,
                         aoi__lined_bytes((uint32_t)capacity, elem));
  if (p == NULL)
    return AOI_ENOMEM;
  char *at = aoi__line_up(p);
  if (at != p + offset && old > 0)
    memmove(at, p + offset, old < now ? old : now);
  *block = p;
  *array = at;
  *cap = (uint32_t)capacity;
  return 0;
}

int aoi__reserve_lined(const aoi_allocator *a, void **block, void **array,
                       uint32_t *cap, uint32_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  return resize_lined(a, block, array, cap, reserve_capacity(*cap, need),
                      elem);
}

void aoi__shrink_lined(const aoi_allocator *a, void **block, void **array,
                       uint32_t *cap, uint32_t recent, size_t elem)
{
  uint32_t capacity = shrink_capacity(*cap, recent);
  if (capacity != *cap) /* a failed shrink keeps the array as it was */
    (void)resize_lined(a, block, array, cap, capacity, elem);
}

void aoi__free_lined(const aoi_allocator *a, void *block, uint32_t cap,
                     size_t elem)
{
  aoi__free(a, block, aoi__lined_bytes(cap, elem));
}
