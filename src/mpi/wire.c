/*
 * wire.c: writing and checking the messages between ranks (wire.h has
 * the format). Every field goes through put_* and get_*, which fix the
 * byte order, so the format is the same on every host.
 */
#include "wire.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "aoi.h"

static const unsigned char magic[4] = {'A', 'O', 'I', 'W'};

enum {
  MOVE_BYTES = 17,
  GHOST_BYTES = 46,
  ID_BYTES = 9,
  TRANSFER_BYTES = GHOST_BYTES + 4,
  ENTRY_BYTES = 24
};

void wire_buf_free(wire_buf *b)
{
  free(b->data);
  memset(b, 0, sizeof(*b));
}

/* Room for `more` bytes at the end; returns where they go, or NULL. */
static unsigned char *grow(wire_buf *b, size_t more)
{
  if (more > SIZE_MAX / 2 - b->size)
    return NULL;
  if (b->size + more > b->capacity) {
    size_t cap = b->capacity < 256 ? 256 : b->capacity;
    while (cap < b->size + more)
      cap *= 2;
    unsigned char *d = realloc(b->data, cap);
    if (d == NULL)
      return NULL;
    b->data = d;
    b->capacity = cap;
  }
  unsigned char *at = b->data + b->size;
  b->size += more;
  return at;
}

static unsigned char *put_u8(unsigned char *p, uint8_t v)
{
  *p = v;
  return p + 1;
}

static unsigned char *put_u16(unsigned char *p, uint16_t v)
{
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  return p + 2;
}

static unsigned char *put_u32(unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
  return p + 4;
}

static unsigned char *put_u64(unsigned char *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
  return p + 8;
}

static unsigned char *put_f32(unsigned char *p, float v)
{
  uint32_t bits;
  memcpy(&bits, &v, sizeof(bits));
  return put_u32(p, bits);
}

