/*
 * trace.c: the line parser of the aoi-replay trace format (docs/trace-format.md).
 *
 * It owns the syntax only: which words are commands, how many fields each
 * takes and how a field is read as an id, a float or a mask. It keeps no
 * state, does no I/O and never calls the library, so aoi-replay, the model
 * and the fuzz targets read a trace alike. Rules it keeps:
 *
 * - fields are runs of characters other than space and tab; leading and
 *   trailing blanks and one final '\r' are ignored; a line whose first field
 *   starts with '#', or that has no field, is TRACE_NONE;
 * - an id is 1+ decimal digits, at most UINT64_MAX; a cap (K) or a period
 *   (P) is 1+ decimal digits, at most UINT32_MAX (a period >= 1); a mask
 *   is 1+ decimal digits or 0x/0X and 1+ hex digits, at most 0xffffffff;
 * - a float is a decimal: an optional sign, then digits with at most one
 *   '.' (at least one digit in all), then an optional exponent 'e'/'E', an
 *   optional sign and 1+ digits; or, after the optional sign, "nan", "inf"
 *   or "infinity" in any case. Nothing else: no hex float, no "nan(...)",
 *   no digit separator, no blank inside. The scanner checks that grammar,
 *   then strtof rounds the text once to the nearest float, so "nan", "inf"
 *   or "1e39" are numbers here and the API rejects them;
 * - a config value must be finite (the world stores floats), and the stored
 *   v[] is that float; max-radius, hysteresis and a move-every D >= 0, a
 *   cell size > 0. Whether a move-every line fits those before it (at most
 *   8, each D above the last) is trace_add_move_band's to say;
 * - *cmd is written only on success.
 */
#include "trace.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* add takes the most fields: the word, 5 required and 2 optional. One more
   slot tells "too many" from "exactly the most". */
#define TRACE_MAX_FIELDS 9

typedef struct trace_field {
  const char *start;
  size_t length;
} trace_field;

static int is_blank(char c) { return c == ' ' || c == '\t'; }

static int field_is(const trace_field *field, const char *word) {
  size_t length = strlen(word);
  return field->length == length && memcmp(field->start, word, length) == 0;
}

/* Splits `line` into at most TRACE_MAX_FIELDS fields; returns how many were
   found, TRACE_MAX_FIELDS meaning "that many or more". */
static int split_fields(const char *line, trace_field *fields) {
  size_t end = strlen(line);
  int count = 0;
  size_t i = 0;

  if (end > 0 && line[end - 1] == '\r')
    end--;
  while (count < TRACE_MAX_FIELDS) {
    while (i < end && is_blank(line[i]))
      i++;
    if (i == end)
      break;
    fields[count].start = line + i;
    while (i < end && !is_blank(line[i]))
      i++;
    fields[count].length = (size_t)(line + i - fields[count].start);
    count++;
  }
  return count;
}

/* 1+ decimal digits, at most `max`. */
static int parse_digits(const trace_field *field, uint64_t max,
                        uint64_t *out) {
  uint64_t value = 0;

  if (field->length == 0)
    return -1;
  for (size_t i = 0; i < field->length; i++) {
    char c = field->start[i];
    if (c < '0' || c > '9')
      return -1;
    unsigned digit = (unsigned)(c - '0');
    if (value > (max - digit) / 10)
      return -1;
    value = value * 10 + digit;
  }
  *out = value;
  return 0;
}

static int parse_id(const trace_field *field, uint64_t *out) {
  return parse_digits(field, UINT64_MAX, out);
}

