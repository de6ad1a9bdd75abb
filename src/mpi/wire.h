/*
 * wire.h: the messages between ranks (docs/design.md, "The wire
 * format"). One message a tick from each rank to each other rank: a
 * 24-byte header, then records, every field little-endian whatever the
 * host's order, floats as their IEEE 754 bits.
 *
 *   header   magic "AOIW", version u16 (1), reserved u16 (0), tick u64,
 *            sender rank u32, record count u32
 *   move     kind 1, id u64, x f32, y f32                         17 bytes
 *   ghost    kind 2, id u64, tag u64, x, y, radius, appeal f32,
 *            layers, interest, cap u32, flags u8                  46 bytes
 *   drop     kind 3, id u64                                        9 bytes
 *   remove   kind 4, id u64                                        9 bytes
 *   transfer kind 5, the ghost's fields, then the view: count u32 and
 *            per entry id u64, tag u64, told x f32, told y f32
 *                                                50 + 24 a view entry
 *
 * A ghost's or a transfer's flags are AOI_WATCHER | AOI_MARKER, and
 * WIRE_FRESH when the entity was added (or added again) this tick. The
 * decoder trusts nothing: wire_next checks every count against the bytes
 * left, every float for finiteness and range, every flag and kind, and
 * that a view's ids ascend; a message that fails any check is refused
 * whole (AOI_EPEER).
 */
#ifndef AOI_WIRE_H
#define AOI_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_VERSION 1
#define WIRE_HEADER 24
#define WIRE_FRESH 0x80u

enum wire_kind {
  WIRE_MOVE = 1,
  WIRE_GHOST = 2,
  WIRE_DROP = 3,
  WIRE_REMOVE = 4,
  WIRE_TRANSFER = 5
};

/* An entity's state, as a ghost or a transfer carries it. */
typedef struct wire_entity {
  uint64_t id, tag;
  float x, y, radius, appeal;
  uint32_t layers, interest, cap;
  uint8_t flags; /* AOI_WATCHER | AOI_MARKER | WIRE_FRESH */
} wire_entity;

/* One entry of a transferred view. */
typedef struct wire_view_entry {
  uint64_t id, tag;
  float told_x, told_y;
} wire_view_entry;

/* A growing byte buffer (the messages being written). */
typedef struct wire_buf {
  unsigned char *data;
  size_t size, capacity;
  uint32_t records;
} wire_buf;

void wire_buf_free(wire_buf *b);
/* Starts a message: the header, with a record count wire_finish fills. */
int wire_begin(wire_buf *b, uint64_t tick, uint32_t sender);
int wire_put_move(wire_buf *b, uint64_t id, float x, float y);
int wire_put_ghost(wire_buf *b, const wire_entity *e);
int wire_put_id(wire_buf *b, enum wire_kind kind, uint64_t id);
/* A transfer with its view (n entries). */
int wire_put_transfer(wire_buf *b, const wire_entity *e,
                      const wire_view_entry *view, uint32_t n);
void wire_finish(wire_buf *b);

/* A record as decoded; a transfer's view stays in the message, read with
   wire_view_at. */
typedef struct wire_record {
  enum wire_kind kind;
  wire_entity e; /* id, and x, y for a move; everything for the others */
  uint32_t view_count;
  const unsigned char *view; /* view_count entries of 24 bytes */
} wire_record;

/* A message being read. */
typedef struct wire_reader {
  const unsigned char *at, *end;
  uint32_t left; /* records */
  float max_radius;
} wire_reader;

/* Checks a message's header: its magic, version, tick and sender, and
   that it is not shorter than its records could be. 0 or AOI_EPEER. */
int wire_open(wire_reader *r, const unsigned char *data, size_t size,
              uint64_t tick, uint32_t sender, float max_radius);
/* The next record: 1 with *out, 0 at a clean end, AOI_EPEER for anything
   malformed (or bytes left over after the last record). */
int wire_next(wire_reader *r, wire_record *out);
/* Entry i of a decoded transfer's view (checked by wire_next). */
wire_view_entry wire_view_at(const wire_record *rec, uint32_t i);

#endif /* AOI_WIRE_H */
