// raw_link.h: the adversary's place on the wire.  One AF_PACKET socket on
// a veth end: frames go out exactly as built (no kernel header, no
// checksum help), and what comes in passes a classic BPF filter first, so
// the injector never has to read the live pair's whole stream.
#pragma once

#include <linux/filter.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ofi_dpdk::adversarial {

class RawLink {
 public:
  // Opens the socket on `iface` for frames of `ether_type`, receiving only
  // what `filter` accepts.  The filter is in place before the socket binds,
  // so no frame slips in unfiltered.  Throws std::runtime_error.
  RawLink(const std::string& iface, uint16_t ether_type, std::vector<sock_filter> filter);
  ~RawLink();
  RawLink(const RawLink&) = delete;
  RawLink& operator=(const RawLink&) = delete;

  // False when the kernel kept refusing it (a full queue under a flood).
  bool send(std::span<const uint8_t> frame);
  // The next accepted frame, waiting up to timeout_us; 0 when none came.
  size_t receive(std::span<uint8_t> buffer, int64_t timeout_us);

  // Frames the kernel took from us: the interface's tx counter counts them
  // together with the live peer's, which the pair's progress is told from.
  uint64_t frames_sent() const { return frames_sent_; }
  uint64_t send_failures() const { return send_failures_; }

 private:
  int fd_ = -1;
  uint64_t frames_sent_ = 0;
  uint64_t send_failures_ = 0;
};

// Builds classic BPF programs over frame offsets; jumps name labels that
// are resolved when the program is finished.
class FilterBuilder {
 public:
  void load_byte(uint32_t offset);
  void load_half(uint32_t offset);
  void load_word(uint32_t offset);
  void and_with(uint32_t mask);
  // Go to `label` when the accumulator equals (or, jump_unless_equal, does
  // not equal) `value`; otherwise fall through.
  void jump_if_equal(uint32_t value, const std::string& label);
  void jump_unless_equal(uint32_t value, const std::string& label);
  void jump_unless_bits(uint32_t bits, const std::string& label);
  void label(const std::string& name);
  void accept();
  void reject();
  std::vector<sock_filter> finish() const;

 private:
  struct Jump {
    size_t at;
    std::string to;
    bool when_true;  // the label is the true branch; false: the false branch
  };
  std::vector<sock_filter> code_;
  std::vector<Jump> jumps_;
  std::vector<std::pair<std::string, size_t>> labels_;
};

}  // namespace ofi_dpdk::adversarial
