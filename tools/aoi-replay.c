/*
 * aoi-replay: applies a trace (docs/trace-format.md) to one world, or to K
 * worlds side by side, through the public API and prints, after every
 * `tick`, the events of every watcher.
 *
 * usage: aoi-replay [--threads N] [--shards M] [--worlds K]
 *                   [--run own|pool|caller] [--async] [--mpi] FILE|-
 *
 * Built with -DAOI_MPI=ON and run under mpirun with more than one rank
 * (or given --mpi), it replays the trace on one world spread over the
 * ranks (replay_mpi_run, replay_mpi.c); rank 0 prints.
 *
 * This file owns the command line only: the options (USAGE and HELP say
 * what each does), AOI_THREADS (used when --threads is not given), opening
 * the trace and buffering standard output. The replay itself is
 * replay_run (replay.c).
 *
 * Exit status: 0 when every line applied, 1 when a line was rejected, 2 when
 * the trace could not be read (bad usage, unreadable file, aoi_create
 * failed), the library failed for want of memory or threads, or a world
 * printed other bytes than the first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#ifdef AOI_MPI
#include <mpi.h>

#include "replay_mpi.h"
#endif

/* --worlds' limit (HELP says it too): the worlds are made at once, each
   with its lanes. */
#define MAX_WORLDS 1024u
#define USAGE                                                                 \
  "usage: aoi-replay [--threads N] [--shards M] [--worlds K]\n"               \
  "                  [--run own|pool|caller] [--async] [--mpi] FILE|-\n"
#define HELP                                                                  \
  "Replays a trace (docs/trace-format.md) from FILE, or - for standard\n"     \
  "input, and prints every tick's events; the output is the same for\n"       \
  "every option below.\n"                                                     \
  "\n"                                                                        \
  "  --threads N   lanes of each world, and the pool's threads with\n"        \
  "                --run pool (default AOI_THREADS, else 0: the library's\n"  \
  "                default)\n"                                                \
  "  --shards M    shards of each world (default 0: one per lane)\n"          \
  "  --worlds K    replay the trace on K worlds at once (1 to 1024,\n"        \
  "                default 1), ticked by one aoi_tick_many a tick; print\n"   \
  "                the first world's output after checking that every\n"      \
  "                world printed the same bytes and rejected the same\n"      \
  "                lines\n"                                                   \
  "  --run HOW     own: each world on threads of its own (default for one\n"  \
  "                world); pool: every world on one shared pool (default\n"   \
  "                for several); caller: on the thread that ticks them\n"     \
  "  --async       tick with aoi_tick_many_begin and aoi_tick_many_end\n"     \
  "  --mpi         (an -DAOI_MPI=ON build) one world over the MPI ranks\n"    \
  "                even with one rank; more than one rank implies it:\n"    \
  "                each rank's world has --threads lanes and --shards\n"     \
  "                shards, rank 0 reads the trace and prints\n"              \
  "\n"                                                                        \
  "One world of its own without --async ticks with aoi_tick; every other\n"   \
  "setting with aoi_tick_many. Exit status: 0 when every line applied, 1\n"   \
  "when a line was rejected, 2 when the trace could not be replayed or a\n"   \
  "world differed from the first (the message names it and its first\n"       \
  "differing line).\n"
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
  replay_options options = {0};
  unsigned threads = 0;
  int threads_given = 0, run_given = 0, mpi = 0;
#ifdef AOI_MPI
  MPI_Init(&argc, &argv);
  int ranks = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  mpi = ranks > 1;
#endif

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(USAGE "\n" HELP, stdout);
      return 0;
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      if (parse_count(argv[++i], &threads) != 0)
        usage_exit();
      threads_given = 1;
    } else if (strcmp(argv[i], "--shards") == 0 && i + 1 < argc) {
      if (parse_count(argv[++i], &options.shards) != 0)
        usage_exit();
    } else if (strcmp(argv[i], "--worlds") == 0 && i + 1 < argc) {
      if (parse_count(argv[++i], &options.worlds) != 0 ||
          options.worlds == 0 || options.worlds > MAX_WORLDS)
        usage_exit();
    } else if (strcmp(argv[i], "--run") == 0 && i + 1 < argc) {
      const char *how = argv[++i];
      if (strcmp(how, "own") == 0)
        options.run = AOI_RUN_OWN;
      else if (strcmp(how, "pool") == 0)
        options.run = AOI_RUN_POOL;
      else if (strcmp(how, "caller") == 0)
        options.run = AOI_RUN_CALLER;
      else
        usage_exit();
      run_given = 1;
    } else if (strcmp(argv[i], "--async") == 0) {
      options.async = 1;
    } else if (strcmp(argv[i], "--mpi") == 0) {
      mpi = 1;
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

  options.threads = threads;
  if (options.worlds == 0)
    options.worlds = 1;
  if (!run_given)
    options.run = options.worlds > 1 ? AOI_RUN_POOL : AOI_RUN_OWN;

#ifdef AOI_MPI
  if (mpi) {
    FILE *min = stdin;
    if (rank == 0 && strcmp(path, "-") != 0 && (min = fopen(path, "r")) == NULL) {
      fprintf(stderr, "aoi-replay: %s: %s\n", path, strerror(errno));
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0)
      setvbuf(stdout, output_buffer, _IOFBF, sizeof output_buffer);
    int status = replay_mpi_run(min, path, stdout, stderr, &options);
    if (min != stdin)
      fclose(min);
    fflush(stdout);
    MPI_Finalize();
    return status;
  }
#endif
  if (mpi) {
    fputs("aoi-replay: --mpi needs a build with -DAOI_MPI=ON\n", stderr);
    return 2;
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
  int status = replay_run(in, path, stdout, stderr, &options);
  if (in != stdin)
    fclose(in);
#ifdef AOI_MPI
  fflush(stdout);
  MPI_Finalize();
#endif
  return status;
}
