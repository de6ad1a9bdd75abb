/*
 * util.c: the few helpers every file of aoi-bench uses (bench.h): fatal
 * errors, checked allocation, the clock, the progress line.
 *
 * The progress line is written on stderr only when stderr is a terminal, at
 * most every 100 ms, and is erased before anything else goes to stderr.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty */

#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int progress_tty = -1; /* unknown until first used */
static int progress_shown;
static uint64_t progress_last_ns;

void bench_progress(const char *format, ...)
{
  if (progress_tty < 0)
    progress_tty = isatty(2);
  if (!progress_tty)
    return;
  uint64_t now = bench_now_ns();
  if (progress_shown && now - progress_last_ns < 100000000)
    return;
  progress_last_ns = now;
  va_list args;
  va_start(args, format);
  fputs("\r\033[K", stderr);
  vfprintf(stderr, format, args);
  va_end(args);
  fflush(stderr);
  progress_shown = 1;
}

void bench_progress_clear(void)
{
  if (!progress_shown)
    return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  progress_shown = 0;
}

void bench_die(const char *format, ...)
{
  bench_progress_clear();
  va_list args;
  va_start(args, format);
  fputs("aoi-bench: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  exit(BENCH_EXIT_FAIL);
}

void *bench_calloc(size_t count, size_t size)
{
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (p == NULL)
    bench_die("out of memory (%zu x %zu bytes)", count, size);
  return p;
}

void *bench_realloc(void *p, size_t count, size_t size)
{
  if (size != 0 && count > SIZE_MAX / size)
    bench_die("out of memory (%zu x %zu bytes)", count, size);
  size_t bytes = count * size;
  void *q = realloc(p, bytes ? bytes : 1);
  if (q == NULL)
    bench_die("out of memory (%zu bytes)", bytes);
  return q;
}

uint64_t bench_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}
