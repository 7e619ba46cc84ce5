! bench_mpi_calls_f.f90 — what perfvar adds to an MPI call made from Fortran (`use mpi`), as the
! difference to the same call made uninstrumented in the same run (a benchmark: it prints, it asserts
! nothing about time). The Fortran twin of bench_mpi_calls.c, same method:
!   linked with perfvar's MPI layer, MPI_TEST enters perfvar's Fortran wrapper (traced), PMPI_TEST
!   goes straight to the MPI library; each block of calls is timed as a whole (system_clock, 64-bit:
!   ns ticks with gfortran), ns per call = block time / calls; one round = a traced and a plain block
!   of each measure, adjacent, their order flipped every round; median over rounds; one warm-up round.
!   The median leaves out the rare block with a trace-buffer flush or a host time slice taken away
!   (bench_mpi_calls.c says more).
! Measures (rank 0's figures): MPI_TEST on MPI_REQUEST_NULL and on an inactive persistent request.
! No fenced clock read here (Fortran has none without C): bench_recorder.py divides by the fenced
! pair measured in the C benchmark's run.
! Output: one `bench-row` line per measure for the driver.
! Usage: mpiexec -n 2 bench_mpi_calls_f [calls per block = 2000] [rounds = 101]
program bench_mpi_calls_f
    use mpi
    implicit none
    integer :: n, rounds, ierr, rank, nranks, b, inactive, dummy
    character(len=32) :: arg
    double precision, allocatable :: t(:, :)  ! (round, series): 1/2 null traced/plain, 3/4 inactive

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
    allocate (t(rounds, 4))

    call series(1, 1) ! warm-up, every series once, into round 1 (overwritten below)
    call series(2, 1)
    call series(3, 1)
    call series(4, 1)
    do b = 1, rounds
        ! Traced first in odd rounds, plain first in even ones.
        call series(2 - mod(b, 2), b)
        call series(1 + mod(b, 2), b)
        call series(4 - mod(b, 2), b)
        call series(3 + mod(b, 2), b)
    end do
    if (rank == 0) then
        call report('test_null_f', t(:, 1), t(:, 2))
        call report('test_inactive_f', t(:, 3), t(:, 4))
    end if
    call PMPI_REQUEST_FREE(inactive, ierr)
    call MPI_FINALIZE(ierr)

contains

    ! One block of series s into t(round, s): ns per call.
    subroutine series(s, round)
        integer, intent(in) :: s, round
        integer :: req, i, e
        logical :: flag
        integer(kind=8) :: c0, c1, rate
        req = MPI_REQUEST_NULL
        if (s >= 3) req = inactive
        call system_clock(c0, rate)
        if (mod(s, 2) == 1) then
            do i = 1, n
                call MPI_TEST(req, flag, MPI_STATUS_IGNORE, e)
            end do
        else
            do i = 1, n
                call PMPI_TEST(req, flag, MPI_STATUS_IGNORE, e)
            end do
        end if
        call system_clock(c1)
        t(round, s) = dble(c1 - c0) / dble(rate) * 1d9 / n
    end subroutine series

    subroutine report(name, traced, plain)
        character(len=*), intent(in) :: name
        double precision, intent(in) :: traced(:), plain(:)
        write (*, '(a,a,2(a,f0.2),2(a,i0))') 'bench-row measure=', name, ' traced_ns=', median(traced), &
            ' plain_ns=', median(plain), ' rounds=', rounds, ' per_block=', n
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