static uint16_t get_u16(const unsigned char *p)
{
  return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static uint32_t get_u32(const unsigned char *p)
{
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static uint64_t get_u64(const unsigned char *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static float get_f32(const unsigned char *p)
{
  uint32_t bits = get_u32(p);
  float v;
  memcpy(&v, &bits, sizeof(v));
  return v;
}

int wire_begin(wire_buf *b, uint64_t tick, uint32_t sender)
{
  b->size = 0;
  b->records = 0;
  unsigned char *p = grow(b, WIRE_HEADER);
  if (p == NULL)
    return AOI_ENOMEM;
  memcpy(p, magic, 4);
  p = put_u16(p + 4, WIRE_VERSION);
  p = put_u16(p, 0);
  p = put_u64(p, tick);
  p = put_u32(p, sender);
  put_u32(p, 0);
  return 0;
}

void wire_finish(wire_buf *b)
{
  put_u32(b->data + 20, b->records);
}

int wire_put_move(wire_buf *b, uint64_t id, float x, float y)
{
  unsigned char *p = grow(b, MOVE_BYTES);
  if (p == NULL)
    return AOI_ENOMEM;
  p = put_u8(p, WIRE_MOVE);
  p = put_u64(p, id);
  p = put_f32(p, x);
  put_f32(p, y);
  b->records++;
  return 0;
}

static unsigned char *put_entity(unsigned char *p, enum wire_kind kind,
                                 const wire_entity *e)
{
  p = put_u8(p, (uint8_t)kind);
  p = put_u64(p, e->id);
  p = put_u64(p, e->tag);
  p = put_f32(p, e->x);
  p = put_f32(p, e->y);
  p = put_f32(p, e->radius);
  p = put_f32(p, e->appeal);
  p = put_u32(p, e->layers);
  p = put_u32(p, e->interest);
  p = put_u32(p, e->cap);
  return put_u8(p, e->flags);
}

int wire_put_ghost(wire_buf *b, const wire_entity *e)
{
  unsigned char *p = grow(b, GHOST_BYTES);
  if (p == NULL)
    return AOI_ENOMEM;
  put_entity(p, WIRE_GHOST, e);
  b->records++;
  return 0;
}

int wire_put_id(wire_buf *b, enum wire_kind kind, uint64_t id)
{
  unsigned char *p = grow(b, ID_BYTES);
  if (p == NULL)
    return AOI_ENOMEM;
  put_u64(put_u8(p, (uint8_t)kind), id);
  b->records++;
  return 0;
}

int wire_put_transfer(wire_buf *b, const wire_entity *e,
                      const wire_view_entry *view, uint32_t n)
{
  unsigned char *p = grow(b, TRANSFER_BYTES + (size_t)n * ENTRY_BYTES);
  if (p == NULL)
    return AOI_ENOMEM;
  p = put_entity(p, WIRE_TRANSFER, e);
  p = put_u32(p, n);
  for (uint32_t i = 0; i < n; i++) {
    p = put_u64(p, view[i].id);
    p = put_u64(p, view[i].tag);
    p = put_f32(p, view[i].told_x);
    p = put_f32(p, view[i].told_y);
  }
  b->records++;
  return 0;
}

int wire_open(wire_reader *r, const unsigned char *data, size_t size,
              uint64_t tick, uint32_t sender, float max_radius)
{
  if (data == NULL || size < WIRE_HEADER || memcmp(data, magic, 4) != 0 ||
      get_u16(data + 4) != WIRE_VERSION || get_u16(data + 6) != 0 ||
      get_u64(data + 8) != tick || get_u32(data + 16) != sender)
    { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
  uint32_t records = get_u32(data + 20);
  /* the smallest record is 9 bytes */
  if (records > (size - WIRE_HEADER) / ID_BYTES)
    { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
  r->at = data + WIRE_HEADER;
  r->end = data + size;
  r->left = records;
  r->max_radius = max_radius;
  return 0;
}

static bool radius_ok(float v, float max)
{
  return isfinite(v) && v >= 0 && v <= max;
}

static bool entity_ok(const wire_entity *e, float max_radius)
{
  unsigned role = e->flags & ~WIRE_FRESH;
  return isfinite(e->x) && isfinite(e->y) &&
         radius_ok(e->radius, max_radius) &&
         radius_ok(e->appeal, max_radius) && role != 0 &&
         (role & ~(unsigned)(AOI_WATCHER | AOI_MARKER)) == 0;
}

static const unsigned char *get_entity(const unsigned char *p, wire_entity *e)
{
  e->id = get_u64(p);
  e->tag = get_u64(p + 8);
  e->x = get_f32(p + 16);
  e->y = get_f32(p + 20);
  e->radius = get_f32(p + 24);
  e->appeal = get_f32(p + 28);
  e->layers = get_u32(p + 32);
  e->interest = get_u32(p + 36);
  e->cap = get_u32(p + 40);
  e->flags = p[44];
  return p + 45;
}

int wire_next(wire_reader *r, wire_record *out)
{
  size_t left = (size_t)(r->end - r->at);
  if (r->left == 0)
    return left == 0 ? 0 : AOI_EPEER;
  if (left < 1)
    { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
  const unsigned char *p = r->at;
  memset(out, 0, sizeof(*out));
  out->kind = (enum wire_kind)p[0];
  switch (p[0]) {
  case WIRE_MOVE:
    if (left < MOVE_BYTES)
      { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
    out->e.id = get_u64(p + 1);
    out->e.x = get_f32(p + 9);
    out->e.y = get_f32(p + 13);
    if (!isfinite(out->e.x) || !isfinite(out->e.y))
      { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
    p += MOVE_BYTES;
    break;
  case WIRE_DROP:
  case WIRE_REMOVE:
    if (left < ID_BYTES)
      { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
    out->e.id = get_u64(p + 1);
    p += ID_BYTES;
    break;
  case WIRE_GHOST:
    if (left < GHOST_BYTES)
      { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
    p = get_entity(p + 1, &out->e);
    if (!entity_ok(&out->e, r->max_radius))
      { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
    break;
  case WIRE_TRANSFER: {
    if (left < TRANSFER_BYTES)
      { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
    p = get_entity(p + 1, &out->e);
    if (!entity_ok(&out->e, r->max_radius))
      { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
    uint32_t n = get_u32(p);
    p += 4;
    if (n > (size_t)(r->end - p) / ENTRY_BYTES)
      { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
    if (n > 0 && !(out->e.flags & AOI_WATCHER))
      { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; } /* only a watcher has a view */
    for (uint32_t i = 0; i < n; i++) {
      const unsigned char *q = p + (size_t)i * ENTRY_BYTES;
      uint64_t id = get_u64(q);
      if ((i > 0 && id <= get_u64(q - ENTRY_BYTES)) || id == out->e.id ||
          !isfinite(get_f32(q + 16)) || !isfinite(get_f32(q + 20)))
        { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
    }
    out->view_count = n;
    out->view = p;
    p += (size_t)n * ENTRY_BYTES;
    break;
  }
  default:
    { fprintf(stderr, "WIRE EPEER at %d\n", __LINE__); return AOI_EPEER; }
  }
  r->at = p;
  r->left--;
  return 1;
}

wire_view_entry wire_view_at(const wire_record *rec, uint32_t i)
{
  const unsigned char *q = rec->view + (size_t)i * ENTRY_BYTES;
  wire_view_entry v = {get_u64(q), get_u64(q + 8), get_f32(q + 16),
                       get_f32(q + 20)};
  return v;
}
