/*
 * idmap.c: the host's map from 64-bit entity ids to 32-bit handles. Host
 * thread only.
 *
 * Ids come from outside (account ids, client-chosen pet ids), so an attacker
 * may pick them. With an unkeyed hash they can pick ids that all share one
 * home slot and turn every add, move and lookup into a walk of the whole
 * table: the former hash, splitmix64's finaliser, is invertible, so such
 * ids were one inversion away. So each map hashes with its own secret
 * 128-bit key, drawn at init from getrandom(2) where there is one, else
 * from the clocks, the process id, the map's address and a counter (a
 * weaker fallback: an attacker who can guess those can guess the key). The
 * hash is wyhash's finish for an 8-byte input with the key in place of its
 * seed and secret: the id xored with one half of the key times the id
 * rotated and xored with the other, a 64x64->128-bit multiply, whose halves
 * a second multiply folds. It is not a proven PRF as SipHash is (that costs
 * several times as much a lookup), but which ids collide now depends on the
 * key, and no set of ids is known to collide under every key.
 *
 * Open addressing with linear probing, load factor at most 1/2, so the
 * expected run is short for any ids chosen without the key. A slot is 16
 * bytes (id, handle, low 32 bits of the hash): with the allocator's usual
 * 16-byte alignment a lookup reads one cache line, two when its run crosses
 * a line. Deletion is by backward shift (no tombstones), so runs do not
 * lengthen under churn; the stored hash bits give each slot's home without
 * rehashing, and growth reuses them too.
 *
 * Ids below a bound are not hashed at all: they index `direct`, one
 * handle per id, so a host that draws its ids from a counter pays one
 * read per lookup, and none that misses the cache when it moves its
 * entities in their order. The bound is a power of two that only grows,
 * and only as far as twice the ids held (plus 128) when it grows: direct
 * slots cost 4 bytes each, so they stay within a few bytes per id the
 * world has held, and an attacker who picks small ids only picks direct
 * slots, which never collide. Ids already hashed that a growth brings
 * below the bound move into `direct`; an id too large for the bound is
 * hashed. If a growth cannot get memory, the id is hashed instead.
 *
 * Nothing outside this file sees the slot order, which depends on the key:
 * only aoi__idmap_valid walks the slots, and it answers a bool. So the
 * library's output does not depend on the key.
 */
#include "idmap.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef AOI_HAVE_GETRANDOM
#include <sys/random.h>
#endif

/* The 128-bit product of a and b: returns the low half, writes the high. */
static inline uint64_t multiply(uint64_t a, uint64_t b, uint64_t *high)
{
#ifdef __SIZEOF_INT128__
  __extension__ typedef unsigned __int128 u128;
  u128 p = (u128)a * b;
  *high = (uint64_t)(p >> 64);
  return (uint64_t)p;
#else
  uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
  *high = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
  return (mid << 32) | (uint32_t)p00;
#endif
}

/* The two halves of a * b, xored. */
static inline uint64_t fold(uint64_t a, uint64_t b)
{
  uint64_t high;
  uint64_t low = multiply(a, b, &high);
  return low ^ high;
}

static inline uint64_t hash(const aoi__idmap *map, uint64_t id)
{
  uint64_t high;
  uint64_t low = multiply(id ^ map->key[0],
                          (id << 32 | id >> 32) ^ map->key[1], &high);
  return fold(low ^ 0xa0761d6478bd642full, high ^ 0xe7037ed1a0b428dbull);
}

