// dpdk_av.cc: fi_av, FI_AV_TABLE.  Index i of the table is fi_addr i; an
// address goes in at the lowest unused index.  A reverse map from (MAC,
// queue) gives the sender's fi_addr for FI_SOURCE in O(1).
#include <algorithm>
#include <cstring>

#include "drivers/ofi/dpdk_prov.h"

namespace ofi_dpdk::ofi {

fi_addr_t Av::lookup_source(uint64_t key) const {
  auto it = reverse.find(key);
  return it == reverse.end() ? FI_ADDR_NOTAVAIL : it->second;
}

namespace {

// Inserts one address; returns its fi_addr.  Port lock held.
fi_addr_t insert_one(Av* av, const av::Address& address) {
  size_t index = 0;
  while (index < av->table.size() && av->table[index].valid) ++index;
  if (index == av->table.size()) av->table.emplace_back();
  av->table[index] = {address, true};
  // The first index for an endpoint answers FI_SOURCE; a duplicate insert
  // gets its own index and leaves the reverse map alone.
  av->reverse.emplace(proto::peer_key(address.mac, address.queue), index);
  return index;
}

std::optional<av::Address> parse_address(const Av* av, const void* addr, size_t index) {
  if (av->addr_format == FI_ADDR_STR) {
    const char* const* strings = static_cast<const char* const*>(addr);
    if (strings[index] == nullptr) return std::nullopt;
    return av::from_string(strings[index]);
  }
  return av::from_native(static_cast<const uint8_t*>(addr) + index * av::kNativeAddressSize,
                         av::kNativeAddressSize);
}

int av_insert(fid_av* av_fid, const void* addr, size_t count, fi_addr_t* fi_addr,
              uint64_t flags, void*) {
  Av* av = from_fid<Av>(av_fid);
  if (addr == nullptr && count != 0) return -FI_EINVAL;
  if (flags & ~static_cast<uint64_t>(FI_MORE)) return -FI_EINVAL;
  std::lock_guard guard(av->domain->port->lock);
  int inserted = 0;
  for (size_t i = 0; i < count; ++i) {
    const auto address = parse_address(av, addr, i);
    if (!address) {
      DPDK_INFO(FI_LOG_AV, "address %zu of %zu is not a dpdk address\n", i, count);
      if (fi_addr != nullptr) fi_addr[i] = FI_ADDR_NOTAVAIL;
      continue;
    }
    const fi_addr_t index = insert_one(av, *address);
    if (fi_addr != nullptr) fi_addr[i] = index;
    ++inserted;
  }
  return inserted;
}

int av_insertsvc(fid_av* av_fid, const char* node, const char* service, fi_addr_t* fi_addr,
                 uint64_t flags, void* context) {
  if (node == nullptr) return -FI_EINVAL;
  av::Address address;
  if (std::string_view(node).starts_with(av::kStringPrefix)) {
    auto parsed = av::from_string(node);
    if (!parsed) return -FI_EINVAL;
    address = *parsed;
  } else if (!av::parse_mac(node, address.mac)) {
    return -FI_EINVAL;
  }
  if (service != nullptr) {
    char* end = nullptr;
    const unsigned long queue = std::strtoul(service, &end, 10);
    if (*service == '\0' || *end != '\0' || queue >= kAnyQueue) return -FI_EINVAL;
    address.queue = static_cast<uint16_t>(queue);
  }
  uint8_t native[av::kNativeAddressSize];
  av::to_native(address, native);
  Av* av = from_fid<Av>(av_fid);
  const int saved_format = av->addr_format;
  av->addr_format = FI_FORMAT_UNSPEC;
  const int ret = av_insert(av_fid, native, 1, fi_addr, flags, context);
  av->addr_format = saved_format;
  return ret;
}

int av_remove(fid_av* av_fid, fi_addr_t* fi_addr, size_t count, uint64_t flags) {
  Av* av = from_fid<Av>(av_fid);
  if (flags != 0 || (fi_addr == nullptr && count != 0)) return -FI_EINVAL;
  std::lock_guard guard(av->domain->port->lock);
  for (size_t i = 0; i < count; ++i)
    if (fi_addr[i] >= av->table.size() || !av->table[fi_addr[i]].valid) return -FI_EINVAL;
  for (size_t i = 0; i < count; ++i) {
    AvEntry& entry = av->table[fi_addr[i]];
    const uint64_t key = proto::peer_key(entry.address.mac, entry.address.queue);
    if (auto it = av->reverse.find(key); it != av->reverse.end() && it->second == fi_addr[i])
      av->reverse.erase(it);
    entry.valid = false;
  }
  return 0;
}

// Writes an address in the AV's format, truncated to *addrlen; sets
// *addrlen to the full size.
void write_address(const Av* av, const av::Address& address, void* out, size_t* addrlen) {
  if (av->addr_format == FI_ADDR_STR) {
    const std::string text = av::to_string(address);
    if (out != nullptr && *addrlen > 0) {
      const size_t n = std::min(*addrlen - 1, text.size());
      std::memcpy(out, text.data(), n);
      static_cast<char*>(out)[n] = '\0';
    }
    *addrlen = text.size() + 1;
    return;
  }
  uint8_t native[av::kNativeAddressSize];
  av::to_native(address, native);
  if (out != nullptr) std::memcpy(out, native, std::min(*addrlen, sizeof(native)));
  *addrlen = sizeof(native);
}

int av_lookup(fid_av* av_fid, fi_addr_t fi_addr, void* addr, size_t* addrlen) {
  Av* av = from_fid<Av>(av_fid);
  if (addrlen == nullptr) return -FI_EINVAL;
  std::lock_guard guard(av->domain->port->lock);
  if (fi_addr >= av->table.size() || !av->table[fi_addr].valid) return -FI_ENOENT;
  const size_t room = *addrlen;
  write_address(av, av->table[fi_addr].address, addr, addrlen);
  return room < *addrlen ? -FI_ETOOSMALL : 0;
}

const char* av_straddr(fid_av* av_fid, const void* addr, char* buf, size_t* len) {
  Av* av = from_fid<Av>(av_fid);
  if (addr == nullptr || buf == nullptr || len == nullptr) return nullptr;
  std::optional<av::Address> address =
      av->addr_format == FI_ADDR_STR
          ? av::from_string(static_cast<const char*>(addr))
          : av::from_native(addr, av::kNativeAddressSize);
  if (!address) return nullptr;
  const std::string text = av::to_string(*address);
  if (*len > 0) {
    const size_t n = std::min(*len - 1, text.size());
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  *len = text.size() + 1;
  return buf;
}

int av_close(fid* fid) {
  Av* av = from_fid<Av>(fid);
  if (av->refs.load() != 0) return -FI_EBUSY;
  av->domain->refs--;
  delete av;
  return 0;
}

fi_ops g_av_fid_ops = {
    .size = sizeof(fi_ops),
    .close = av_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = DPDK_ENOSYS(fi_ops, control),
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_av g_av_ops = {
    .size = sizeof(fi_ops_av),
    .insert = av_insert,
    .insertsvc = av_insertsvc,
    .insertsym = DPDK_ENOSYS(fi_ops_av, insertsym),
    .remove = av_remove,
    .lookup = av_lookup,
    .straddr = av_straddr,
    .av_set = DPDK_ENOSYS(fi_ops_av, av_set),
};

}  // namespace

int av_open(fid_domain* domain_fid, fi_av_attr* attr, fid_av** out, void* context) {
  if (attr == nullptr) return -FI_EINVAL;
  if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE && attr->type != FI_AV_MAP)
    return -FI_EINVAL;
  if (attr->flags != 0 || attr->name != nullptr || attr->rx_ctx_bits != 0) {
    DPDK_INFO(FI_LOG_AV, "AV flags, names and rx_ctx_bits are not supported yet\n");
    return -FI_ENOSYS;
  }
  auto* av = new (std::nothrow) Av();
  if (av == nullptr) return -FI_ENOMEM;
  if (attr->type == FI_AV_UNSPEC) attr->type = FI_AV_TABLE;
  av->attr = *attr;
  av->domain = from_fid<Domain>(domain_fid);
  av->addr_format = av->domain->info->addr_format == FI_ADDR_STR ? FI_ADDR_STR : FI_FORMAT_UNSPEC;
  av->table.reserve(attr->count);
  av->domain->refs++;
  av->fid.fid.fclass = FI_CLASS_AV;
  av->fid.fid.context = context;
  av->fid.fid.ops = &g_av_fid_ops;
  av->fid.ops = &g_av_ops;
  *out = &av->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
