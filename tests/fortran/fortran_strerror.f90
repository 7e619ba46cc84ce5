!> fortran_strerror — perfvar_strerror from Fortran: non-empty, distinct texts for the status codes,
!> the same text as the C library, and a fallback for unknown codes. Ends with `error stop` on failure.
program fortran_strerror
    use perfvar
    implicit none
    integer :: failures = 0
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

    if (failures > 0) then
        print '(i0, a)', failures, " check(s) failed"
        error stop 1
    end if
    print '(a)', "all Fortran strerror checks passed"

contains

    subroutine check(ok, what)
        logical, intent(in) :: ok
        character(len=*), intent(in) :: what
        if (.not. ok) then
            write (0, '(a, a)') "CHECK failed: ", what
            failures = failures + 1
        end if
    end subroutine check

end program fortran_strerror
