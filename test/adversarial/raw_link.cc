// raw_link.cc: see raw_link.h.
#include "test/adversarial/raw_link.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <thread>

namespace ofi_dpdk::adversarial {
namespace {

[[noreturn]] void fail_system(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

}  // namespace

RawLink::RawLink(const std::string& iface, uint16_t ether_type, std::vector<sock_filter> filter) {
  const unsigned index = if_nametoindex(iface.c_str());
  if (index == 0) fail_system("interface " + iface);
  // Protocol 0: nothing is delivered until bind names one, by which time
  // the filter is attached.
  fd_ = socket(AF_PACKET, SOCK_RAW, 0);
  if (fd_ < 0) fail_system("AF_PACKET socket");
  sock_fprog program{static_cast<unsigned short>(filter.size()), filter.data()};
  if (setsockopt(fd_, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof(program)) != 0)
    fail_system("SO_ATTACH_FILTER");
  // Replies to a flood come in bursts while we are still sending.
  const int buffer = 8 << 20;
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof(buffer));
  // Straight to the driver: our frames are not copied to the other packet
  // sockets on this interface (the live peer's PMD would only drop them).
  const int bypass = 1;
  setsockopt(fd_, SOL_PACKET, PACKET_QDISC_BYPASS, &bypass, sizeof(bypass));
  sockaddr_ll address{};
  address.sll_family = AF_PACKET;
  address.sll_protocol = htons(ether_type);
  address.sll_ifindex = static_cast<int>(index);
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0)
    fail_system("bind to " + iface);
}

RawLink::~RawLink() {
  if (fd_ >= 0) close(fd_);
}

bool RawLink::send(std::span<const uint8_t> frame) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (::send(fd_, frame.data(), frame.size(), 0) == static_cast<ssize_t>(frame.size())) {
      ++frames_sent_;
      return true;
    }
    if (errno != ENOBUFS && errno != EAGAIN) break;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  ++send_failures_;
  return false;
}

size_t RawLink::receive(std::span<uint8_t> buffer, int64_t timeout_us) {
  pollfd readable{fd_, POLLIN, 0};
  const int64_t wait = std::max<int64_t>(timeout_us, 0);
  const timespec limit{static_cast<time_t>(wait / 1'000'000),
                       static_cast<long>(wait % 1'000'000) * 1000};
  if (ppoll(&readable, 1, &limit, nullptr) <= 0) return 0;
  const ssize_t got = recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
  return got > 0 ? static_cast<size_t>(got) : 0;
}

void FilterBuilder::load_byte(uint32_t offset) {
  code_.push_back(BPF_STMT(BPF_LD | BPF_B | BPF_ABS, offset));
}

void FilterBuilder::load_half(uint32_t offset) {
  code_.push_back(BPF_STMT(BPF_LD | BPF_H | BPF_ABS, offset));
}

void FilterBuilder::load_word(uint32_t offset) {
  code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset));
}

void FilterBuilder::and_with(uint32_t mask) {
  code_.push_back(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask));
}

void FilterBuilder::jump_if_equal(uint32_t value, const std::string& label) {
  jumps_.push_back({code_.size(), label, true});
  code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 0));
}

void FilterBuilder::jump_unless_equal(uint32_t value, const std::string& label) {
  jumps_.push_back({code_.size(), label, false});
  code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 0));
}

void FilterBuilder::jump_unless_bits(uint32_t bits, const std::string& label) {
  jumps_.push_back({code_.size(), label, false});
  code_.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, bits, 0, 0));
}

void FilterBuilder::label(const std::string& name) {
  labels_.emplace_back(name, code_.size());
}

void FilterBuilder::accept() {
  code_.push_back(BPF_STMT(BPF_RET | BPF_K, 0xffff));
}

void FilterBuilder::reject() {
  code_.push_back(BPF_STMT(BPF_RET | BPF_K, 0));
}

std::vector<sock_filter> FilterBuilder::finish() const {
  std::vector<sock_filter> code = code_;
  for (const Jump& jump : jumps_) {
    auto target = std::find_if(labels_.begin(), labels_.end(),
                               [&](const auto& l) { return l.first == jump.to; });
    if (target == labels_.end() || target->second <= jump.at || target->second - jump.at - 1 > 255)
      throw std::logic_error("BPF label " + jump.to + " is not a short forward jump");
    const auto distance = static_cast<uint8_t>(target->second - jump.at - 1);
    (jump.when_true ? code[jump.at].jt : code[jump.at].jf) = distance;
  }
  return code;
}

}  // namespace ofi_dpdk::adversarial
