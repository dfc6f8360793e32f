// dpdk_wait_set.cc: fi_wait_open (wait sets, fi_poll(3)).  A wait set
// gathers CQs, counters and EQs opened with FI_WAIT_SET; fi_wait returns
// once one of them has something: a CQ an entry or an error, a counter a
// value or error count other than when fi_wait last looked, an EQ an event.
// With FI_WAIT_FD (and FI_WAIT_UNSPEC) the set owns one eventfd and every
// member signals a duplicate of it (WaitFd::share; members never drain it,
// the set does, in fi_wait and fi_trywait), so an application can
// sleep on the one descriptor (after fi_trywait, as fi_poll(3) asks); the
// members' ports are in the progress loop meanwhile, as for FI_WAIT_FD
// objects (dpdk_wait.h).
#include <algorithm>
#include <chrono>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "drivers/ofi/dpdk_cntr.h"
#include "drivers/ofi/dpdk_cq.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_eq.h"
#include "drivers/ofi/dpdk_fabric.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_port_lock.h"

namespace ofi_dpdk::ofi {
namespace {

struct WaitSet {
  fid_wait fid;
  Fabric* fabric;
  fi_wait_attr attr;
  WaitFd fd;        // none with FI_WAIT_YIELD
  std::mutex lock;  // the members; taken before any port lock
  struct Member {
    ::fid* object;       // a CQ, counter or EQ
    uint64_t value = 0;  // a counter's value and errors when fi_wait last looked
    uint64_t errors = 0;
  };
  std::vector<Member> members;
};

// Whether `member` has something to read; a counter's reading is taken as
// seen when `take` is set.
bool has_event(WaitSet::Member& member, bool take) {
  switch (member.object->fclass) {
    case FI_CLASS_CQ: {
      Cq* cq = from_fid<Cq>(member.object);
      PortContext& port = *cq->domain->port;
      std::lock_guard guard(whole_lock(port));
      progress_if_manual(port);
      return !cq->empty();
    }
    case FI_CLASS_CNTR: {
      Cntr* cntr = from_fid<Cntr>(member.object);
      {
        PortContext& port = *cntr->domain->port;
        std::lock_guard guard(whole_lock(port));
        progress_if_manual(port);
      }
      const uint64_t value = cntr->value.load(), errors = cntr->errors.load();
      const bool moved = value != member.value || errors != member.errors;
      if (take) {
        member.value = value;
        member.errors = errors;
      }
      return moved;
    }
    case FI_CLASS_EQ: {
      Eq* eq = from_fid<Eq>(member.object);
      std::lock_guard guard(eq->lock);
      return !eq->events.empty() || !eq->errors.empty();
    }
    default:
      return false;
  }
}

// Checks every member (none left out: fi_wait then reads each counter's
// change once).
bool any_event(WaitSet* set, bool take) {
  std::lock_guard guard(set->lock);
  bool found = false;
  for (WaitSet::Member& member : set->members) found |= has_event(member, take);
  return found;
}

int wait_wait(fid_wait* waitset, int timeout) {
  WaitSet* set = from_fid<WaitSet>(waitset);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
  for (;;) {
    if (any_event(set, true)) return 0;
    const auto now = std::chrono::steady_clock::now();
    if (timeout >= 0 && now >= deadline) return -FI_ETIMEDOUT;
    if (set->fd.is_open()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      // Short naps: a counter's change is read from the counter, and a
      // member drained the shared descriptor may have hidden a signal.
      set->fd.wait(timeout < 0 ? 10 : static_cast<int>(std::min<int64_t>(left.count() + 1, 10)));
      set->fd.drain();
    } else {
      std::this_thread::yield();
    }
  }
}

int wait_close(fid* object) {
  WaitSet* set = from_fid<WaitSet>(object);
  {
    std::lock_guard guard(set->lock);
    if (!set->members.empty()) return -FI_EBUSY;
  }
  set->fabric->refs--;
  delete set;
  return 0;
}

int wait_set_control(fid* object, int command, void* arg) {
  WaitSet* set = from_fid<WaitSet>(object);
  return wait_control(set->attr.wait_obj, set->fd, command, arg);
}

fi_ops g_wait_fid_ops = {
    .size = sizeof(fi_ops),
    .close = wait_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = wait_set_control,
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_wait g_wait_ops = {
    .size = sizeof(fi_ops_wait),
    .wait = wait_wait,
};

bool is_ours(const fid_wait* set) {
  return set != nullptr && set->fid.fclass == FI_CLASS_WAIT && set->fid.ops == &g_wait_fid_ops;
}

}  // namespace

bool wait_object_supported(fi_wait_obj wait_obj, const fid_wait* wait_set) {
  if (wait_obj == FI_WAIT_SET) return is_ours(wait_set);
  return wait_obj == FI_WAIT_NONE || wait_obj == FI_WAIT_UNSPEC || wait_obj == FI_WAIT_YIELD ||
         wait_obj == FI_WAIT_FD;
}

int wait_open(fid_fabric* fabric_fid, fi_wait_attr* attr, fid_wait** waitset) {
  if (fabric_fid == nullptr || attr == nullptr || waitset == nullptr) return -FI_EINVAL;
  if (attr->flags != 0) return -FI_EINVAL;  // fi_poll(3): reserved, 0
  fi_wait_attr wanted = *attr;
  if (wanted.wait_obj == FI_WAIT_UNSPEC) wanted.wait_obj = FI_WAIT_FD;
  if (wanted.wait_obj != FI_WAIT_FD && wanted.wait_obj != FI_WAIT_YIELD) {
    DPDK_INFO(FI_LOG_FABRIC, "wait set wait object %d not supported: FI_WAIT_UNSPEC, FD or YIELD\n",
              attr->wait_obj);
    return -FI_ENOSYS;
  }
  auto* set = new (std::nothrow) WaitSet();
  if (set == nullptr) return -FI_ENOMEM;
  if (wanted.wait_obj == FI_WAIT_FD) {
    if (int ret = set->fd.open(); ret != 0) {
      delete set;
      return ret;
    }
  }
  set->attr = wanted;
  set->fabric = from_fid<Fabric>(fabric_fid);
  set->fabric->refs++;
  set->fid.fid.fclass = FI_CLASS_WAIT;
  set->fid.fid.context = nullptr;
  set->fid.fid.ops = &g_wait_fid_ops;
  set->fid.ops = &g_wait_ops;
  *waitset = &set->fid;
  return 0;
}

int join_wait_set(fid_wait* waitset, fid* member, WaitFd* fd) {
  WaitSet* set = from_fid<WaitSet>(waitset);
  if (int ret = fd->share(set->fd); ret != 0) return ret;
  std::lock_guard guard(set->lock);
  try {
    set->members.push_back(WaitSet::Member{member});
  } catch (const std::bad_alloc&) {
    return -FI_ENOMEM;
  }
  return 0;
}

void leave_wait_set(fid_wait* waitset, fid* member) {
  WaitSet* set = from_fid<WaitSet>(waitset);
  std::lock_guard guard(set->lock);
  auto& members = set->members;
  members.erase(std::remove_if(members.begin(), members.end(),
                               [&](const WaitSet::Member& m) { return m.object == member; }),
                members.end());
}

int wait_set_trywait(fid* object) {
  WaitSet* set = from_fid<WaitSet>(object);
  // Drained first: a member's signal after this look makes the descriptor
  // readable again, so a caller that then sleeps on it misses nothing.  A
  // counter's move is reported once, as fi_wait does.
  set->fd.drain();
  return any_event(set, true) ? -FI_EAGAIN : 0;
}

}  // namespace ofi_dpdk::ofi
