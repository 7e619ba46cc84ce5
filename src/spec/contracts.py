"""The names and layouts that perfvar's C library and its Python package must agree on.

Plain data, read by gen_spec.py, which writes from it the C header the library is built
with (pv_spec.h, in the build tree) and the package's postproc/perfvar/_spec.py
(committed, so the package runs from the source tree). A change here is a change of both
sides at once; ctest spec.python_in_sync fails when the committed _spec.py is not what
this table gives, and the C side's _Static_asserts fail the build when a struct below is
not the struct the compiler sees. Python 3.9 stdlib only (src/wrapgen/mpi_groups.py imports
it at build time).
"""

# Timers of perfvar_calib.h (enum perfvar_timer): enum name after PERFVAR_TIMER_, its
# value, the name perfvar_timer_name gives (and `perfvar calibrate --timers` takes), the
# unit of its samples.
TIMERS = (
    ("BARRIER", 0, "barrier", "ns"),
    ("RDTSC", 1, "rdtsc", "ns"),
    ("CLOCK_GETTIME", 2, "clock_gettime", "ns"),
    ("PAPI_REAL_NSEC", 3, "papi_real_nsec", "ns"),
    ("PAPI_REAL_CYC", 4, "papi_real_cyc", "ns"),
    ("MPI_WTIME", 5, "mpi_wtime", "ns"),
    ("CYCLES", 6, "cycles", "cycles"),
    ("PAPI_READ", 7, "papi_read", "cycles"),
)

# MPI function groups, in the order of PERFVAR_BOUNDARIES' bit mask (src/config): name,
# whether its calls end a compute segment by default, what it holds (for the docs).
MPI_GROUPS = (
    ("env", True, "MPI_Init/MPI_Finalize and the like"),
    ("p2p", True, "point-to-point messages"),
    ("collective", True, "collective operations"),
    ("wait", True, "wait/test and request management"),
    ("onesided", True, "one-sided communication"),
    ("file", True, "MPI-IO"),
    ("comm", True, "communicator creation"),
    ("local", False, "local queries such as MPI_Comm_rank"),
)

# Structs Python reads through ctypes or numpy: C name, the header that declares it,
# whether it is packed, the ctypes class _spec.py defines for it (None: read as numpy
# rows, see read/samples.py), and its fields in declaration order as (name, C type).
# C types: char[N], int, double, int32_t, int64_t, uint64_t, double[N].
STRUCTS = (
    (
        "perfvar_clock_info",
        "perfvar.h",
        False,
        "ClockInfo",
        (
            ("name", "char[32]"),
            ("hz_method", "char[64]"),
            ("hz", "double"),
            ("hz_rel_error", "double"),
            ("serialized", "int"),
            ("has_cpu_id", "int"),
            ("note", "char[160]"),
        ),
    ),
    (
        "perfvar_read_result",
        "read/read.h",
        False,
        "ReadResult",
        (
            ("evt_reader", "int"),
            ("otf2_status", "int"),
            ("out_of_memory", "int"),
            ("events_read", "uint64_t"),
            ("user_regions", "int64_t"),
            ("unclosed", "int64_t"),
            ("unmatched_leaves", "int64_t"),
            ("open_at_end", "int64_t"),
            ("first_sample", "int64_t"),
            ("nsamples", "int64_t"),
            ("first_probe", "int64_t"),
            ("nprobes", "int64_t"),
            ("overrun", "int"),
            ("first_metric", "int64_t"),
            ("nmetrics", "int64_t"),
        ),
    ),
    (
        "perfvar_read_sample",
        "read/read.h",
        True,
        None,
        (
            ("segment", "int32_t"),
            ("rank", "int32_t"),
            ("thread", "int32_t"),
            ("start_ticks", "uint64_t"),
            ("duration_ns", "double"),
            ("cpu_enter", "int32_t"),
            ("cpu_leave", "int32_t"),
            ("context_bytes", "int64_t"),
        ),
    ),
    (
        "perfvar_read_probe",
        "read/read.h",
        True,
        None,
        (
            ("rank", "int32_t"),
            ("thread", "int32_t"),
            ("start_ticks", "uint64_t"),
            ("duration_ns", "double"),
            ("cpu", "int32_t"),
        ),
    ),
    (
        "perfvar_read_metric",
        "read/read.h",
        True,
        None,
        (
            ("rank", "int32_t"),
            ("thread", "int32_t"),
            ("sample", "int64_t"),
            ("first", "int64_t"),
            ("time_ticks", "uint64_t"),
            ("since_ticks", "uint64_t"),
            ("values", "double[16]"),
        ),
    ),
)

