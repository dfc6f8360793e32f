// local_user: what an unprivileged local user of the host can do to a
// provider process whose af_packet port shares the kernel's address
// (test_local_user.sh runs it as uid 65534 with no capabilities, in the
// server's network namespace, while a live pair runs).  Ordinary sockets
// only: no raw socket, no capability.  In order:
//
//   binds    binds every endpoint port FI_DPDK_PORT_BASE + 0..63 on the
//            server's address (and its IPv6 address, with --server-ip6):
//            the ports in --held must be refused EADDRINUSE, also on the
//            wildcard address (which would catch them too); the rest bind.
//   listen   counts the datagrams every socket it could bind receives for
//            --listen-ms: must be 0.
//   forgery  meanwhile sends, from a port of its own on the server's
//            address (so in the server's name, as far as the peer can
//            tell), RESETs with guessed sessions and tokens and HELLOs
//            from new sessions to the client's endpoint: what it would
//            send if it had read a token.  Their effect (none, the pair
//            runs on) is the script's to check.
//
//   local_user --server-ip A --client-ip C --client-port P --server-queue Q
//              --held PORT[,PORT...] [--server-ip6 A6] [--port-base B]
//              [--listen-ms N] [--seed N]
//
// Prints what it saw; exit 0 when every check passed, 1 otherwise, 2 on
// set-up errors.
//
//   local_user --squat PORT --server-ip A
//
// takes PORT on A before the provider starts, says "ready", and holds it
// until its standard input closes; then prints the datagrams it received
// and exits 0 when there were none.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lib/proto/wire.h"
#include "test/adversarial/forge.h"

