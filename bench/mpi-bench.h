/* mpi-bench.h: aoi-bench --mpi (mpi-bench.c), in a -DAOI_MPI=ON build. */
#ifndef AOI_BENCH_MPI_H
#define AOI_BENCH_MPI_H

/* The MPI run: argv[0] is "--mpi", its options follow. Calls MPI_Init
   and MPI_Finalize; returns the exit status. */
int mpi_bench_main(int argc, char **argv);

#endif /* AOI_BENCH_MPI_H */
