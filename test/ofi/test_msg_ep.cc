// FI_EP_MSG through stock libfabric on one net_ring port (fi_cm(3),
// fi_eq(3), fi_endpoint(3)): a passive endpoint listens, a client connects
// with connection data, the server sees FI_CONNREQ with it, accepts on a
// new endpoint with data of its own, both see FI_CONNECTED; messages and
// RMA go both ways over the connection (dest_addr ignored); fi_getname and
// fi_getpeer name the connection as sockets do (the accepted end by its
// passive endpoint's address); fi_shutdown gives the peer FI_SHUTDOWN and ends sending; a
// refused request is an FI_ECONNREFUSED error entry at the client with the
// refusal's data, and so is a request whose endpoint closed unanswered;
// both sides calling fi_shutdown each see the other's FI_SHUTDOWN, also
// when one calls it after the other's arrived; a
// stranger's messages never reach a connected endpoint's receives;
// connection data above FI_OPT_CM_DATA_SIZE is cut to it (fi_cm(3)).
#include <gtest/gtest.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_rma.h>

#include <cstring>
#include <string>
#include <vector>

#include "lib/av/address.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

constexpr uint32_t kVersion = FI_VERSION(1, 17);
constexpr int kWaitMs = 5000;

fi_info* msg_hints() {
  fi_info* hints = dpdk_hints();
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_MSG | FI_RMA;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
  return hints;
}

TEST(MsgGetinfo, OffersConnectedEndpointsWithoutAddressingCaps) {
  fi_info* hints = msg_hints();
  hints->caps = 0;
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  for (const fi_info* i = info; i != nullptr; i = i->next) {
    EXPECT_EQ(i->ep_attr->type, FI_EP_MSG);
    EXPECT_TRUE(i->caps & FI_RMA);
    EXPECT_EQ(i->caps & (FI_SOURCE | FI_DIRECTED_RECV | FI_NAMED_RX_CTX), 0u);
  }
  fi_freeinfo(info);
  hints->caps = FI_MSG | FI_SOURCE;
  EXPECT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), -FI_ENODATA);
  fi_freeinfo(hints);
}

// Reads one event of `type` (an error entry fails the test).
std::vector<uint8_t> expect_event(fid_eq* eq, uint32_t type, fid* from) {
  std::vector<uint8_t> buffer(sizeof(fi_eq_cm_entry) + 512);
  uint32_t event = 0;
  const ssize_t ret = fi_eq_sread(eq, &event, buffer.data(), buffer.size(), kWaitMs, 0);
  EXPECT_GE(ret, static_cast<ssize_t>(sizeof(fi_eq_cm_entry)))
      << fi_strerror(static_cast<int>(-ret));
  if (ret < static_cast<ssize_t>(sizeof(fi_eq_cm_entry))) return {};
  EXPECT_EQ(event, type);
  fi_eq_cm_entry entry;
  std::memcpy(&entry, buffer.data(), sizeof(entry));
  if (from != nullptr) {
    EXPECT_EQ(entry.fid, from);
  }
  buffer.resize(static_cast<size_t>(ret));
  return buffer;
}

std::string data_of(const std::vector<uint8_t>& event) {
  if (event.size() < sizeof(fi_eq_cm_entry)) return {};
  return std::string(reinterpret_cast<const char*>(event.data()) + sizeof(fi_eq_cm_entry),
                     event.size() - sizeof(fi_eq_cm_entry));
}

fi_info* info_of(const std::vector<uint8_t>& event) {
  fi_eq_cm_entry entry;
  std::memcpy(&entry, event.data(), sizeof(entry));
  return entry.info;
}

