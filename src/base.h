/*
 * base.h: the bottom of src/'s include graph, what every file uses: the
 * library-wide limits, the graded debug assertions, and the allocator helpers
 * (alloc.c) through which every byte the library holds comes from the
 * host's allocator hooks. It includes only the C library and aoi.h.
 *
 * The headers stack, each including the one below, so that an include
 * only ever points down:
 *
 *   base.h     limits, the graded asserts, allocation        (alloc.c)
 *   ring.h     SPSC rings                                     (ring.c)
 *   sync.h     bells, the clock                               (sync.c)
 *   stress.h   stress points of AOI_STRESS builds             (sync.c)
 *   idmap.h    id -> handle map                               (idmap.c)
 *   grid.h     geometry, shard layout, the uniform grid       (grid.c)
 *   types.h    the world's types: entities, shards, workers, outboxes
 *   internal.h the stages' cross-file functions, in tick order, and
 *              what a tick decides (reaches, far-sighted watchers)
 *   compute.h  the compute stage's inline helpers (compute.c, index.c,
 *              scan.c, push.c, policy.c, view.c only)
 *
 * The bottom files (alloc.c, ring.c, sync.c, idmap.c, grid.c) include only
 * their own header (and ring.c and sync.c stress.h, which includes
 * nothing), so none of them can reach into the world.
 */
#ifndef AOI_BASE_H
#define AOI_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aoi.h"

#define AOI__NONE UINT32_MAX
#define AOI__MAX_THREADS 256u
#define AOI__MAX_SHARDS 4096u
/* A cache line. The structs that threads write side by side in one array
   (workers, shards, delivery segments) end with a guard of this many
   bytes, so that no two threads' fields share a line whatever the array's
   alignment (the host's allocator promises only malloc's): a line written
   by two cores at once moves between them at every write. */
#define AOI__LINE 64u

/* Items that must start on a line (a shard's entities, a grid's entries)
   live in a block of the allocator's with a line to spare: the block's
   size for `cap` items of `elem` bytes, and where in it they start. */
static inline size_t aoi__lined_bytes(uint32_t cap, size_t elem)
{
  return elem * cap + AOI__LINE;
}
static inline void *aoi__line_up(void *block)
{
  return (void *)(((uintptr_t)block + AOI__LINE - 1) &
                  ~(uintptr_t)(AOI__LINE - 1));
}

/* ---- debug assertions --------------------------------------------------- */

/* Graded asserts, as mimalloc's MI_DEBUG levels:

   AOI__ASSERT(cond) checks a "cannot happen" or a thread-ownership
   precondition in O(1): an index within its bounds, a count within its
   capacity, a power of two, a state the call needs (the host between
   ticks). It is on in Debug builds (no NDEBUG) and in the sanitizer
   builds (CMake defines AOI_ASSERTS), and compiled out elsewhere: then
   the condition is not evaluated, only type-checked.

   AOI__ASSERT_EXPENSIVE(cond) is a check that walks a structure, O(n):
   the id map after it grows, a grid's order after its build, a ring's
   contents, a query's answer. It is on only where AOI_DEBUG_EXPENSIVE is
   defined (CMake's AOI_DEBUG_EXPENSIVE: the sanitizer and fuzz builds),
   which turns the cheap ones on too; elsewhere it is nothing, so a helper
   it calls is defined under #if AOI__ASSERTS_EXPENSIVE.

   The walks of the whole world (aoi__world_valid) run after each tick
   where AOI_CHECK_INVARIANTS is defined (tick.c). */
