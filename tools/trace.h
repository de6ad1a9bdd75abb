/*
 * trace.h: the parser of the aoi-replay trace format (TRACE_FORMAT.md), one
 * line at a time. Pure: no I/O and no world; shared by aoi-replay, the
 * model-based tests and the fuzz targets.
 */
#ifndef AOI_TRACE_H
#define AOI_TRACE_H

#include <stdint.h>

#include "aoi.h"

typedef enum trace_kind {
  TRACE_NONE = 0,   /* blank line or comment */
  TRACE_WORLD,      /* world MINX MINY MAXX MAXY  -> v[0..3]          */
  TRACE_MAX_RADIUS, /* max-radius R               -> v[0]             */
  TRACE_HYSTERESIS, /* hysteresis H               -> v[0]             */
  TRACE_MOVES,      /* moves on|off               -> moves            */
  TRACE_SHAPE,      /* shape circle|square|cells C -> shape, v[0]     */
  TRACE_ADD,        /* add ID X Y R FLAGS [LAYERS INTEREST]           */
  TRACE_MOVE,       /* move ID X Y                                    */
  TRACE_RADIUS,     /* radius ID R                                    */
  TRACE_LAYERS,     /* layers ID LAYERS INTEREST                      */
  TRACE_REMOVE,     /* remove ID                                      */
  TRACE_TICK        /* tick                                           */
} trace_kind;

typedef struct trace_cmd {
  trace_kind kind;
  uint64_t id;
  /* Coordinates and radius: decimal floats (no hex float), rounded once to
     float as strtof does (so a value out of float range becomes infinite,
     which the API rejects). */
  float x, y, radius;
  /* add's FLAGS: AOI_WATCHER | AOI_MARKER, or 0 when FLAGS is not one of
     W, M, WM (an `invalid` line, not a `syntax` one). */
  unsigned flags;
  uint32_t layers, interest; /* default 0xffffffff for add */
  /* Config values, as parsed (finite and in range, else a syntax error). */
  double v[4];
  int moves;       /* TRACE_MOVES: 1 on, 0 off */
  aoi_shape shape; /* TRACE_SHAPE */
} trace_cmd;

/*
 * Parses one line (without its newline; it may end in '\r'). Returns 0 and
 * fills *cmd, or -1 for a `syntax` error: unknown command, wrong number of
 * fields, a float that is not a decimal float (TRACE_FORMAT.md, Numbers: no
 * hex float, no digit separator), an id that is not decimal digits only up to
 * UINT64_MAX, a mask that is not a 32-bit decimal or 0x hex, or a config
 * value that is not finite or out of range. Whether a config line comes
 * after the first add is for the caller to decide. `line` is not modified.
 */
int trace_parse_line(const char *line, trace_cmd *cmd);

/* Whether a command kind is a config line (world .. shape). */
int trace_is_config(trace_kind kind);

#endif /* AOI_TRACE_H */
