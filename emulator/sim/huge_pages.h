/* huge_pages.h — storlab-sim's tables on huge pages.
 *
 * A full-size cluster keeps GiB of model tables (SSD mapping, read-cache
 * slots, write-buffer hash) and tens of thousands of I/Os in flight, each
 * touched again milliseconds of simulated time later: with 4 KiB pages
 * nearly every such touch misses the TLB as well as the cache, and under a
 * hypervisor a TLB miss is a two-level page walk.  glibc asks the kernel
 * for transparent huge pages on its own allocations when its
 * glibc.malloc.hugetlb tunable is 1, which can only be set before the
 * process starts: so the program starts itself again once with it. */
#ifndef STORLAB_SIM_HUGE_PAGES_H
#define STORLAB_SIM_HUGE_PAGES_H

/* Re-executes the program with glibc.malloc.hugetlb=1 added to
 * GLIBC_TUNABLES unless it is there already (then, or if the exec fails,
 * it returns and the run goes on with ordinary pages).
 * STORLAB_SIM_HUGE_PAGES=0 turns it off. */
void sl_sim_use_huge_pages (char **argv);

#endif
