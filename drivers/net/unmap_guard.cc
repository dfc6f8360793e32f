// unmap_guard.cc: see unmap_guard.h.  The redirection rewrites the
// driver's import slot for munmap (its GOT entry, found through the ELF
// dynamic section the loader mapped), as a debugger or profiler would.
#include "drivers/net/unmap_guard.h"

#include <elf.h>
#include <link.h>
#include <rte_log.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace ofi_dpdk::net {
namespace {

std::atomic<uint32_t> g_bursts_in_flight{0};
// This thread's part of the count: a driver that unmapped from inside one
// of our bursts on this thread must not wait for that burst to end.
thread_local uint32_t t_bursts_here = 0;

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
  bool found = false;
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
  search->found = true;
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
      case DT_PLTRELSZ: plt_bytes = entry->d_un.d_val; break;
      case DT_PLTREL: plt_is_rela = entry->d_un.d_val == DT_RELA; break;
      case DT_RELA:
        relocations =
            reinterpret_cast<const ElfW(Rela)*>(dynamic_address(*object, entry->d_un.d_ptr));
        break;
      case DT_RELASZ: bytes = entry->d_un.d_val; break;
      default: break;
    }
  }
  if (symbols == nullptr || names == nullptr || !plt_is_rela) return 1;
  auto scan = [&](const ElfW(Rela)* table, size_t table_bytes) {
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
  Search search{library};
  dl_iterate_phdr(&visit, &search);
  return search.found && search.slots_redirected > 0;
}

GuardedBurst::GuardedBurst(bool guarded) : guarded_(guarded) {
  if (!guarded_) return;
  ++t_bursts_here;
  // A full barrier, paired with the fence in guarded_munmap: either the
  // unmapping thread sees this burst counted, or this burst sees the
  // driver's disconnected mark stored before it.  On x86-64 the locked add
  // is one; elsewhere the add (an exclusive-store loop on ARMv8.0) may let
  // the driver's later plain load of its mark pass it, so a fence follows.
  g_bursts_in_flight.fetch_add(1, std::memory_order_seq_cst);
#if !defined(__x86_64__)
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

GuardedBurst::~GuardedBurst() {
  if (!guarded_) return;
  g_bursts_in_flight.fetch_sub(1, std::memory_order_release);
  --t_bursts_here;
}

int guarded_munmap(void* address, size_t length) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const uint32_t mine = t_bursts_here;
  const auto deadline = std::chrono::steady_clock::now() + kLongestWait;
  while (g_bursts_in_flight.load(std::memory_order_acquire) > mine) {
    if (std::chrono::steady_clock::now() >= deadline) {
      RTE_LOG(WARNING, USER1,
              "ofi-dpdk: a driver unmaps %zu bytes after waiting %lld s for bursts that do "
              "not end (a poller stopped in a burst?); a poller may fault\n",
              length, static_cast<long long>(kLongestWait.count()));
      break;
    }
    sched_yield();
  }
  return ::munmap(address, length);
}

}  // namespace ofi_dpdk::net
