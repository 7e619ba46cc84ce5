!> perfvar — Fortran interface to perfvar's serialized-barrier timers.
!>
!>   use perfvar
!>   integer :: h
!>   call perfvar_region("solver", h)      ! once, outside the hot loop
!>   call perfvar_start(h)                 ! ... measured code ...
!>   call perfvar_stop(h)
!>
!> Every routine takes an optional `ierr` (0 = success, negative = PERFVAR_ERR_* of perfvar.h).
!> Without `ierr`, an error stops the program with perfvar's message. Names may carry trailing
!> blanks (they are trimmed). Thread-safety as in perfvar.h: regions nest per thread.
module perfvar
    use, intrinsic :: iso_c_binding, only: c_int, c_char, c_null_char, c_ptr, c_f_pointer, &
        c_associated, c_double, c_int64_t
    implicit none
    private

    public :: perfvar_region, perfvar_start, perfvar_stop, perfvar_strerror, perfvar_elapsed_ns
    public :: PERFVAR_OK

    integer, parameter :: PERFVAR_OK = 0

    type, bind(C) :: region_stats
        integer(c_int64_t) :: count
        real(c_double) :: total_ns, min_ns, max_ns
    end type region_stats

    interface
        integer(c_int) function c_region_register(name, handle) bind(C, name="perfvar_region_register")
            import :: c_int, c_char
            character(kind=c_char), dimension(*), intent(in) :: name
            integer(c_int), intent(out) :: handle
        end function c_region_register

        integer(c_int) function c_start(handle) bind(C, name="perfvar_start")
            import :: c_int
            integer(c_int), value :: handle
        end function c_start

        integer(c_int) function c_stop(handle) bind(C, name="perfvar_stop")
            import :: c_int
            integer(c_int), value :: handle
        end function c_stop

        type(c_ptr) function c_strerror(status) bind(C, name="perfvar_strerror")
            import :: c_int, c_ptr
            integer(c_int), value :: status
        end function c_strerror

        integer(c_int) function c_stats_get(handle, stats) bind(C, name="perfvar_region_stats_get")
            import :: c_int, region_stats
            integer(c_int), value :: handle
            type(region_stats), intent(out) :: stats
        end function c_stats_get
    end interface

contains

    !> Register `name` (trailing blanks ignored) and return its handle in `handle`.
    subroutine perfvar_region(name, handle, ierr)
        character(len=*), intent(in) :: name
        integer, intent(out) :: handle
        integer, intent(out), optional :: ierr
        integer(c_int) :: h, status
        h = -1  ! what the caller gets when registration fails
        status = c_region_register(trim(name)//c_null_char, h)
        handle = int(h)
        call report(status, "perfvar_region('"//trim(name)//"')", ierr)
    end subroutine perfvar_region

    !> Start region `handle` on the calling thread.
    subroutine perfvar_start(handle, ierr)
        integer, intent(in) :: handle
        integer, intent(out), optional :: ierr
        call report(c_start(int(handle, c_int)), "perfvar_start", ierr)
    end subroutine perfvar_start

    !> Stop region `handle`: it must be the innermost started region of this thread.
    subroutine perfvar_stop(handle, ierr)
        integer, intent(in) :: handle
        integer, intent(out), optional :: ierr
        call report(c_stop(int(handle, c_int)), "perfvar_stop", ierr)
    end subroutine perfvar_stop

    !> Total time (ns) of the completed start/stop pairs of `handle`, over all threads;
    !> `count` gets their number (saturating at huge(count)).
    function perfvar_elapsed_ns(handle, count, ierr) result(total_ns)
        integer, intent(in) :: handle
        integer, intent(out), optional :: count
        integer, intent(out), optional :: ierr
        real(c_double) :: total_ns
        type(region_stats) :: stats
        integer(c_int) :: status
        status = c_stats_get(int(handle, c_int), stats)
        total_ns = 0
        if (present(count)) count = 0
        if (status == PERFVAR_OK) then
            total_ns = stats%total_ns
            if (present(count)) count = int(min(stats%count, int(huge(count), c_int64_t)))
        end if
        call report(status, "perfvar_elapsed_ns", ierr)
    end function perfvar_elapsed_ns

    !> Text of a status code.
    function perfvar_strerror(status) result(text)
        integer, intent(in) :: status
        character(len=:), allocatable :: text
        character(kind=c_char), pointer :: chars(:)
        type(c_ptr) :: p
        integer :: n
        p = c_strerror(int(status, c_int))
        if (.not. c_associated(p)) then
            text = ""
            return
        end if
        call c_f_pointer(p, chars, [256])
        n = 0
        do while (n < 256)
            if (chars(n + 1) == c_null_char) exit
            n = n + 1
        end do
        allocate (character(len=n) :: text)
        text = transfer(chars(1:n), text)
    end function perfvar_strerror

    !> Hand the status to the caller's ierr, or stop with the message when there is none.
    subroutine report(status, what, ierr)
        integer(c_int), intent(in) :: status
        character(len=*), intent(in) :: what
        integer, intent(out), optional :: ierr
        if (present(ierr)) then
            ierr = int(status)
        else if (status /= PERFVAR_OK) then
            error stop "perfvar: "//what//": "//perfvar_strerror(int(status))
        end if
    end subroutine report

end module perfvar
