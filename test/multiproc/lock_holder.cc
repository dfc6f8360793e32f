// lock_holder.cc: a DPDK secondary that dies holding EAL's memory lock, as
// a process killed in the middle of its EAL start-up does.  Its primary
// (dpdk-fi-switch) must still stop: test_shared_port.sh, step 5.
#include <rte_eal.h>
#include <rte_eal_memconfig.h>

#include <csignal>
#include <cstdio>

int main(int argc, char** argv) {
  if (rte_eal_init(argc, argv) < 0) {
    std::fprintf(stderr, "lock_holder: rte_eal_init failed\n");
    return 1;
  }
  rte_mcfg_mem_read_lock();
  std::raise(SIGKILL);
  return 1;
}
