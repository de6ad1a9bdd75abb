/*
 * replay_mpi.h: replay_run's twin for a world spread over the ranks of
 * MPI_COMM_WORLD (replay_mpi.c; built with -DAOI_MPI=ON). Every rank
 * calls it between MPI_Init and MPI_Finalize; rank 0 reads `in` and
 * writes `out` and `err`, which must print what replay_run prints for the
 * same trace. options->threads and shards configure each rank's world;
 * worlds, run and async are not used. Returns the same exit status on
 * every rank.
 */
#ifndef AOI_REPLAY_MPI_H
#define AOI_REPLAY_MPI_H

#include <stdio.h>

#include "replay.h"

int replay_mpi_run(FILE *in, const char *name, FILE *out, FILE *err,
                   const replay_options *options);

#endif /* AOI_REPLAY_MPI_H */
