/*
 * old_hash.h: the id hash the id map used before it was keyed (splitmix64's
 * finaliser, unkeyed) and its inverse, so that aoi-idmap-flood and
 * test_idmap can build ids that all collided under it.
 */
#ifndef AOI_BENCH_OLD_HASH_H
#define AOI_BENCH_OLD_HASH_H

#include <stdint.h>

static inline uint64_t old_hash_unshift(uint64_t y, unsigned s)
{ /* inverts y ^= y >> s */
  uint64_t x = y;
  for (unsigned done = s; done < 64; done += s)
    x = y ^ (x >> s);
  return x;
}

static inline uint64_t old_hash_inverse(uint64_t a)
{ /* of an odd a, mod 2^64 (Newton) */
  uint64_t x = a;
  for (int i = 0; i < 5; i++)
    x *= 2 - a * x;
  return x;
}

static inline uint64_t old_hash(uint64_t id)
{
  id ^= id >> 30;
  id *= 0xbf58476d1ce4e5b9ull;
  id ^= id >> 27;
  id *= 0x94d049bb133111ebull;
  id ^= id >> 31;
  return id;
}

/* The id whose former hash is h. */
static inline uint64_t old_preimage(uint64_t h)
{
  h = old_hash_unshift(h, 31);
  h *= old_hash_inverse(0x94d049bb133111ebull);
  h = old_hash_unshift(h, 27);
  h *= old_hash_inverse(0xbf58476d1ce4e5b9ull);
  return old_hash_unshift(h, 30);
}

#endif /* AOI_BENCH_OLD_HASH_H */