static uint64_t splitmix64(uint64_t *state)
{
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Draws the map's key: the kernel's randomness if it answers at once, else
   what this process can gather that differs between maps and between runs. */
static void draw_key(aoi__idmap *map)
{
#ifdef AOI_HAVE_GETRANDOM
  if (getrandom(map->key, sizeof(map->key), GRND_NONBLOCK) ==
      (ssize_t)sizeof(map->key))
    return;
#endif
  static atomic_uint_fast64_t maps; /* worlds may be created on any thread */
  struct timespec wall = {0}, steady = {0};
  clock_gettime(CLOCK_REALTIME, &wall);
  clock_gettime(CLOCK_MONOTONIC, &steady);
  uint64_t state = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec;
  state = splitmix64(&state) ^ (uint64_t)(uintptr_t)map;
  state = splitmix64(&state) ^
          ((uint64_t)steady.tv_sec * 1000000000u + (uint64_t)steady.tv_nsec);
  state = splitmix64(&state) ^ (uint64_t)getpid();
  state = splitmix64(&state) ^
          (uint64_t)atomic_fetch_add_explicit(&maps, 1, memory_order_relaxed);
  map->key[0] = splitmix64(&state);
  map->key[1] = splitmix64(&state);
}

void aoi__idmap_init(aoi__idmap *map)
{
  memset(map, 0, sizeof(*map));
  draw_key(map);
}

void aoi__idmap_free(const aoi_allocator *a, aoi__idmap *map)
{
  aoi__free(a, map->slots, sizeof(aoi__idmap_slot) * map->capacity);
  aoi__free(a, map->direct, sizeof(uint32_t) * map->direct_capacity);
  map->slots = NULL;
  map->direct = NULL;
  map->capacity = map->direct_capacity = 0;
  map->count = map->hashed = 0;
}

/* The slot that holds `id`, or AOI__NONE, looking from slot `i` on (its
   home slot). */
static uint32_t find_from(const aoi__idmap *map, uint64_t id, uint32_t i)
{
  AOI__ASSERT(map->capacity > 0 && i < map->capacity);
  uint32_t mask = map->capacity - 1;
  for (;; i = (i + 1) & mask) {
    const aoi__idmap_slot *s = &map->slots[i];
    if (s->handle == AOI__NONE)
      return AOI__NONE;
    if (s->id == id)
      return i;
  }
}

/* The slot that holds `id`, or AOI__NONE. */
static uint32_t find(const aoi__idmap *map, uint64_t id)
{
  if (map->capacity == 0)
    return AOI__NONE;
  return find_from(map, id, (uint32_t)hash(map, id) & (map->capacity - 1));
}

uint32_t aoi__idmap_prefetch(const aoi__idmap *map, uint64_t id)
{
  if (id < map->direct_capacity) {
    __builtin_prefetch(&map->direct[id]);
    return AOI__NONE;
  }
  if (map->capacity == 0)
    return AOI__NONE;
  uint32_t home = (uint32_t)hash(map, id) & (map->capacity - 1);
  __builtin_prefetch(&map->slots[home]);
  return home;
}

uint32_t aoi__idmap_get_from(const aoi__idmap *map, uint64_t id,
                             uint32_t home)
{
  AOI__ASSERT(home == AOI__NONE || home < map->capacity);
  if (id < map->direct_capacity)
    return map->direct[id];
  if (home == AOI__NONE)
    return AOI__NONE; /* the map held no hashed slot */
  uint32_t i = find_from(map, id, home);
  return i == AOI__NONE ? AOI__NONE : map->slots[i].handle;
}

uint32_t aoi__idmap_get_hashed(const aoi__idmap *map, uint64_t id)
{
  uint32_t i = find(map, id);
  return i == AOI__NONE ? AOI__NONE : map->slots[i].handle;
}

/* Puts a slot whose id is not in the map into the first free slot of its
   run. */
static void place(aoi__idmap *map, const aoi__idmap_slot *slot)
{
  AOI__ASSERT(map->hashed < map->capacity); /* a free slot ends the run */
  uint32_t mask = map->capacity - 1;
  uint32_t i = slot->hash & mask;
  while (map->slots[i].handle != AOI__NONE)
    i = (i + 1) & mask;
  map->slots[i] = *slot;
  map->hashed++;
}

/* Puts the hashed ids into new slots of `capacity`, but those below
   `below`, which go to `direct`. AOI_ENOMEM changes nothing. */
static int rehash(const aoi_allocator *a, aoi__idmap *map, uint32_t capacity,
                  uint32_t *direct, uint64_t below)
{
#if SIZE_MAX <= UINT32_MAX
  if (capacity > SIZE_MAX / sizeof(aoi__idmap_slot))
    return AOI_ENOMEM;
#endif
  AOI__ASSERT(capacity > 0 && (capacity & (capacity - 1)) == 0);
  AOI__ASSERT((uint64_t)map->hashed * 2 <= capacity);
  aoi__idmap_slot *from = map->slots;
  uint32_t old = map->capacity;
  aoi__idmap_slot *slots = aoi__alloc(a, sizeof(aoi__idmap_slot) * capacity);
  if (slots == NULL)
    return AOI_ENOMEM;
  memset(slots, 0xff, sizeof(aoi__idmap_slot) * capacity);
  map->slots = slots;
  map->capacity = capacity;
  map->hashed = 0;
  for (uint32_t i = 0; i < old; i++) {
    if (from[i].handle == AOI__NONE)
      continue;
    if (from[i].id < below)
      direct[from[i].id] = from[i].handle;
    else
      place(map, &from[i]);
  }
  aoi__free(a, from, sizeof(aoi__idmap_slot) * old);
  return 0;
}

/* Makes room for one more hashed id. */
static int reserve_hashed(const aoi_allocator *a, aoi__idmap *map)
{
  if ((uint64_t)(map->hashed + 1) * 2 <= map->capacity)
    return 0;
  uint32_t capacity = map->capacity ? map->capacity * 2 : 64;
  if (capacity == 0 || capacity > (1u << 31))
    return AOI_ENOMEM;
  int rc = rehash(a, map, capacity, NULL, 0);
  AOI__ASSERT_EXPENSIVE(rc != 0 || aoi__idmap_valid(map));
  return rc;
}

/* Grows `direct` to take `id`, if the bound allows it: 0 when it did, 1
   when the id is to be hashed (too large, or no memory). */
static int grow_direct(const aoi_allocator *a, aoi__idmap *map, uint64_t id)
{
  uint64_t limit = 2 * (uint64_t)map->count + 128;
  if (id >= limit)
    return 1;
  uint64_t capacity = map->direct_capacity ? map->direct_capacity : 64;
  while (capacity <= id)
    capacity *= 2;
  if (capacity > limit || capacity > (1u << 31))
    return 1;
  uint32_t old = map->direct_capacity;
  uint32_t *direct = aoi__alloc(a, sizeof(uint32_t) * (size_t)capacity);
  if (direct == NULL)
    return 1;
  if (old > 0)
    memcpy(direct, map->direct, sizeof(uint32_t) * old);
  memset(direct + old, 0xff, sizeof(uint32_t) * ((size_t)capacity - old));
  /* hashed ids that come below the bound move into direct */
  bool moving = false;
  for (uint32_t i = 0; map->hashed > 0 && i < map->capacity && !moving; i++)
    moving = map->slots[i].handle != AOI__NONE && map->slots[i].id < capacity;
  if (moving && rehash(a, map, map->capacity, direct, capacity) != 0) {
    aoi__free(a, direct, sizeof(uint32_t) * (size_t)capacity);
    return 1;
  }
  aoi__free(a, map->direct, sizeof(uint32_t) * old);
  map->direct = direct;
  map->direct_capacity = (uint32_t)capacity;
  AOI__ASSERT((capacity & (capacity - 1)) == 0);
  AOI__ASSERT_EXPENSIVE(aoi__idmap_valid(map));
  return 0;
}

int aoi__idmap_reserve(const aoi_allocator *a, aoi__idmap *map, uint64_t id)
{
  if (id < map->direct_capacity || grow_direct(a, map, id) == 0)
    return 0;
  return reserve_hashed(a, map);
}

void aoi__idmap_put(aoi__idmap *map, uint64_t id, uint32_t handle)
{
  AOI__ASSERT(handle != AOI__NONE); /* (which marks a free slot) */
  if (id < map->direct_capacity) {
    map->count += map->direct[id] == AOI__NONE;
    map->direct[id] = handle;
    return;
  }
  AOI__ASSERT(map->capacity > 0);
  uint64_t h = hash(map, id);
  uint32_t mask = map->capacity - 1;
  uint32_t i = (uint32_t)h & mask;
  for (; map->slots[i].handle != AOI__NONE; i = (i + 1) & mask)
    if (map->slots[i].id == id) {
      map->slots[i].handle = handle;
      return;
    }
  /* a new id: aoi__idmap_reserve made room for it */
  AOI__ASSERT((uint64_t)(map->hashed + 1) * 2 <= map->capacity);
  map->slots[i] = (aoi__idmap_slot){id, handle, (uint32_t)h};
  map->count++;
  map->hashed++;
}

void aoi__idmap_del(aoi__idmap *map, uint64_t id)
{
  if (id < map->direct_capacity) {
    map->count -= map->direct[id] != AOI__NONE;
    map->direct[id] = AOI__NONE;
    return;
  }
  uint32_t i = find(map, id);
  if (i == AOI__NONE)
    return;
  map->count--;
  map->hashed--;
  /* Backward shift: pull later members of the run into the hole. */
  uint32_t mask = map->capacity - 1;
  uint32_t hole = i;
  for (uint32_t j = (i + 1) & mask; map->slots[j].handle != AOI__NONE;
       j = (j + 1) & mask) {
    uint32_t home = map->slots[j].hash & mask;
    /* j may move to the hole when its home is not in (hole, j] cyclically */
    bool stays = hole <= j ? (home > hole && home <= j)
                           : (home > hole || home <= j);
    if (stays)
      continue;
    map->slots[hole] = map->slots[j];
    hole = j;
  }
  map->slots[hole].handle = AOI__NONE;
}

bool aoi__idmap_valid(const aoi__idmap *map)
{
  uint32_t seen = 0;
  for (uint32_t i = 0; i < map->capacity; i++) {
    const aoi__idmap_slot *s = &map->slots[i];
    if (s->handle == AOI__NONE)
      continue;
    seen++;
    if (s->id < map->direct_capacity ||
        s->hash != (uint32_t)hash(map, s->id) || find(map, s->id) != i)
      return false;
  }
  uint32_t direct = 0;
  for (uint32_t i = 0; i < map->direct_capacity; i++)
    direct += map->direct[i] != AOI__NONE;
  return seen == map->hashed && direct + seen == map->count &&
         (map->capacity == 0 || (uint64_t)map->hashed * 2 <= map->capacity);
}
