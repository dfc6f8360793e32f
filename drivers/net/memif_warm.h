// net_memif copies every frame into (and out of) a shared memory file both
// processes map: 2 x 1024 buffers of bsize bytes, 19 MB at bsize 9216.  Each
// 4 KiB page of it costs a page fault the first time this process writes to
// it, and under the hypervisors our machines run on (shadow paging) a read
// does not spare the write's fault, nor does MADV_POPULATE_WRITE: the process
// itself has to write to the page.  Measured here with app/bench, 1000
// writes of 64 KiB: 650 MB/s cold, 4.5-4.8 GB/s with the region written to
// first, the same as a run long enough to hide the start (fabtests' default
// counts are that short).  So a memif port writes to every page of the
// region once, when its link comes up.
#pragma once

#include <cstddef>

namespace ofi_dpdk::net {

// Writes to every page of [start, start + length) without changing a byte:
// an atomic add of zero, so a frame the peer is writing at that moment keeps
// every byte it wrote.  Returns the number of pages written to.
size_t write_each_page(void* start, size_t length);

// write_each_page on each net_memif shared memory region this process maps
// ("/memfd:memif_region_<n>" in /proc/self/maps) that it has not warmed
// before: another port's region, warmed at its own link-up, may be on its
// way out (the driver unmaps it on EAL's interrupt thread when its peer
// goes), and is left alone.  Returns the number of pages written to.
size_t warm_new_memif_regions();

}  // namespace ofi_dpdk::net
