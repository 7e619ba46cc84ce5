!> fortran_timers — the Fortran module `perfvar`: trimmed names, nesting, error codes through ierr,
!> elapsed time and counts, status texts (perfvar_strerror). Ends with `error stop` on any failure.
program fortran_timers
    use perfvar
    implicit none
    integer :: failures = 0
    integer :: h1, h2, h3, outer, inner, pairs, other, ierr, n, i
    real(8) :: t

    ! Trailing blanks are trimmed: both spellings name one region.
    call perfvar_region("solver   ", h1, ierr)
    call check(ierr == 0, "perfvar_region('solver   ') ierr")
    call perfvar_region("solver", h2, ierr)
    call check(ierr == 0, "perfvar_region('solver') ierr")
    call check(h1 == h2, "trailing blanks not trimmed: different handles")
    call check(h1 >= 0, "negative handle")
    call perfvar_region("solver", h3)           ! without ierr: success must not stop
    call check(h3 == h1, "same name, different handle without ierr")
    call perfvar_region("halo", other, ierr)
    call check(ierr == 0 .and. other /= h1, "a second name gives a second handle")
    call perfvar_region("   ", n, ierr)
    call check(ierr == -1, "a blank name gives PERFVAR_ERR_INVALID_ARG")

    ! Nesting.
    call perfvar_region("outer", outer, ierr)
    call perfvar_region("inner", inner, ierr)
    call perfvar_start(outer, ierr)
    call check(ierr == 0, "start outer")
    call perfvar_start(inner, ierr)
    call check(ierr == 0, "start inner")
    call perfvar_stop(outer, ierr)
    call check(ierr == -4, "stop outer inside inner gives PERFVAR_ERR_NESTING")
    call perfvar_stop(inner, ierr)
    call check(ierr == 0, "stop inner")
    call perfvar_stop(outer, ierr)
    call check(ierr == 0, "stop outer")

    ! Misuse through ierr.
    call perfvar_stop(outer, ierr)
    call check(ierr == -3, "stop without start gives PERFVAR_ERR_NOT_STARTED")
    call perfvar_start(99999, ierr)
    call check(ierr == -2, "start of an unknown handle gives PERFVAR_ERR_UNKNOWN_HANDLE")
    call perfvar_stop(-1, ierr)
    call check(ierr == -2, "stop of an unknown handle gives PERFVAR_ERR_UNKNOWN_HANDLE")
    t = perfvar_elapsed_ns(99999, n, ierr)
    call check(ierr == -2 .and. n == 0 .and. t == 0, "elapsed of an unknown handle")

    ! Elapsed time and count of completed pairs.
    call perfvar_region("pairs", pairs)
    t = perfvar_elapsed_ns(pairs, n, ierr)
    call check(ierr == 0 .and. n == 0 .and. t == 0, "a fresh region has no pairs")
    do i = 1, 7
        call perfvar_start(pairs)
        call work(1000 * i)
        call perfvar_stop(pairs)
    end do
    call perfvar_stop(pairs, ierr)              ! a failed stop adds no pair
    call check(ierr == -3, "extra stop")
    t = perfvar_elapsed_ns(pairs, n, ierr)
    call check(ierr == 0, "perfvar_elapsed_ns ierr")
    call check(n == 7, "count does not match the 7 pairs")
    call check(t > 0, "elapsed time not positive")
    t = perfvar_elapsed_ns(pairs)               ! count and ierr are optional
    call check(t > 0, "elapsed time without optional arguments")
    t = perfvar_elapsed_ns(outer, n)
    call check(n == 1 .and. t > 0, "outer: one pair")

    call check_strerror()

    if (failures > 0) then
        print '(i0, a)', failures, " check(s) failed"
        error stop 1
    end if
    print '(a)', "all Fortran checks passed"

contains

    !> perfvar_strerror: non-empty, distinct texts for the status codes, the same text on every
    !> call (the result is allocatable), and one fallback for unknown codes.
    subroutine check_strerror()
        integer :: i, j
        character(len=:), allocatable :: text, fallback
        text = perfvar_strerror(-3)
        print '(a, a, a)', "perfvar_strerror(-3) = '", text, "'"
        call check(len(text) > 0, "perfvar_strerror(-3) is empty")
        call check(index(text, "start") > 0, "perfvar_strerror(-3) does not mention the missing start")
        call check(text /= perfvar_strerror(-2), "perfvar_strerror(-3) equals perfvar_strerror(-2)")
        ! Called repeatedly (the result is allocatable): same text every time.
        do i = 1, 3
            call check(perfvar_strerror(-3) == text, "perfvar_strerror(-3) changed between calls")
        end do

        fallback = perfvar_strerror(12345)
        call check(len(fallback) > 0, "perfvar_strerror(12345) is empty")
        call check(perfvar_strerror(-11) == fallback, "unknown codes give different texts")
        do i = 0, -10, -1
            call check(len(perfvar_strerror(i)) > 0, "a status text is empty")
            call check(perfvar_strerror(i) /= fallback, "a known code gives the fallback text")
            do j = 0, i + 1, -1
                call check(perfvar_strerror(i) /= perfvar_strerror(j), "two codes share a text")
            end do
        end do
    end subroutine check_strerror

    subroutine check(ok, what)
        logical, intent(in) :: ok
        character(len=*), intent(in) :: what
        if (.not. ok) then
            write (0, '(a, a)') "CHECK failed: ", what
            failures = failures + 1
        end if
    end subroutine check

    subroutine work(n)
        integer, intent(in) :: n
        integer :: k
        real(8), save :: s = 0
        do k = 1, n
            s = s + sqrt(real(k, 8))
        end do
        if (s < 0) print *, s
    end subroutine work

end program fortran_timers
