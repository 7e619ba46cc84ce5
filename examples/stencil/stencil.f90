! stencil.f90 -- perfvar example: 3-D finite-difference wave propagation, Fortran + MPI (`use mpi`).
!
! The kernel is the isotropic 8th-order-in-space, 2nd-order-in-time acoustic wave update of ISO3DFD:
!
!     next = 2*cur - prev + vel * lap8(cur)        (lap8: 25-point, half-width 4 in x, y and z)
!
! done in single precision over a 3-D block per rank. The global domain is split along z only
! (1-D decomposition); each rank owns nz planes of nx*ny points plus 4 halo planes on each side.
! The ranks at the two ends of the domain have MPI_PROC_NULL as their outer neighbour, so every
! rank issues exactly the same MPI calls from exactly the same call sites in every step.
!
! Per time step (keep this order: perfvar keys compute segments by the MPI call sites that bound
! them, and the dominant segment of this program is "MPI_Waitall -> MPI_Allreduce"):
!     halo exchange   MPI_Irecv x2, MPI_Isend x2, MPI_Waitall      (subroutine halo_exchange)
!     compute         stencil update of the whole local block       (wave_update [+ extra_work])
!     reduction       MPI_Allreduce of the sum of squares           (global L2 norm of the field)
! Before the loop: MPI_Bcast of the parameters from rank 0, one MPI_Barrier.
!
! Anomaly injection: with --slow-rank R --slow-factor F (F > 1), rank R additionally recomputes
! the stencil on round((F-1)*nz) planes into a scratch array in each step's compute segment, i.e.
! it does F times the regular stencil work. The scratch result only feeds a checksum that travels
! as the second element of the Allreduce, so the printed norm is unaffected by the injection.
!
! Build:  mpifort -O2 -g stencil.f90 -o stencil       Run: mpiexec -n 4 ./stencil [--help]

