/*
 * aoi-replay: applies a trace (TRACE_FORMAT.md) to one world through the
 * public API and prints, after every `tick`, the events of every watcher.
 *
 * usage: aoi-replay [--threads N] [--shards M] FILE|-
 *
 * It owns only the glue between trace.c and aoi.h: the config the trace's
 * config lines build, the lazy creation of the world on the first command
 * that is not a config line, the mapping of API error codes to the trace's
 * error codes, and the output format. Config lines are accepted until an
 * `add` has succeeded: before that the world is still empty, so a config
 * line destroys it and the next command creates it again with the new
 * config. A rejected line changes nothing, so a failed `add` does not lock
 * the config.
 *
 * Exit status: 0 when every line applied, 1 when a line was rejected, 2 when
 * the trace could not be read (bad usage, unreadable file, aoi_create
 * failed) or the library failed for want of memory or threads.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aoi.h"
#include "trace.h"

#define USAGE "usage: aoi-replay [--threads N] [--shards M] FILE|-\n"
#define OUTPUT_BUFFER_SIZE (1u << 20)

typedef struct replay {
  aoi_config config;
  aoi_world *world;
  int config_locked; /* an add has succeeded: config lines are syntax */
  unsigned long ticks;
  int rejected;
} replay;

_Noreturn static void usage_exit(void) {
  fputs(USAGE, stderr);
  exit(2);
}

_Noreturn static void fatal(const char *what, int code) {
  fflush(stdout);
  fprintf(stderr, "aoi-replay: %s: %s\n", what, aoi_strerror(code));
  exit(2);
}

/* A non-negative decimal that fits an unsigned; -1 otherwise. */
static int parse_count(const char *text, unsigned *out) {
  unsigned long value = 0;

  if (*text == '\0')
    return -1;
  for (const char *p = text; *p != '\0'; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    value = value * 10 + (unsigned long)(*p - '0');
    if (value > 0xffffffffUL)
      return -1;
  }
  *out = (unsigned)value;
  return 0;
}

static void report(replay *r, unsigned long line, const char *code) {
  fprintf(stderr, "error %lu %s\n", line, code);
  r->rejected = 1;
}

/* The trace code of an API error; exits on the errors a trace cannot
   cause. */
static const char *error_code(int code) {
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
    fatal("operation", code);
    return NULL;
  }
}

static void apply_config(replay *r, const trace_cmd *cmd) {
  aoi_config *config = &r->config;

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
  default:
    break;
  }
}

static aoi_world *world_of(replay *r) {
  if (r->world == NULL) {
    int rc = aoi_create(&r->config, &r->world);
    if (rc != 0)
      fatal("aoi_create", rc);
  }
  return r->world;
}

static void print_events(replay *r) {
  const uint64_t *watchers;
  size_t watcher_count;
  int rc;

  rc = aoi_tick(r->world);
  if (rc != 0)
    fatal("aoi_tick", rc);
  r->ticks++;
  printf("tick %lu\n", r->ticks);
  rc = aoi_pending(r->world, &watchers, &watcher_count);
  if (rc != 0)
    fatal("aoi_pending", rc);
  for (size_t i = 0; i < watcher_count; i++) {
    const aoi_event *events;
    size_t count;
    rc = aoi_drain(r->world, watchers[i], &events, &count);
    if (rc != 0)
      fatal("aoi_drain", rc);
    for (size_t j = 0; j < count; j++) {
      const aoi_event *e = &events[j];
      switch (e->kind) {
      case AOI_LEAVE:
        printf("%" PRIu64 " leave %" PRIu64 "\n", watchers[i], e->id);
        break;
      case AOI_ENTER:
        printf("%" PRIu64 " enter %" PRIu64 " %.9g %.9g\n", watchers[i], e->id,
               (double)e->x, (double)e->y);
        break;
      default:
        printf("%" PRIu64 " move %" PRIu64 " %.9g %.9g\n", watchers[i], e->id,
               (double)e->x, (double)e->y);
        break;
      }
    }
  }
}

