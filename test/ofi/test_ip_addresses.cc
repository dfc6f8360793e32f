// Endpoints named by IPv4 address (FI_SOCKADDR_IN), through stock
// libfabric on a net_memif pair in one process whose ports have addresses
// of one subnet (FI_DPDK_PORT_ADDR, see meson.build): fi_getinfo takes an
// address as node (FI_SOURCE picks the port that owns it) and answers in
// FI_SOCKADDR_IN with service port FI_DPDK_PORT_BASE + queue; fi_getname
// gives the sockaddr; a message to a peer inserted by its sockaddr arrives
// (in UDP, the default, its first frames wait for ARP's answer; with
// FI_DPDK_ENCAP=l2, the second run of this program, fi_av_insert asks ARP
// for its MAC), and the receiver names the sender by its fi_addr;
// fi_av_lookup and fi_av_straddr give the address back (any port is an
// address).  A neighbour that never answers: in UDP the insert returns at
// once and a send to it completes in error (FI_EHOSTUNREACH) once
// FI_DPDK_RESOLVE_TIMEOUT_MS passed; with l2 the insert waits that long, the
// address goes in all the same and a send to it fails with FI_EHOSTUNREACH.
// An address off the subnet (no gateway) fails the insert, and FI_ADDR_STR
// hints cannot carry an IPv4 node.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "test/support/messaging.h"
#include "test/support/sockaddr_domain.h"

namespace ofi_dpdk::test {
namespace {

constexpr uint32_t kVersion = FI_VERSION(1, 17);
// meson.build: net_memif0 is 10.9.0.1/24, net_memif1 10.9.0.2/24; port 9228
// is queue 0.
constexpr const char* kServerPort = "net_memif0";
constexpr const char* kClientPort = "net_memif1";

fi_info* sockaddr_hints(const char* domain) {
  fi_info* hints = dpdk_hints(domain);
  hints->addr_format = FI_SOCKADDR_IN;
  return hints;
}

sockaddr_in sockaddr_of(const void* bytes, size_t length) {
  sockaddr_in in{};
  EXPECT_EQ(length, sizeof(in));
  std::memcpy(&in, bytes, std::min(length, sizeof(in)));
  return in;
}

std::string text_of(const sockaddr_in& in) {
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &in.sin_addr, ip, sizeof(ip));
  return std::string(ip) + ":" + std::to_string(ntohs(in.sin_port));
}

TEST(IpGetinfo, SourceAddressPicksItsPort) {
  fi_info* hints = dpdk_hints();
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, "10.9.0.1", "3", FI_SOURCE, hints, &info), 0);
  for (const fi_info* i = info; i != nullptr; i = i->next) {
    EXPECT_STREQ(i->domain_attr->name, kServerPort);
    EXPECT_EQ(i->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN));
    EXPECT_EQ(text_of(sockaddr_of(i->src_addr, i->src_addrlen)), "10.9.0.1:9231");
  }
  fi_freeinfo(info);
  EXPECT_EQ(fi_getinfo(kVersion, "10.9.0.3", "3", FI_SOURCE, hints, &info), -FI_ENODATA);
  fi_freeinfo(hints);
}

TEST(IpGetinfo, DestinationIsASockaddrOnTheSubnet) {
  fi_info* hints = dpdk_hints(kClientPort);
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, "10.9.0.1", "9228", 0, hints, &info), 0);
  EXPECT_EQ(info->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN));
  EXPECT_EQ(text_of(sockaddr_of(info->dest_addr, info->dest_addrlen)), "10.9.0.1:9228");
  EXPECT_EQ(text_of(sockaddr_of(info->src_addr, info->src_addrlen)), "10.9.0.2:0");
  fi_freeinfo(info);
  // The queue by number names the same endpoint.
  ASSERT_EQ(fi_getinfo(kVersion, "10.9.0.1", "0", 0, hints, &info), 0);
  EXPECT_EQ(text_of(sockaddr_of(info->dest_addr, info->dest_addrlen)), "10.9.0.1:9228");
  fi_freeinfo(info);
  // Off the subnet (no routing), or a service that names no queue.
  EXPECT_EQ(fi_getinfo(kVersion, "10.8.0.1", "0", 0, hints, &info), -FI_ENODATA);
  EXPECT_EQ(fi_getinfo(kVersion, "10.9.0.1", "80", 0, hints, &info), -FI_ENODATA);
  fi_freeinfo(hints);
}

