/*
 * outbox.c: per-watcher outboxes and the host's list of watchers that have
 * events.
 *
 * An outbox is a growing array of events indexed by the watcher's handle.
 * During a tick only the worker that owns the watcher appends to it; between
 * ticks only the host drains it. Draining empties it in O(1) and keeps its
 * memory, so a steady crowd allocates nothing; the drained events stay
 * readable until the next tick appends over them.
 *
 * The pending list holds each handle at most once (world->in_pending marks
 * membership). Workers report the watchers whose outbox went from empty to
 * non-empty; the host appends those after the tick and, when asked, drops the
 * drained ones and sorts by id, merging the new tail into the sorted prefix.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int aoi__outbox_append(const aoi_allocator *a, aoi__outbox *outbox,
                       const aoi_event *events, uint32_t count)
{
  if (count == 0)
    return 0;
  if (outbox->count > UINT32_MAX - count)
    return AOI_ENOMEM;
  int rc = aoi__reserve(a, (void **)&outbox->events, &outbox->capacity,
                        outbox->count + count, sizeof(aoi_event));
  if (rc != 0)
    return rc;
  memcpy(outbox->events + outbox->count, events, sizeof(aoi_event) * count);
  outbox->count += count;
  return 0;
}

void aoi__outbox_free(const aoi_allocator *a, aoi__outbox *outbox)
{
  aoi__free(a, outbox->events, sizeof(aoi_event) * outbox->capacity);
  memset(outbox, 0, sizeof(*outbox));
}

typedef struct keyed {
  uint64_t id;
  uint32_t handle;
} keyed;

void aoi__pending_free(const aoi_allocator *a, aoi__pending *pending)
{
  aoi__free(a, pending->handles, sizeof(uint32_t) * pending->capacity);
  aoi__free(a, pending->ids, sizeof(uint64_t) * pending->ids_capacity);
  aoi__free(a, pending->scratch, sizeof(uint32_t) * pending->scratch_capacity);
  aoi__free(a, pending->keyed, sizeof(keyed) * pending->keyed_capacity);
  memset(pending, 0, sizeof(*pending));
}

static int compare_keyed(const void *a, const void *b)
{
  uint64_t x = ((const keyed *)a)->id, y = ((const keyed *)b)->id;
  return (x > y) - (x < y);
}

int aoi__pending_sort(struct aoi_world *world)
{
  const aoi_allocator *a = &world->allocator;
  aoi__pending *p = &world->pending;
  /* Drop drained handles, keeping the sorted prefix sorted. */
  uint32_t kept = 0, kept_sorted = 0;
  for (uint32_t i = 0; i < p->count; i++) {
    uint32_t h = p->handles[i];
    if (world->outbox[h].count == 0) {
      world->in_pending[h] = 0;
      continue;
    }
    if (i < p->sorted)
      kept_sorted++;
    p->handles[kept++] = h;
  }
  p->count = kept;
  p->sorted = kept_sorted;
  uint32_t tail = p->count - p->sorted;
  if (aoi__reserve(a, (void **)&p->ids, &p->ids_capacity, p->count + 1,
                   sizeof(uint64_t)) != 0 ||
      aoi__reserve(a, (void **)&p->scratch, &p->scratch_capacity,
                   p->count + 1, sizeof(uint32_t)) != 0 ||
      aoi__reserve(a, &p->keyed, &p->keyed_capacity, tail + 1,
                   sizeof(keyed)) != 0)
    return AOI_ENOMEM;
  if (tail > 0) {
    keyed *sorted = p->keyed;
    for (uint32_t i = 0; i < tail; i++) {
      uint32_t h = p->handles[p->sorted + i];
      sorted[i].id = world->host[h].id;
      sorted[i].handle = h;
    }
    qsort(sorted, tail, sizeof(keyed), compare_keyed);
    /* Merge the sorted prefix with the sorted tail into scratch. */
    uint32_t i = 0, j = 0, n = 0;
    while (i < p->sorted || j < tail) {
      if (j == tail ||
          (i < p->sorted && world->host[p->handles[i]].id < sorted[j].id))
        p->scratch[n++] = p->handles[i++];
      else
        p->scratch[n++] = sorted[j++].handle;
    }
    uint32_t *swap = p->handles;
    uint32_t swap_capacity = p->capacity;
    p->handles = p->scratch;
    p->capacity = p->scratch_capacity;
    p->scratch = swap;
    p->scratch_capacity = swap_capacity;
    p->sorted = p->count;
  }
  for (uint32_t i = 0; i < p->count; i++)
    p->ids[i] = world->host[p->handles[i]].id;
  return 0;
}
