// unmap_guard.cc: see unmap_guard.h.  The redirection rewrites the
// driver's import slot for munmap (its GOT entry, found through the ELF
// dynamic section the loader mapped), as a debugger or profiler would.
#include "drivers/net/unmap_guard.h"

#include <elf.h>
#include <link.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <rte_log.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace ofi_dpdk::net {

// Each thread that opens guarded bursts has a slot of its own: the
// sequence of its bursts, odd while one is open, written by that thread
// alone with plain stores.  The unmapping thread makes them visible with
// membarrier(2), which runs a full barrier on every thread of the process:
// the poller's hot path takes no locked instruction and no fence.
struct alignas(64) BurstSlot {
  std::atomic<uint64_t> sequence{0};
  std::atomic<bool> taken{false};
  uint32_t depth = 0;  // the owner's nesting, read by it alone
};

namespace {

constexpr size_t kSlots = 256;
BurstSlot g_slots[kSlots];
// Threads past kSlots share one counter, with locked adds (and a fence).
std::atomic<uint32_t> g_overflow_bursts{0};
[[gnu::tls_model("initial-exec")]] thread_local BurstSlot* t_slot = nullptr;
[[gnu::tls_model("initial-exec")]] thread_local bool t_overflowed = false;
// This thread's part of g_overflow_bursts: a driver that unmaps from inside
// one of our bursts on this thread must not wait for that burst to end.
[[gnu::tls_model("initial-exec")]] thread_local uint32_t t_overflow_depth = 0;
// Whether membarrier(2) (private expedited) is registered: decided once,
// before the first guarded port opens, and never changed.  Without it each
// burst pays a full fence.
std::atomic<bool> g_membarrier{false};

void release_slot(void* slot) {
  static_cast<BurstSlot*>(slot)->taken.store(false, std::memory_order_release);
}

BurstSlot* claim_slot() {
  static pthread_key_t key;
  static const bool key_made = pthread_key_create(&key, &release_slot) == 0;
  for (BurstSlot& slot : g_slots) {
    bool free = false;
    if (slot.taken.load(std::memory_order_relaxed) ||
        !slot.taken.compare_exchange_strong(free, true, std::memory_order_acquire))
      continue;
    if (key_made) pthread_setspecific(key, &slot);  // released when the thread ends
    return t_slot = &slot;
  }
  t_overflowed = true;
  return nullptr;
}

int membarrier(int command) {
  return static_cast<int>(syscall(__NR_membarrier, command, 0, 0));
}

void use_membarrier_if_offered() {
  const int offered = membarrier(MEMBARRIER_CMD_QUERY);
  g_membarrier.store(offered > 0 && (offered & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
                         membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0,
                     std::memory_order_relaxed);
}

// A thread stopped inside a burst (a debugger) must not hold EAL's
// interrupt thread for ever; past this the unmap goes ahead.
constexpr auto kLongestWait = std::chrono::seconds(2);

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
constexpr uint32_t kGlobalData = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kGlobalData = R_AARCH64_GLOB_DAT;
#else
constexpr uint32_t kJumpSlot = ~0u;
constexpr uint32_t kGlobalData = ~0u;
#endif

using Munmap = int (*)(void*, size_t);

struct Search {
  const char* library;
  int slots_redirected = 0;
};

// The loader rewrites most d_ptr values to addresses; some loaders leave
// them as offsets from the object's base.
uintptr_t dynamic_address(const dl_phdr_info& object, ElfW(Addr) value) {
  return value < object.dlpi_addr ? object.dlpi_addr + value : value;
}

// Points the import slot at the guard.  RELRO slots are read-only once the
// loader is done with them: opened for the write, closed again after.
bool redirect(uintptr_t slot, bool in_relro) {
  auto* entry = reinterpret_cast<std::atomic<Munmap>*>(slot);
  if (entry->load(std::memory_order_relaxed) == &guarded_munmap) return true;
  const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* page = reinterpret_cast<void*>(slot & ~(page_size - 1));
  if (in_relro && mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0) return false;
  entry->store(&guarded_munmap, std::memory_order_release);
  if (in_relro) mprotect(page, page_size, PROT_READ);
  return true;
}

int visit(dl_phdr_info* object, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  if (object->dlpi_name == nullptr || std::strstr(object->dlpi_name, search->library) == nullptr)
    return 0;
  const ElfW(Dyn)* dynamic = nullptr;
  uintptr_t relro_begin = 0, relro_end = 0;
  for (ElfW(Half) i = 0; i < object->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = object->dlpi_phdr[i];
    if (header.p_type == PT_DYNAMIC)
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(object->dlpi_addr + header.p_vaddr);
    if (header.p_type == PT_GNU_RELRO) {
      // The loader write-protects only whole pages: a slot in the last,
      // partial page of the segment stays writable (and that page holds
      // other data that must stay so).
      const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
      relro_begin = object->dlpi_addr + header.p_vaddr;
      relro_end = (relro_begin + header.p_memsz) & ~(page_size - 1);
    }
  }
  if (dynamic == nullptr) return 1;
  const ElfW(Sym)* symbols = nullptr;
  const char* names = nullptr;
  const ElfW(Rela)* plt_relocations = nullptr;
  const ElfW(Rela)* relocations = nullptr;
  size_t plt_bytes = 0, bytes = 0;
  bool plt_is_rela = true;
  for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
    switch (entry->d_tag) {
      case DT_SYMTAB:
        symbols = reinterpret_cast<const ElfW(Sym)*>(dynamic_address(*object, entry->d_un.d_ptr));
        break;
      case DT_STRTAB:
        names = reinterpret_cast<const char*>(dynamic_address(*object, entry->d_un.d_ptr));
        break;
      case DT_JMPREL:
        plt_relocations =
            reinterpret_cast<const ElfW(Rela)*>(dynamic_address(*object, entry->d_un.d_ptr));
        break;
      case DT_PLTRELSZ:
        plt_bytes = entry->d_un.d_val;
        break;
      case DT_PLTREL:
        plt_is_rela = entry->d_un.d_val == DT_RELA;
        break;
      case DT_RELA:
        relocations =
            reinterpret_cast<const ElfW(Rela)*>(dynamic_address(*object, entry->d_un.d_ptr));
        break;
      case DT_RELASZ:
        bytes = entry->d_un.d_val;
        break;
      default:
        break;
    }
  }
  if (symbols == nullptr || names == nullptr || !plt_is_rela) return 1;
  auto scan = [&](const ElfW(Rela) * table, size_t table_bytes) {
    if (table == nullptr) return;
    for (size_t i = 0; i < table_bytes / sizeof(ElfW(Rela)); ++i) {
      const uint32_t type = ELF64_R_TYPE(table[i].r_info);
      if (type != kJumpSlot && type != kGlobalData) continue;
      const ElfW(Sym)& symbol = symbols[ELF64_R_SYM(table[i].r_info)];
      if (std::strcmp(names + symbol.st_name, "munmap") != 0) continue;
      const uintptr_t slot = object->dlpi_addr + table[i].r_offset;
      if (redirect(slot, slot >= relro_begin && slot < relro_end)) ++search->slots_redirected;
    }
  };
  scan(plt_relocations, plt_bytes);
  scan(relocations, bytes);
  return 1;
}

}  // namespace

