/* header_perfvar.c — perfvar.h compiles alone (and twice: include guard) and declares a usable API. */
#include "perfvar.h"
#include "perfvar.h"

int header_perfvar_h(void);

int header_perfvar_h(void)
{
    perfvar_region_stats stats = {0, 0.0, 0.0, 0.0};
    perfvar_clock_info info;
    int (*reg)(const char *, int *) = perfvar_region_register;
    int (*start)(int) = perfvar_start;
    int (*stop)(int) = perfvar_stop;
    int (*get)(int, perfvar_region_stats *) = perfvar_region_stats_get;
    int (*clk)(perfvar_clock_info *) = perfvar_clock_info_get;
    int (*now)(uint64_t *, int *) = perfvar_clock_now;
    double (*conv)(uint64_t) = perfvar_ticks_to_ns;
    const char *(*err)(int) = perfvar_strerror;
    enum perfvar_status s = PERFVAR_ERR_CONFIG;
    info.serialized = 0;
    return (reg && start && stop && get && clk && now && conv && err && stats.count == 0 &&
            info.serialized == 0 && s == -10 && PERFVAR_NAME_MAX > 1 && PERFVAR_MAX_DEPTH > 0 &&
            PERFVAR_MAX_REGIONS > 0 && PERFVAR_VERSION_MAJOR >= 0)
               ? 0
               : 1;
}