# Names in the OTF2 archive that the writer (src/trace, src/pmpi) and the readers (read/,
# libperfvar_read's caller) agree on, as (NAME, text): a compute segment's region is
# SEGMENT_PREFIX + its opening call site + SITE_SEPARATOR + its closing one; a user
# region's, USER_PREFIX + the name given to perfvar_region; the fixed-work probes' region,
# PROBE_REGION; the attribute of each Enter and Leave that carries the CPU of the clock
# read, CPU_ATTRIBUTE.
TRACE_NAMES = (
    ("SEGMENT_PREFIX", "perfvar:segment:"),
    ("SITE_SEPARATOR", ";"),
    ("USER_PREFIX", "perfvar:user:"),
    ("PROBE_REGION", "perfvar:probe"),
    ("CPU_ATTRIBUTE", "cpu"),
)

# Region kinds perfvar_read_open takes (read/read.h: PERFVAR_READ_REGION_<NAME>; a kind >= 0
# is a segment's index), as (NAME, value).
READ_REGION_KINDS = (("OTHER", -1), ("USER", -2), ("PROBE", -3))

# perfvar-markers' input (report/markers.py writes it, src/markers/markers.c parses it):
# one marker a line, these fields in this order, separated by SEPARATOR, the last taking
# the rest of the line.
MARKERS = {
    "group": "perfvar",  # the group perfvar-markers replaces when given no --group
    "separator": "\t",
    "fields": ("category", "severity", "start_ns", "end_ns", "scope", "text"),
    "whole_run": "-",  # a start_ns or end_ns of the trace's start or end
    # name, OTF2_MarkerSeverity
    "severities": (
        ("NONE", "OTF2_SEVERITY_NONE"),
        ("LOW", "OTF2_SEVERITY_LOW"),
        ("MEDIUM", "OTF2_SEVERITY_MEDIUM"),
        ("HIGH", "OTF2_SEVERITY_HIGH"),
    ),
    # name, OTF2_MarkerScope, whether ":<id>" follows (a location or location group)
    "scopes": (
        ("GLOBAL", "OTF2_MARKER_SCOPE_GLOBAL", False),
        ("LOCATION", "OTF2_MARKER_SCOPE_LOCATION", True),
        ("LOCATION_GROUP", "OTF2_MARKER_SCOPE_LOCATION_GROUP", True),
    ),
    "scope_id_separator": ":",
}

