/*
 * ring.c: the single-producer single-consumer ring every cross-thread message
 * goes through. This is the only file that includes <ck_ring.h>.
 *
 * ThreadSanitizer cannot see ck's inline-asm fences, so a build with
 * AOI_RING_C11 defined swaps in a ring of the same interface written with C11
 * atomics; TSan builds use it. Both publish with release on push and read
 * with acquire on pop, so whatever the producer wrote before a push is
 * visible to the consumer after the matching pop.
 */
#include "ring.h"
#include "stress.h"

#include <string.h>

/* The power of two whose ring holds `capacity` items (one slot stays
   empty). */
static unsigned ring_size_for(unsigned capacity)
{
  AOI__ASSERT(capacity > 0 && capacity <= (1u << 30));
  unsigned size = 4;
  while (size - 1 < capacity)
    size <<= 1;
  AOI__ASSERT((size & (size - 1)) == 0);
  return size;
}

#ifndef AOI_RING_C11
#include <ck_ring.h>

struct aoi__ring {
  struct ck_ring ring;
  struct ck_ring_buffer *buffer;
  unsigned size; /* a power of two; holds size - 1 items */
};

aoi__ring *aoi__ring_create(const aoi_allocator *a, unsigned capacity)
{
  aoi__ring *ring = aoi__calloc(a, sizeof(*ring));
  if (ring == NULL)
    return NULL;
  ring->size = ring_size_for(capacity);
  ring->buffer = aoi__calloc(a, sizeof(*ring->buffer) * ring->size);
  if (ring->buffer == NULL) {
    aoi__free(a, ring, sizeof(*ring));
    return NULL;
  }
  ck_ring_init(&ring->ring, ring->size);
  return ring;
}

void aoi__ring_destroy(const aoi_allocator *a, aoi__ring *ring)
{
  if (ring == NULL)
    return;
  aoi__free(a, ring->buffer, sizeof(*ring->buffer) * ring->size);
  aoi__free(a, ring, sizeof(*ring));
}

int aoi__ring_push(aoi__ring *ring, void *item)
{
  AOI__ASSERT(item != NULL); /* a pop reads NULL as empty */
  AOI__STRESS();
  /* ck_ring_enqueue_spsc fences stores before it publishes the slot. */
  return ck_ring_enqueue_spsc(&ring->ring, ring->buffer, item) ? 0 : -1;
}

void *aoi__ring_pop(aoi__ring *ring)
{
  void *item;
  AOI__STRESS();
  /* ck_ring_dequeue_spsc fences loads after it sees the producer's tail. */
  if (!ck_ring_dequeue_spsc(&ring->ring, ring->buffer, &item))
    return NULL;
  return item;
}

unsigned aoi__ring_capacity(const aoi__ring *ring)
{
  return ck_ring_capacity(&ring->ring) - 1;
}

unsigned aoi__ring_count(const aoi__ring *ring)
{
  return ck_ring_size(&ring->ring);
}

bool aoi__ring_valid(const aoi__ring *ring)
{
  /* ck_ring_valid checks the multi-producer head, which SPSC rings never
     move; check what SPSC use keeps instead. */
  unsigned size = ring->ring.size;
  if (size != ring->size || (size & (size - 1)) != 0)
    return false;
  return ring->ring.p_tail - ring->ring.c_head < size;
}

#if AOI__ASSERTS_EXPENSIVE
/* Every item queued is one (a NULL one would read as empty). Only while
   no other thread uses the ring. */
static bool items_valid(const aoi__ring *ring)
{
  unsigned mask = ring->size - 1;
  for (unsigned i = ring->ring.c_head; i != ring->ring.p_tail; i++)
    if (ring->buffer[i & mask].value == NULL)
      return false;
  return true;
}
#endif

#else /* AOI_RING_C11 */
#include <stdatomic.h>

