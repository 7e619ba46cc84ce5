/* resolution.c — the step a clock reads in; see resolution.h. */
#include "resolution.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pv_clock_resolution(double *values, int n)
{
    if (n < 2) return 0;
    qsort(values, (size_t)n, sizeof *values, cmp_double);
    int lo = n / 20, hi = n - 1 - n / 20;
    double widest = 0;
    for (int i = lo + 1; i <= hi; i++)
        if (values[i] - values[i - 1] > widest) widest = values[i] - values[i - 1];
    return widest;
}