TEST(IpGetinfo, SockaddrHintsWithoutAnAddressAreRefusedPerPort) {
  // Every port here has an address; one with FI_ADDR_STR cannot carry one.
  fi_info* hints = dpdk_hints();
  hints->addr_format = FI_ADDR_STR;
  fi_info* info = nullptr;
  EXPECT_EQ(fi_getinfo(kVersion, "10.9.0.1", "0", 0, hints, &info), -FI_ENODATA);
  fi_freeinfo(hints);
  hints = sockaddr_hints(nullptr);
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  for (const fi_info* i = info; i != nullptr; i = i->next) {
    EXPECT_EQ(i->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN));
    const std::string expected =
        std::strcmp(i->domain_attr->name, kServerPort) == 0 ? "10.9.0.1:0" : "10.9.0.2:0";
    EXPECT_EQ(text_of(sockaddr_of(i->src_addr, i->src_addrlen)), expected);
  }
  fi_freeinfo(info);
  fi_freeinfo(hints);
}

TEST(IpEndpoints, PeerNamedByAddressIsResolvedAndReached) {
  SockaddrDomain server, client;
  server.open(FI_SOCKADDR_IN, kServerPort, "10.9.0.1", "0", FI_SOURCE);
  client.open(FI_SOCKADDR_IN, kClientPort, "10.9.0.1", "0", 0);
  TestEndpoint at, from;
  ASSERT_EQ(at.open(server.domain, server.av, server.info), 0);
  ASSERT_EQ(from.open(client.domain, client.av, client.info), 0);
  // fi_getname: the port's address and the queue's service port.
  EXPECT_EQ(text_of(sockaddr_of(at.name, at.name_len)), "10.9.0.1:9228");
  EXPECT_EQ(text_of(sockaddr_of(from.name, from.name_len)).substr(0, 9), "10.9.0.2:");

  // The client knows the server by fi_getinfo's dest_addr alone: the
  // insert asks ARP for its MAC on the wire.
  fi_addr_t server_addr = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(client.av, client.info->dest_addr, 1, &server_addr, 0, nullptr), 1);
  expect_message_delivered(from, server_addr, at, kept_for_send("by address"));

  uint8_t looked_up[64];
  size_t length = sizeof(looked_up);
  ASSERT_EQ(fi_av_lookup(client.av, server_addr, looked_up, &length), 0);
  EXPECT_EQ(text_of(sockaddr_of(looked_up, length)), "10.9.0.1:9228");
  char text[64];
  size_t text_length = sizeof(text);
  ASSERT_NE(fi_av_straddr(client.av, looked_up, text, &text_length), nullptr);
  EXPECT_STREQ(text, "fi_sockaddr_in://10.9.0.1:9228");
  // And by fi_av_insertsvc, with the queue's number.
  fi_addr_t again = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insertsvc(client.av, "10.9.0.1", "0", &again, 0, nullptr), 1);
  expect_message_delivered(from, again, at, kept_for_send("by insertsvc"));

  from.close();
  at.close();
  client.close();
  server.close();
}

// Any port of a neighbour is an address, as with UDP: one outside the
// service ports names a queue no endpoint has (sends to it go unanswered),
// and reads back as it went in.
TEST(IpEndpoints, AnyPortIsAnAddress) {
  SockaddrDomain server, client;
  server.open(FI_SOCKADDR_IN, kServerPort, "10.9.0.1", "0", FI_SOURCE);
  client.open(FI_SOCKADDR_IN, kClientPort, nullptr, nullptr, 0);
  sockaddr_in discard{};
  discard.sin_family = AF_INET;
  discard.sin_port = htons(9);
  inet_pton(AF_INET, "10.9.0.1", &discard.sin_addr);
  fi_addr_t addr = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(client.av, &discard, 1, &addr, 0, nullptr), 1);
  sockaddr_in back{};
  size_t length = sizeof(back);
  ASSERT_EQ(fi_av_lookup(client.av, addr, &back, &length), 0);
  EXPECT_EQ(text_of(back), "10.9.0.1:9");
  // fi_getinfo's service stays strict: port 80 names no endpoint to offer
  // ("9" would be queue 9).
  fi_info* hints = dpdk_hints(kClientPort);
  fi_info* info = nullptr;
  EXPECT_EQ(fi_getinfo(kVersion, "10.9.0.1", "80", 0, hints, &info), -FI_ENODATA);
  fi_freeinfo(hints);
  client.close();
  server.close();
}

bool in_udp() {
  const char* encap = std::getenv("FI_DPDK_ENCAP");
  return encap == nullptr || std::string(encap) != "l2";
}

TEST(IpEndpoints, SenderIsNamedByItsAddress) {
  SockaddrDomain server, client;
  server.open(FI_SOCKADDR_IN, kServerPort, "10.9.0.1", "0", FI_SOURCE, FI_MSG | FI_SOURCE);
  client.open(FI_SOCKADDR_IN, kClientPort, "10.9.0.1", "0", 0);
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
  EXPECT_EQ(source, client_addr)
      << "fi_cq_readfrom names the sender by the fi_addr of its sockaddr";
  from.close();
  at.close();
  client.close();
  server.close();
}

