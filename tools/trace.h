/*
 * trace.h: the parser of the aoi-replay trace format (docs/trace-format.md), one
 * line at a time. Pure: no I/O and no world; shared by aoi-replay, the
 * model-based tests and the fuzz targets.
 */
#ifndef AOI_TRACE_H
#define AOI_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "aoi.h"

typedef enum trace_kind {
  TRACE_NONE = 0,   /* blank line or comment */
  TRACE_WORLD,      /* world MINX MINY MAXX MAXY  -> v[0..3]          */
  TRACE_MAX_RADIUS, /* max-radius R               -> v[0]             */
  TRACE_HYSTERESIS, /* hysteresis H               -> v[0]             */
  TRACE_MOVES,      /* moves on|off               -> moves            */
  TRACE_SHAPE,      /* shape circle|square|cells C -> shape, v[0]     */
  TRACE_MOVE_EVERY, /* move-every D P             -> v[0], period     */
  TRACE_ADD,        /* add ID X Y R FLAGS [LAYERS INTEREST]           */
  TRACE_MOVE,       /* move ID X Y                                    */
  TRACE_RADIUS,     /* radius ID R                                    */
  TRACE_LAYERS,     /* layers ID LAYERS INTEREST                      */
  TRACE_REMOVE,     /* remove ID                                      */
  TRACE_TICK,       /* tick                                           */
  TRACE_APPEAL,     /* appeal ID A                -> id, appeal       */
  TRACE_CAP         /* cap ID K                   -> id, cap          */
} trace_kind;

typedef struct trace_cmd {
  trace_kind kind;
  uint64_t id;
  /* Coordinates, radius and appeal: decimal floats (no hex float), rounded
     once to float as strtof does (so a value out of float range becomes
     infinite, which the API rejects). */
  float x, y, radius, appeal;
  uint32_t cap;    /* TRACE_CAP: 0 .. UINT32_MAX, decimal digits only */
  uint32_t period; /* TRACE_MOVE_EVERY: 1 .. UINT32_MAX, digits only */
  /* add's FLAGS: AOI_WATCHER | AOI_MARKER, or 0 when FLAGS is not one of
     W, M, WM (an `invalid` line, not a `syntax` one). */
  unsigned flags;
  uint32_t layers, interest; /* default 0xffffffff for add */
  /* Config values, as parsed (finite and in range, else a syntax error);
     for TRACE_MOVE_EVERY, v[0] is D (>= 0). */
  double v[4];
  int moves;       /* TRACE_MOVES: 1 on, 0 off */
  aoi_shape shape; /* TRACE_SHAPE */
} trace_cmd;

/*
 * Parses one line (without its newline; it may end in '\r'). Returns 0 and
 * fills *cmd, or -1 for a `syntax` error: unknown command, wrong number of
 * fields, a float that is not a decimal float (docs/trace-format.md, Numbers: no
 * hex float, no digit separator), an id that is not decimal digits only up to
 * UINT64_MAX, a mask that is not a 32-bit decimal or 0x hex, a cap or a
 * period that is not decimal digits only within its range, or a config
 * value that is not finite or out of range. Whether a config line comes
 * after the first add, and whether a move-every line fits the ones before
 * it (trace_add_move_band), is for the caller to decide. `line` is not
 * modified.
 */
int trace_parse_line(const char *line, trace_cmd *cmd);

/* Whether a command kind is a config line (world .. move-every). */
int trace_is_config(trace_kind kind);

/*
 * Appends a parsed TRACE_MOVE_EVERY line to config->move_bands. Returns 0,
 * or -1 (a `syntax` error, config unchanged) when the config already holds
 * AOI_MAX_MOVE_BANDS bands or when D, as stored (a float), is not strictly
 * above the last band's distance.
 */
int trace_add_move_band(aoi_config *config, const trace_cmd *cmd);

/* Applies a parsed config line (world .. move-every) to `config`: 0, or
   -1 (`syntax`, config unchanged) for a move-every line that does not fit
   those before it (trace_add_move_band). */
int trace_apply_config(aoi_config *config, const trace_cmd *cmd);

/* The trace's code (`exists`, `noent`, `invalid`) of an API error a line
   can cause; NULL for any other. */
const char *trace_error_code(int code);

/* Writes event `e` of `watcher` as its output line, newline included
   (docs/trace-format.md, Output), into buf; returns its length. 160 bytes
   always suffice. */
int trace_format_event(char *buf, size_t size, uint64_t watcher,
                       const aoi_event *e);

#endif /* AOI_TRACE_H */
