// Endpoints named by IPv6 address (FI_SOCKADDR_IN6), through stock
// libfabric on a net_memif pair in one process whose ports have IPv6
// addresses of one prefix and no IPv4 ones (FI_DPDK_PORT_ADDR, see
// meson.build): fi_getinfo takes an IPv6 address as node (FI_SOURCE picks
// the port that owns it) and answers in FI_SOCKADDR_IN6; fi_getname gives
// the sockaddr_in6; a message to a peer inserted by its sockaddr arrives in
// UDP/IPv6, its first frames waiting for neighbour discovery's answer, a
// large one too (segments checksummed by UDP/IPv6 and our CRC); the
// receiver names the sender by its fi_addr; fi_av_lookup, fi_av_straddr
// and fi_av_insertsvc speak IPv6.  A neighbour that never answers: a send
// to it completes in error (FI_EHOSTUNREACH) after
// FI_DPDK_RESOLVE_TIMEOUT_MS; an address off the prefix (no router) fails
// the insert; address family mix-ups are refused.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "test/support/messaging.h"
#include "test/support/sockaddr_domain.h"

namespace ofi_dpdk::test {
namespace {

constexpr uint32_t kVersion = FI_VERSION(1, 17);
// meson.build: net_memif0 is fd00:9::1/64, net_memif1 fd00:9::2/64; port
// 9228 is queue 0.
constexpr const char* kServerPort = "net_memif0";
constexpr const char* kClientPort = "net_memif1";

std::string text_of(const void* bytes, size_t length) {
  EXPECT_EQ(length, sizeof(sockaddr_in6));
  sockaddr_in6 in6{};
  std::memcpy(&in6, bytes, std::min(length, sizeof(in6)));
  EXPECT_EQ(in6.sin6_family, AF_INET6);
  char ip[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, &in6.sin6_addr, ip, sizeof(ip));
  return "[" + std::string(ip) + "]:" + std::to_string(ntohs(in6.sin6_port));
}

sockaddr_in6 sockaddr_of(const char* address, uint16_t port) {
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(port);
  EXPECT_EQ(inet_pton(AF_INET6, address, &in6.sin6_addr), 1) << address;
  return in6;
}

TEST(Ipv6Getinfo, SourceAddressPicksItsPort) {
  fi_info* hints = dpdk_hints(nullptr);
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, "fd00:9::1", "3", FI_SOURCE, hints, &info), 0);
  for (fi_info* i = info; i != nullptr; i = i->next) {
    EXPECT_STREQ(i->domain_attr->name, kServerPort);
    EXPECT_EQ(i->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN6));
    EXPECT_EQ(text_of(i->src_addr, i->src_addrlen), "[fd00:9::1]:9231");
  }
  fi_freeinfo(info);
  EXPECT_EQ(fi_getinfo(kVersion, "fd00:9::3", "3", FI_SOURCE, hints, &info), -FI_ENODATA);
  fi_freeinfo(hints);
}

TEST(Ipv6Getinfo, DestinationIsASockaddrIn6OnThePrefix) {
  fi_info* hints = dpdk_hints(kClientPort);
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, "fd00:9::1", "9228", 0, hints, &info), 0);
  EXPECT_EQ(info->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN6));
  EXPECT_EQ(text_of(info->dest_addr, info->dest_addrlen), "[fd00:9::1]:9228");
  EXPECT_EQ(text_of(info->src_addr, info->src_addrlen), "[fd00:9::2]:0");
  fi_freeinfo(info);
  // Off the prefix, with no router: no port reaches it.
  EXPECT_EQ(fi_getinfo(kVersion, "fd01::1", "0", 0, hints, &info), -FI_ENODATA);
  // With no node, a port that has IPv6 alone offers FI_SOCKADDR_IN6.
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  EXPECT_EQ(info->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN6));
  EXPECT_EQ(text_of(info->src_addr, info->src_addrlen), "[fd00:9::2]:0");
  fi_freeinfo(info);
  fi_freeinfo(hints);
}

TEST(Ipv6Getinfo, FamiliesAreNotMixedUp) {
  fi_info* hints = dpdk_hints(kClientPort);
  fi_info* info = nullptr;
  // The ports have no IPv4 address.
  EXPECT_EQ(fi_getinfo(kVersion, "10.9.0.1", "0", 0, hints, &info), -FI_ENODATA);
  hints->addr_format = FI_SOCKADDR_IN;
  EXPECT_EQ(fi_getinfo(kVersion, "fd00:9::1", "0", 0, hints, &info), -FI_ENODATA);
  hints->addr_format = FI_ADDR_STR;
  EXPECT_EQ(fi_getinfo(kVersion, "fd00:9::1", "0", 0, hints, &info), -FI_ENODATA);
  fi_freeinfo(hints);
}

