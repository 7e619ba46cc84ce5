! f_regions.f90 — perfvar timers (module perfvar) inside a `use mpi` program: a region "step"
! around each iteration, which encloses MPI calls, and a region "compute" nested in it between two
! MPI calls. In the trace the user regions must nest with the MPI regions and the compute segments
! (a timer start/stop cuts a segment). Per rank: step 20, compute 20, Allreduce 20, Barrier 20.
program f_regions
    use mpi
    use perfvar
    implicit none
    integer :: ierr, rank, step_h, compute_h, i, k
    double precision :: x, total

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call perfvar_region("step", step_h)
    call perfvar_region("compute", compute_h)
    x = rank
    do i = 1, 20
        call perfvar_start(step_h)
        call MPI_Barrier(MPI_COMM_WORLD, ierr)
        call perfvar_start(compute_h)
        do k = 1, 20000
            x = x*0.999999d0 + 1d-3
        end do
        call perfvar_stop(compute_h)
        call MPI_Allreduce(x, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
        call perfvar_stop(step_h)
    end do
    if (rank == 0) print '(a, f0.6)', 'f_regions: total ', total
    call MPI_Finalize(ierr)
end program f_regions