# DIR/perfvar/rank-N.json (src/pmpi/rank_meta.c writes it; read/meta.py and others read
# it; docs/trace-format.md shows one). One entry per object of the file: its name, the
# C macro infix and Python class suffix of its keys, where it sits (a path of keys, []
# for an array's elements; a {unit} in a key is filled from the path's value), and its
# keys in the order they are written, as (key, JSON type[, when]). JSON types: int,
# number, string, bool, array, object, or "T|null". A key with a `when` (sibling key,
# value) is written only when that sibling has that value.
RANK_JSON = (
    {
        "name": "top",
        "c": "",
        "py": "",
        "paths": {"": {}},
        "keys": (
            ("rank", "int"),
            ("nranks", "int"),
            ("host", "string"),
            ("pid", "int"),
            ("cpus", "array"),
            ("topology", "object"),
            ("clock", "object"),
            ("clock_caps", "object"),
            ("clock_offset", "object"),
            ("calibration", "object"),
            ("mpi", "object"),
            ("thread_level", "string"),
            ("threads", "array"),
            ("probe", "object|null"),
            ("metrics", "object|null"),
            ("neighbours", "object|null"),
            ("events", "object"),
            ("segments", "int"),
            ("untraced_thread_calls", "int"),
            ("convert_ms", "number"),
            ("records_kept", "bool"),
            ("complete", "bool"),
        ),
    },
    {
        # Where the rank ran in the machine: the socket (package), NUMA node and core of the
        # CPU it started on, and of each CPU it may run on. "source" is "hwloc", or "sysfs"
        # where perfvar was built without hwloc (then "note" says so), or "none" where
        # neither could tell (the three numbers -1, "cpus" empty). Numbers are the OS's, the
        # same from hwloc and /sys: package = physical_package_id (hwloc's Package os_index),
        # numa = N of /sys/devices/system/node/nodeN (NUMANode os_index), core = core_id (Core
        # os_index): unique within its package, not necessarily dense. -1: not known.
        # The trace's system tree puts the rank under the socket and core its "cpus" share.
        "name": "topology",
        "c": "TOPO",
        "py": "Topology",
        "paths": {"topology": {}},
        "keys": (
            ("source", "string"),
            ("note", "string"),
            ("package", "int"),
            ("numa", "int"),
            ("core", "int"),
            ("cpus", "array"),
        ),
    },
    {
        # One CPU of the rank's affinity mask and where it sits.
        "name": "topology_cpu",
        "c": "TCPU",
        "py": "TopologyCpu",
        "paths": {"topology.cpus[]": {}},
        "keys": (
            ("cpu", "int"),
            ("package", "int"),
            ("numa", "int"),
            ("core", "int"),
        ),
    },
    {
        "name": "clock",
        "c": "CLOCK",
        "py": "Clock",
        "paths": {"clock": {}},
        "keys": (
            ("name", "string"),
            ("hz", "number"),
            ("hz_method", "string"),
            ("hz_rel_error", "number"),
            ("measured_hz", "number"),
            ("measured_rel_error", "number"),
            ("hz_vs_measured_rel", "number|null"),
            ("serialized", "bool"),
            ("fenced_read", "string"),
            ("note", "string"),
        ),
    },
    {
        "name": "clock_caps",
        "c": "CAPS",
        "py": "Caps",
        "paths": {"clock_caps": {}},
        "keys": (
            ("rdtscp", "bool"),
            ("invariant_tsc", "bool"),
            ("cpuid_tsc_hz", "number"),
            ("cpuid_base_mhz", "number"),
            ("hypervisor", "string"),
            ("hypervisor_tsc_hz", "number"),
            ("tsc_stable_by", "string"),
            ("kernel_tsc_hz", "number"),
            ("kernel_tsc_why", "string"),
            ("cycles", "bool"),
            ("cycles_why", "string"),
        ),
    },
    {
        "name": "clock_offset",
        "c": "OFFSET",
        "py": "Offset",
        "paths": {"clock_offset": {}},
        "keys": (
            ("begin_ticks", "int"),
            ("end_ticks", "int"),
            ("stddev_ticks", "number"),
        ),
    },
    {
        "name": "calibration",
        "c": "CAL",
        "py": "Calibration",
        "paths": {"calibration": {}},
        "keys": (
            ("mode", "string"),
            ("status", "string"),
            ("estimate", "string"),
            # When it ran: "start-up", or "MPI_Finalize" where the start-up one found no
            # flush-0 t_min/t_diff and the rank calibrated again at its stop.
            ("at", "string"),
            ("timer_overhead_ns", "number"),
            ("clock_granularity_ns", "number"),
            ("t_min_ns", "number"),
            ("t_diff_ns", "number"),
            ("ns_per_add", "number"),
            ("t_min_adds", "int"),
            ("t_diff_adds", "int"),
            ("t_min_cv", "number"),
            ("t_diff_overlap", "number"),
            ("cpu_start", "int"),
            ("cpu_end", "int"),
            ("elapsed_ms", "number"),
            ("n_samples", "int"),
            ("n_samples_flushed", "int"),
            ("p", "int"),
            ("q", "int"),
            ("epsilon", "number"),
            ("alpha", "number"),
            ("nstates", "int"),
            ("budget_ms", "number"),
            ("states", "array"),
            ("cycles", "object"),
        ),
    },
    {
        # One cache state's result; the cycle counter's pass has one, in cycles.
        "name": "state",
        "c": "STATE",
        "py": "State",
        "paths": {
            "calibration.states[]": {"unit": "ns"},
            "calibration.cycles.state": {"unit": "cycles"},
        },
        "keys": (
            ("label", "string"),
            ("flush", "int"),
            ("n_samples", "int"),
            ("n_requested", "int"),
            ("status", "string"),
            ("note", "string"),
            ("t_min_{unit}", "number"),
            ("t_diff_{unit}", "number"),
            ("{unit}_per_add", "number"),
            ("t_min_adds", "int"),
            ("t_diff_adds", "int"),
            ("t_min_cv", "number"),
            ("t_diff_overlap", "number"),
            ("budget_ms", "number"),
            ("elapsed_ms", "number"),
            ("flush_ms", "number"),
            ("distributions", "int"),
            ("dropped", "int"),
        ),
    },
    {
        "name": "cycles",
        "c": "CYC",
        "py": "Cycles",
        "paths": {"calibration.cycles": {}},
        "keys": (
            ("available", "bool"),
            ("why", "string", ("available", False)),
            ("counter", "string", ("available", True)),
            ("timer_overhead_cycles", "number", ("available", True)),
            ("clock_granularity_cycles", "number", ("available", True)),
            ("state", "object", ("available", True)),
        ),
    },
    {
        "name": "mpi",
        "c": "MPI",
        "py": "Mpi",
        "paths": {"mpi": {}},
        "keys": (
            ("library", "string"),
            ("layer", "string"),
            ("status_sizes", "string"),
            ("boundaries", "array"),  # MPI_GROUPS' names
            ("callpath_depth", "int"),
            ("callpath_unwinder", "string"),
            ("calls", "object"),  # MPI function name: calls made
        ),
    },
    {
        "name": "thread",
        "c": "THR",
        "py": "Thread",
        "paths": {"threads[]": {}},
        "keys": (
            ("thread", "int"),
            ("location", "int"),
            ("segments", "int"),
            ("events", "int"),
            ("calls", "int"),
            ("lost_records", "int"),
            ("buffer_moves", "int"),
            ("buffer_move_ms", "number"),
        ),
    },
    {
        "name": "probe",
        "c": "PROBE",
        "py": "Probe",
        "paths": {"probe": {}},
        "keys": (
            ("period_ms", "int"),
            ("adds", "int"),
            ("lanes", "int"),
            ("k_source", "string"),
            ("count", "int"),
            ("total_ns", "number"),
            ("threads", "array"),
        ),
    },
    {
        "name": "probe_thread",
        "c": "PTHR",
        "py": "ProbeThread",
        "paths": {"probe.threads[]": {}},
        "keys": (
            ("thread", "int"),
            ("count", "int"),
            ("total_ns", "number"),
        ),
    },
    {
        "name": "metrics",
        "c": "METRICS",
        "py": "Metrics",
        "paths": {"metrics": {}},
        "keys": (
            ("events", "array"),
            ("min_us", "int"),
            ("reads", "int"),
        ),
    },
    {
        # What else ran on the rank's CPUs from its start to its stop (src/metrics/neighbours.h).
        "name": "neighbours",
        "c": "NEIGH",
        "py": "Neighbours",
        "paths": {"neighbours": {}},
        "keys": (
            ("span_ns", "number"),
            ("tick_ns", "number"),
            ("self_ns", "number"),  # the rank's process's CPU time
            ("cpus", "array"),
            ("tasks", "array"),
        ),
    },
    {
        # One CPU the rank ran on: where its time went (the kernel's /proc/stat columns).
        "name": "neighbour_cpu",
        "c": "NCPU",
        "py": "NeighbourCpu",
        "paths": {"neighbours.cpus[]": {}},
        "keys": (
            ("cpu", "int"),
            ("user_ns", "number"),
            ("nice_ns", "number"),
            ("system_ns", "number"),
            ("idle_ns", "number"),
            ("iowait_ns", "number"),
            ("irq_ns", "number"),
            ("softirq_ns", "number"),
            ("steal_ns", "number"),
        ),
    },
    {
        # A task of another process that ran, last on one of the rank's CPUs; most time first.
        "name": "neighbour_task",
        "c": "NTASK",
        "py": "NeighbourTask",
        "paths": {"neighbours.tasks[]": {}},
        "keys": (
            ("pid", "int"),
            ("tid", "int"),
            ("comm", "string"),
            ("cpu", "int"),
            ("ns", "number"),
        ),
    },
    {
        "name": "events",
        "c": "EVENTS",
        "py": "Events",
        "paths": {"events": {}},
        "keys": (
            ("written", "int"),
            ("lost", "int"),
            ("timestamps_raised", "int"),
            ("buffer_flushes", "int"),
        ),
    },
)