struct aoi__ring {
  _Alignas(64) _Atomic unsigned head; /* next slot to pop (consumer) */
  _Alignas(64) _Atomic unsigned tail; /* next slot to push (producer) */
  _Alignas(64) void **slots;
  unsigned size; /* a power of two; holds size - 1 items */
};

aoi__ring *aoi__ring_create(const aoi_allocator *a, unsigned capacity)
{
  aoi__ring *ring = aoi__calloc(a, sizeof(*ring));
  if (ring == NULL)
    return NULL;
  ring->size = ring_size_for(capacity);
  ring->slots = aoi__calloc(a, sizeof(void *) * ring->size);
  if (ring->slots == NULL) {
    aoi__free(a, ring, sizeof(*ring));
    return NULL;
  }
  atomic_init(&ring->head, 0);
  atomic_init(&ring->tail, 0);
  return ring;
}

void aoi__ring_destroy(const aoi_allocator *a, aoi__ring *ring)
{
  if (ring == NULL)
    return;
  aoi__free(a, ring->slots, sizeof(void *) * ring->size);
  aoi__free(a, ring, sizeof(*ring));
}

int aoi__ring_push(aoi__ring *ring, void *item)
{
  AOI__ASSERT(item != NULL); /* a pop reads NULL as empty */
  AOI__STRESS();
  unsigned tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
  /* acquire: the consumer is done with the slot it released */
  unsigned head = atomic_load_explicit(&ring->head, memory_order_acquire);
  if (tail - head >= ring->size - 1)
    return -1;
  ring->slots[tail & (ring->size - 1)] = item;
  /* release: publish the slot and everything written before the push */
  atomic_store_explicit(&ring->tail, tail + 1, memory_order_release);
  return 0;
}

void *aoi__ring_pop(aoi__ring *ring)
{
  AOI__STRESS();
  unsigned head = atomic_load_explicit(&ring->head, memory_order_relaxed);
  /* acquire: pairs with the producer's release of tail */
  unsigned tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
  if (head == tail)
    return NULL;
  void *item = ring->slots[head & (ring->size - 1)];
  /* release: the slot may be overwritten once head moves past it */
  atomic_store_explicit(&ring->head, head + 1, memory_order_release);
  return item;
}

unsigned aoi__ring_capacity(const aoi__ring *ring)
{
  return ring->size - 1;
}

unsigned aoi__ring_count(const aoi__ring *ring)
{
  unsigned tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
  unsigned head = atomic_load_explicit(&ring->head, memory_order_acquire);
  return tail - head;
}

bool aoi__ring_valid(const aoi__ring *ring)
{
  unsigned size = ring->size;
  if (size < 4 || (size & (size - 1)) != 0)
    return false;
  return aoi__ring_count(ring) < size;
}

#if AOI__ASSERTS_EXPENSIVE
/* Every item queued is one (a NULL one would read as empty). Only while
   no other thread uses the ring. */
static bool items_valid(const aoi__ring *ring)
{
  unsigned head = atomic_load_explicit(&ring->head, memory_order_relaxed);
  unsigned tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
  for (unsigned i = head; i != tail; i++)
    if (ring->slots[i & (ring->size - 1)] == NULL)
      return false;
  return true;
}
#endif

#endif /* AOI_RING_C11 */

int aoi__ring_grow(const aoi_allocator *a, aoi__ring **ring)
{
  aoi__ring *old = *ring;
  aoi__ring *bigger = aoi__ring_create(a, aoi__ring_capacity(old) * 2 + 1);
  if (bigger == NULL)
    return AOI_ENOMEM;
  unsigned count = aoi__ring_count(old);
  void *item;
  while ((item = aoi__ring_pop(old)) != NULL)
    (void)aoi__ring_push(bigger, item);
  AOI__ASSERT(aoi__ring_count(bigger) == count); /* every item moved */
  AOI__ASSERT_EXPENSIVE(items_valid(bigger));
  aoi__ring_destroy(a, old);
  *ring = bigger;
  return 0;
}
