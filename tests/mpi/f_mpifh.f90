! f_mpifh.f90 — calls perfvar's wrapped MPI functions from Fortran through mpif.h (the oldest
! binding), with MPI_ANY_SOURCE, MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE and MPI_IN_PLACE; prints a
! checksum so runs with and without perfvar can be compared. Per rank: Bcast 1, Barrier 1, Send 1,
! Recv 1, Isend 2, Irecv 2, Wait 1, Waitall 1, Sendrecv 1, Reduce 1, Allreduce 1, Allgather 1.
program f_mpifh
    implicit none
    include 'mpif.h'
    integer :: ierr, rank, nranks, right, left, param, req(4), all(64)
    double precision :: out, inv, halo(2), mine(2), sr, v, total, check

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
    right = mod(rank + 1, nranks)
    left = mod(rank + nranks - 1, nranks)
    check = 0
    param = 0
    if (rank == 0) param = 42
    call MPI_Bcast(param, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)

    out = rank + 0.5d0
    if (mod(rank, 2) == 0) then
        call MPI_Send(out, 1, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, ierr)
        call MPI_Recv(inv, 1, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE, ierr)
    else
        call MPI_Recv(inv, 1, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE, ierr)
        call MPI_Send(out, 1, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, ierr)
    end if
    check = check + inv

    mine = [rank*2d0, rank*3d0]
    call MPI_Irecv(halo(1), 1, MPI_DOUBLE_PRECISION, left, 11, MPI_COMM_WORLD, req(1), ierr)
    call MPI_Irecv(halo(2), 1, MPI_DOUBLE_PRECISION, right, 12, MPI_COMM_WORLD, req(2), ierr)
    call MPI_Isend(mine(1), 1, MPI_DOUBLE_PRECISION, right, 11, MPI_COMM_WORLD, req(3), ierr)
    call MPI_Isend(mine(2), 1, MPI_DOUBLE_PRECISION, left, 12, MPI_COMM_WORLD, req(4), ierr)
    call MPI_Wait(req(1), MPI_STATUS_IGNORE, ierr)
    call MPI_Waitall(3, req(2:4), MPI_STATUSES_IGNORE, ierr)
    check = check + halo(1) + halo(2)

    call MPI_Sendrecv(out, 1, MPI_DOUBLE_PRECISION, right, 13, sr, 1, MPI_DOUBLE_PRECISION, left, 13, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    check = check + sr
    v = rank + 1d0
    call MPI_Reduce(v, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    check = check + v
    all = 0
    all(rank + 1) = rank*rank
    call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    check = check + sum(all(1:nranks))
    if (rank == 0) write (*, '(a,i0,a,i0,a,f0.6)') 'f_mpifh: ranks ', nranks, ' param ', param, &
        ' checksum ', check
    call MPI_Finalize(ierr)
end program f_mpifh
