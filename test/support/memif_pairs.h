// memif_pairs.h: net_memif pairs with both ends in one test process, for a
// test program that brings up EAL itself (test_eal.h).  Pair i is server
// net_memif<2i> and client net_memif<2i+1>, on a socket file of its own,
// removed when the MemifPairVdevs goes.
#pragma once

#include <unistd.h>

#include <string>
#include <vector>

namespace ofi_dpdk::test {

class MemifPairVdevs {
 public:
  // `name` goes into the sockets' names (/tmp/ofi-dpdk-NAME-PID-I.sock);
  // `devargs` into both ends' (e.g. "rsize=8").
  MemifPairVdevs(const std::string& name, int pairs, const std::string& devargs) {
    eal_args_.push_back("--log-level=pmd.net.memif:error");
    for (int pair = 0; pair < pairs; ++pair) {
      sockets_.push_back("/tmp/ofi-dpdk-" + name + "-" + std::to_string(getpid()) + "-" +
                         std::to_string(pair) + ".sock");
      eal_args_.push_back(vdev(2 * pair, "server", devargs));
      eal_args_.push_back(vdev(2 * pair + 1, "client", devargs));
    }
  }
  ~MemifPairVdevs() {
    for (const std::string& socket : sockets_) unlink(socket.c_str());
  }
  MemifPairVdevs(const MemifPairVdevs&) = delete;
  MemifPairVdevs& operator=(const MemifPairVdevs&) = delete;

  // EAL's arguments: the vdevs, and memif's log kept to errors.
  const std::vector<std::string>& eal_args() const { return eal_args_; }

 private:
  std::string vdev(int index, const char* role, const std::string& devargs) const {
    return "--vdev=net_memif" + std::to_string(index) + ",role=" + role + ",id=0," + devargs +
           ",socket=" + sockets_.back();
  }

  std::vector<std::string> eal_args_;
  std::vector<std::string> sockets_;
};

}  // namespace ofi_dpdk::test