# DIR/perfvar/run.json (rank 0's src/pmpi/rank_meta.c writes it; the reports read it), in the
# form of RANK_JSON.
RUN_JSON = (
    {
        "name": "top",
        "c": "",
        "py": "",
        "paths": {"": {}},
        "keys": (
            ("nranks", "int"),
            ("command", "string"),
            ("start_utc", "string"),
            ("perfvar_version", "string"),
            ("mpi_library", "string"),
        ),
    },
)

# DIR/perfvar/ended-rank-N.json: how a rank's threads ended, in a job that did not finish
# (perfvar-recover, src/recover/recover.c, writes it; read/recover.py reads it), in the form
# of RANK_JSON.
ENDED_JSON = (
    {
        "name": "top",
        "c": "",
        "py": "",
        "paths": {"": {}},
        "keys": (
            ("rank", "int"),
            ("recovered", "bool"),
            ("error", "string"),
            ("threads", "array"),
        ),
    },
    {
        "name": "thread",
        "c": "THREAD",
        "py": "Thread",
        "paths": {"threads[]": {}},
        "keys": (
            ("thread", "int"),
            ("state", "string"),
            ("signal", "int"),
            ("sent_by", "string"),
            ("in_mpi_call", "bool"),
            ("end_s", "number"),
            ("end_utc_ns", "number"),
            ("silence_s", "number"),
            ("calls", "int"),
            ("segments", "int"),
            ("lost_records", "int"),
        ),
    },
)

