! f_mpi.f90 — a Fortran MPI program (use mpi), traced from an installed perfvar by relinking
! (perfvar::mpi) and unchanged by perfvar-run.
program f_mpi
    use mpi
    implicit none
    integer :: rank, nranks, ierr, v, total, peer
    integer :: status(MPI_STATUS_SIZE)
    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
    ! A message between neighbours and a reduction: point-to-point and collective records.
    peer = mod(rank + 1, nranks)
    call MPI_Sendrecv(rank, 1, MPI_INTEGER, peer, 7, v, 1, MPI_INTEGER, &
                      mod(rank - 1 + nranks, nranks), 7, MPI_COMM_WORLD, status, ierr)
    call MPI_Allreduce(v, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (total /= nranks * (nranks - 1) / 2) error stop 1
    if (rank == 0) print '(a,i0)', 'f_mpi: sum ', total
    call MPI_Finalize(ierr)
end program f_mpi
