/*
 * fuzz_wire.c: libFuzzer target over the decoder of the messages between
 * ranks (src/mpi/wire.c), which must take any bytes a peer sends without
 * undefined behaviour and refuse what does not follow the format.
 *
 * Input: a message. Its header's tick and sender are taken as expected,
 * so that the fuzzer reaches the records. Checks, beside the sanitizers:
 * every record the decoder accepts is within the format's bounds (finite
 * coordinates, radii within max_radius, known flags, a view's ids
 * ascending), and a message rebuilt from the accepted records by the
 * encoder decodes to the same records. A failed check aborts, so
 * libFuzzer saves the input.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aoi.h"
#include "wire.h"

#define MAX_RADIUS 500.0f

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
  fprintf(stderr, "fuzz_wire: %s\n", what);
  abort();
}

static uint64_t le64(const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void check(const wire_record *r)
{
  if (r->kind == WIRE_MOVE || r->kind == WIRE_GHOST ||
      r->kind == WIRE_TRANSFER)
    if (!isfinite(r->e.x) || !isfinite(r->e.y))
      fail("a position that is not finite");
  if (r->kind == WIRE_GHOST || r->kind == WIRE_TRANSFER) {
    unsigned role = r->e.flags & ~WIRE_FRESH;
    if (role == 0 || role > 3 || !(r->e.radius >= 0) ||
        r->e.radius > MAX_RADIUS || !(r->e.appeal >= 0) ||
        r->e.appeal > MAX_RADIUS)
      fail("an entity out of bounds");
  }
  for (uint32_t i = 1; i < r->view_count; i++)
    if (wire_view_at(r, i).id <= wire_view_at(r, i - 1).id)
      fail("a view whose ids do not ascend");
}

static int put(wire_buf *b, const wire_record *r)
{
  switch (r->kind) {
  case WIRE_MOVE:
    return wire_put_move(b, r->e.id, r->e.x, r->e.y);
  case WIRE_GHOST:
    return wire_put_ghost(b, &r->e);
  case WIRE_DROP:
  case WIRE_REMOVE:
    return wire_put_id(b, r->kind, r->e.id);
  case WIRE_TRANSFER: {
    wire_view_entry *v = malloc(sizeof(*v) * (r->view_count + 1));
    if (v == NULL)
      return AOI_ENOMEM;
    for (uint32_t i = 0; i < r->view_count; i++)
      v[i] = wire_view_at(r, i);
    int rc = wire_put_transfer(b, &r->e, v, r->view_count);
    free(v);
    return rc;
  }
  }
  return AOI_EINVAL;
}

static int same(const wire_record *a, const wire_record *b)
{
  if (a->kind != b->kind || a->e.id != b->e.id ||
      a->view_count != b->view_count)
    return 0;
  if (a->kind == WIRE_DROP || a->kind == WIRE_REMOVE)
    return 1;
  if (memcmp(&a->e.x, &b->e.x, sizeof(float)) != 0 ||
      memcmp(&a->e.y, &b->e.y, sizeof(float)) != 0)
    return 0;
  if (a->kind == WIRE_MOVE)
    return 1;
  if (a->e.tag != b->e.tag || a->e.layers != b->e.layers ||
      a->e.interest != b->e.interest || a->e.cap != b->e.cap ||
      a->e.flags != b->e.flags ||
      memcmp(&a->e.radius, &b->e.radius, sizeof(float)) != 0 ||
      memcmp(&a->e.appeal, &b->e.appeal, sizeof(float)) != 0)
    return 0;
  for (uint32_t i = 0; i < a->view_count; i++) {
    wire_view_entry x = wire_view_at(a, i), y = wire_view_at(b, i);
    if (x.id != y.id || x.tag != y.tag ||
        memcmp(&x.told_x, &y.told_x, sizeof(float)) != 0 ||
        memcmp(&x.told_y, &y.told_y, sizeof(float)) != 0)
      return 0;
  }
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  uint64_t tick = size >= WIRE_HEADER ? le64(data + 8) : 0;
  uint32_t sender = size >= WIRE_HEADER ? (uint32_t)le64(data + 16) : 0;
  wire_reader r;
  if (wire_open(&r, data, size, tick, sender, MAX_RADIUS) != 0)
    return 0;
  wire_buf b = {0};
  if (wire_begin(&b, tick, sender) != 0)
    fail("wire_begin");
  wire_record rec;
  int rc;
  uint32_t n = 0;
  while ((rc = wire_next(&r, &rec)) == 1) {
    check(&rec);
    if (put(&b, &rec) != 0)
      fail("encoding an accepted record");
    n++;
  }
  if (rc == 0) {
    /* a whole message was accepted: the encoder writes the same bytes */
    wire_finish(&b);
    if (b.size != size || memcmp(b.data, data, size) != 0)
      fail("an accepted message the encoder writes otherwise");
    wire_reader again, first;
    if (wire_open(&again, b.data, b.size, tick, sender, MAX_RADIUS) != 0 ||
        wire_open(&first, data, size, tick, sender, MAX_RADIUS) != 0)
      fail("reopening");
    wire_record x, y;
    for (uint32_t i = 0; i < n; i++)
      if (wire_next(&again, &x) != 1 || wire_next(&first, &y) != 1 ||
          !same(&x, &y))
        fail("a record that does not survive the round trip");
  }
  wire_buf_free(&b);
  return 0;
}
