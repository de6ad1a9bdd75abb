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

int aoi__reserve(const aoi_allocator *a, void **array, uint32_t *cap,
                 uint32_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  uint64_t capacity = (uint64_t)need + need / 8;
  uint64_t half_again = (uint64_t)*cap + *cap / 2;
  if (capacity < half_again)
    capacity = half_again;
  return grow(a, array, cap, capacity < 8 ? 8 : capacity, elem);
}

int aoi__reserve_roomy(const aoi_allocator *a, void **array, uint32_t *cap,
                       uint32_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  return grow(a, array, cap, aoi__roomy(need, 8), elem);
}

uint32_t aoi__roomy(uint32_t need, uint32_t hint)
{
  uint64_t want = (uint64_t)need + need / 2;
  if (want < hint)
    want = hint;
  want = (want + 7) & ~(uint64_t)7;
  return want > UINT32_MAX - 7 ? UINT32_MAX - 7 : (uint32_t)want;
}

void aoi__shrink(const aoi_allocator *a, void **array, uint32_t *cap,
                 uint32_t recent, size_t elem)
{
  if (*cap <= 64 || *cap / 4 <= recent)
    return;
  uint32_t capacity = aoi__roomy(recent, 32);
  void *p = aoi__realloc(a, *array, elem * *cap, elem * capacity);
  if (p == NULL)
    return;
  *array = p;
  *cap = capacity;
}
