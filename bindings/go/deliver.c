/*
 * deliver.c: the C side of delivery. aoi_deliver wants a C function
 * pointer and a void *user; the trampoline here forwards each watcher to
 * the exported Go function aoiGoDeliver with the segment's cgo.Handle,
 * which travels as the user pointer (an integer, never a Go pointer).
 */
#include <stdint.h>

#include "aoi.h"
#include "_cgo_export.h"

static void aoi_go_trampoline(void *user, uint64_t watcher,
                              uint64_t watcher_tag, const aoi_event *events,
                              size_t count)
{
  aoiGoDeliver((uintptr_t)user, watcher, watcher_tag, (aoi_event *)events,
               count);
}

int aoi_go_deliver(uintptr_t world, unsigned segment, uintptr_t handle)
{
  return aoi_deliver((aoi_world *)world, segment, aoi_go_trampoline, (void *)handle);
}
