/*
 * idmap.c: the host's map from 64-bit entity ids to 32-bit handles. Open
 * addressing with linear probing and backward-shift deletion (no tombstones),
 * so lookups stay short under churn. Load factor at most 1/2. Host thread
 * only.
 */
#include "internal.h"

#include <string.h>

static inline uint32_t slot_of(uint64_t id, uint32_t mask)
{
  /* splitmix64 finaliser: ids are often sequential or strided */
  id ^= id >> 30;
  id *= 0xbf58476d1ce4e5b9ull;
  id ^= id >> 27;
  id *= 0x94d049bb133111ebull;
  id ^= id >> 31;
  return (uint32_t)id & mask;
}

void aoi__idmap_init(aoi__idmap *map)
{
  memset(map, 0, sizeof(*map));
}

void aoi__idmap_free(const aoi_allocator *a, aoi__idmap *map)
{
  aoi__free(a, map->keys, sizeof(uint64_t) * map->capacity);
  aoi__free(a, map->values, sizeof(uint32_t) * map->capacity);
  aoi__idmap_init(map);
}

uint32_t aoi__idmap_get(const aoi__idmap *map, uint64_t id)
{
  if (map->capacity == 0)
    return AOI__NONE;
  uint32_t mask = map->capacity - 1;
  for (uint32_t i = slot_of(id, mask);; i = (i + 1) & mask) {
    if (map->values[i] == AOI__NONE)
      return AOI__NONE;
    if (map->keys[i] == id)
      return map->values[i];
  }
}

static void insert(aoi__idmap *map, uint64_t id, uint32_t handle)
{
  uint32_t mask = map->capacity - 1;
  uint32_t i = slot_of(id, mask);
  while (map->values[i] != AOI__NONE && map->keys[i] != id)
    i = (i + 1) & mask;
  if (map->values[i] == AOI__NONE)
    map->count++;
  map->keys[i] = id;
  map->values[i] = handle;
}

int aoi__idmap_reserve(const aoi_allocator *a, aoi__idmap *map)
{
  if ((uint64_t)(map->count + 1) * 2 <= map->capacity)
    return 0;
  uint32_t capacity = map->capacity ? map->capacity * 2 : 64;
  if (capacity == 0 || capacity > (1u << 31))
    return AOI_ENOMEM;
  aoi__idmap bigger = {0};
  bigger.keys = aoi__alloc(a, sizeof(uint64_t) * capacity);
  bigger.values = aoi__alloc(a, sizeof(uint32_t) * capacity);
  if (bigger.keys == NULL || bigger.values == NULL) {
    aoi__free(a, bigger.keys, sizeof(uint64_t) * capacity);
    aoi__free(a, bigger.values, sizeof(uint32_t) * capacity);
    return AOI_ENOMEM;
  }
  bigger.capacity = capacity;
  memset(bigger.values, 0xff, sizeof(uint32_t) * capacity);
  for (uint32_t i = 0; i < map->capacity; i++)
    if (map->values[i] != AOI__NONE)
      insert(&bigger, map->keys[i], map->values[i]);
  aoi__idmap_free(a, map);
  *map = bigger;
  return 0;
}

void aoi__idmap_put(aoi__idmap *map, uint64_t id, uint32_t handle)
{
  insert(map, id, handle);
}

void aoi__idmap_del(aoi__idmap *map, uint64_t id)
{
  if (map->capacity == 0)
    return;
  uint32_t mask = map->capacity - 1;
  uint32_t i = slot_of(id, mask);
  while (map->values[i] != AOI__NONE && map->keys[i] != id)
    i = (i + 1) & mask;
  if (map->values[i] == AOI__NONE)
    return;
  map->count--;
  /* Backward shift: pull later members of the probe run into the hole. */
  uint32_t hole = i;
  for (uint32_t j = (i + 1) & mask; map->values[j] != AOI__NONE;
       j = (j + 1) & mask) {
    uint32_t home = slot_of(map->keys[j], mask);
    /* j may move to the hole when its home is not in (hole, j] cyclically */
    bool stays = hole <= j ? (home > hole && home <= j)
                           : (home > hole || home <= j);
    if (stays)
      continue;
    map->keys[hole] = map->keys[j];
    map->values[hole] = map->values[j];
    hole = j;
  }
  map->values[hole] = AOI__NONE;
}

bool aoi__idmap_valid(const aoi__idmap *map)
{
  uint32_t seen = 0;
  for (uint32_t i = 0; i < map->capacity; i++) {
    if (map->values[i] == AOI__NONE)
      continue;
    seen++;
    if (aoi__idmap_get(map, map->keys[i]) != map->values[i])
      return false;
  }
  return seen == map->count && (map->capacity == 0 || map->count * 2 <= map->capacity);
}
