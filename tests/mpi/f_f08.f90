! f_f08.f90 — the calls of f_bindings.F90 through `use mpi_f08`, with MPI_Barrier called without
! the optional ierror. Same per-rank call counts (tests/CMakeLists.txt: F_CALLS).
program f_f08
    use mpi_f08
    implicit none
    integer :: ierr, rank, nranks, right, left, i, blen(1), namelen
    type(MPI_Request) :: req(2)
    type(MPI_Datatype) :: dtype, types(1)
    integer(kind=MPI_ADDRESS_KIND) :: disp(1)
    integer :: sendv, recvv, sum, bc(3), partner, got
    character(len=MPI_MAX_OBJECT_NAME) :: name
    double precision :: check

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
    call MPI_Comm_set_name(MPI_COMM_WORLD, 'perfvar world', ierr)
    call MPI_Comm_get_name(MPI_COMM_WORLD, name, namelen, ierr)
    if (name(1:namelen) /= 'perfvar world' .or. namelen /= 13) stop 'Comm_get_name'
    right = mod(rank + 1, nranks)
    left = mod(rank + nranks - 1, nranks)
    check = 0
    do i = 1, 3
        sendv = 100 * rank + i
        call MPI_Irecv(recvv, 1, MPI_INTEGER, MPI_ANY_SOURCE, i, MPI_COMM_WORLD, req(1), ierr)
        call MPI_Isend(sendv, 1, MPI_INTEGER, right, i, MPI_COMM_WORLD, req(2), ierr)
        call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
        if (recvv /= 100 * left + i) stop 'Irecv'
        check = check + recvv
    end do
    call MPI_Sendrecv(rank, 1, MPI_INTEGER, right, 9, got, 1, MPI_INTEGER, MPI_ANY_SOURCE, 9, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    if (got /= left) stop 'Sendrecv'
    partner = ieor(rank, 1)
    if (mod(rank, 2) == 0) then
        call MPI_Send(rank, 1, MPI_INTEGER, partner, 11, MPI_COMM_WORLD, ierr)
        call MPI_Recv(got, 1, MPI_INTEGER, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
        call MPI_Recv(got, 1, MPI_INTEGER, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        call MPI_Send(rank, 1, MPI_INTEGER, partner, 11, MPI_COMM_WORLD, ierr)
    end if
    if (got /= partner) stop 'Recv'
    sum = rank + 1
    call MPI_Allreduce(MPI_IN_PLACE, sum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (sum /= nranks * (nranks + 1) / 2) stop 'Allreduce'
    bc = 0
    if (rank == 0) bc = (/ 7, 8, 9 /)
    call MPI_Get_address(bc, disp(1), ierr)
    blen(1) = 3
    types(1) = MPI_INTEGER
    call MPI_Type_create_struct(1, blen, disp, types, dtype, ierr)
    call MPI_Type_commit(dtype, ierr)
    call MPI_Bcast(MPI_BOTTOM, 1, dtype, 0, MPI_COMM_WORLD, ierr)
    call MPI_Type_free(dtype, ierr)
    if (bc(3) /= 9) stop 'Bcast'
    call MPI_Barrier(MPI_COMM_WORLD)
    if (rank == 0) print '(a, f12.1, i6)', 'checksum ', check + sum + bc(1), got
    call MPI_Finalize(ierr)
end program f_f08
