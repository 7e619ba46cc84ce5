!> fortran_stop_no_ierr — perfvar_stop on a never-started region without `ierr` must end the program
!> with a non-zero status and perfvar's message (checked by expect_failure.cmake).
program fortran_stop_no_ierr
    use perfvar
    implicit none
    integer :: h
    call perfvar_region("never-started", h)
    call perfvar_stop(h)
    print '(a)', "NOT REACHED: perfvar_stop returned"
end program fortran_stop_no_ierr
