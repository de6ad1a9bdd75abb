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

aoi_event *aoi__outbox_reserve(const aoi_allocator *a, aoi__outbox *outbox,
                               uint32_t count, uint32_t hint)
{
  if (outbox->count > UINT32_MAX - count)
    return NULL;
  /* A drained outbox that once held a long backlog (a host that drained
     late) gives the excess back, so memory follows the crowd, not the
     worst backlog ever seen. If the shrink fails, it keeps what it had. */
  if (outbox->count == 0 && outbox->capacity > 4 * count + 256) {
    uint32_t capacity = 2 * count + 64;
    aoi_event *smaller = aoi__realloc(a, outbox->events,
                                      sizeof(aoi_event) * outbox->capacity,
                                      sizeof(aoi_event) * capacity);
    if (smaller != NULL) {
      outbox->events = smaller;
      outbox->capacity = capacity;
    }
  }
  uint32_t need = outbox->count + count;
  if (need > outbox->capacity) {
    uint32_t capacity = aoi__roomy(need, hint);
    aoi_event *bigger = aoi__realloc(a, outbox->events,
                                     sizeof(aoi_event) * outbox->capacity,
                                     sizeof(aoi_event) * capacity);
    if (bigger == NULL)
      return NULL;
    outbox->events = bigger;
    outbox->capacity = capacity;
  }
  return outbox->events + outbox->count;
}

int aoi__outbox_append(const aoi_allocator *a, aoi__outbox *outbox,
                       const aoi_event *events, uint32_t count)
{
  if (count == 0)
    return 0;
  aoi_event *room = aoi__outbox_reserve(a, outbox, count, 0);
  if (room == NULL)
    return AOI_ENOMEM;
  memcpy(room, events, sizeof(aoi_event) * count);
  outbox->count += count;
  return 0;
}

void aoi__outbox_free(const aoi_allocator *a, aoi__outbox *outbox)
{
  aoi__free(a, outbox->events, sizeof(aoi_event) * outbox->capacity);
  memset(outbox, 0, sizeof(*outbox));
}

void aoi__pending_free(const aoi_allocator *a, aoi__pending *pending)
{
  aoi__free(a, pending->entries, sizeof(aoi__pending_entry) * pending->capacity);
  aoi__free(a, pending->scratch,
            sizeof(aoi__pending_entry) * pending->scratch_capacity);
  aoi__free(a, pending->ids, sizeof(uint64_t) * pending->ids_capacity);
  memset(pending, 0, sizeof(*pending));
}

void aoi__pending_note(struct aoi_world *world, uint32_t handle)
{
  aoi__pending *p = &world->pending;
  if (world->in_pending[handle])
    return;
  world->in_pending[handle] = 1;
  p->entries[p->count++] = (aoi__pending_entry){world->host[handle].id, handle};
}

static int compare_entries(const void *a, const void *b)
{
  uint64_t x = ((const aoi__pending_entry *)a)->id;
  uint64_t y = ((const aoi__pending_entry *)b)->id;
  return (x > y) - (x < y);
}

int aoi__pending_update(struct aoi_world *world)
{
  const aoi_allocator *a = &world->allocator;
  aoi__pending *p = &world->pending;
  if (aoi__reserve(a, (void **)&p->scratch, &p->scratch_capacity, p->count + 1,
                   sizeof(aoi__pending_entry)) != 0 ||
      aoi__reserve(a, (void **)&p->ids, &p->ids_capacity, p->count + 1,
                   sizeof(uint64_t)) != 0)
    return AOI_ENOMEM;
  /* Sort what was noted since the last call and merge it in: in steady
     state nothing is new, and this is one pass with no sort. */
  aoi__pending_entry *tail = p->entries + p->sorted;
  uint32_t tail_count = p->count - p->sorted;
  if (tail_count > 1)
    qsort(tail, tail_count, sizeof(*tail), compare_entries);
  uint32_t i = 0, j = 0, n = 0;
  while (i < p->sorted || j < tail_count) {
    aoi__pending_entry e;
    if (j == tail_count || (i < p->sorted && p->entries[i].id <= tail[j].id))
      e = p->entries[i++];
    else
      e = tail[j++];
    /* Stale: removed, or the handle now belongs to another entity, or a
       second entry for the same watcher (its handle came back). */
    const aoi__host_entity *h = &world->host[e.handle];
    if (!(h->flags & AOI__LIVE) || h->id != e.id || !world->in_pending[e.handle])
      continue;
    if (n > 0 && p->scratch[n - 1].id == e.id)
      continue;
    p->scratch[n++] = e;
  }
  aoi__pending_entry *swap = p->entries;
  uint32_t swap_capacity = p->capacity;
  p->entries = p->scratch;
  p->capacity = p->scratch_capacity;
  p->scratch = swap;
  p->scratch_capacity = swap_capacity;
  p->count = p->sorted = n;
  p->ids_count = 0;
  for (uint32_t k = 0; k < n; k++)
    if (world->outbox[p->entries[k].handle].count > 0)
      p->ids[p->ids_count++] = p->entries[k].id;
  return 0;
}
