// make_corpus.cc: writes the seed corpus of fuzz_receive_path (input format
// in fuzz_receive_path.h): valid exchanges with the fuzzed endpoint (the
// HELLO handshake both ways, data, piggybacked acks, ACKs with SACK bits,
// RESET, multi-segment and reordered messages, unexpected messages, a
// stalled receive window, timers, requests served and responses to our
// requests) and hostile frames (truncated, bad version, bad opcode, bad
// lengths, unknown session, connection or token, sequence numbers outside
// the window, bad checksum, malformed handshakes).  Frames are built with
// encode_headers and seal_frame.
//
// The output is checked in as test/fuzz/corpus/.  To regenerate it (after a
// change to the wire format or to fuzz_receive_path.h), from the source root:
//
//   meson compile -C BUILD test/fuzz/make_corpus
//   BUILD/test/fuzz/make_corpus test/fuzz/corpus
//
// It overwrites the files it names and leaves others (crash reproducers
// added by hand) alone.
//
// The seeds are in make_corpus_valid.cc and make_corpus_hostile.cc, what
// they are built from in corpus_seed.h.
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "test/fuzz/corpus_seed.h"

namespace ofi_dpdk::proto::fuzz {
namespace {

// Valid exchanges first, then hostile frames, as the files were always
// written.
int write_all(const std::filesystem::path& dir) {
  return write_valid_seeds(dir) + write_hostile_seeds(dir);
}

}  // namespace
}  // namespace ofi_dpdk::proto::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  std::error_code error;
  std::filesystem::create_directories(argv[1], error);
  if (error) {
    std::fprintf(stderr, "%s: %s\n", argv[1], error.message().c_str());
    return 1;
  }
  return ofi_dpdk::proto::fuzz::write_all(argv[1]) == 0 ? 0 : 1;
}
