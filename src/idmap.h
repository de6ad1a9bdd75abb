/*
 * idmap.h: the host's map from 64-bit entity ids to 32-bit handles
 * (idmap.c). Host thread only.
 */
#ifndef AOI_IDMAP_H
#define AOI_IDMAP_H

#include "base.h"

/* One slot: the id, its handle, and the low bits of the id's keyed hash
   (its home slot in any table of up to 2^32 slots, so growing and deleting
   need not rehash). 16 bytes: a lookup reads one cache line. */
typedef struct aoi__idmap_slot {
  uint64_t id;
  uint32_t handle; /* AOI__NONE marks an empty slot */
  uint32_t hash;
} aoi__idmap_slot;
_Static_assert(sizeof(aoi__idmap_slot) == 16, "four slots a cache line");

/* Ids below `direct_capacity` are looked up directly in `direct` (a host
   that numbers its entities from a counter pays no hash and, moving them in
   their order, no cache miss); the others are hashed into `slots`. An id
   is in one or the other, never both. */
typedef struct aoi__idmap {
  uint32_t *direct; /* the handle of each id below direct_capacity, or
                       AOI__NONE */
  uint32_t direct_capacity; /* a power of two, or 0 */
  uint32_t count;           /* ids held, direct and hashed */
  aoi__idmap_slot *slots;
  uint32_t capacity; /* slots: a power of two, or 0 */
  uint32_t hashed;   /* ids in slots */
  uint64_t key[2];   /* this map's secret hash key, drawn at init */
} aoi__idmap;

/* Empties the map and draws its key. Cannot fail. */
void aoi__idmap_init(aoi__idmap *map);
/* Frees the slots; the map stays usable, empty, with the same key. */
void aoi__idmap_free(const aoi_allocator *a, aoi__idmap *map);
/* The handle of a hashed id, or AOI__NONE. */
uint32_t aoi__idmap_get_hashed(const aoi__idmap *map, uint64_t id);
/* The handle of `id`, or AOI__NONE. */
static inline uint32_t aoi__idmap_get(const aoi__idmap *map, uint64_t id)
{
  return id < map->direct_capacity ? map->direct[id]
                                   : aoi__idmap_get_hashed(map, id);
}
/* Fetches ahead the slot where a lookup of `id` starts, and returns where
   that is: a hint for aoi__idmap_get_from, valid until the map changes. */
uint32_t aoi__idmap_prefetch(const aoi__idmap *map, uint64_t id);
/* aoi__idmap_get, from the hint aoi__idmap_prefetch gave for `id`. */
uint32_t aoi__idmap_get_from(const aoi__idmap *map, uint64_t id,
                             uint32_t home);
/* Makes room for `id`, which the map does not hold; call before
   aoi__idmap_put of that id. On failure returns AOI_ENOMEM and changes
   nothing. */
int aoi__idmap_reserve(const aoi_allocator *a, aoi__idmap *map, uint64_t id);
void aoi__idmap_put(aoi__idmap *map, uint64_t id, uint32_t handle);
void aoi__idmap_del(aoi__idmap *map, uint64_t id);
/* O(capacity): every live slot is found by its id, holds its hash, and no
   gap splits it from its home slot; no hashed id is below
   direct_capacity; the counts and the load factor agree. */
bool aoi__idmap_valid(const aoi__idmap *map);

#endif /* AOI_IDMAP_H */
