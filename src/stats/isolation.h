/*
 * isolation.h — the path lengths of an isolation forest over one group of one-dimensional
 * samples, for the analysis's OS-noise filter (postproc/perfvar/stats/isolation.py, which
 * documents the algorithm and calls this through ctypes when libperfvar_stats is found).
 *
 * The forest is grown level by level over every tree at once, as the Python implementation
 * grows it, and every addition to a sample's path length is made in the same order, so the
 * sums are the same to the bit: a node that is a leaf adds c(its size) over its share of the
 * sorted samples, a node that splits adds 1; per level the leaves' starts, the leaves' ends,
 * the splits' starts, then the splits' ends. The random numbers (the split draws and the
 * subsamples) come from the caller, so that one generator decides them.
 *
 * Units: none (sample values in any increasing scale; path lengths in tree levels). A pure
 * function of its arguments; thread-safe: each calling thread keeps its own work block (12
 * words and a byte per half a forest's subsample entries, 1.3 MB for 100 trees of 256) between
 * calls, as forests of one size come by the thousand.
 */
#ifndef PV_STATS_ISOLATION_H
#define PV_STATS_ISOLATION_H
#include <stdint.h>

/* Sum over the trees of each sample's path length, in the samples' sorted order.
 *   values[n]            the group's samples, sorted ascending (n >= 2)
 *   sub[trees * psi]     per tree, the sorted indices into values of its subsample
 *   draws[trees * heaps] per tree, the uniform [0, 1) draw of each heap number (root 1)
 *   c_of_size[psi + 1]   c(m): the average path length of an unsuccessful search in m
 *   limit                the depth at which every node is a leaf
 *   paths[n]             out: the sums
 * Returns 0, or -1 when an argument is out of range (n < 2, trees < 1, psi outside 2..n) or the
 * work space cannot be allocated (paths untouched). */
int perfvar_iforest_paths(const double *values, int64_t n, const int64_t *sub, int64_t trees,
                          int64_t psi, const double *draws, int64_t heaps, const double *c_of_size,
                          int64_t limit, double *paths);

#endif