bool guard_unmaps_of(const char* library) {
  static std::mutex lock;  // two ports opening at once patch one slot once
  const std::lock_guard<std::mutex> hold(lock);
  static std::once_flag decided;
  std::call_once(decided, &use_membarrier_if_offered);
  Search search{library};
  dl_iterate_phdr(&visit, &search);
  return search.slots_redirected > 0;
}

// Either the unmapping thread sees this burst open, or this burst sees the
// driver's disconnected mark, stored before the unmap: the membarrier (or,
// without it, the fence here and the one in guarded_munmap) orders the
// mark's store before the slot's load there, and the slot's store before
// the mark's load here.
void GuardedBurst::enter() {
  slot_ = t_slot != nullptr || t_overflowed ? t_slot : claim_slot();
  if (slot_ == nullptr) {
    ++t_overflow_depth;
    g_overflow_bursts.fetch_add(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // the add is not one everywhere
    return;
  }
  if (slot_->depth++ != 0) return;
  slot_->sequence.store(slot_->sequence.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
  if (g_membarrier.load(std::memory_order_relaxed))
    std::atomic_signal_fence(std::memory_order_seq_cst);
  else
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

void GuardedBurst::leave() {
  if (slot_ == nullptr) {
    g_overflow_bursts.fetch_sub(1, std::memory_order_release);
    --t_overflow_depth;
    return;
  }
  if (--slot_->depth != 0) return;
  slot_->sequence.store(slot_->sequence.load(std::memory_order_relaxed) + 1,
                        std::memory_order_release);
}

int guarded_munmap(void* address, size_t length) {
  if (g_membarrier.load(std::memory_order_relaxed)) membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const auto deadline = std::chrono::steady_clock::now() + kLongestWait;
  bool waited_out = false;
  auto wait_while = [&](auto&& burst_open) {
    while (!waited_out && burst_open()) {
      waited_out = std::chrono::steady_clock::now() >= deadline;
      sched_yield();
    }
  };
  // A burst open now is waited for until it ends; one opened since sees the
  // mark and touches nothing.  This thread's own are not waited for.
  for (BurstSlot& slot : g_slots) {
    if (&slot == t_slot) continue;
    const uint64_t seen = slot.sequence.load(std::memory_order_acquire);
    if (seen % 2 == 0) continue;
    wait_while([&] { return slot.sequence.load(std::memory_order_acquire) == seen; });
  }
  wait_while([&] { return g_overflow_bursts.load(std::memory_order_acquire) > t_overflow_depth; });
  if (waited_out)
    RTE_LOG(WARNING, USER1,
            "ofi-dpdk: a driver unmaps %zu bytes after waiting %lld s for bursts that do "
            "not end (a poller stopped in a burst?); a poller may fault\n",
            length, static_cast<long long>(kLongestWait.count()));
  return ::munmap(address, length);
}

}  // namespace ofi_dpdk::net
