#include "drivers/net/interrupt_thread.h"

#include <rte_alarm.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>

#include <semaphore>

namespace ofi_dpdk::net {
namespace {

struct Job {
  const std::function<void()>* work;
  std::binary_semaphore done{0};
};

void run_job(void* argument) {
  auto* job = static_cast<Job*>(argument);
  (*job->work)();
  job->done.release();
}

}  // namespace

void run_on_interrupt_thread(const std::function<void()>& work) {
  if (rte_thread_is_intr() != 0) {
    work();
    return;
  }
  Job job{&work};
  if (rte_eal_alarm_set(1, &run_job, &job) != 0) {
    work();
    return;
  }
  job.done.acquire();
}

int stop_device(uint16_t port_id) {
  int result = 0;
  run_on_interrupt_thread([&] { result = rte_eth_dev_stop(port_id); });
  return result;
}

}  // namespace ofi_dpdk::net
