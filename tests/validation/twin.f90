! twin.f90 -- validation benchmark for perfvar, the Fortran (`use mpi`) twin of twin.c: same steps,
! options and output (see twin.c for the full description).
!
! Each step is   compute(W) ; MPI_Allreduce(1 double) ; compute(W) ; MPI_Barrier
! so segment class A is "MPI_Barrier -> MPI_Allreduce" and B "MPI_Allreduce -> MPI_Barrier". One
! extra MPI_Barrier, at the same call site, opens step 0: the k-th A sample of a rank is step k.
! Options: --steps N, --segment-us U, --slow-rank R, --slow-segment A|B|all, --slow-pct P,
! --phase F0 F1. Prints "twin: steps=N W=... checksum=..." on rank 0.
program twin
   use mpi
   use, intrinsic :: iso_fortran_env, only: dp => real64, i8 => int64, error_unit
   implicit none

   integer, parameter :: NX = 8, CALIB_REPS = 301
   integer(i8), parameter :: MIN_WORK = 100   ! the kernel reaches its fixed point in ~60 iterations
   integer, parameter :: SEG_A = 1, SEG_B = 2
   integer, parameter :: P_QUIT = 1, P_STEPS = 2, P_SLOW_RANK = 3, P_SLOW_SEG = 4, &
                         P_SLOW_PCT = 5, P_F0 = 6, P_F1 = 7, P_WORK = 8, P_US = 9, NPARAM = 9

   integer :: ierr, rank, nprocs, j, slowed
   integer(i8) :: nsteps, w, w_slow, lo, hi, s
   real(dp) :: p(NPARAM), x(NX), c(NX), loc(1), glob(1), acc
   logical :: in_phase
   character(len=32) :: cs

   call MPI_Init(ierr)
   call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
   call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
   do j = 1, NX
      x(j) = real(j, dp)
      c(j) = 0.25_dp * j
   end do
   p = 0
   if (rank == 0) then
      call parse_options(p)
      if (p(P_QUIT) == 0) p(P_WORK) = real(calibrate_work(p(P_US) * 1e-6_dp), dp)
   end if
   ! One broadcast of doubles (integers are exact in them): MPICH's `use mpi` has no interfaces
   ! for buffers, and buffers of different types in one file make gfortran >= 10 complain.
   call MPI_Bcast(p, NPARAM, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
   if (p(P_QUIT) /= 0) then
      call MPI_Finalize(ierr)
      stop 2
   end if
   nsteps = nint(p(P_STEPS), i8)
   w = nint(p(P_WORK), i8)
   lo = ceiling(p(P_F0) * real(nsteps, dp), i8)
   hi = ceiling(p(P_F1) * real(nsteps, dp), i8)
   w_slow = nint(real(w, dp) * (1.0_dp + p(P_SLOW_PCT) / 100.0_dp), i8)
   slowed = 0
   if (rank == nint(p(P_SLOW_RANK))) slowed = nint(p(P_SLOW_SEG))
   if (rank == 0 .and. p(P_SLOW_RANK) >= 0) then
      write (*, '(a,i0,a,i0,a,i0,a,a,a,i0,a,i0)') 'twin: rank ', nint(p(P_SLOW_RANK)), &
         ' does W=', w_slow, ' instead of ', w, ' in segment ', trim(seg_name(nint(p(P_SLOW_SEG)))), &
         ', steps ', lo, '..', hi
   end if

   acc = 0
   do s = 0, nsteps
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
      if (s == nsteps) exit
      in_phase = s >= lo .and. s < hi
      if (in_phase .and. iand(slowed, SEG_A) /= 0) then
         call compute(w_slow, x, c)
      else
         call compute(w, x, c)
      end if
      loc(1) = sum(x)
      call MPI_Allreduce(loc, glob, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
      acc = acc + glob(1)
      if (in_phase .and. iand(slowed, SEG_B) /= 0) then
         call compute(w_slow, x, c)
      else
         call compute(w, x, c)
      end if
   end do
   if (rank == 0) then
      write (cs, '(es24.17)') acc    ! the same digits as twin.c's %.17E
      write (*, '(a,i0,a,i0,a,a)') 'twin: steps=', nsteps, ' W=', w, ' checksum=', trim(adjustl(cs))
   end if
   call MPI_Finalize(ierr)

contains

   ! Latency-bound: NX independent mul+add chains, no memory traffic, so the cost per iteration is
   ! fixed. x converges to 2c (normal numbers, never subnormal) and stays there, which keeps the
   ! checksum independent of W while every iteration still has to be done.
   subroutine compute(n, x, c)
      integer(i8), intent(in) :: n
      real(dp), intent(inout) :: x(NX)
      real(dp), intent(in) :: c(NX)
      integer(i8) :: i
      real(dp) :: v(NX)
      v = x
      do i = 1, n
         v = v * 0.5_dp + c
      end do
      x = v
   end subroutine compute

   real(dp) function median_seconds(n, x, c)
      integer(i8), intent(in) :: n
      real(dp), intent(inout) :: x(NX)
      real(dp), intent(in) :: c(NX)
      real(dp) :: t(CALIB_REPS), t0, key
      integer :: r, k
      do r = 1, CALIB_REPS
         t0 = MPI_Wtime()
         call compute(n, x, c)
         t(r) = MPI_Wtime() - t0
      end do
      do r = 2, CALIB_REPS
         key = t(r)
         k = r - 1
         do while (k >= 1)
            if (t(k) <= key) exit
            t(k + 1) = t(k)
            k = k - 1
         end do
         t(k + 1) = key
      end do
      median_seconds = t(CALIB_REPS / 2 + 1)
   end function median_seconds

   ! MPI_Wtime only (not an MPI call perfvar traces), so calibration adds no segment of class A/B.
   integer(i8) function calibrate_work(seconds) result(n)
      real(dp), intent(in) :: seconds
      real(dp) :: xs(NX), dummy
      integer :: pass
      xs = x
      n = 1000
      dummy = median_seconds(n, xs, c)     ! warm-up: clock ramp, page faults
      do pass = 1, 2
         n = nint(real(n, dp) * seconds / median_seconds(n, xs, c), i8)
      end do
      n = max(n, MIN_WORK)
   end function calibrate_work

   character(len=3) function seg_name(code)
      integer, intent(in) :: code
      select case (code)
      case (SEG_A)
         seg_name = 'A'
      case (SEG_B)
         seg_name = 'B'
      case default
         seg_name = 'all'
      end select
   end function seg_name

   subroutine parse_options(p)
      real(dp), intent(inout) :: p(NPARAM)
      character(len=64) :: opt, val, val2
      integer :: i, nargs, ios
      p(P_STEPS) = 3000; p(P_US) = 22; p(P_SLOW_RANK) = -1; p(P_SLOW_SEG) = SEG_A
      p(P_SLOW_PCT) = 0; p(P_F0) = 0; p(P_F1) = 1
      nargs = command_argument_count()
      i = 1
      ios = 0
      do while (i <= nargs .and. ios == 0)
         call get_command_argument(i, opt)
         val = ''
         val2 = ''
         if (i + 1 <= nargs) call get_command_argument(i + 1, val)
         if (i + 2 <= nargs) call get_command_argument(i + 2, val2)
         select case (opt)
         case ('--steps')
            read (val, *, iostat=ios) p(P_STEPS)
         case ('--segment-us')
            read (val, *, iostat=ios) p(P_US)
         case ('--slow-rank')
            read (val, *, iostat=ios) p(P_SLOW_RANK)
         case ('--slow-pct')
            read (val, *, iostat=ios) p(P_SLOW_PCT)
         case ('--slow-segment')
            select case (val)
            case ('A')
               p(P_SLOW_SEG) = SEG_A
            case ('B')
               p(P_SLOW_SEG) = SEG_B
            case ('all')
               p(P_SLOW_SEG) = SEG_A + SEG_B
            case default
               ios = 1
            end select
         case ('--phase')
            read (val, *, iostat=ios) p(P_F0)
            if (ios == 0) read (val2, *, iostat=ios) p(P_F1)
            i = i + 1
         case default
            ios = 1
         end select
         if (ios == 0 .and. i + 1 > nargs) ios = 1   ! an option without its value
         i = i + 2
      end do
      if (ios /= 0 .or. p(P_STEPS) < 1 .or. p(P_US) <= 0 .or. p(P_SLOW_PCT) < 0 &
          .or. p(P_F0) > p(P_F1)) then
         write (error_unit, '(a)') 'usage: twin [--steps N] [--segment-us U] [--slow-rank R] ' // &
            '[--slow-segment A|B|all] [--slow-pct P] [--phase F0 F1]'
         p(P_QUIT) = 1
      end if
   end subroutine parse_options

end program twin