namespace ofi_dpdk::adversarial {
namespace {

constexpr int kEndpointPorts = 64;

struct Options {
  in_addr server_ip{};
  std::optional<in6_addr> server_ip6;
  in_addr client_ip{};
  uint16_t client_port = 0;
  uint16_t server_queue = 0;
  std::set<uint16_t> held;
  uint16_t port_base = 9228;
  int listen_ms = 3000;
  uint64_t seed = 1;
  uint16_t squat = 0;  // --squat: the port to take first
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "local_user: %s\n", why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  bool have_server = false, have_client = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage(arg + " needs a value");
    const char* value = argv[++i];
    if (arg == "--server-ip") {
      have_server = inet_pton(AF_INET, value, &o.server_ip) == 1;
    } else if (arg == "--server-ip6") {
      in6_addr a;
      if (inet_pton(AF_INET6, value, &a) != 1) usage("bad --server-ip6");
      o.server_ip6 = a;
    } else if (arg == "--client-ip") {
      have_client = inet_pton(AF_INET, value, &o.client_ip) == 1;
    } else if (arg == "--client-port") {
      o.client_port = static_cast<uint16_t>(std::stoul(value));
    } else if (arg == "--server-queue") {
      o.server_queue = static_cast<uint16_t>(std::stoul(value));
    } else if (arg == "--held") {
      for (std::string list = value; !list.empty();) {
        const size_t comma = list.find(',');
        o.held.insert(static_cast<uint16_t>(std::stoul(list.substr(0, comma))));
        list = comma == std::string::npos ? "" : list.substr(comma + 1);
      }
    } else if (arg == "--port-base") {
      o.port_base = static_cast<uint16_t>(std::stoul(value));
    } else if (arg == "--listen-ms") {
      o.listen_ms = std::stoi(value);
    } else if (arg == "--squat") {
      o.squat = static_cast<uint16_t>(std::stoul(value));
    } else if (arg == "--seed") {
      o.seed = std::stoull(value);
    } else {
      usage("unknown option " + arg);
    }
  }
  if (have_server && o.squat != 0) return o;
  if (!have_server || !have_client || o.client_port == 0 || o.held.empty())
    usage("--server-ip, --client-ip, --client-port and --held are needed");
  return o;
}

std::string text(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (address.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&address);
  inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
  port = ntohs(a->sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

sockaddr_storage v4(in_addr address, uint16_t port) {
  sockaddr_storage s{};
  auto* a = reinterpret_cast<sockaddr_in*>(&s);
  a->sin_family = AF_INET;
  a->sin_addr = address;
  a->sin_port = htons(port);
  return s;
}

sockaddr_storage v6(in6_addr address, uint16_t port) {
  sockaddr_storage s{};
  auto* a = reinterpret_cast<sockaddr_in6*>(&s);
  a->sin6_family = AF_INET6;
  a->sin6_addr = address;
  a->sin6_port = htons(port);
  return s;
}

// A socket bound to `address` as any program would bind it (an IPv6 one
// dual-stack unless `v6_only`); -errno when the bind is refused.
int bind_like_anyone(const sockaddr_storage& address, bool v6_only, int* fd_out) {
  const int fd = socket(address.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -errno;
  if (address.ss_family == AF_INET6) {
    const int only = v6_only ? 1 : 0;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof only);
  }
  const socklen_t length =
      address.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    const int error = errno;
    close(fd);
    return -error;
  }
  *fd_out = fd;
  return 0;
}

class LocalUser {
 public:
  explicit LocalUser(const Options& o) : o_(o), rng_(o.seed) {}
  ~LocalUser() {
    for (const Listener& l : listeners_) close(l.fd);
    if (forger_ >= 0) close(forger_);
  }

  int run() {
    std::printf("local_user: uid %u euid %u\n", getuid(), geteuid());
    try_binds();
    open_forger();
    listen_and_forge();
    std::printf(
        "local_user: %zu sockets bound to endpoint ports; %zu held ports refused "
        "EADDRINUSE; datagrams received %lu (%lu bytes); sent %lu RESETs and %lu "
        "HELLOs in the server's name\n",
        listeners_.size(), refused_, received_, received_bytes_, resets_sent_, hellos_sent_);
    for (const std::string& f : failures_) std::printf("FAIL %s\n", f.c_str());
    return failures_.empty() ? 0 : 1;
  }

 private:
  struct Listener {
    int fd;
    std::string name;
  };

  void expect_refused(const sockaddr_storage& address, bool v6_only) {
    int fd = -1;
    const int ret = bind_like_anyone(address, v6_only, &fd);
    if (ret == -EADDRINUSE) {
      ++refused_;
      return;
    }
    if (ret == 0) {
      failures_.push_back("bound " + text(address) +
                          ": the provider does not hold its endpoint's port");
      listeners_.push_back({fd, text(address)});
      return;
    }
    failures_.push_back("bind " + text(address) + ": " + std::strerror(-ret) +
                        " (expected EADDRINUSE)");
  }

  void expect_bound(const sockaddr_storage& address) {
    int fd = -1;
    const int ret = bind_like_anyone(address, true, &fd);
    if (ret == 0) {
      listeners_.push_back({fd, text(address)});
      return;
    }
    // A port no endpoint has is anyone's: refusing it would hold more
    // than the provider needs.
    failures_.push_back("bind " + text(address) + ": " + std::strerror(-ret) +
                        " (no endpoint has this port)");
  }

  void try_binds() {
    for (int q = 0; q < kEndpointPorts; ++q) {
      const auto port = static_cast<uint16_t>(o_.port_base + q);
      const bool held = o_.held.count(port) != 0;
      const sockaddr_storage own = v4(o_.server_ip, port);
      if (held) {
        expect_refused(own, false);
        expect_refused(v4(in_addr{htonl(INADDR_ANY)}, port), false);
      } else {
        expect_bound(own);
      }
      if (!o_.server_ip6) continue;
      if (held) {
        expect_refused(v6(*o_.server_ip6, port), true);
        expect_refused(v6(in6addr_any, port), false);  // dual-stack: IPv4 too
      } else {
        expect_bound(v6(*o_.server_ip6, port));
      }
    }
  }

  // The forger's own port: one the kernel picks on the server's address.
  void open_forger() {
    if (bind_like_anyone(v4(o_.server_ip, 0), false, &forger_) != 0)
      usage("cannot bind a socket to the server's address");
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    getsockname(forger_, reinterpret_cast<sockaddr*>(&bound), &length);
    listeners_.push_back({forger_, text(bound) + " (the forger's)"});
  }

  std::vector<uint8_t> datagram(wire::Opcode opcode) {
    Station server;
    server.queue = o_.server_queue;
    server.session = static_cast<uint32_t>(rng_()) | 1;
    Station client;
    client.queue = static_cast<uint16_t>(o_.client_port - o_.port_base);
    client.session = static_cast<uint32_t>(rng_()) | 1;
    wire::FrameHeader h = header_between(opcode, server, client);
    h.conn = h.ack_conn = static_cast<uint16_t>(1 + rng_() % 4);
    h.token = rng_() | 1;
    h.ack_token = rng_() | 1;
    if (opcode == wire::Opcode::kHello) {
      h.dst_session = 0;
      h.ack_token = 0;
      const auto body = handshake_body(0, 1400);
      h.msg_len = sizeof(body);
      return seal_udp(h, body);
    }
    return seal_udp(h, {});
  }

  void forge_some() {
    const sockaddr_storage to = v4(o_.client_ip, o_.client_port);
    for (int i = 0; i < 16; ++i) {
      const bool hello = i == 0;
      const std::vector<uint8_t> d = datagram(hello ? wire::Opcode::kHello : wire::Opcode::kReset);
      if (sendto(forger_, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to),
                 sizeof(sockaddr_in)) == static_cast<ssize_t>(d.size()))
        ++(hello ? hellos_sent_ : resets_sent_);
    }
  }

  void listen_and_forge() {
    std::vector<pollfd> fds;
    for (const Listener& l : listeners_) fds.push_back({l.fd, POLLIN, 0});
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::milliseconds(o_.listen_ms);
    auto next_forgery = Clock::now();
    uint8_t buffer[65536];
    for (auto now = Clock::now(); now < end; now = Clock::now()) {
      if (now >= next_forgery) {
        forge_some();
        next_forgery = now + std::chrono::milliseconds(100);
      }
      const int ready = poll(fds.data(), fds.size(), 20);
      if (ready <= 0) continue;
      for (size_t i = 0; i < fds.size(); ++i) {
        if ((fds[i].revents & POLLIN) == 0) continue;
        for (;;) {
          const ssize_t n = recv(fds[i].fd, buffer, sizeof buffer, 0);
          if (n < 0) break;
          if (received_ == 0)
            std::printf("local_user: first datagram (%zd bytes) on %s\n", n,
                        listeners_[i].name.c_str());
          ++received_;
          received_bytes_ += static_cast<uint64_t>(n);
        }
      }
    }
    if (received_ != 0)
      failures_.push_back("received " + std::to_string(received_) + " datagrams (" +
                          std::to_string(received_bytes_) + " bytes) as uid " +
                          std::to_string(getuid()));
  }

  const Options o_;
  std::mt19937_64 rng_;
  std::vector<Listener> listeners_;
  int forger_ = -1;
  size_t refused_ = 0;
  uint64_t received_ = 0;
  uint64_t received_bytes_ = 0;
  uint64_t resets_sent_ = 0;
  uint64_t hellos_sent_ = 0;
  std::vector<std::string> failures_;
};

// --squat: the port held first, as another user's program would.
int squat(const Options& o) {
  int fd = -1;
  const sockaddr_storage address = v4(o.server_ip, o.squat);
  if (const int ret = bind_like_anyone(address, false, &fd); ret != 0)
    usage("cannot take " + text(address) + ": " + std::strerror(-ret));
  std::printf("ready\n");
  std::fflush(stdout);
  uint64_t received = 0;
  pollfd fds[2] = {{fd, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
  uint8_t buffer[65536];
  for (;;) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN)
      while (recv(fd, buffer, sizeof buffer, 0) >= 0) ++received;
    if (fds[1].revents & (POLLIN | POLLHUP)) {
      char ignored[64];
      if (read(STDIN_FILENO, ignored, sizeof ignored) <= 0) break;
    }
  }
  close(fd);
  std::printf("local_user: held %s; datagrams received %lu\n", text(address).c_str(), received);
  return received == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ofi_dpdk::adversarial

int main(int argc, char** argv) {
  const auto options = ofi_dpdk::adversarial::parse(argc, argv);
  if (geteuid() == 0) ofi_dpdk::adversarial::usage("run me as an unprivileged user");
  if (options.squat != 0) return ofi_dpdk::adversarial::squat(options);
  ofi_dpdk::adversarial::LocalUser user(options);
  return user.run();
}