// Waits for one completion on `cq` while the other endpoint's CQ is read
// too (both ports progress).
ssize_t wait_both(fid_cq* cq, fid_cq* other, fi_cq_data_entry* entry) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  ssize_t got = -FI_EAGAIN;
  while (got == -FI_EAGAIN && std::chrono::steady_clock::now() < limit) {
    got = fi_cq_read(cq, entry, 1);
    fi_cq_data_entry ignored;
    if (fi_cq_read(other, &ignored, 1) == 1) ADD_FAILURE() << "an unexpected completion";
  }
  return got;
}

TEST(Ipv6Endpoints, PeerNamedByAddressIsReached) {
  SockaddrDomain server, client;
  server.open(FI_SOCKADDR_IN6, kServerPort, "fd00:9::1", "0", FI_SOURCE);
  client.open(FI_SOCKADDR_IN6, kClientPort, "fd00:9::1", "0", 0);
  TestEndpoint at, from;
  ASSERT_EQ(at.open(server.domain, server.av, server.info), 0);
  ASSERT_EQ(from.open(client.domain, client.av, client.info), 0);
  EXPECT_EQ(text_of(at.name, at.name_len), "[fd00:9::1]:9228");
  EXPECT_EQ(text_of(from.name, from.name_len).substr(0, 13), "[fd00:9::2]:9");

  // Known by fi_getinfo's dest_addr alone: the first frames wait for the
  // server port's neighbour advertisement.
  fi_addr_t server_addr = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(client.av, client.info->dest_addr, 1, &server_addr, 0, nullptr), 1);
  expect_message_delivered(from, server_addr, at, kept_for_send("by IPv6 address"));

  uint8_t looked_up[64];
  size_t length = sizeof(looked_up);
  ASSERT_EQ(fi_av_lookup(client.av, server_addr, looked_up, &length), 0);
  EXPECT_EQ(text_of(looked_up, length), "[fd00:9::1]:9228");
  char text[80];
  size_t text_length = sizeof(text);
  ASSERT_NE(fi_av_straddr(client.av, looked_up, text, &text_length), nullptr);
  EXPECT_STREQ(text, "fi_sockaddr_in6://[fd00:9::1]:9228");
  fi_addr_t again = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insertsvc(client.av, "fd00:9::1", "0", &again, 0, nullptr), 1);
  expect_message_delivered(from, again, at, kept_for_send("by insertsvc"));

  // 1 MiB: many full frames, each with its UDP checksum, put back in order.
  std::vector<uint8_t> sent(1 << 20), received(1 << 20, 0);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  ASSERT_EQ(fi_recv(at.ep, received.data(), received.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
  ssize_t ret;
  while ((ret = fi_send(from.ep, sent.data(), sent.size(), nullptr, server_addr, nullptr)) ==
         -FI_EAGAIN) {
    fi_cq_data_entry drain;
    fi_cq_read(at.rx_cq, &drain, 0);
  }
  ASSERT_EQ(ret, 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_both(at.rx_cq, from.tx_cq, &entry), 1);
  EXPECT_EQ(entry.len, sent.size());
  EXPECT_TRUE(received == sent) << "the large message arrived changed";
  ASSERT_EQ(wait_both(from.tx_cq, at.rx_cq, &entry), 1);

  from.close();
  at.close();
  client.close();
  server.close();
}

// A datagram endpoint promises what a frame with IPv6's headers holds,
// and takes that much: one frame to a peer named by IPv6 address arrives.
TEST(Ipv6Endpoints, DatagramsOfThePromisedSize) {
  fi_info* hints = dpdk_hints(nullptr);
  hints->ep_attr->type = FI_EP_DGRAM;
  hints->caps = FI_MSG;
  fi_info *server_info = nullptr, *client_info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, "fd00:9::1", "5", FI_SOURCE, hints, &server_info), 0);
  ASSERT_EQ(fi_getinfo(kVersion, "fd00:9::1", "5", 0, hints, &client_info), 0);
  fi_freeinfo(hints);
  const size_t largest = server_info->ep_attr->max_msg_size;
  EXPECT_EQ(largest, 1396u - 48u) << "our EtherType's 1396 less IPv6's and UDP's headers";
  EXPECT_EQ(client_info->ep_attr->max_msg_size, largest);
  fid_fabric* fabric = nullptr;
  ASSERT_EQ(fi_fabric(server_info->fabric_attr, &fabric, nullptr), 0);
  fid_domain *server_domain = nullptr, *client_domain = nullptr;
  ASSERT_EQ(fi_domain(fabric, server_info, &server_domain, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, client_info, &client_domain, nullptr), 0);
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  fid_av *server_av = nullptr, *client_av = nullptr;
  ASSERT_EQ(fi_av_open(server_domain, &attr, &server_av, nullptr), 0);
  ASSERT_EQ(fi_av_open(client_domain, &attr, &client_av, nullptr), 0);
  TestEndpoint at, from;
  ASSERT_EQ(at.open(server_domain, server_av, server_info), 0);
  ASSERT_EQ(from.open(client_domain, client_av, client_info), 0);
  fi_addr_t to = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(client_av, client_info->dest_addr, 1, &to, 0, nullptr), 1);
  std::vector<uint8_t> sent(largest), received(largest + 64, 0);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_EQ(fi_recv(at.ep, received.data(), received.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
  std::vector<uint8_t> too_big(largest + 1);
  EXPECT_EQ(fi_send(from.ep, too_big.data(), too_big.size(), nullptr, to, nullptr), -FI_EMSGSIZE);
  ASSERT_EQ(fi_send(from.ep, sent.data(), sent.size(), nullptr, to, nullptr), 0);
  fi_cq_data_entry entry{};
  // (A datagram's send completes once it is handed to the port.)
  ASSERT_EQ(wait_for_completion(from.tx_cq, &entry, 30), 1);
  ASSERT_EQ(wait_both(at.rx_cq, from.tx_cq, &entry), 1);
  EXPECT_EQ(entry.len, largest);
  EXPECT_TRUE(std::equal(sent.begin(), sent.end(), received.begin()));
  from.close();
  at.close();
  EXPECT_EQ(fi_close(&client_av->fid), 0);
  EXPECT_EQ(fi_close(&server_av->fid), 0);
  EXPECT_EQ(fi_close(&client_domain->fid), 0);
  EXPECT_EQ(fi_close(&server_domain->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
  fi_freeinfo(client_info);
  fi_freeinfo(server_info);
}

TEST(Ipv6Endpoints, SenderIsNamedByItsAddress) {
  SockaddrDomain server, client;
  server.open(FI_SOCKADDR_IN6, kServerPort, "fd00:9::1", "0", FI_SOURCE, FI_MSG | FI_SOURCE);
  client.open(FI_SOCKADDR_IN6, kClientPort, "fd00:9::1", "0", 0);
  TestEndpoint at, from;
  ASSERT_EQ(at.open(server.domain, server.av, server.info), 0);
  ASSERT_EQ(from.open(client.domain, client.av, client.info), 0);
  fi_addr_t server_addr = FI_ADDR_NOTAVAIL, client_addr = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(client.av, server.info->src_addr, 1, &server_addr, 0, nullptr), 1);
  ASSERT_EQ(fi_av_insert(server.av, from.name, 1, &client_addr, 0, nullptr), 1);
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(at.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  static const std::string kText = "who sent this";
  ASSERT_EQ(fi_send(from.ep, kText.data(), kText.size(), nullptr, server_addr, nullptr), 0);
  fi_cq_data_entry entry{};
  fi_addr_t source = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(wait_for_completion(at.rx_cq, &entry, 30, &source), 1);
  EXPECT_EQ(std::string(buffer, entry.len), kText);
  EXPECT_EQ(source, client_addr) << "fi_cq_readfrom names the sender by its sockaddr_in6's fi_addr";
  from.close();
  at.close();
  client.close();
  server.close();
}

TEST(Ipv6Endpoints, AnUnansweredNeighbourAndWhatNamesNoPeer) {
  SockaddrDomain client;
  client.open(FI_SOCKADDR_IN6, kClientPort, nullptr, nullptr, 0);
  TestEndpoint from;
  ASSERT_EQ(from.open(client.domain, client.av, client.info), 0);
  // On the prefix but nobody's, off the prefix (no router), a group, ::.
  const sockaddr_in6 addresses[4] = {sockaddr_of("fd00:9::77", 9228), sockaddr_of("fd01::1", 9228),
                                     sockaddr_of("ff02::1", 9228), sockaddr_of("::", 9228)};
  fi_addr_t out[4];
  int errors[4] = {-1, -1, -1, -1};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fi_av_insert(client.av, addresses, 4, out, FI_SYNC_ERR, errors), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500))
      << "nothing is resolved at insert";
  EXPECT_EQ(errors[0], 0);
  EXPECT_EQ(errors[1], FI_EHOSTUNREACH);
  EXPECT_EQ(errors[2], FI_EINVAL);
  EXPECT_EQ(errors[3], FI_EINVAL);
  static const std::string kText = "nobody";
  ASSERT_EQ(fi_send(from.ep, kText.data(), kText.size(), nullptr, out[0], from.ep), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(from.tx_cq, &entry, 60), -FI_EAVAIL)
      << "an error completion once FI_DPDK_RESOLVE_TIMEOUT_MS passed without an answer";
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2900));
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_cq_readerr(from.tx_cq, &error, 0), 1);
  EXPECT_EQ(error.err, FI_EHOSTUNREACH);
  EXPECT_EQ(error.op_context, from.ep);
  // An IPv4 sockaddr in an FI_SOCKADDR_IN6 AV is not an address of it.
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_port = htons(9228);
  inet_pton(AF_INET, "10.9.0.1", &v4.sin_addr);
  sockaddr_in6 padded{};
  std::memcpy(&padded, &v4, sizeof(v4));
  fi_addr_t wrong = FI_ADDR_NOTAVAIL;
  int wrong_error = 0;
  EXPECT_EQ(fi_av_insert(client.av, &padded, 1, &wrong, FI_SYNC_ERR, &wrong_error), 0);
  EXPECT_NE(wrong_error, 0);
  from.close();
  client.close();
}

}  // namespace
}  // namespace ofi_dpdk::test
