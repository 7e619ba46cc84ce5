/* fortran_args.c — reading Fortran MPI arguments without changing them (see runtime.h).
 *
 * Statuses: where the caller passed MPI_STATUS(ES)_IGNORE, the MPI gets perfvar's own storage so the
 * real source and tag of a receive are known; the statuses are decoded after the call (f2c for
 * INTEGER statuses and Open MPI's TYPE(MPI_Status), which has the same layout; f082c for MPICH's).
 * Sentinels are the MPI's own symbols, read at call time because MPICH only sets its Fortran ones
 * (MPI_F_STATUS_IGNORE, MPIR_F_MPI_IN_PLACE) when its Fortran layer initialises.
 * Called on the traced thread inside a wrapper; no shared state.
 */
#include "runtime.h"

#include <stdlib.h>

#ifdef MPICH_VERSION
#define PV_F08_STATUS_IS_C_LAYOUT 1 /* MPICH: TYPE(MPI_Status) is MPI_F08_status */
#endif

#ifdef OPEN_MPI
/* Open MPI binds MPI_IN_PLACE of all Fortran bindings to this common symbol (weak: link-time safe). */
extern char mpi_fortran_in_place_ __attribute__((weak));
#endif
#ifdef MPICH_VERSION
extern void *MPIR_F_MPI_IN_PLACE __attribute__((weak)); /* set by MPICH's Fortran initialisation */
#endif

/* Fortran 2018 C descriptor: only its first member, the base address, is read. */
typedef struct { void *base_addr; } pv_cfi_head;

int pv_f_is_in_place(const void *buf, pv_fbinding b)
{
    if (b == PV_FB_F08_DESC) buf = buf ? ((const pv_cfi_head *)buf)->base_addr : NULL;
#ifdef OPEN_MPI
    return &mpi_fortran_in_place_ != NULL && buf == (const void *)&mpi_fortran_in_place_;
#elif defined(MPICH_VERSION)
    if (b == PV_FB_F77) return &MPIR_F_MPI_IN_PLACE != NULL && buf == MPIR_F_MPI_IN_PLACE;
    return buf == (const void *)&MPIR_F08_MPI_IN_PLACE;
#else
    (void)buf;
    return 0;
#endif
}

static int is_status_ignore(const void *status, pv_fbinding b, int array)
{
#ifdef PV_F08_STATUS_IS_C_LAYOUT
    if (b != PV_FB_F77)
        return status == (const void *)(array ? MPI_F08_STATUSES_IGNORE : MPI_F08_STATUS_IGNORE);
#endif
    (void)b;
    return status == (const void *)(array ? MPI_F_STATUSES_IGNORE : MPI_F_STATUS_IGNORE);
}

/* Size of one Fortran status of binding b, in bytes. */
static size_t status_bytes(pv_fbinding b)
{
#ifdef PV_F08_STATUS_IS_C_LAYOUT
    if (b != PV_FB_F77) return sizeof(MPI_F08_status);
#endif
    (void)b; /* MPI_STATUS_SIZE integers: the MPI's C status rounded up to MPI_Fint */
    return (sizeof(MPI_Status) + sizeof(MPI_Fint) - 1) / sizeof(MPI_Fint) * sizeof(MPI_Fint);
}

static int decode(const void *f, MPI_Status *st, pv_fbinding b)
{
#ifdef PV_F08_STATUS_IS_C_LAYOUT
    if (b != PV_FB_F77) return PMPI_Status_f082c((const MPI_F08_status *)f, st);
#endif
    (void)b;
    return PMPI_Status_f2c((const MPI_Fint *)f, st);
}

void *pv_f_status_arg(pv_call *c, void *status, pv_fbinding b)
{
    _Static_assert(sizeof c->own_fstatuses / PV_INLINE_REQUESTS >= sizeof(MPI_Status),
                   "room for one status of any binding");
    return is_status_ignore(status, b, 0) ? (void *)c->own_fstatuses : status;
}

void pv_f_status_done(pv_call *c, pv_args *a, const void *status_arg, pv_fbinding b)
{
    if (decode(status_arg, &c->own_status, b) == MPI_SUCCESS)
        a->status = &c->own_status, a->has_status = 1;
}

void *pv_f_statuses_arg(pv_call *c, void *statuses, int n, pv_fbinding b)
{
    c->heap_fstatuses = NULL;
    if (!is_status_ignore(statuses, b, 1) || n <= 0) return statuses;
    if ((size_t)n * status_bytes(b) <= sizeof c->own_fstatuses) return c->own_fstatuses;
    c->heap_fstatuses = malloc((size_t)n * status_bytes(b));
    return c->heap_fstatuses ? (void *)c->heap_fstatuses : statuses;
}

const MPI_Status *pv_f_status_at(const void *statuses_arg, int i, pv_fbinding b, MPI_Status *st)
{
    if (is_status_ignore(statuses_arg, b, 1)) return NULL;
    return decode((const char *)statuses_arg + (size_t)i * status_bytes(b), st, b) == MPI_SUCCESS ? st : NULL;
}

void pv_f_statuses_done(pv_call *c, pv_args *a, const void *statuses_arg, int n, pv_fbinding b)
{
    if (is_status_ignore(statuses_arg, b, 1) || n <= 0) return;
    MPI_Status *st = c->own_statuses;
    if (n > PV_INLINE_REQUESTS && !(st = c->heap_statuses = malloc((size_t)n * sizeof *st))) return;
    for (int i = 0; i < n; i++)
        if (decode((const char *)statuses_arg + (size_t)i * status_bytes(b), &st[i], b) != MPI_SUCCESS)
            return;
    a->statuses = st, a->has_statuses = 1;
}
