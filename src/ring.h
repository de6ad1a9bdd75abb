/*
 * ring.h: the single-producer single-consumer ring (ring.c) that every
 * message between two threads goes through. ring.c is the only file that
 * includes <ck_ring.h>.
 */
#ifndef AOI_RING_H
#define AOI_RING_H

#include "base.h"

typedef struct aoi__ring aoi__ring;
/* A ring that holds at least `capacity` pointers. NULL on failure. */
aoi__ring *aoi__ring_create(const aoi_allocator *a, unsigned capacity);
void aoi__ring_destroy(const aoi_allocator *a, aoi__ring *ring);
/* Producer side only. Returns 0, or -1 when the ring is full. */
int aoi__ring_push(aoi__ring *ring, void *item);
/* Consumer side only. Returns the oldest item, or NULL when empty. */
void *aoi__ring_pop(aoi__ring *ring);
unsigned aoi__ring_capacity(const aoi__ring *ring);
/* Items queued; exact only when the ring is quiescent. */
unsigned aoi__ring_count(const aoi__ring *ring);
/* Doubles the capacity, keeping the items. Only while no other thread uses
   the ring (the host between ticks). Returns 0 or AOI_ENOMEM. */
int aoi__ring_grow(const aoi_allocator *a, aoi__ring **ring);
/* Invariant check: a power-of-two size and at most size - 1 items. */
bool aoi__ring_valid(const aoi__ring *ring);

#endif /* AOI_RING_H */
