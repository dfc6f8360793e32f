// av_shared_peer: one side of the two-process named-AV test
// (test_av_shared.sh).  Both processes open the fi_av named --name on their
// own memif port (EAL arguments from FI_DPDK_EAL_ARGS).
//
//   --role creator: creates the AV, inserts three other peers and itself
//     (index 3), publishes its address in --dir/creator.addr, receives the
//     reader's native address, inserts it (index 4), answers "ack" to
//     index 4, and waits for the reader's "done" before closing.
//   --role reader: opens the AV with FI_READ once the creator published,
//     checks that index 3 is the creator's address, that it may not insert,
//     sends its address to index 3, expects "ack" from FI_SOURCE index 3,
//     finds itself at index 4 (inserted by the creator after the reader
//     opened), then sends "done".
//
//   --role fork: forks at once; the parent is the creator, the child the
//     reader (the stock program's pattern; test_shared_port.sh).
//
// Every wait is bounded; the program prints what failed and exits 1.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

constexpr auto kWait = std::chrono::seconds(20);

[[noreturn]] void fail(const std::string& what, int ret = 0) {
  std::fprintf(stderr, "av_shared_peer: %s%s%s\n", what.c_str(), ret ? ": " : "",
               ret ? fi_strerror(-ret) : "");
  std::exit(1);
}

void check(int ret, const char* what) {
  if (ret != 0) fail(what, ret);
}

struct Peer {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;
  fid_cq* tx_cq = nullptr;
  fid_cq* rx_cq = nullptr;
  uint8_t name[64] = {};
  size_t name_len = sizeof(name);

  void open_domain() {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("dpdk");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_SOURCE | FI_SHARED_AV;
    check(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), "fi_getinfo");
    fi_freeinfo(hints);
    check(fi_fabric(info->fabric_attr, &fabric, nullptr), "fi_fabric");
    check(fi_domain(fabric, info, &domain, nullptr), "fi_domain");
  }
  int open_av(const std::string& av_name, uint64_t flags) {
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    attr.name = av_name.c_str();
    attr.flags = flags;
    return fi_av_open(domain, &attr, &av, nullptr);
  }
  void open_endpoint() {
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_DATA;
    check(fi_cq_open(domain, &cq_attr, &tx_cq, nullptr), "fi_cq_open");
    check(fi_cq_open(domain, &cq_attr, &rx_cq, nullptr), "fi_cq_open");
    check(fi_endpoint(domain, info, &ep, nullptr), "fi_endpoint");
    check(fi_ep_bind(ep, &av->fid, 0), "fi_ep_bind av");
    check(fi_ep_bind(ep, &tx_cq->fid, FI_TRANSMIT), "fi_ep_bind tx");
    check(fi_ep_bind(ep, &rx_cq->fid, FI_RECV), "fi_ep_bind rx");
    check(fi_enable(ep), "fi_enable");
    check(fi_getname(&ep->fid, name, &name_len), "fi_getname");
  }
  std::string text_of(const void* address) {
    char text[128];
    size_t length = sizeof(text);
    if (fi_av_straddr(av, address, text, &length) == nullptr) fail("fi_av_straddr");
    return text;
  }
  // Sends and waits for the send's completion (the peer's transport has it).
  void send(const void* data, size_t length, fi_addr_t to) {
    check(static_cast<int>(fi_send(ep, data, length, nullptr, to, nullptr)), "fi_send");
    fi_cq_data_entry entry;
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    ssize_t ret;
    while ((ret = fi_cq_read(tx_cq, &entry, 1)) == -FI_EAGAIN)
      if (std::chrono::steady_clock::now() > deadline) fail("send: no completion");
    if (ret != 1) fail("send completion", static_cast<int>(ret));
  }
  // Receives one message into buffer; returns its length and FI_SOURCE.
  size_t receive(void* buffer, size_t size, fi_addr_t* source) {
    check(static_cast<int>(fi_recv(ep, buffer, size, nullptr, FI_ADDR_UNSPEC, nullptr)), "fi_recv");
    fi_cq_data_entry entry;
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    ssize_t ret;
    while ((ret = fi_cq_readfrom(rx_cq, &entry, 1, source)) == -FI_EAGAIN)
      if (std::chrono::steady_clock::now() > deadline) fail("receive: nothing came");
    if (ret != 1) fail("receive completion", static_cast<int>(ret));
    return entry.len;
  }
  void close_all() {
    check(fi_close(&ep->fid), "fi_close ep");
    check(fi_close(&tx_cq->fid), "fi_close cq");
    check(fi_close(&rx_cq->fid), "fi_close cq");
    check(fi_close(&av->fid), "fi_close av");
    check(fi_close(&domain->fid), "fi_close domain");
    check(fi_close(&fabric->fid), "fi_close fabric");
    fi_freeinfo(info);
  }
};

