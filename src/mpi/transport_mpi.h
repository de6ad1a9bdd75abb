/* transport_mpi.h: the MPI transport (transport_mpi.c). */
#ifndef AOI_TRANSPORT_MPI_H
#define AOI_TRANSPORT_MPI_H

#include <mpi.h>

#include "transport.h"

/* A transport over a duplicate of `comm`, whose exchanges fail with
   AOI_EPEER after timeout_ms. 0, AOI_ENOMEM or AOI_ESYS. */
int transport_mpi_create(MPI_Comm comm, unsigned timeout_ms, transport **out);

#endif /* AOI_TRANSPORT_MPI_H */
