! f_timer.f90 — the Fortran module from an installed perfvar.
program f_timer
    use perfvar
    implicit none
    integer :: h, ierr, n
    call perfvar_region("work", h)
    call perfvar_start(h)
    call perfvar_stop(h, ierr)
    if (ierr /= PERFVAR_OK .or. perfvar_elapsed_ns(h, n) <= 0 .or. n /= 1) error stop 1
    print '(a)', 'f_timer: ok'
end program f_timer