class MsgEp : public ::testing::Test {
 protected:
  void SetUp() override {
    fi_info* hints = msg_hints();
    ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info_), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    fi_eq_attr eq_attr{};
    eq_attr.wait_obj = FI_WAIT_UNSPEC;
    ASSERT_EQ(fi_eq_open(fabric_, &eq_attr, &server_eq_, nullptr), 0);
    ASSERT_EQ(fi_eq_open(fabric_, &eq_attr, &client_eq_, nullptr), 0);
    ASSERT_EQ(fi_passive_ep(fabric_, info_, &pep_, nullptr), 0);
    ASSERT_EQ(fi_pep_bind(pep_, &server_eq_->fid, 0), 0);
    ASSERT_EQ(fi_listen(pep_), 0);
    pep_name_len_ = sizeof(pep_name_);
    ASSERT_EQ(fi_getname(&pep_->fid, pep_name_, &pep_name_len_), 0);
    ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
    client_ = open_endpoint(info_, client_eq_, &client_cq_);
  }
  void TearDown() override {
    auto close = [](fid* object) {
      if (object != nullptr) {
        EXPECT_EQ(fi_close(object), 0);
      }
    };
    for (fid_ep* ep : {client_, server_}) close(ep ? &ep->fid : nullptr);
    for (fid_cq* cq : {client_cq_, server_cq_}) close(cq ? &cq->fid : nullptr);
    close(pep_ ? &pep_->fid : nullptr);
    close(domain_ ? &domain_->fid : nullptr);
    for (fid_eq* eq : {client_eq_, server_eq_}) close(eq ? &eq->fid : nullptr);
    close(fabric_ ? &fabric_->fid : nullptr);
    fi_freeinfo(info_);
  }
  fid_ep* open_endpoint(fi_info* info, fid_eq* eq, fid_cq** cq) {
    fi_cq_attr attr{};
    attr.format = FI_CQ_FORMAT_DATA;
    fid_ep* ep = nullptr;
    EXPECT_EQ(fi_cq_open(domain_, &attr, cq, nullptr), 0);
    EXPECT_EQ(fi_endpoint(domain_, info, &ep, nullptr), 0);
    if (ep == nullptr) return nullptr;
    EXPECT_EQ(fi_ep_bind(ep, &eq->fid, 0), 0);
    EXPECT_EQ(fi_ep_bind(ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV), 0);
    EXPECT_EQ(fi_enable(ep), 0);
    return ep;
  }
  // Client connects with "hello"; the server accepts with "welcome".
  void connect() {
    const std::string hello = "hello";
    ASSERT_EQ(fi_connect(client_, pep_name_, hello.data(), hello.size()), 0);
    const auto request = expect_event(server_eq_, FI_CONNREQ, &pep_->fid);
    ASSERT_FALSE(request.empty());
    EXPECT_EQ(data_of(request), hello);
    fi_info* connreq = info_of(request);
    ASSERT_NE(connreq, nullptr);
    ASSERT_NE(connreq->handle, nullptr);
    EXPECT_EQ(connreq->handle->fclass, FI_CLASS_CONNREQ);
    server_ = open_endpoint(connreq, server_eq_, &server_cq_);
    fi_freeinfo(connreq);
    ASSERT_NE(server_, nullptr);
    // Before fi_accept its name is its own queue's.
    server_own_name_len_ = sizeof(server_own_name_);
    ASSERT_EQ(fi_getname(&server_->fid, server_own_name_, &server_own_name_len_), 0);
    const std::string welcome = "welcome";
    ASSERT_EQ(fi_accept(server_, welcome.data(), welcome.size()), 0);
    const auto connected = expect_event(client_eq_, FI_CONNECTED, &client_->fid);
    EXPECT_EQ(data_of(connected), welcome);
    expect_event(server_eq_, FI_CONNECTED, &server_->fid);
  }
  // `text` from `from` arrives at `to`; both sides' completions checked.
  void expect_message(fid_ep* from, fid_cq* from_cq, fid_ep* to, fid_cq* to_cq,
                      const std::string& text) {
    char buffer[128] = {};
    ASSERT_EQ(fi_recv(to, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
    const std::string& kept = kept_for_send(text);
    // dest_addr means nothing on a connected endpoint.
    ASSERT_EQ(fi_send(from, kept.data(), kept.size(), nullptr, 12345, nullptr), 0);
    fi_cq_data_entry entry{};
    ASSERT_EQ(wait_for_completion(to_cq, &entry), 1);
    EXPECT_EQ(entry.op_context, buffer);
    EXPECT_EQ(std::string(buffer, entry.len), text);
    ASSERT_EQ(wait_for_completion(from_cq, &entry), 1);
    EXPECT_TRUE(entry.flags & FI_SEND);
  }

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_eq* server_eq_ = nullptr;
  fid_eq* client_eq_ = nullptr;
  fid_pep* pep_ = nullptr;
  uint8_t pep_name_[64] = {};
  size_t pep_name_len_ = 0;
  uint8_t server_own_name_[64] = {};
  size_t server_own_name_len_ = 0;
  fid_domain* domain_ = nullptr;
  fid_ep* client_ = nullptr;
  fid_ep* server_ = nullptr;
  fid_cq* client_cq_ = nullptr;
  fid_cq* server_cq_ = nullptr;
};

TEST_F(MsgEp, ConnectsWithDataAndCarriesMessagesBothWays) {
  ASSERT_NO_FATAL_FAILURE(connect());
  expect_message(client_, client_cq_, server_, server_cq_, "from the client");
  expect_message(server_, server_cq_, client_, client_cq_, "from the server");
  // The connection's names are a socket's: the accepted endpoint is named
  // by the passive endpoint's address, which is the client's peer; the
  // server's peer is the client's name.  Frames still use the accepted
  // endpoint's own queue.
  uint8_t client_peer[64], server_name[64], server_peer[64], client_name[64];
  size_t client_peer_len = sizeof(client_peer), server_len = sizeof(server_name);
  size_t server_peer_len = sizeof(server_peer), client_len = sizeof(client_name);
  ASSERT_EQ(fi_getpeer(client_, client_peer, &client_peer_len), 0);
  ASSERT_EQ(fi_getname(&server_->fid, server_name, &server_len), 0);
  ASSERT_EQ(fi_getpeer(server_, server_peer, &server_peer_len), 0);
  ASSERT_EQ(fi_getname(&client_->fid, client_name, &client_len), 0);
  const auto pep_address = av::from_native(pep_name_, pep_name_len_);
  const auto client_peer_address = av::from_native(client_peer, client_peer_len);
  const auto server_address = av::from_native(server_name, server_len);
  const auto server_peer_address = av::from_native(server_peer, server_peer_len);
  const auto client_address = av::from_native(client_name, client_len);
  const auto server_own = av::from_native(server_own_name_, server_own_name_len_);
  ASSERT_TRUE(pep_address && client_peer_address && server_address && server_peer_address &&
              client_address && server_own);
  EXPECT_EQ(client_peer_address->queue, pep_address->queue);
  EXPECT_EQ(client_peer_address->session, pep_address->session);
  EXPECT_EQ(server_address->queue, pep_address->queue);
  EXPECT_EQ(server_address->session, pep_address->session);
  EXPECT_EQ(server_peer_address->queue, client_address->queue);
  EXPECT_EQ(server_peer_address->session, client_address->session);
  EXPECT_NE(server_own->queue, pep_address->queue);
}

TEST_F(MsgEp, RmaWorksOverTheConnection) {
  ASSERT_NO_FATAL_FAILURE(connect());
  std::vector<char> target(64, 0);
  fid_mr* mr = nullptr;
  ASSERT_EQ(
      fi_mr_reg(domain_, target.data(), target.size(), FI_REMOTE_WRITE, 0, 0, 0, &mr, nullptr), 0);
  static const std::string text = "written over the connection";  // outlives every resend
  ASSERT_EQ(fi_write(client_, text.data(), text.size(), nullptr, 0,
                     reinterpret_cast<uint64_t>(target.data()), fi_mr_key(mr), &target),
            0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(client_cq_, &entry), 1);
  EXPECT_TRUE(entry.flags & FI_WRITE);
  EXPECT_EQ(std::string(target.data(), text.size()), text);
  EXPECT_EQ(fi_close(&mr->fid), 0);
}

TEST_F(MsgEp, ShutdownReachesThePeerAndEndsSending) {
  ASSERT_NO_FATAL_FAILURE(connect());
  expect_message(client_, client_cq_, server_, server_cq_, "last words");
  ASSERT_EQ(fi_shutdown(client_, 0), 0);
  expect_event(server_eq_, FI_SHUTDOWN, &server_->fid);
  static const std::string text = "too late";  // outlives every resend
  EXPECT_EQ(fi_send(client_, text.data(), text.size(), nullptr, 0, nullptr), -FI_ENOTCONN);
}

// The client's EQ: an FI_ECONNREFUSED error entry; returns its err_data.
std::string expect_refusal(fid_eq* eq, fid* from) {
  uint32_t event = 0;
  fi_eq_cm_entry entry{};
  ssize_t ret = -FI_EAGAIN;
  for (int i = 0; i < 5000 && ret == -FI_EAGAIN; ++i)
    ret = fi_eq_sread(eq, &event, &entry, sizeof(entry), 1, 0);
  EXPECT_EQ(ret, -FI_EAVAIL);
  fi_eq_err_entry error{};
  EXPECT_EQ(fi_eq_readerr(eq, &error, 0), static_cast<ssize_t>(sizeof(error)));
  EXPECT_EQ(error.fid, from);
  EXPECT_EQ(error.err, FI_ECONNREFUSED);
  return std::string(static_cast<const char*>(error.err_data), error.err_data_size);
}

TEST_F(MsgEp, ARefusedRequestIsAnErrorWithTheRefusalsData) {
  const std::string hello = "may I";
  ASSERT_EQ(fi_connect(client_, pep_name_, hello.data(), hello.size()), 0);
  const auto request = expect_event(server_eq_, FI_CONNREQ, &pep_->fid);
  ASSERT_FALSE(request.empty());
  fi_info* connreq = info_of(request);
  const std::string no = "no";
  ASSERT_EQ(fi_reject(pep_, connreq->handle, no.data(), no.size()), 0);
  // Expect: a request is answered once.
  EXPECT_EQ(fi_reject(pep_, connreq->handle, nullptr, 0), -FI_EINVAL);
  fi_freeinfo(connreq);
  EXPECT_EQ(expect_refusal(client_eq_, &client_->fid), no);
  static const std::string text = "refused";  // outlives every resend
  EXPECT_EQ(fi_send(client_, text.data(), text.size(), nullptr, 0, nullptr), -FI_ENOTCONN);
}

TEST_F(MsgEp, ARequestTakenAndNotAcceptedIsRefused) {
  ASSERT_EQ(fi_connect(client_, pep_name_, nullptr, 0), 0);
  const auto request = expect_event(server_eq_, FI_CONNREQ, &pep_->fid);
  ASSERT_FALSE(request.empty());
  fi_info* connreq = info_of(request);
  // fabtests' error path: fi_endpoint took the request, then fi_reject.
  server_ = open_endpoint(connreq, server_eq_, &server_cq_);
  ASSERT_NE(server_, nullptr);
  ASSERT_EQ(fi_reject(pep_, connreq->handle, "x", 1), 0);
  EXPECT_EQ(fi_accept(server_, nullptr, 0), -FI_EINVAL);
  fi_freeinfo(connreq);
  EXPECT_EQ(expect_refusal(client_eq_, &client_->fid), "x");
}

TEST_F(MsgEp, AnEndpointClosedBeforeAcceptingRefusesItsRequest) {
  ASSERT_EQ(fi_connect(client_, pep_name_, nullptr, 0), 0);
  const auto request = expect_event(server_eq_, FI_CONNREQ, &pep_->fid);
  ASSERT_FALSE(request.empty());
  fi_info* connreq = info_of(request);
  server_ = open_endpoint(connreq, server_eq_, &server_cq_);
  fi_freeinfo(connreq);
  ASSERT_NE(server_, nullptr);
  ASSERT_EQ(fi_close(&server_->fid), 0);
  server_ = nullptr;
  EXPECT_EQ(expect_refusal(client_eq_, &client_->fid), "");
}

TEST_F(MsgEp, OneSourceHoldsAtMostItsShareOfTheUnansweredRequests) {
  // Every endpoint of this process has the same source (the port's MAC):
  // kMaxPendingPerSource requests from it wait, the rest are refused.
  constexpr size_t kMaxPendingPerSource = 16;  // drivers/ofi/dpdk_cm.h
  constexpr size_t kAsks = kMaxPendingPerSource + 4;
  std::vector<fid_ep*> clients;
  std::vector<fid_cq*> cqs(kAsks);
  for (size_t i = 0; i < kAsks; ++i) {
    clients.push_back(open_endpoint(info_, client_eq_, &cqs[i]));
    ASSERT_NE(clients.back(), nullptr);
    ASSERT_EQ(fi_connect(clients.back(), pep_name_, nullptr, 0), 0);
  }
  std::vector<fi_info*> requests;
  for (size_t i = 0; i < kMaxPendingPerSource; ++i) {
    const auto request = expect_event(server_eq_, FI_CONNREQ, &pep_->fid);
    ASSERT_FALSE(request.empty());
    requests.push_back(info_of(request));
  }
  // Expect: four refusals, and no further request.
  for (size_t i = 0; i < kAsks - kMaxPendingPerSource; ++i) {
    uint32_t event = 0;
    fi_eq_cm_entry entry{};
    ssize_t ret = -FI_EAGAIN;
    for (int tries = 0; tries < 5000 && ret == -FI_EAGAIN; ++tries)
      ret = fi_eq_sread(client_eq_, &event, &entry, sizeof(entry), 1, 0);
    ASSERT_EQ(ret, -FI_EAVAIL);
    fi_eq_err_entry error{};
    ASSERT_EQ(fi_eq_readerr(client_eq_, &error, 0), static_cast<ssize_t>(sizeof(error)));
    EXPECT_EQ(error.err, FI_ECONNREFUSED);
  }
  uint32_t event = 0;
  fi_eq_cm_entry entry{};
  EXPECT_EQ(fi_eq_sread(server_eq_, &event, &entry, sizeof(entry), 200, 0), -FI_EAGAIN);
  // An answer makes room: the source's next request is taken.
  ASSERT_EQ(fi_reject(pep_, requests[0]->handle, nullptr, 0), 0);
  fid_cq* again_cq = nullptr;
  fid_ep* again = open_endpoint(info_, client_eq_, &again_cq);
  ASSERT_NE(again, nullptr);
  ASSERT_EQ(fi_connect(again, pep_name_, nullptr, 0), 0);
  const auto taken = expect_event(server_eq_, FI_CONNREQ, &pep_->fid);
  ASSERT_FALSE(taken.empty());
  requests.push_back(info_of(taken));
  for (fi_info* request : requests) fi_freeinfo(request);
  clients.push_back(again);
  cqs.push_back(again_cq);
  for (fid_ep* client : clients) EXPECT_EQ(fi_close(&client->fid), 0);
  for (fid_cq* cq : cqs) EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(MsgEp, BothSidesShuttingDownEachHearTheOther) {
  ASSERT_NO_FATAL_FAILURE(connect());
  ASSERT_EQ(fi_shutdown(client_, 0), 0);
  ASSERT_EQ(fi_shutdown(server_, 0), 0);
  expect_event(server_eq_, FI_SHUTDOWN, &server_->fid);
  expect_event(client_eq_, FI_SHUTDOWN, &client_->fid);
}

// The peer's SHUTDOWN may come before the application calls fi_shutdown
// (fabtests' fi_cm_data on a busy machine): its own still reaches the peer.
TEST_F(MsgEp, AShutdownAfterThePeersStillReachesThePeer) {
  ASSERT_NO_FATAL_FAILURE(connect());
  ASSERT_EQ(fi_shutdown(client_, 0), 0);
  expect_event(server_eq_, FI_SHUTDOWN, &server_->fid);
  ASSERT_EQ(fi_shutdown(server_, 0), 0);
  expect_event(client_eq_, FI_SHUTDOWN, &client_->fid);
  // Once each way: a second call sends nothing more.
  EXPECT_EQ(fi_shutdown(server_, 0), 0);
  uint32_t event = 0;
  fi_eq_cm_entry entry{};
  EXPECT_EQ(fi_eq_sread(client_eq_, &event, &entry, sizeof(entry), 200, 0), -FI_EAGAIN);
}

TEST_F(MsgEp, AStrangersMessagesNeverReachAConnectedEndpoint) {
  ASSERT_NO_FATAL_FAILURE(connect());
  char buffer[64] = {};
  ASSERT_EQ(fi_recv(server_, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  // An RDM endpoint of the same port that knows the server's address.
  fi_info* rdm = get_dpdk_info();
  ASSERT_NE(rdm, nullptr);
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  fid_av* av = nullptr;
  ASSERT_EQ(fi_av_open(domain_, &attr, &av, nullptr), 0);
  TestEndpoint stranger;
  ASSERT_EQ(stranger.open(domain_, av, rdm), 0);
  // The queue the server's frames use (its name before fi_accept).
  fi_addr_t server_addr = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(av, server_own_name_, 1, &server_addr, 0, nullptr), 1);
  static const std::string intrusion = "intrusion";  // outlives every resend
  ASSERT_EQ(fi_send(stranger.ep, intrusion.data(), intrusion.size(), nullptr, server_addr, nullptr),
            0);
  fi_cq_data_entry entry{};
  // Its transport took it (acknowledged): only the receive is refused.
  EXPECT_EQ(wait_for_completion(stranger.tx_cq, &entry), 1);
  EXPECT_TRUE(stays_empty(server_cq_, 0.3));
  // The peer's message takes the receive.
  static const std::string text = "from the peer";  // outlives every resend
  ASSERT_EQ(fi_send(client_, text.data(), text.size(), nullptr, 0, nullptr), 0);
  ASSERT_EQ(wait_for_completion(server_cq_, &entry), 1);
  EXPECT_EQ(std::string(buffer, entry.len), text);
  stranger.close();
  EXPECT_EQ(fi_close(&av->fid), 0);
  fi_freeinfo(rdm);
}

TEST_F(MsgEp, ConnectionDataIsBoundedByItsOption) {
  size_t size = 0, len = sizeof(size);
  ASSERT_EQ(fi_getopt(&pep_->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, &len), 0);
  EXPECT_EQ(size, 256u);
  len = sizeof(size);
  ASSERT_EQ(fi_getopt(&client_->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, &len), 0);
  EXPECT_EQ(size, 256u);
  static const std::string text = "not connected";  // outlives every resend
  EXPECT_EQ(fi_send(client_, text.data(), text.size(), nullptr, 0, nullptr), -FI_ENOTCONN);
  // fi_cm(3): data that does not fit is cut, silently.
  std::string too_much(size + 44, 'x');
  too_much.replace(size, 44, std::string(44, 'y'));
  ASSERT_EQ(fi_connect(client_, pep_name_, too_much.data(), too_much.size()), 0);
  const auto request = expect_event(server_eq_, FI_CONNREQ, &pep_->fid);
  EXPECT_EQ(data_of(request), std::string(size, 'x'));
  if (!request.empty()) {
    fi_info* connreq = info_of(request);
    EXPECT_EQ(fi_reject(pep_, connreq->handle, nullptr, 0), 0);
    fi_freeinfo(connreq);
  }
}

// fi_endpoint(3): an active endpoint opened with info->handle a passive
// endpoint acquires its address (fi_getinfo(3) hands hints->handle back);
// the passive endpoint is then bound to nothing and refuses to listen; it
// listens no more, and its address is the new endpoint's.
TEST_F(MsgEp, AnActiveEndpointAcquiresAPassiveEndpointsAddress) {
  fid_pep* reserved = nullptr;
  ASSERT_EQ(fi_passive_ep(fabric_, info_, &reserved, nullptr), 0);
  uint8_t reserved_name[64];
  size_t reserved_len = sizeof(reserved_name);
  ASSERT_EQ(fi_getname(&reserved->fid, reserved_name, &reserved_len), 0);
  fi_info* hints = msg_hints();
  hints->handle = &reserved->fid;
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  hints->handle = nullptr;
  fi_freeinfo(hints);
  EXPECT_EQ(info->handle, &reserved->fid);
  fid_cq* cq = nullptr;
  fid_ep* ep = open_endpoint(info, client_eq_, &cq);
  ASSERT_NE(ep, nullptr);
  uint8_t name[64];
  size_t len = sizeof(name);
  ASSERT_EQ(fi_getname(&ep->fid, name, &len), 0);
  ASSERT_EQ(len, reserved_len);
  EXPECT_EQ(std::memcmp(name, reserved_name, len), 0);
  EXPECT_EQ(fi_listen(reserved), -FI_EOPBADSTATE);
  // A second endpoint from the same info: the address is gone.
  fid_ep* again = nullptr;
  EXPECT_EQ(fi_endpoint(domain_, info, &again, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_close(&reserved->fid), 0);
  info->handle = nullptr;
  fi_freeinfo(info);
  EXPECT_EQ(fi_close(&ep->fid), 0);
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

// fi_cm(3) fi_setname: a passive endpoint named another queue of its port
// before fi_listen moves there (a client connecting to the new name is
// heard); a queue another endpoint holds is refused with -FI_EADDRINUSE, an
// address of another port with -FI_EADDRNOTAVAIL, and once listening the
// name stays (-FI_EOPBADSTATE).
TEST_F(MsgEp, SetnameMovesAPassiveEndpointBeforeItListens) {
  fid_pep* moving = nullptr;
  ASSERT_EQ(fi_passive_ep(fabric_, info_, &moving, nullptr), 0);
  fid_eq* eq = nullptr;
  fi_eq_attr eq_attr{};
  eq_attr.wait_obj = FI_WAIT_UNSPEC;
  ASSERT_EQ(fi_eq_open(fabric_, &eq_attr, &eq, nullptr), 0);
  ASSERT_EQ(fi_pep_bind(moving, &eq->fid, 0), 0);
  uint8_t name[64];
  size_t len = sizeof(name);
  ASSERT_EQ(fi_getname(&moving->fid, name, &len), 0);
  auto address = av::from_native(name, len);
  ASSERT_TRUE(address);
  const auto pep_address = av::from_native(pep_name_, pep_name_len_);
  ASSERT_TRUE(pep_address);
  // The fixture's listener's queue is taken.
  av::Address taken = *address;
  taken.queue = pep_address->queue;
  auto native = [](const av::Address& address) {
    std::vector<uint8_t> bytes(av::kNativeAddressSize);
    av::to_native(address, bytes.data());
    return bytes;
  };
  std::vector<uint8_t> wanted = native(taken);
  EXPECT_EQ(fi_setname(&moving->fid, wanted.data(), wanted.size()), -FI_EADDRINUSE);
  av::Address elsewhere = *address;
  elsewhere.mac[5] ^= 0x40;
  wanted = native(elsewhere);
  EXPECT_EQ(fi_setname(&moving->fid, wanted.data(), wanted.size()), -FI_EADDRNOTAVAIL);
  av::Address free_queue = *address;
  free_queue.queue = 9;
  wanted = native(free_queue);
  ASSERT_EQ(fi_setname(&moving->fid, wanted.data(), wanted.size()), 0);
  len = sizeof(name);
  ASSERT_EQ(fi_getname(&moving->fid, name, &len), 0);
  const auto moved = av::from_native(name, len);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->queue, 9);
  ASSERT_EQ(fi_listen(moving), 0);
  free_queue.queue = 10;
  wanted = native(free_queue);
  EXPECT_EQ(fi_setname(&moving->fid, wanted.data(), wanted.size()), -FI_EOPBADSTATE);
  ASSERT_EQ(fi_connect(client_, name, nullptr, 0), 0);
  const auto request = expect_event(eq, FI_CONNREQ, &moving->fid);
  ASSERT_FALSE(request.empty());
  fi_info* connreq = info_of(request);
  ASSERT_NE(connreq, nullptr);
  EXPECT_EQ(fi_reject(moving, connreq->handle, nullptr, 0), 0);
  fi_freeinfo(connreq);
  EXPECT_EQ(fi_close(&moving->fid), 0);
  EXPECT_EQ(fi_close(&eq->fid), 0);
}

}  // namespace
}  // namespace ofi_dpdk::test
