! bench_mpi_calls_f.f90 — what perfvar adds to an MPI call made from Fortran (`use mpi`), as the
! difference to the same call made uninstrumented in the same run (a benchmark: it prints, it asserts
! nothing about time). The Fortran twin of bench_mpi_calls.c, same method:
!   linked with perfvar's MPI layer, MPI_TEST enters perfvar's Fortran wrapper (traced), PMPI_TEST
!   goes straight to the MPI library; each block of calls is timed as a whole (system_clock, 64-bit:
!   ns ticks with gfortran), ns per call = block time / calls; one round = a traced and a plain block
!   of each measure, adjacent, their order flipped every round; median over rounds; one warm-up round.
!   The median leaves out the rare block with a trace-buffer flush or a host time slice taken away
!   (bench_mpi_calls.c says more).
! Measures (rank 0's figures): MPI_TEST on MPI_REQUEST_NULL and on an inactive persistent request
! (per call); a 0-byte MPI_IRECV/MPI_ISEND/MPI_WAITALL exchange between the two ranks and an
! MPI_ALLREDUCE of one double (per exchange or step, calls/10 + 1 of them per block, each block
! started by a PMPI_BARRIER so neither rank starts it waiting for the other).
! No fenced clock read here (Fortran has none without C): bench_recorder.py divides by the fenced
! pair measured in the C benchmark's run.
! Output: one `bench-row` line per measure for the driver.
! Usage: mpiexec -n 2 bench_mpi_calls_f [calls per block = 2000] [rounds = 101]
! (PMPI_BARRIER, PMPI_RECV_INIT and PMPI_REQUEST_FREE are not traced: only the timed calls are.)
program bench_mpi_calls_f
    use mpi
    implicit none
    integer :: n, n_comm, rounds, ierr, rank, nranks, b, k, s, inactive, dummy
    character(len=32) :: arg
    ! (round, series): traced/plain pairs: 1/2 null, 3/4 inactive, 5/6 exchange, 7/8 Allreduce
    double precision, allocatable :: t(:, :)

    n = 2000
    rounds = 101
    if (command_argument_count() >= 1) then
        call get_command_argument(1, arg)
        read (arg, *) n
    end if
    if (command_argument_count() >= 2) then
        call get_command_argument(2, arg)
        read (arg, *) rounds
    end if
    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
    if (nranks /= 2 .or. n < 1 .or. rounds < 1) then
        if (rank == 0) write (*, '(a)') 'usage: mpiexec -n 2 bench_mpi_calls_f [calls] [rounds]'
        call MPI_FINALIZE(ierr)
        stop 2
    end if
    ! Made and freed through PMPI: only the timed calls go through perfvar.
    call PMPI_RECV_INIT(dummy, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, inactive, ierr)
    n_comm = n / 10 + 1
    allocate (t(rounds, 8))

    ! Round 0 is the warm-up (into round 1, overwritten). Every series is run from this one
    ! call: an MPI call site reached by two paths would be unwound at every call (perfvar's
    ! call-path keys), which is another measure than the C benchmark's.
    do b = 0, rounds
        ! Traced first in odd rounds, plain first in even ones.
        do k = 1, 8
            s = 2 * ((k + 1) / 2) - 1 + merge(1 - mod(b, 2), mod(b, 2), mod(k, 2) == 1)
            call series(s, max(b, 1))
        end do
    end do
    if (rank == 0) then
        call report('test_null_f', t(:, 1), t(:, 2), n)
        call report('test_inactive_f', t(:, 3), t(:, 4), n)
        call report('ping_f', t(:, 5), t(:, 6), n_comm)
        call report('allreduce_f', t(:, 7), t(:, 8), n_comm)
    end if
    call PMPI_REQUEST_FREE(inactive, ierr)
    call MPI_FINALIZE(ierr)

contains

    ! One block of series s into t(round, s): ns per call (Test) or per exchange / step.
    subroutine series(s, round)
        integer, intent(in) :: s, round
        integer :: req, i, e, peer, reqs(2)
        integer :: nothing(1)
        logical :: flag
        double precision :: x, y
        integer(kind=8) :: c0, c1, rate
        req = MPI_REQUEST_NULL
        if (s >= 3) req = inactive
        peer = 1 - rank
        x = 1d0
        if (s >= 5) call PMPI_BARRIER(MPI_COMM_WORLD, e)
        call system_clock(c0, rate)
        select case (s)
        case (1, 3)
            do i = 1, n
                call MPI_TEST(req, flag, MPI_STATUS_IGNORE, e)
            end do
        case (2, 4)
            do i = 1, n
                call PMPI_TEST(req, flag, MPI_STATUS_IGNORE, e)
            end do
        case (5)
            do i = 1, n_comm
                call MPI_IRECV(nothing, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, reqs(1), e)
                call MPI_ISEND(nothing, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, reqs(2), e)
                call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, e)
            end do
        case (6)
            do i = 1, n_comm
                call PMPI_IRECV(nothing, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, reqs(1), e)
                call PMPI_ISEND(nothing, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, reqs(2), e)
                call PMPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, e)
            end do
        case (7)
            do i = 1, n_comm
                call MPI_ALLREDUCE(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, e)
            end do
        case (8)
            do i = 1, n_comm
                call PMPI_ALLREDUCE(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, e)
            end do
        end select
        call system_clock(c1)
        if (s <= 4) then
            t(round, s) = dble(c1 - c0) / dble(rate) * 1d9 / n
        else
            t(round, s) = dble(c1 - c0) / dble(rate) * 1d9 / n_comm
        end if
    end subroutine series

    subroutine report(name, traced, plain, per_block)
        character(len=*), intent(in) :: name
        double precision, intent(in) :: traced(:), plain(:)
        integer, intent(in) :: per_block
        write (*, '(a,a,2(a,f0.2),2(a,i0))') 'bench-row measure=', name, ' traced_ns=', median(traced), &
            ' plain_ns=', median(plain), ' rounds=', rounds, ' per_block=', per_block
    end subroutine report

    double precision function median(v)
        double precision, intent(in) :: v(:)
        double precision :: w(size(v)), x
        integer :: i, j, m
        w = v
        m = size(w)
        do i = 2, m ! insertion sort: rounds are few
            x = w(i)
            j = i - 1
            do while (j >= 1)
                if (w(j) <= x) exit
                w(j + 1) = w(j)
                j = j - 1
            end do
            w(j + 1) = x
        end do
        if (mod(m, 2) == 1) then
            median = w(m / 2 + 1)
        else
            median = 0.5d0 * (w(m / 2) + w(m / 2 + 1))
        end if
    end function median
end program bench_mpi_calls_f
