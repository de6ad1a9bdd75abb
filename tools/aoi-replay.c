/*
 * aoi-replay: applies a trace (docs/trace-format.md) to one world through the
 * public API and prints, after every `tick`, the events of every watcher.
 *
 * usage: aoi-replay [--threads N] [--shards M] FILE|-
 *
 * This file owns the command line only: the options, AOI_THREADS (used when
 * --threads is not given), opening the trace and buffering standard output.
 * The replay itself is replay_run (replay.c).
 *
 * Exit status: 0 when every line applied, 1 when a line was rejected, 2 when
 * the trace could not be read (bad usage, unreadable file, aoi_create
 * failed) or the library failed for want of memory or threads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define USAGE "usage: aoi-replay [--threads N] [--shards M] FILE|-\n"
#define OUTPUT_BUFFER_SIZE (1u << 20)

_Noreturn static void usage_exit(void) {
  fputs(USAGE, stderr);
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

int main(int argc, char **argv) {
  static char output_buffer[OUTPUT_BUFFER_SIZE];
  const char *path = NULL;
  unsigned threads = 0, shards = 0;
  int threads_given = 0;

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      if (parse_count(argv[++i], &threads) != 0)
        usage_exit();
      threads_given = 1;
    } else if (strcmp(argv[i], "--shards") == 0 && i + 1 < argc) {
      if (parse_count(argv[++i], &shards) != 0)
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
    if (env != NULL && *env != '\0' && parse_count(env, &threads) != 0) {
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
  int status = replay_run(in, path, stdout, stderr, threads, shards);
  if (in != stdin)
    fclose(in);
  return status;
}