/* Applies one line; reports it when it is rejected. */
static void apply_line(replay *r, const char *text, size_t length,
                       unsigned long line) {
  trace_cmd cmd;
  int rc = 0;

  /* A NUL inside the line would hide the rest of it from the parser. */
  if (memchr(text, '\0', length) != NULL || trace_parse_line(text, &cmd) != 0) {
    report(r, line, "syntax");
    return;
  }
  if (cmd.kind == TRACE_NONE)
    return;
  if (trace_is_config(cmd.kind)) {
    if (r->config_locked) {
      report(r, line, "syntax");
      return;
    }
    /* Still empty: recreate it with the new config when next needed. */
    aoi_destroy(r->world);
    r->world = NULL;
    apply_config(r, &cmd);
    return;
  }

  aoi_world *world = world_of(r);
  switch (cmd.kind) {
  case TRACE_ADD:
    rc = aoi_add(world, cmd.id, cmd.x, cmd.y, cmd.radius, cmd.flags,
                 cmd.layers, cmd.interest);
    if (rc == 0)
      r->config_locked = 1;
    break;
  case TRACE_MOVE:
    rc = aoi_move(world, cmd.id, cmd.x, cmd.y);
    break;
  case TRACE_RADIUS:
    rc = aoi_set_radius(world, cmd.id, cmd.radius);
    break;
  case TRACE_LAYERS:
    rc = aoi_set_layers(world, cmd.id, cmd.layers, cmd.interest);
    break;
  case TRACE_REMOVE:
    rc = aoi_remove(world, cmd.id);
    break;
  case TRACE_TICK:
    print_events(r);
    break;
  default:
    break;
  }
  if (rc != 0)
    report(r, line, error_code(rc));
}

int main(int argc, char **argv) {
  static char output_buffer[OUTPUT_BUFFER_SIZE];
  replay r;
  const char *path = NULL;
  int threads_given = 0;

  memset(&r, 0, sizeof r);
  aoi_config_default(&r.config);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      if (parse_count(argv[++i], &r.config.threads) != 0)
        usage_exit();
      threads_given = 1;
    } else if (strcmp(argv[i], "--shards") == 0 && i + 1 < argc) {
      if (parse_count(argv[++i], &r.config.shards) != 0)
        usage_exit();
    } else if (path == NULL && (strcmp(argv[i], "-") == 0 || argv[i][0] != '-')) {
      path = argv[i];
    } else {
      usage_exit();
    }
  }
  if (path == NULL)
    usage_exit();
  if (!threads_given) {
    const char *env = getenv("AOI_THREADS");
    if (env != NULL && *env != '\0' && parse_count(env, &r.config.threads) != 0) {
      fputs("aoi-replay: AOI_THREADS is not a non-negative integer\n", stderr);
      return 2;
    }
  }

  FILE *in = stdin;
  if (strcmp(path, "-") != 0) {
    in = fopen(path, "r");
    if (in == NULL) {
      fprintf(stderr, "aoi-replay: %s: %s\n", path, strerror(errno));
      return 2;
    }
  }
  setvbuf(stdout, output_buffer, _IOFBF, sizeof output_buffer);

  char *text = NULL;
  size_t capacity = 0;
  ssize_t length;
  unsigned long line = 0;
  while ((length = getline(&text, &capacity, in)) >= 0) {
    line++;
    if (length > 0 && text[length - 1] == '\n')
      text[--length] = '\0';
    apply_line(&r, text, (size_t)length, line);
  }
  int read_error = ferror(in);
  free(text);
  if (in != stdin)
    fclose(in);
  aoi_destroy(r.world);
  if (read_error) {
    fflush(stdout);
    fprintf(stderr, "aoi-replay: %s: read error\n", path);
    return 2;
  }
  if (fflush(stdout) != 0)
    return 2;
  return r.rejected ? 1 : 0;
}