// An address on the subnet that nobody answers for, and one off it (the
// ports have no gateway).
void nobody_and_off_the_subnet(sockaddr_in addresses[2]) {
  for (int i = 0; i < 2; ++i) {
    addresses[i] = {};
    addresses[i].sin_family = AF_INET;
    addresses[i].sin_port = htons(9228);
  }
  inet_pton(AF_INET, "10.9.0.77", &addresses[0].sin_addr);
  inet_pton(AF_INET, "10.8.0.1", &addresses[1].sin_addr);
}

// A neighbour that never answers ARP, and an address off the subnet: in
// UDP the insert returns at once and a send completes in error after
// FI_DPDK_RESOLVE_TIMEOUT_MS; with l2 the insert waits that long, and a
// send fails at once.
TEST(IpEndpoints, AnUnansweredNeighbour) {
  SockaddrDomain client;
  client.open(FI_SOCKADDR_IN, kClientPort, nullptr, nullptr, 0);
  TestEndpoint from;
  ASSERT_EQ(from.open(client.domain, client.av, client.info), 0);
  sockaddr_in addresses[2];
  nobody_and_off_the_subnet(addresses);
  fi_addr_t out[2];
  int errors[2] = {-1, -1};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fi_av_insert(client.av, addresses, 2, out, FI_SYNC_ERR, errors), 1);
  if (in_udp()) {
    // Nothing is resolved at insert: it returns without waiting for ARP
    // (3000 ms here).
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
    EXPECT_EQ(errors[0], 0);
    EXPECT_EQ(errors[1], FI_EHOSTUNREACH);
    EXPECT_EQ(out[1], FI_ADDR_NOTAVAIL);
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
    EXPECT_EQ(error.prov_errno, 8) << "kProvNoRoute";
  } else {
    const auto waited = std::chrono::steady_clock::now() - start;
    // The insert waited about FI_DPDK_RESOLVE_TIMEOUT_MS (3000 here: long
    // enough that a busy machine's answering port always makes it) for an
    // answer.  (The provider times it with the TSC, we with steady_clock.)
    EXPECT_GE(waited, std::chrono::milliseconds(2900));
    EXPECT_LT(waited, std::chrono::seconds(30));
    EXPECT_EQ(errors[0], 0);
    EXPECT_NE(out[0], FI_ADDR_NOTAVAIL);
    EXPECT_EQ(errors[1], FI_EHOSTUNREACH);
    EXPECT_EQ(out[1], FI_ADDR_NOTAVAIL);
    // It is an address: it reads back; a send to it fails at once, asking
    // again, until the neighbour answers.
    sockaddr_in back{};
    size_t length = sizeof(back);
    ASSERT_EQ(fi_av_lookup(client.av, out[0], &back, &length), 0);
    EXPECT_EQ(text_of(back), "10.9.0.77:9228");
    static const std::string kText = "nobody";
    EXPECT_EQ(fi_send(from.ep, kText.data(), kText.size(), nullptr, out[0], nullptr),
              -FI_EHOSTUNREACH);
  }
  from.close();
  client.close();
}

// A static neighbour (FI_DPDK_NEIGHBOURS, meson.build: 10.9.0.78) that
// nobody answers for: never asked for.  With l2 the insert returns at
// once; in UDP a send to it goes to its MAC at once, and, nobody being
// there, ends in FI_ETIMEDOUT (FI_DPDK_CONNECT_TIMEOUT_MS), not in
// FI_EHOSTUNREACH for a next hop that did not answer.
TEST(IpEndpoints, AStaticNeighbourIsNotAskedFor) {
  SockaddrDomain client;
  client.open(FI_SOCKADDR_IN, kClientPort, nullptr, nullptr, 0);
  TestEndpoint from;
  ASSERT_EQ(from.open(client.domain, client.av, client.info), 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(9228);
  inet_pton(AF_INET, "10.9.0.78", &address.sin_addr);
  fi_addr_t out = FI_ADDR_NOTAVAIL;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(fi_av_insert(client.av, &address, 1, &out, 0, nullptr), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500))
      << "no ARP question, no wait for its answer";
  if (in_udp()) {
    static const std::string kText = "static";
    ASSERT_EQ(fi_send(from.ep, kText.data(), kText.size(), nullptr, out, from.ep), 0);
    fi_cq_data_entry entry{};
    ASSERT_EQ(wait_for_completion(from.tx_cq, &entry, 60), -FI_EAVAIL);
    fi_cq_err_entry error{};
    ASSERT_EQ(fi_cq_readerr(from.tx_cq, &error, 0), 1);
    EXPECT_EQ(error.err, FI_ETIMEDOUT) << "sent to its MAC, never held for ARP";
    EXPECT_NE(error.prov_errno, 8) << "not kProvNoRoute";
  }
  from.close();
  client.close();
}

}  // namespace
}  // namespace ofi_dpdk::test