program stencil
   use mpi
   use, intrinsic :: ieee_arithmetic, only: ieee_support_underflow_control, ieee_set_underflow_mode
   use, intrinsic :: iso_fortran_env, only: sp => real32, dp => real64, int64, &
                                            output_unit, error_unit
   implicit none

   integer, parameter :: HALO = 4   ! stencil half-width = halo depth in z = fixed border in x, y

   ! 8th-order central-difference coefficients of d2/dx2 (unit spacing); C0 counts all 3 axes.
   real(sp), parameter :: C0 = 3.0_sp * (-205.0_sp / 72.0_sp)
   real(sp), parameter :: C1 = 8.0_sp / 5.0_sp
   real(sp), parameter :: C2 = -1.0_sp / 5.0_sp
   real(sp), parameter :: C3 = 8.0_sp / 315.0_sp
   real(sp), parameter :: C4 = -1.0_sp / 560.0_sp

   ! Defaults: 64 x 64 x 48 points per rank (56 x 56 x 48 = 150528 updated points; ~0.9 MB per
   ! field, 2.6 MB per rank in all). One compute step (Waitall -> Allreduce) then takes ~1-1.5 ms on
   ! one core of the 2-core development VM (gfortran 12 -O2, ~7-9 ns per point), long enough that
   ! timer overhead and MPI noise are small against it, short enough that 200 steps (200 samples
   ! of the segment per rank) run in well under a second per rank. nz = 48 makes --slow-factor 1.5
   ! exactly 24 extra planes. The halo messages are 64*64*4 reals = 64 KiB each way.
   integer, parameter :: DEF_NX = 64, DEF_NY = 64, DEF_NZ = 48, DEF_STEPS = 200
   integer, parameter :: NOPT = 7     ! integer parameters broadcast from rank 0
   integer, parameter :: TAG_UP = 11, TAG_DOWN = 12

   integer :: ierr, rank, nprocs
   integer :: iopt(NOPT)              ! quit, nx, ny, nz, steps, slow_rank, timing
   real(dp) :: slow_factor
   real(dp) :: params(NOPT + 1)       ! iopt and slow_factor, packed for one MPI_Bcast
   integer :: nx, ny, nz, nsteps, slow_rank, nextra, nscratch, down, up, it, icur
   logical :: timing
   real(sp), allocatable, target :: ua(:, :, :), ub(:, :, :)
   real(sp), allocatable :: vel(:, :, :), scratch(:, :, :)
   real(sp), pointer, contiguous :: cur(:, :, :), prv(:, :, :)
   real(dp) :: loc(2), glob(2), t_start, t_end, norm
   integer(int64) :: tc0, tc1, crate, csum, cmin, cmax
   character(len=80) :: line

   ! Abrupt underflow (flush subnormals to zero), as Intel's compilers set by default from -O1 on and
   ! as ISO3DFD runs. The Gaussian's tail and the wave front leave single-precision subnormals in the
   ! field for the first ~40 steps; on Intel cores each one costs a microcode assist, so with gradual
   ! underflow the compute step started 3x slower and took ~40 steps to settle (measured on a Xeon,
   ! 4.0 ms falling to 1.2 ms), a ramp common to all ranks that blurs every rank's distribution.
   if (ieee_support_underflow_control(1.0_sp)) call ieee_set_underflow_mode(gradual=.false.)

   call MPI_Init(ierr)
   call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
   call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

   ! Rank 0 parses environment and command line (errors: message + MPI_Abort there) and
   ! broadcasts the result, so all ranks agree even if their environments differ.
   ! One double-precision Bcast (the integers are exact in a double): with MPICH's `use mpi`,
   ! which has no interfaces for buffer arguments, calling one routine with buffers of different
   ! types from one file makes gfortran >= 10 warn (or fail without -fallow-argument-mismatch).
   if (rank == 0) then
      call parse_options(nprocs, iopt, slow_factor)
      params(1:NOPT) = real(iopt, dp)
      params(NOPT + 1) = slow_factor
   end if
   call MPI_Bcast(params, NOPT + 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
   iopt = nint(params(1:NOPT))
   slow_factor = params(NOPT + 1)
   if (iopt(1) /= 0) then             ! --help was printed
      call MPI_Finalize(ierr)
      stop
   end if
   nx = iopt(2); ny = iopt(3); nz = iopt(4); nsteps = iopt(5); slow_rank = iopt(6)
   timing = iopt(7) /= 0

   ! 1-D decomposition along z; MPI_PROC_NULL at the ends keeps the call sequence uniform.
   down = rank - 1
   up = rank + 1
   if (rank == 0) down = MPI_PROC_NULL
   if (rank == nprocs - 1) up = MPI_PROC_NULL

   nextra = 0
   if (rank == slow_rank) nextra = nint((slow_factor - 1.0_dp) * real(nz, dp))
   nscratch = 0
   if (nextra > 0) nscratch = nz

   allocate (ua(nx, ny, 1 - HALO:nz + HALO), ub(nx, ny, 1 - HALO:nz + HALO))
   allocate (vel(nx, ny, nz), scratch(nx, ny, nscratch))
   call init_fields(nx, ny, nz, rank * nz, nprocs * nz, ua, ub, vel, nscratch, scratch)

   csum = 0; cmin = huge(cmin); cmax = 0
   call system_clock(count_rate=crate)
   loc = 0.0_dp
   glob = 0.0_dp

   call MPI_Barrier(MPI_COMM_WORLD, ierr)
   t_start = MPI_Wtime()

   do it = 1, nsteps
      ! Role swap by pointers (no copies, no change of call sites): cur = field at t, prv = field
      ! at t-1, overwritten with t+1 by wave_update.
      icur = mod(it, 2)
      if (icur == 1) then
         cur => ua; prv => ub
      else
         cur => ub; prv => ua
      end if

      call halo_exchange(nx, ny, nz, cur, down, up)

      ! ---- compute segment: MPI_Waitall -> MPI_Allreduce ----
      ! The debug timer is Fortran's system_clock, not MPI_Wtime, so that no MPI call (which an
      ! MPI tool might intercept) splits the segment.
      if (timing) call system_clock(tc0)
      call wave_update(nx, ny, nz, cur, prv, vel, loc(1))
      if (nextra > 0) call extra_work(nx, ny, nz, nextra, cur, prv, vel, scratch, loc(2))
      if (timing) then
         call system_clock(tc1)
         csum = csum + (tc1 - tc0); cmin = min(cmin, tc1 - tc0); cmax = max(cmax, tc1 - tc0)
      end if
      ! ---- end of compute segment ----

      ! loc(1): sum of squares of the field (-> norm); loc(2): checksum of the injected work
      ! (0 on all other ranks). MPI_SUM is element-wise, so loc(2) never affects glob(1).
      call MPI_Allreduce(loc, glob, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
   end do

   t_end = MPI_Wtime()
   norm = sqrt(glob(1))

   if (rank == 0) then
      ! One write per line: with advance='no' pieces, mpiexec may interleave other ranks' output.
      if (slow_rank >= 0 .and. slow_factor > 1.0_dp) then
         write (line, '(a,i0,a)') 'slow rank ', slow_rank, ' x'//fmt_num(slow_factor, 3)
      else
         line = 'no injection'
      end if
      ! norm >= 0, so es22.16 has no leading blank: 16 decimals = all digits of a double
      write (output_unit, '(a,i0,"x",i0,"x",i0,a,i0,"x",i0,"x",i0,a,i0,a,i0,a,es22.16,a)') &
         'stencil: grid ', nx, ny, nz, ' per rank (global ', nx, ny, nprocs * nz, '), ranks ', &
         nprocs, ', steps ', nsteps, ', norm ', norm, &
         ', wall '//fmt_num(t_end - t_start, 4)//' s, '//trim(line)
      flush (output_unit)
   end if
   if (timing) then
      ! one line per rank, written independently (no extra MPI calls); order is arbitrary
      write (output_unit, '(a,i0,a,i0,a,i0,a,es11.4)') 'stencil[timing] rank ', rank, &
         ': compute/step mean '// &
         fmt_num(1.0e3_dp * real(csum, dp) / real(crate, dp) / real(nsteps, dp), 4)// &
         ' ms, min '//fmt_num(1.0e3_dp * real(cmin, dp) / real(crate, dp), 4)// &
         ' ms, max '//fmt_num(1.0e3_dp * real(cmax, dp) / real(crate, dp), 4)// &
         ' ms, extra planes ', nextra, '/', nz, ', injected-work checksum ', glob(2)
      flush (output_unit)
   end if

   deallocate (ua, ub, vel, scratch)
   call MPI_Finalize(ierr)

contains

   ! First-touch initialisation. Linux maps a page to physical memory on the first write, on the
   ! NUMA node of the CPU that writes it. Every array is therefore written here for the first time,
   ! by the rank that computes on it, in the same loop order as wave_update (k outer, then j, i
   ! innermost = memory order), instead of a whole-array assignment elsewhere or a calloc'd buffer:
   ! pages end up local to the core the rank runs on and the page faults are paid here, not in the
   ! first timed steps. (ISO3DFD's initialize_FT does the same per OpenMP thread.)
   !
   ! Initial condition: a Gaussian pulse at the centre of the global domain with zero initial
   ! velocity (prev = cur). The velocity term vel = (c*dt/h)**2 is layered along global z.
   ! Stability of this scheme needs vel * 19.5 < 4, i.e. vel < 0.205; the layers use 0.06 and 0.15.
   subroutine init_fields(nx, ny, nz, z0, nzg, ua, ub, vel, nscratch, scratch)
      integer, intent(in) :: nx, ny, nz     ! local block (without halos)
      integer, intent(in) :: z0, nzg        ! global z offset of plane 1, global number of planes
      real(sp), intent(out) :: ua(nx, ny, 1 - HALO:nz + HALO), ub(nx, ny, 1 - HALO:nz + HALO)
      real(sp), intent(out) :: vel(nx, ny, nz)
      integer, intent(in) :: nscratch       ! planes of scratch (0 unless this rank is the slow one)
      real(sp), intent(out) :: scratch(nx, ny, nscratch)
      integer :: i, j, k
      real(dp) :: xc, yc, zc, w2, r2, g

      xc = 0.5_dp * real(nx + 1, dp)
      yc = 0.5_dp * real(ny + 1, dp)
      zc = 0.5_dp * real(nzg + 1, dp)
      w2 = (real(min(nx, ny, nzg), dp) / 12.0_dp)**2

      ! halo planes below the block: filled by the exchange, at the bottom of the domain they
      ! stay 0 (Dirichlet). Then the block, then the halo planes above: all in memory order.
      do k = 1 - HALO, 0
         do j = 1, ny
            do i = 1, nx
               ua(i, j, k) = 0.0_sp
               ub(i, j, k) = 0.0_sp
            end do
         end do
      end do
      do k = 1, nz
         do j = 1, ny
            do i = 1, nx
               r2 = (real(i, dp) - xc)**2 + (real(j, dp) - yc)**2 + (real(z0 + k, dp) - zc)**2
               g = exp(-r2 / w2)
               ua(i, j, k) = real(g, sp)
               ub(i, j, k) = real(g, sp)
               if (2 * (z0 + k) <= nzg) then
                  vel(i, j, k) = 0.06_sp
               else
                  vel(i, j, k) = 0.15_sp
               end if
               if (k <= nscratch) scratch(i, j, k) = 0.0_sp
            end do
         end do
      end do
      do k = nz + 1, nz + HALO
         do j = 1, ny
            do i = 1, nx
               ua(i, j, k) = 0.0_sp
               ub(i, j, k) = 0.0_sp
            end do
         end do
      end do
   end subroutine init_fields

   ! One time step on the local block: prv <- 2*cur - prv + vel*lap8(cur), in place (prv becomes
   ! "next", the caller swaps the roles). Returns the sum of squares of the new field (the caller
   ! reduces it to the global norm). The x/y border of width HALO is held fixed; z halos of cur
   ! must be up to date. The dp accumulation keeps the norm independent of blocking details.
   subroutine wave_update(nx, ny, nz, cur, prv, vel, sumsq)
      integer, intent(in) :: nx, ny, nz
      real(sp), intent(in) :: cur(nx, ny, 1 - HALO:nz + HALO)
      real(sp), intent(inout) :: prv(nx, ny, 1 - HALO:nz + HALO)
      real(sp), intent(in) :: vel(nx, ny, nz)
      real(dp), intent(out) :: sumsq
      integer :: i, j, k
      real(sp) :: lap, v

      sumsq = 0.0_dp
      do k = 1, nz
         do j = 1 + HALO, ny - HALO
            do i = 1 + HALO, nx - HALO
               lap = C0 * cur(i, j, k) &
                   + C1 * (cur(i + 1, j, k) + cur(i - 1, j, k) + cur(i, j + 1, k) &
                         + cur(i, j - 1, k) + cur(i, j, k + 1) + cur(i, j, k - 1)) &
                   + C2 * (cur(i + 2, j, k) + cur(i - 2, j, k) + cur(i, j + 2, k) &
                         + cur(i, j - 2, k) + cur(i, j, k + 2) + cur(i, j, k - 2)) &
                   + C3 * (cur(i + 3, j, k) + cur(i - 3, j, k) + cur(i, j + 3, k) &
                         + cur(i, j - 3, k) + cur(i, j, k + 3) + cur(i, j, k - 3)) &
                   + C4 * (cur(i + 4, j, k) + cur(i - 4, j, k) + cur(i, j + 4, k) &
                         + cur(i, j - 4, k) + cur(i, j, k + 4) + cur(i, j, k - 4))
               v = 2.0_sp * cur(i, j, k) - prv(i, j, k) + vel(i, j, k) * lap
               prv(i, j, k) = v
               sumsq = sumsq + real(v, dp)**2
            end do
         end do
      end do
   end subroutine wave_update

   ! Injected extra work (slow rank only): the same stencil update as wave_update, recomputed on
   ! nplanes planes (cycling through the block if nplanes > nz) into scratch instead of into the
   ! field. Same loads, same arithmetic and one store per point, so one plane here costs about one
   ! plane of wave_update. Results go only into scratch and into chk, which the caller sends through
   ! MPI_Allreduce: the compiler cannot drop the work, and the field (hence the norm) is untouched.
   subroutine extra_work(nx, ny, nz, nplanes, cur, nxt, vel, scratch, chk)
      integer, intent(in) :: nx, ny, nz, nplanes
      real(sp), intent(in) :: cur(nx, ny, 1 - HALO:nz + HALO)
      real(sp), intent(in) :: nxt(nx, ny, 1 - HALO:nz + HALO)
      real(sp), intent(in) :: vel(nx, ny, nz)
      real(sp), intent(inout) :: scratch(nx, ny, nz)
      real(dp), intent(out) :: chk
      integer :: i, j, k, p
      real(sp) :: lap, v

      chk = 0.0_dp
      do p = 0, nplanes - 1
         k = mod(p, nz) + 1
         do j = 1 + HALO, ny - HALO
            do i = 1 + HALO, nx - HALO
               lap = C0 * cur(i, j, k) &
                   + C1 * (cur(i + 1, j, k) + cur(i - 1, j, k) + cur(i, j + 1, k) &
                         + cur(i, j - 1, k) + cur(i, j, k + 1) + cur(i, j, k - 1)) &
                   + C2 * (cur(i + 2, j, k) + cur(i - 2, j, k) + cur(i, j + 2, k) &
                         + cur(i, j - 2, k) + cur(i, j, k + 2) + cur(i, j, k - 2)) &
                   + C3 * (cur(i + 3, j, k) + cur(i - 3, j, k) + cur(i, j + 3, k) &
                         + cur(i, j - 3, k) + cur(i, j, k + 3) + cur(i, j, k - 3)) &
                   + C4 * (cur(i + 4, j, k) + cur(i - 4, j, k) + cur(i, j + 4, k) &
                         + cur(i, j - 4, k) + cur(i, j, k + 4) + cur(i, j, k - 4))
               v = 2.0_sp * cur(i, j, k) - nxt(i, j, k) + vel(i, j, k) * lap
               scratch(i, j, k) = v
               chk = chk + real(v, dp)**2
            end do
         end do
      end do
   end subroutine extra_work

   ! Halo exchange of HALO z-planes with both neighbours. A z-plane is contiguous in Fortran order,
   ! so the HALO planes at either end are one contiguous buffer of nx*ny*HALO reals: no packing.
   ! All nonblocking calls complete inside this routine and u is a dummy argument, so the compiler
   ! cannot move accesses to u across the communication (no MPI_F_SYNC_REG needed).
   subroutine halo_exchange(nx, ny, nz, u, down, up)
      integer, intent(in) :: nx, ny, nz, down, up
      real(sp), intent(inout) :: u(nx, ny, 1 - HALO:nz + HALO)
      integer :: req(4), cnt, ierr

      cnt = nx * ny * HALO
      call MPI_Irecv(u(1, 1, 1 - HALO), cnt, MPI_REAL, down, TAG_UP, MPI_COMM_WORLD, req(1), ierr)
      call MPI_Irecv(u(1, 1, nz + 1), cnt, MPI_REAL, up, TAG_DOWN, MPI_COMM_WORLD, req(2), ierr)
      call MPI_Isend(u(1, 1, nz - HALO + 1), cnt, MPI_REAL, up, TAG_UP, MPI_COMM_WORLD, req(3), &
                     ierr)
      call MPI_Isend(u(1, 1, 1), cnt, MPI_REAL, down, TAG_DOWN, MPI_COMM_WORLD, req(4), ierr)
      call MPI_Waitall(4, req, MPI_STATUSES_IGNORE, ierr)
   end subroutine halo_exchange

   ! Rank 0 only. Sources, lowest to highest priority: built-in defaults, environment variables
   ! (STENCIL_NX, STENCIL_NY, STENCIL_NZ, STENCIL_STEPS, STENCIL_SLOW_RANK, STENCIL_SLOW_FACTOR,
   ! STENCIL_TIMING), command-line options. So a command-line option wins over its variable.
   subroutine parse_options(nprocs, iopt, factor)
      integer, intent(in) :: nprocs
      integer, intent(out) :: iopt(NOPT)
      real(dp), intent(out) :: factor
      character(len=512) :: arg, val
      character(len=:), allocatable :: opt
      integer :: nargs, i, eq, alen, st
      logical :: have_val

      iopt = [0, DEF_NX, DEF_NY, DEF_NZ, DEF_STEPS, -1, 0]
      factor = 1.0_dp

      call env_int('STENCIL_NX', iopt(2))
      call env_int('STENCIL_NY', iopt(3))
      call env_int('STENCIL_NZ', iopt(4))
      call env_int('STENCIL_STEPS', iopt(5))
      call env_int('STENCIL_SLOW_RANK', iopt(6))
      call env_real('STENCIL_SLOW_FACTOR', factor)
      call env_int('STENCIL_TIMING', iopt(7))

      nargs = command_argument_count()
      i = 1
      do while (i <= nargs)
         call get_command_argument(i, arg, alen, st)
         if (st /= 0) call fail('command-line argument too long: '//trim(arg(1:60))//'...')
         i = i + 1
         if (arg == '-h' .or. arg == '--help') then
            call usage()
            iopt(1) = 1
            return
         end if
         if (arg == '--timing') then
            iopt(7) = 1
            cycle
         end if
         ! "--opt value" or "--opt=value"
         eq = index(arg, '=')
         have_val = eq > 0
         if (have_val) then
            opt = arg(1:eq - 1)
            val = arg(eq + 1:)
         else
            opt = trim(arg)
         end if
         select case (opt)
         case ('--nx', '--ny', '--nz', '--steps', '--slow-rank', '--slow-factor')
         case default
            call fail('unknown option "'//trim(arg)//'"')
         end select
         if (.not. have_val) then
            if (i > nargs) call fail('option '//opt//' needs a value')
            call get_command_argument(i, val, alen, st)
            if (st /= 0) call fail('value of '//opt//' too long')
            i = i + 1
         end if
         select case (opt)
         case ('--nx');          call to_int(opt, val, iopt(2))
         case ('--ny');          call to_int(opt, val, iopt(3))
         case ('--nz');          call to_int(opt, val, iopt(4))
         case ('--steps');       call to_int(opt, val, iopt(5))
         case ('--slow-rank');   call to_int(opt, val, iopt(6))
         case ('--slow-factor'); call to_real(opt, val, factor)
         end select
      end do

      ! validation
      if (iopt(2) < 2 * HALO + 1 .or. iopt(3) < 2 * HALO + 1) &
         call fail('nx and ny must be >= 9 (the stencil needs a border of 4 points)')
      if (iopt(4) < HALO) call fail('nz (planes per rank) must be >= 4 (the halo depth)')
      if (int(iopt(2), int64) * iopt(3) * (iopt(4) + 2 * HALO) > 2_int64**30) &
         call fail('block too large: nx*ny*(nz+8) must be <= 2**30 points per rank')
      if (iopt(5) < 1) call fail('steps must be >= 1')
      if (iopt(6) < -1 .or. iopt(6) >= nprocs) then
         write (val, '(a,i0,a,i0,a,i0,a)') 'slow rank ', iopt(6), &
            ' out of range: must be -1 (none) or 0..', nprocs - 1, ' for ', nprocs, ' ranks'
         call fail(trim(val))
      end if
      if (.not. (factor >= 1.0_dp .and. factor <= 100.0_dp)) &
         call fail('slow factor must be between 1.0 (off) and 100')
      if (factor > 1.0_dp .and. iopt(6) < 0) &
         call fail('a slow factor > 1 needs a slow rank (--slow-rank or STENCIL_SLOW_RANK)')
   end subroutine parse_options

   ! x with d decimals, no leading blanks, always a digit before the point (unlike gfortran's F0.d)
   function fmt_num(x, d) result(str)
      real(dp), intent(in) :: x
      integer, intent(in) :: d
      character(len=:), allocatable :: str
      character(len=40) :: buf, fmt
      write (fmt, '(a,i0,a)') '(f40.', d, ')'
      write (buf, fmt) x
      str = trim(adjustl(buf))
   end function fmt_num

   subroutine usage()
      write (output_unit, '(a)') &
         'usage: mpiexec -n P stencil [options]', &
         '  3-D 8th-order finite-difference wave stencil (ISO3DFD-like), domain split along z.', &
         'options (command line wins over the environment variable in brackets):', &
         '  --nx N           points in x per rank          (STENCIL_NX, default 64)', &
         '  --ny N           points in y per rank          (STENCIL_NY, default 64)', &
         '  --nz N           z planes per rank, >= 4       (STENCIL_NZ, default 48)', &
         '  --steps N        time steps                    (STENCIL_STEPS, default 200)', &
         '  --slow-rank R    rank that gets extra work     (STENCIL_SLOW_RANK, default -1: none)', &
         '  --slow-factor F  its compute work is F times normal, 1 <= F <= 100', &
         '                                         (STENCIL_SLOW_FACTOR, default 1.0 = off)', &
         '  --timing         each rank prints its compute time per step (STENCIL_TIMING=1)', &
         '  -h, --help       this text', &
         '  Options also accept --opt=value. The printed norm does not depend on the injection.'
      flush (output_unit)
   end subroutine usage

   subroutine fail(msg)
      character(len=*), intent(in) :: msg
      integer :: ierr
      write (error_unit, '(a)') 'stencil: error: '//msg//' (see --help)'
      flush (error_unit)
      call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
      stop 2   ! not reached
   end subroutine fail

   ! Strict integer parse: optional sign, then digits only, at most 9 of them.
   subroutine to_int(what, s, n)
      character(len=*), intent(in) :: what, s
      integer, intent(out) :: n
      integer :: i0, i, ios
      character(len=:), allocatable :: t

      t = trim(adjustl(s))
      i0 = 1
      if (len(t) > 0) then
         if (t(1:1) == '-' .or. t(1:1) == '+') i0 = 2
      end if
      if (len(t) < i0 .or. len(t) - i0 + 1 > 9) call fail('bad integer "'//t//'" for '//what)
      do i = i0, len(t)
         if (t(i:i) < '0' .or. t(i:i) > '9') call fail('bad integer "'//t//'" for '//what)
      end do
      read (t, *, iostat=ios) n
      if (ios /= 0) call fail('bad integer "'//t//'" for '//what)
   end subroutine to_int

   ! Real parse: characters of a plain decimal/exponent number only, then a Fortran read.
   subroutine to_real(what, s, x)
      character(len=*), intent(in) :: what, s
      real(dp), intent(out) :: x
      integer :: i, ios
      character(len=:), allocatable :: t

      t = trim(adjustl(s))
      if (len(t) == 0 .or. verify(t, '0123456789.eEdD+-') /= 0 .or. scan(t, '0123456789') == 0) &
         call fail('bad number "'//t//'" for '//what)
      ! a sign only first or right after the exponent letter (Fortran input would read "2+1" as 2e1)
      do i = 2, len(t)
         if (scan(t(i:i), '+-') == 1 .and. scan(t(i - 1:i - 1), 'eEdD') == 0) &
            call fail('bad number "'//t//'" for '//what)
      end do
      read (t, *, iostat=ios) x
      if (ios /= 0) call fail('bad number "'//t//'" for '//what)
   end subroutine to_real

   subroutine env_int(name, n)
      character(len=*), intent(in) :: name
      integer, intent(inout) :: n
      character(len=128) :: v
      integer :: st, l
      call get_environment_variable(name, v, l, st)
      if (st == 0 .and. l > 0) call to_int(name, v, n)
      if (st == -1) call fail('value of '//name//' too long')
   end subroutine env_int

   subroutine env_real(name, x)
      character(len=*), intent(in) :: name
      real(dp), intent(inout) :: x
      character(len=128) :: v
      integer :: st, l
      call get_environment_variable(name, v, l, st)
      if (st == 0 .and. l > 0) call to_real(name, v, x)
      if (st == -1) call fail('value of '//name//' too long')
   end subroutine env_real

end program stencil
