/* c_timer.c — the C timer API from an installed perfvar. */
#include <perfvar.h>
#include <stdio.h>

int main(void)
{
    int h;
    perfvar_region_stats s;
    if (perfvar_region_register("work", &h) || perfvar_start(h) || perfvar_stop(h) ||
        perfvar_region_stats_get(h, &s) || s.count != 1)
        return 1;
    printf("c_timer: 1 pair, %.1f ns\n", s.total_ns);
    return 0;
}