#if !defined(NDEBUG) || defined(AOI_ASSERTS) || defined(AOI_DEBUG_EXPENSIVE)
#include <stdio.h>
#include <stdlib.h>
#define AOI__ASSERTS 1
static inline _Noreturn void aoi__assert_fail(const char *what,
                                              const char *file, int line)
{
  fprintf(stderr, "aoi: %s:%d: assertion failed: %s\n", file, line, what);
  abort();
}
#define AOI__ASSERT(cond)                                                      \
  ((cond) ? (void)0 : aoi__assert_fail(#cond, __FILE__, __LINE__))
#else
#define AOI__ASSERTS 0
#define AOI__ASSERT(cond) ((void)sizeof((cond) ? 1 : 0))
#endif

#ifdef AOI_DEBUG_EXPENSIVE
#define AOI__ASSERTS_EXPENSIVE 1
#define AOI__ASSERT_EXPENSIVE(cond) AOI__ASSERT(cond)
#else
#define AOI__ASSERTS_EXPENSIVE 0
#define AOI__ASSERT_EXPENSIVE(cond) ((void)0)
#endif

/* ---- allocation (alloc.c) ----------------------------------------------- */

/* The hooks over malloc, realloc and free, for a config without any. */
extern const aoi_allocator aoi__malloc_hooks;

void *aoi__alloc(const aoi_allocator *a, size_t size);
void *aoi__calloc(const aoi_allocator *a, size_t size);
void *aoi__realloc(const aoi_allocator *a, void *ptr, size_t old_size,
                   size_t new_size);
void aoi__free(const aoi_allocator *a, void *ptr, size_t size);
/* Grows *array (of `elem`-byte items, capacity *cap) to hold at least `need`
   items: to half as much again, or to an eighth over `need` when that is
   more. Returns 0 or AOI_ENOMEM (then nothing changed). */
int aoi__reserve(const aoi_allocator *a, void **array, uint32_t *cap,
                 uint32_t need, size_t elem);
/* Like aoi__reserve, but a growth leaves room for half as much again as
   `need` (aoi__roomy): for arrays whose need wanders around a level,
   which then stop growing once the crowd settles. */
int aoi__reserve_roomy(const aoi_allocator *a, void **array, uint32_t *cap,
                       uint32_t need, size_t elem);
/* Like aoi__reserve, but a growth takes an eighth over `need` (and at least
   an eighth over what it had): for the delivery segments, which grow
   within a tick to about what the last one took and keep it, so that
   their slack is an eighth, not a half. Large blocks grow in place with
   most allocators (glibc moves their pages), so the more frequent growth
   of a crowd's first ticks costs little. */
int aoi__reserve_snug(const aoi_allocator *a, void **array, uint32_t *cap,
                      uint32_t need, size_t elem);
/* The capacity a growing view or outbox takes: half as much room again as
   it needs, and at least `hint`, rounded up to a multiple of 8. */
uint32_t aoi__roomy(uint32_t need, uint32_t hint);

/* The most an array needed in the current and in the last period of a few
   ticks (host only): what it keeps when a burst has passed. */
typedef struct aoi__peak {
  uint32_t now, last;
} aoi__peak;

static inline void aoi__peak_note(aoi__peak *peak, uint32_t need)
{
  if (need > peak->now)
    peak->now = need;
}
static inline uint32_t aoi__peak_recent(const aoi__peak *peak)
{
  return peak->now > peak->last ? peak->now : peak->last;
}
static inline void aoi__peak_turn(aoi__peak *peak)
{
  peak->last = peak->now;
  peak->now = 0;
}
/* Gives back the room of an array that grew for a burst: when it holds
   more than 4x `recent` items (and more than a small floor), it shrinks to
   aoi__roomy(recent). A failed shrink keeps the array as it was. */
void aoi__shrink(const aoi_allocator *a, void **array, uint32_t *cap,
                 uint32_t recent, size_t elem);

/* Arrays on a line: *array lies in *block (NULL before the first growth)
   on a 64-byte boundary, which the allocator does not promise, so that an
   item of 64 bytes is one line. The block holds *cap items and a line.
   Grown as aoi__reserve and shrunk as aoi__shrink (the items are copied
   when the allocator moves them off the boundary); freed whole. */
int aoi__reserve_lined(const aoi_allocator *a, void **block, void **array,
                       uint32_t *cap, uint32_t need, size_t elem);
void aoi__shrink_lined(const aoi_allocator *a, void **block, void **array,
                       uint32_t *cap, uint32_t recent, size_t elem);
void aoi__free_lined(const aoi_allocator *a, void *block, uint32_t cap,
                     size_t elem);

/* The larger of two numbers, neither of them NaN: fmax and fmaxf are
   calls into the library (they must treat NaN), too dear in a pass over
   every entity. */
static inline double aoi__max(double a, double b) { return a > b ? a : b; }
static inline float aoi__maxf(float a, float b) { return a > b ? a : b; }

#endif /* AOI_BASE_H */
