// sockaddr_domain.h: a fabric, domain and FI_AV_TABLE AV on one port, from
// fi_getinfo with hints asking for a sockaddr format (FI_SOCKADDR_IN or
// FI_SOCKADDR_IN6) and a node, as a program that names peers by IP does.
#pragma once

#include <gtest/gtest.h>

#include "test/support/fabric_helpers.h"

namespace ofi_dpdk::test {

struct SockaddrDomain {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;

  void open(uint32_t addr_format, const char* port, const char* node, const char* service,
            uint64_t flags, uint64_t caps = FI_MSG) {
    fi_info* hints = dpdk_hints(port);
    hints->addr_format = addr_format;
    hints->caps = caps;
    ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &info), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain, &attr, &av, nullptr), 0);
  }
  void close() {
    if (av) {
      EXPECT_EQ(fi_close(&av->fid), 0);
    }
    if (domain) {
      EXPECT_EQ(fi_close(&domain->fid), 0);
    }
    if (fabric) {
      EXPECT_EQ(fi_close(&fabric->fid), 0);
    }
    fi_freeinfo(info);
  }
};

}  // namespace ofi_dpdk::test