# DIR/perfvar/calibration-rank-N.json: the calibration's raw distributions, for the judge
# (src/pmpi/rank_meta.c writes it; perfvar.calibration.judge reads it, as it reads the samples
# of `perfvar calibrate --json`, which share the keys the judge reads), in the form of
# RANK_JSON. The top level is flush 0; "states" the flushed cache states; "cycles" the cycle
# counter's pass, null where there is none.
CALIBRATION_JSON = (
    {
        "name": "top",
        "c": "",
        "py": "",
        "paths": {"": {}},
        "keys": (
            ("rank", "int"),
            ("flush", "int"),
            ("n_samples", "int"),
            ("epsilon", "number"),
            ("alpha", "number"),
            ("p", "int"),
            ("q", "int"),
            ("timer_overhead_ns", "number"),
            ("clock_granularity_ns", "number"),
            ("overhead_removed", "bool"),
            ("dropped", "int"),
            ("distributions", "array"),
            ("states", "array"),
            ("cycles", "object|null"),  # null without a cycle counter's pass
        ),
    },
    {
        "name": "distribution",
        "c": "DIST",
        "py": "Distribution",
        "paths": {
            "distributions[]": {"unit": "ns"},
            "states[].distributions[]": {"unit": "ns"},
            "cycles.distributions[]": {"unit": "cycles"},
        },
        "keys": (
            ("kind", "string"),
            ("adds", "int"),
            ("base", "int"),
            ("d", "int"),
            ("pair", "int"),
            ("samples_{unit}", "array"),
        ),
    },
    {
        "name": "state",
        "c": "STATE",
        "py": "State",
        "paths": {"states[]": {}},
        "keys": (
            ("label", "string"),
            ("flush", "int"),
            ("n_samples", "int"),
            ("status", "string"),
            ("dropped", "int"),
            ("distributions", "array"),
        ),
    },
    {
        "name": "cycles",
        "c": "CYCLES",
        "py": "Cycles",
        "paths": {"cycles": {}},
        "keys": (
            ("counter", "string"),
            ("n_samples", "int"),
            ("status", "string"),
            ("timer_overhead_cycles", "number"),
            ("clock_granularity_cycles", "number"),
            ("dropped", "int"),
            ("distributions", "array"),
        ),
    },
)

# The JSON files of DIR/perfvar/ whose keys both sides take from here, as (file, C macro
# prefix, Python class prefix, table): C opens a member with PV_<C>_[<OBJECT>_]<KEY>
# ("\"key\": ") and names a key with PV_<C>N_[<OBJECT>_]<KEY>; Python reads the key from
# <Py>[<Object>].<KEY>.
JSON_FILES = (
    ("rank-N.json", "RJ", "RankJson", RANK_JSON),
    ("run.json", "RUNJ", "RunJson", RUN_JSON),
    ("ended-rank-N.json", "ENDJ", "EndedJson", ENDED_JSON),
    ("calibration-rank-N.json", "CALJ", "CalibrationJson", CALIBRATION_JSON),
)