/* A cap or a period: decimal digits only, at most UINT32_MAX. */
static int parse_u32(const trace_field *field, uint32_t *out) {
  uint64_t value;

  if (parse_digits(field, UINT32_MAX, &value) != 0)
    return -1;
  *out = (uint32_t)value;
  return 0;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static int parse_mask(const trace_field *field, uint32_t *out) {
  const char *s = field->start;
  size_t length = field->length;
  uint64_t value = 0;

  if (length > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    for (size_t i = 2; i < length; i++) {
      int digit = hex_digit(s[i]);
      if (digit < 0)
        return -1;
      value = value * 16 + (unsigned)digit;
      if (value > UINT32_MAX)
        return -1;
    }
  } else {
    if (length == 0)
      return -1;
    for (size_t i = 0; i < length; i++) {
      if (s[i] < '0' || s[i] > '9')
        return -1;
      value = value * 10 + (unsigned)(s[i] - '0');
      if (value > UINT32_MAX)
        return -1;
    }
  }
  *out = (uint32_t)value;
  return 0;
}

/* Whether the field, from `i` on, is `word` in any case (ASCII). */
static int rest_is_word(const trace_field *field, size_t i, const char *word) {
  size_t length = strlen(word);

  if (field->length - i != length)
    return 0;
  for (size_t k = 0; k < length; k++) {
    char c = field->start[i + k];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (c != word[k])
      return 0;
  }
  return 1;
}

static size_t skip_digits(const trace_field *field, size_t i) {
  while (i < field->length && field->start[i] >= '0' && field->start[i] <= '9')
    i++;
  return i;
}

/* Whether the whole field is a decimal float of the trace format (see the
   top of this file). strtof alone would also take hex floats, "nan(...)"
   and, in another locale, another radix character. */
static int is_decimal_float(const trace_field *field) {
  size_t i = 0;

  if (i < field->length && (field->start[i] == '+' || field->start[i] == '-'))
    i++;
  if (rest_is_word(field, i, "nan") || rest_is_word(field, i, "inf") ||
      rest_is_word(field, i, "infinity"))
    return 1;
  size_t first = i;
  i = skip_digits(field, i);
  size_t digits = i - first;
  if (i < field->length && field->start[i] == '.') {
    size_t fraction = i + 1;
    i = skip_digits(field, fraction);
    digits += i - fraction;
  }
  if (digits == 0)
    return 0;
  if (i < field->length && (field->start[i] == 'e' || field->start[i] == 'E')) {
    i++;
    if (i < field->length &&
        (field->start[i] == '+' || field->start[i] == '-'))
      i++;
    size_t exponent = i;
    i = skip_digits(field, exponent);
    if (i == exponent)
      return 0;
  }
  return i == field->length;
}

/* A decimal float, rounded once to float by strtof (an overflow is an
   infinity). The characters that end a field (blank, '\r', NUL) cannot
   continue a number, so strtof stops at the field's end; the check that it
   did is only a guard. */
static int parse_float(const trace_field *field, float *out) {
  char *end;

  if (!is_decimal_float(field))
    return -1;
  float value = strtof(field->start, &end);
  if (end != field->start + field->length)
    return -1;
  *out = value;
  return 0;
}

/* A config value: a finite float. Returns it widened to double. */
static int parse_config_value(const trace_field *field, double *out) {
  float value;

  if (parse_float(field, &value) != 0 || !isfinite(value))
    return -1;
  *out = (double)value;
  return 0;
}

static unsigned parse_flags(const trace_field *field) {
  if (field_is(field, "W"))
    return AOI_WATCHER;
  if (field_is(field, "M"))
    return AOI_MARKER;
  if (field_is(field, "WM"))
    return AOI_WATCHER | AOI_MARKER;
  return 0;
}

static int parse_add(const trace_field *fields, int count, trace_cmd *cmd) {
  if (count != 6 && count != 8)
    return -1;
  if (parse_id(&fields[1], &cmd->id) != 0 ||
      parse_float(&fields[2], &cmd->x) != 0 ||
      parse_float(&fields[3], &cmd->y) != 0 ||
      parse_float(&fields[4], &cmd->radius) != 0)
    return -1;
  cmd->flags = parse_flags(&fields[5]);
  cmd->layers = UINT32_MAX;
  cmd->interest = UINT32_MAX;
  if (count == 8 && (parse_mask(&fields[6], &cmd->layers) != 0 ||
                     parse_mask(&fields[7], &cmd->interest) != 0))
    return -1;
  cmd->kind = TRACE_ADD;
  return 0;
}

static int parse_shape(const trace_field *fields, int count, trace_cmd *cmd) {
  if (count == 2 && field_is(&fields[1], "circle")) {
    cmd->shape = AOI_SHAPE_CIRCLE;
  } else if (count == 2 && field_is(&fields[1], "square")) {
    cmd->shape = AOI_SHAPE_SQUARE;
  } else if (count == 3 && field_is(&fields[1], "cells")) {
    if (parse_config_value(&fields[2], &cmd->v[0]) != 0 || !(cmd->v[0] > 0))
      return -1;
    cmd->shape = AOI_SHAPE_CELLS;
  } else {
    return -1;
  }
  cmd->kind = TRACE_SHAPE;
  return 0;
}

static int parse_fields(const trace_field *fields, int count, trace_cmd *cmd) {
  const trace_field *word = &fields[0];

  if (field_is(word, "add"))
    return parse_add(fields, count, cmd);
  if (field_is(word, "move")) {
    if (count != 4 || parse_id(&fields[1], &cmd->id) != 0 ||
        parse_float(&fields[2], &cmd->x) != 0 ||
        parse_float(&fields[3], &cmd->y) != 0)
      return -1;
    cmd->kind = TRACE_MOVE;
    return 0;
  }
  if (field_is(word, "radius")) {
    if (count != 3 || parse_id(&fields[1], &cmd->id) != 0 ||
        parse_float(&fields[2], &cmd->radius) != 0)
      return -1;
    cmd->kind = TRACE_RADIUS;
    return 0;
  }
  if (field_is(word, "layers")) {
    if (count != 4 || parse_id(&fields[1], &cmd->id) != 0 ||
        parse_mask(&fields[2], &cmd->layers) != 0 ||
        parse_mask(&fields[3], &cmd->interest) != 0)
      return -1;
    cmd->kind = TRACE_LAYERS;
    return 0;
  }
  if (field_is(word, "remove")) {
    if (count != 2 || parse_id(&fields[1], &cmd->id) != 0)
      return -1;
    cmd->kind = TRACE_REMOVE;
    return 0;
  }
  if (field_is(word, "tick")) {
    if (count != 1)
      return -1;
    cmd->kind = TRACE_TICK;
    return 0;
  }
  if (field_is(word, "world")) {
    if (count != 5)
      return -1;
    for (int i = 0; i < 4; i++)
      if (parse_config_value(&fields[1 + i], &cmd->v[i]) != 0)
        return -1;
    cmd->kind = TRACE_WORLD;
    return 0;
  }
  if (field_is(word, "max-radius") || field_is(word, "hysteresis")) {
    if (count != 2 || parse_config_value(&fields[1], &cmd->v[0]) != 0 ||
        !(cmd->v[0] >= 0))
      return -1;
    cmd->kind = field_is(word, "max-radius") ? TRACE_MAX_RADIUS
                                             : TRACE_HYSTERESIS;
    return 0;
  }
  if (field_is(word, "moves")) {
    if (count != 2)
      return -1;
    if (field_is(&fields[1], "on"))
      cmd->moves = 1;
    else if (field_is(&fields[1], "off"))
      cmd->moves = 0;
    else
      return -1;
    cmd->kind = TRACE_MOVES;
    return 0;
  }
  if (field_is(word, "shape"))
    return parse_shape(fields, count, cmd);
  if (field_is(word, "move-every")) {
    if (count != 3 || parse_config_value(&fields[1], &cmd->v[0]) != 0 ||
        !(cmd->v[0] >= 0) || parse_u32(&fields[2], &cmd->period) != 0 ||
        cmd->period == 0)
      return -1;
    cmd->kind = TRACE_MOVE_EVERY;
    return 0;
  }
  if (field_is(word, "appeal")) {
    if (count != 3 || parse_id(&fields[1], &cmd->id) != 0 ||
        parse_float(&fields[2], &cmd->appeal) != 0)
      return -1;
    cmd->kind = TRACE_APPEAL;
    return 0;
  }
  if (field_is(word, "cap")) {
    if (count != 3 || parse_id(&fields[1], &cmd->id) != 0 ||
        parse_u32(&fields[2], &cmd->cap) != 0)
      return -1;
    cmd->kind = TRACE_CAP;
    return 0;
  }
  return -1;
}

int trace_parse_line(const char *line, trace_cmd *cmd) {
  trace_field fields[TRACE_MAX_FIELDS];
  trace_cmd parsed;

  memset(&parsed, 0, sizeof parsed);
  parsed.kind = TRACE_NONE;
  int count = split_fields(line, fields);
  if (count > 0 && fields[0].start[0] != '#' &&
      parse_fields(fields, count, &parsed) != 0)
    return -1;
  *cmd = parsed;
  return 0;
}

int trace_is_config(trace_kind kind) {
  return kind >= TRACE_WORLD && kind <= TRACE_MOVE_EVERY;
}

int trace_add_move_band(aoi_config *config, const trace_cmd *cmd) {
  unsigned count = config->move_band_count;
  float distance = (float)cmd->v[0];

  if (count >= AOI_MAX_MOVE_BANDS ||
      (count > 0 && !(distance > config->move_bands[count - 1].distance)))
    return -1;
  config->move_bands[count].distance = distance;
  config->move_bands[count].period = cmd->period;
  config->move_band_count = count + 1;
  return 0;
}

int trace_apply_config(aoi_config *config, const trace_cmd *cmd) {
  switch (cmd->kind) {
  case TRACE_WORLD: {
    float x0 = (float)cmd->v[0], y0 = (float)cmd->v[1];
    float x1 = (float)cmd->v[2], y1 = (float)cmd->v[3];
    config->min_x = x0 < x1 ? x0 : x1;
    config->max_x = x0 < x1 ? x1 : x0;
    config->min_y = y0 < y1 ? y0 : y1;
    config->max_y = y0 < y1 ? y1 : y0;
    break;
  }
  case TRACE_MAX_RADIUS:
    config->max_radius = (float)cmd->v[0];
    break;
  case TRACE_HYSTERESIS:
    config->hysteresis = (float)cmd->v[0];
    break;
  case TRACE_MOVES:
    config->move_events = cmd->moves;
    break;
  case TRACE_SHAPE:
    config->shape = cmd->shape;
    if (cmd->shape == AOI_SHAPE_CELLS)
      config->cell_size = (float)cmd->v[0];
    break;
  case TRACE_MOVE_EVERY:
    return trace_add_move_band(config, cmd);
  default:
    break;
  }
  return 0;
}

const char *trace_error_code(int code) {
  switch (code) {
  case AOI_EEXIST:
    return "exists";
  case AOI_ENOENT:
    return "noent";
  case AOI_ECOORD:
  case AOI_ERADIUS:
  case AOI_EFLAGS:
  case AOI_EINVAL:
    return "invalid";
  default:
    return NULL;
  }
}

int trace_format_event(char *buf, size_t size, uint64_t watcher,
                       const aoi_event *e) {
  if (e->kind == AOI_LEAVE)
    return snprintf(buf, size, "%" PRIu64 " leave %" PRIu64 "\n", watcher,
                    e->id);
  return snprintf(buf, size, "%" PRIu64 " %s %" PRIu64 " %.9g %.9g\n",
                  watcher, e->kind == AOI_ENTER ? "enter" : "move", e->id,
                  (double)e->x, (double)e->y);
}