int run_creator(const std::string& av_name, const std::string& dir) {
  Peer peer;
  peer.open_domain();
  check(peer.open_av(av_name, 0), "fi_av_open (create)");
  peer.open_endpoint();
  fi_addr_t filler[3];
  if (fi_av_insertsym(peer.av, "02:00:00:00:bb:00", 3, "1", 1, filler, 0, nullptr) != 3)
    fail("insertsym of the three other peers");
  fi_addr_t self = FI_ADDR_NOTAVAIL;
  if (fi_av_insert(peer.av, peer.name, 1, &self, 0, nullptr) != 1 || self != 3)
    fail("the creator's own address did not go in at index 3");
  {
    std::ofstream out(dir + "/creator.addr.tmp");
    out << peer.text_of(peer.name) << "\n";
  }
  std::rename((dir + "/creator.addr.tmp").c_str(), (dir + "/creator.addr").c_str());

  uint8_t reader_name[64];
  fi_addr_t source = 0;
  peer.receive(reader_name, sizeof(reader_name), &source);
  if (source != FI_ADDR_NOTAVAIL) fail("the reader was known before it was inserted");
  fi_addr_t reader = FI_ADDR_NOTAVAIL;
  if (fi_av_insert(peer.av, reader_name, 1, &reader, 0, nullptr) != 1 || reader != 4)
    fail("the reader's address did not go in at index 4");
  peer.send("ack", 3, reader);
  char done[8];
  const size_t got = peer.receive(done, sizeof(done), &source);
  if (std::string(done, got) != "done" || source != 4)
    fail("expected \"done\" from index 4, got source " + std::to_string(source));
  peer.close_all();
  std::printf("creator: reader at index %lu, done\n", static_cast<unsigned long>(reader));
  return 0;
}

int run_reader(const std::string& av_name, const std::string& dir) {
  // The creator publishes after its AV holds its address.
  std::string creator_text;
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (true) {
    std::ifstream in(dir + "/creator.addr");
    if (in && std::getline(in, creator_text)) break;
    if (std::chrono::steady_clock::now() > deadline) fail("the creator never published");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Peer peer;
  peer.open_domain();
  check(peer.open_av(av_name, FI_READ), "fi_av_open FI_READ");
  uint8_t address[64];
  size_t length = sizeof(address);
  check(fi_av_lookup(peer.av, 3, address, &length), "fi_av_lookup 3");
  if (peer.text_of(address) != creator_text)
    fail("index 3 is " + peer.text_of(address) + ", the creator is " + creator_text);
  if (fi_av_insert(peer.av, address, 1, nullptr, 0, nullptr) != -FI_EACCES)
    fail("an insert into the FI_READ AV was not refused with -FI_EACCES");
  peer.open_endpoint();
  peer.send(peer.name, peer.name_len, 3);
  char ack[8];
  fi_addr_t source = 0;
  const size_t got = peer.receive(ack, sizeof(ack), &source);
  if (std::string(ack, got) != "ack" || source != 3)
    fail("expected \"ack\" from FI_SOURCE index 3, got source " + std::to_string(source));
  length = sizeof(address);
  check(fi_av_lookup(peer.av, 4, address, &length), "fi_av_lookup 4");
  if (peer.text_of(address) != peer.text_of(peer.name)) fail("index 4 is not this reader");
  peer.send("done", 4, 3);
  peer.close_all();
  std::printf("reader: index 3 is %s, this reader is index 4\n", creator_text.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string role, av_name, dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    if (option == "--role")
      role = argv[i + 1];
    else if (option == "--name")
      av_name = argv[i + 1];
    else if (option == "--dir")
      dir = argv[i + 1];
  }
  if (av_name.empty() || dir.empty() || (role != "creator" && role != "reader" && role != "fork")) {
    std::fprintf(stderr, "usage: %s --role creator|reader|fork --name AV --dir DIR\n", argv[0]);
    return 2;
  }
  if (role == "fork") {
    // The stock pattern: one program forks before its first fi_* call; the
    // parent creates the AV, the child reads it.  Both bring EAL up on their
    // own, from the same FI_DPDK_EAL_ARGS, on one shared port.
    const pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) return run_reader(av_name, dir);
    const int creator = run_creator(av_name, dir);
    int status = 0;
    if (waitpid(child, &status, 0) != child) fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "av_shared_peer: the forked reader failed (status %d)\n", status);
      return 1;
    }
    return creator;
  }
  return role == "creator" ? run_creator(av_name, dir) : run_reader(av_name, dir);
}
