// dpdk-fi-mpibench: what an MPI job sees of a transport.  Ranks 0 and 1
// pingpong messages of each --sizes size (one-way time: half the round
// trip; median, mean and 99th percentile); stream --bandwidth sizes from
// rank 0 to rank 1 in windows of --window nonblocking sends, each window
// answered by a 1-byte message (the pattern of the OSU bandwidth test), and
// both ways at once (bidirectional); then every rank takes part in
// MPI_Alltoall of --alltoall bytes per pair (median time per call, and the
// bytes each rank sent per second), MPI_Bcast of each --collectives size
// from rank 0 and MPI_Allreduce (sum) of as many doubles; and rank 0 times
// one-sided operations at rank 1's window under a shared passive-target
// lock, each followed by MPI_Win_flush (the OSU one-sided latency pattern):
// MPI_Put and MPI_Get of each --rma size, MPI_Accumulate of one int64 sum,
// MPI_Fetch_and_op (sum) and MPI_Compare_and_swap of one int64.  Rank 0
// prints one JSON object.  Any
// transport Open MPI offers runs it: devtools/dpdk-fi-mpi-compare.sh runs
// it over dpdk and over Open MPI's own paths in one sitting.
//
//   mpirun -np N dpdk-fi-mpibench [--sizes 0,8,4096,65536,1048576,4194304]
//                                 [--bandwidth 65536,1048576,4194304] [--window 64]
//                                 [--alltoall 65536] [--collectives 8,65536,524288]
//                                 [--rma 8] [--iterations N] [--check]
//
// A list may be empty ("--bandwidth ''", "--rma ''") and --alltoall 0: that
// part is not run.  --check fills each pingpong message with its size and
// iteration and checks what comes back.  What the one-sided operations
// return is always checked (a get reads the last put back; each
// fetch-and-op and compare-and-swap returns the count of the ones before
// it; the accumulations add up).  A wrong value makes the run print
// "ok":false and exit with status 1 at its end.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "app/common/long_options.h"
#include "app/common/option_number.h"

namespace {

struct Options {
  std::vector<size_t> sizes = {0, 8, 4096, 65536, 1u << 20, 4u << 20};
  std::vector<size_t> bandwidth = {65536, 1u << 20, 4u << 20};
  int window = 64;
  size_t alltoall = 65536;
  std::vector<size_t> collectives = {8, 65536, 512u << 10};
  std::vector<size_t> rma = {8};
  int iterations = 0;  // 0: by size
  bool check = false;
};

// A value that is not a number stops every rank with exit status 2.
template <typename T>
T number(const std::string& option, const std::string& text) {
  const std::optional<T> value = ofi_dpdk::app::option_number<T>(text);
  if (!value) {
    std::fprintf(stderr, "dpdk-fi-mpibench: %s: not a number: %s\n", option.c_str(), text.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return *value;
}

Options parse(int argc, char** argv) {
  Options o;
  ofi_dpdk::app::read_long_options(
      "dpdk-fi-mpibench", argc - 1, argv + 1,
      {{"sizes", true},
       {"bandwidth", true},
       {"collectives", true},
       {"rma", true},
       {"window", true},
       {"alltoall", true},
       {"iterations", true},
       {"check", false},
       {"help", false}},
      [&](const std::string& name, const char* value) {
        const std::string option = "--" + name;
        if (name == "help") {
          int rank = 0;
          MPI_Comm_rank(MPI_COMM_WORLD, &rank);
          if (rank == 0)
            std::printf(
                "usage: dpdk-fi-mpibench [--sizes B,...] [--bandwidth B,...] "
                "[--collectives B,...] [--rma B,...] [--window N] [--alltoall B] "
                "[--iterations N] [--check] [--help]\n");
          MPI_Finalize();
          std::exit(0);
        } else if (name == "sizes" || name == "bandwidth" || name == "collectives" ||
                   name == "rma") {
          std::vector<size_t>& sizes = name == "sizes"         ? o.sizes
                                       : name == "bandwidth"   ? o.bandwidth
                                       : name == "collectives" ? o.collectives
                                                               : o.rma;
          sizes.clear();
          std::stringstream list(value);
          for (std::string size; std::getline(list, size, ',');)
            sizes.push_back(number<size_t>(option, size));
        } else if (name == "window") {
          o.window = std::max(number<int>(option, value), 1);
        } else if (name == "alltoall") {
          o.alltoall = number<size_t>(option, value);
        } else if (name == "iterations") {
          o.iterations = number<int>(option, value);
        } else if (name == "check") {
          o.check = true;
        }
      },
      [](const std::string& why) {
        std::fprintf(stderr, "dpdk-fi-mpibench: %s\n", why.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
        std::exit(2);  // MPI_Abort does not return; the compiler cannot know
      });
  return o;
}

int iterations_for(const Options& o, size_t bytes) {
  if (o.iterations > 0) return o.iterations;
  return bytes >= (1u << 20) ? 200 : bytes >= 65536 ? 1000 : 10000;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Spread {
  double median = 0, mean = 0, p99 = 0;
};

Spread spread(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, v.size() * 99 / 100)];
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  return s;
}

// Half round trips of `bytes` between ranks 0 and 1, in microseconds.
Spread pingpong(const Options& o, int rank, size_t bytes, bool* ok) {
  std::vector<uint8_t> out(std::max<size_t>(bytes, 1)), in(std::max<size_t>(bytes, 1));
  const int count = iterations_for(o, bytes);
  const int warmup = std::max(count / 10, 2);
  std::vector<double> trips;
  for (int i = 0; i < warmup + count; ++i) {
    if (o.check) std::memset(out.data(), static_cast<int>((bytes + i) & 0xff), bytes);
    const double start = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(out.data(), static_cast<int>(bytes), MPI_BYTE, 1, i, MPI_COMM_WORLD);
      MPI_Recv(in.data(), static_cast<int>(bytes), MPI_BYTE, 1, i, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(in.data(), static_cast<int>(bytes), MPI_BYTE, 0, i, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      MPI_Send(in.data(), static_cast<int>(bytes), MPI_BYTE, 0, i, MPI_COMM_WORLD);
    }
    if (rank == 0 && i >= warmup) trips.push_back((MPI_Wtime() - start) * 1e6 / 2);
    if (rank == 0 && o.check) {
      for (size_t b = 0; b < bytes; ++b)
        if (in[b] != static_cast<uint8_t>((bytes + i) & 0xff)) *ok = false;
    }
  }
  return spread(trips);
}

// MB/s (10^6 bytes) rank 0 streams to rank 1 (or, both_ways, each rank to
// the other, summed) in windows of o.window sends of `bytes`; each window
// ends with a 1-byte answer, so no window starts before the last one was
// taken.
double stream(const Options& o, int rank, size_t bytes, bool both_ways, MPI_Comm pair) {
  const int window = o.window;
  // The window's sends share one buffer (MPI 3 lets concurrent sends read
  // it, as the OSU test does); each receive has its own: 256 MiB at 4 MiB.
  std::vector<uint8_t> out(std::max<size_t>(bytes, 1), 0x6b);
  std::vector<uint8_t> in(std::max<size_t>(bytes, 1) * window);
  std::vector<MPI_Request> requests(2 * static_cast<size_t>(window));
  const int count = std::max(iterations_for(o, bytes) / window, 10);
  const int warmup = std::max(count / 10, 2);
  const int peer = 1 - rank;
  const bool sends = rank == 0 || both_ways, receives = rank == 1 || both_ways;
  char answer = 0;
  double start = 0;
  for (int i = 0; i < warmup + count; ++i) {
    if (i == warmup) {
      MPI_Barrier(pair);
      start = MPI_Wtime();
    }
    int posted = 0;
    for (int w = 0; receives && w < window; ++w)
      MPI_Irecv(in.data() + w * bytes, static_cast<int>(bytes), MPI_BYTE, peer, 100, pair,
                &requests[posted++]);
    for (int w = 0; sends && w < window; ++w)
      MPI_Isend(out.data(), static_cast<int>(bytes), MPI_BYTE, peer, 100, pair,
                &requests[posted++]);
    MPI_Waitall(posted, requests.data(), MPI_STATUSES_IGNORE);
    if (both_ways) continue;  // each side's receives pace its next window
    if (rank == 1)
      MPI_Send(&answer, 1, MPI_BYTE, 0, 101, pair);
    else
      MPI_Recv(&answer, 1, MPI_BYTE, 1, 101, pair, MPI_STATUS_IGNORE);
  }
  const double seconds = MPI_Wtime() - start;
  const double moved = static_cast<double>(bytes) * window * count * (both_ways ? 2 : 1);
  return seconds > 0 ? moved / seconds / 1e6 : 0;
}

// Median microseconds per MPI_Alltoall of `bytes` per pair.
double alltoall(const Options& o, int ranks, size_t bytes) {
  std::vector<uint8_t> out(bytes * ranks, 0x5a), in(bytes * ranks);
  const int count = std::max(iterations_for(o, bytes * ranks) / 10, 20);
  std::vector<double> calls;
  for (int i = 0; i < count + 3; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    MPI_Alltoall(out.data(), static_cast<int>(bytes), MPI_BYTE, in.data(), static_cast<int>(bytes),
                 MPI_BYTE, MPI_COMM_WORLD);
    double took = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= 3) calls.push_back(slowest * 1e6);
  }
  return median(calls);
}

// {"size":value,...} for a JSON object.
std::string by_size(const std::vector<size_t>& sizes, const std::vector<double>& values,
                    const char* format) {
  std::string out = "{";
  for (size_t i = 0; i < sizes.size() && i < values.size(); ++i) {
    char value[64];
    std::snprintf(value, sizeof(value), format, values[i]);
    out += (i ? ",\"" : "\"") + std::to_string(sizes[i]) + "\":" + value;
  }
  return out + "}";
}

enum class Collective { kBroadcast, kAllreduce };

// Median microseconds per MPI_Bcast of `bytes` from rank 0, or per
// MPI_Allreduce (sum) of bytes / 8 doubles (rounded up), as the slowest
// rank saw it.
double collective(const Options& o, Collective kind, size_t bytes) {
  const size_t doubles = std::max<size_t>((bytes + sizeof(double) - 1) / sizeof(double), 1);
  std::vector<double> out(doubles, 1.0), in(doubles);
  const int count = std::max(iterations_for(o, bytes) / 10, 20);
  std::vector<double> calls;
  for (int i = 0; i < count + 3; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    if (kind == Collective::kBroadcast)
      MPI_Bcast(out.data(), static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
    else
      MPI_Allreduce(out.data(), in.data(), static_cast<int>(doubles), MPI_DOUBLE, MPI_SUM,
                    MPI_COMM_WORLD);
    double took = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= 3) calls.push_back(slowest * 1e6);
  }
  return median(calls);
}

// One-sided latencies, rank 0 at rank 1's window, microseconds per
// operation and its flush.  The window holds the put/get region and, past
// it, three int64 counters (accumulate, fetch-and-op, compare-and-swap)
// that start at zero.
struct OneSided {
  std::vector<Spread> put, get;  // per o.rma size
  Spread accumulate, fetch_and_op, compare_and_swap;
};

OneSided one_sided(const Options& o, int rank, MPI_Comm pair, bool* ok) {
  OneSided result;
  size_t region = 8;
  for (size_t bytes : o.rma) region = std::max(region, (bytes + 7) / 8 * 8);
  const MPI_Aint counters = static_cast<MPI_Aint>(region);
  // MPI_Win_create over our memory (Open MPI 4.1's osc rdma over the OFI
  // BTL crashes in a compare-and-swap on an MPI_Win_allocate window: a
  // NULL handle inside mca_btl_ofi_acswap, before any provider call).
  std::vector<int64_t> memory((region + 3 * sizeof(int64_t)) / sizeof(int64_t), 0);
  MPI_Win win;
  MPI_Win_create(memory.data(), static_cast<MPI_Aint>(memory.size() * sizeof(int64_t)), 1,
                 MPI_INFO_NULL, pair, &win);
  if (rank == 0) {
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
    std::vector<uint8_t> out(region), in(region);
    // Times `count` calls of operation(i), each flushed, after a warm-up.
    auto timed = [&](int count, auto&& operation) {
      std::vector<double> each;
      const int warmup = std::max(count / 10, 2);
      for (int i = 0; i < warmup + count; ++i) {
        const double start = MPI_Wtime();
        operation(i);
        MPI_Win_flush(1, win);
        if (i >= warmup) each.push_back((MPI_Wtime() - start) * 1e6);
      }
      return spread(each);
    };
    for (size_t bytes : o.rma) {
      const int count = iterations_for(o, bytes), size = static_cast<int>(bytes);
      result.put.push_back(timed(count, [&](int i) {
        std::memset(out.data(), (size + i) & 0xff, bytes);
        MPI_Put(out.data(), size, MPI_BYTE, 1, 0, size, MPI_BYTE, win);
      }));
      result.get.push_back(timed(
          count, [&](int) { MPI_Get(in.data(), size, MPI_BYTE, 1, 0, size, MPI_BYTE, win); }));
      // Every get read the last put back.
      if (std::memcmp(in.data(), out.data(), bytes) != 0) *ok = false;
    }
    // The counters: each fetch-and-op and compare-and-swap returns i, the
    // number of operations before it; all three end at `calls`.
    const int count = iterations_for(o, 8), calls = std::max(count / 10, 2) + count;
    const int64_t one = 1;
    int64_t fetched = 0, compare = 0, desired = 0;
    auto returns_count = [&](int i) {
      if (fetched != i) *ok = false;
    };
    result.accumulate = timed(count, [&](int) {
      MPI_Accumulate(&one, 1, MPI_INT64_T, 1, counters, 1, MPI_INT64_T, MPI_SUM, win);
    });
    result.fetch_and_op = timed(count, [&](int i) {
      if (i > 0) returns_count(i - 1);
      MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, 1, counters + 8, MPI_SUM, win);
    });
    returns_count(calls - 1);
    result.compare_and_swap = timed(count, [&](int i) {
      if (i > 0) returns_count(i - 1);
      compare = i;
      desired = i + 1;
      MPI_Compare_and_swap(&desired, &compare, &fetched, MPI_INT64_T, 1, counters + 16, win);
    });
    returns_count(calls - 1);
    int64_t sums[3] = {};
    MPI_Get(sums, 3, MPI_INT64_T, 1, counters, 3, MPI_INT64_T, win);
    MPI_Win_flush(1, win);
    for (int64_t sum : sums)
      if (sum != calls) *ok = false;
    MPI_Win_unlock(1, win);
  }
  MPI_Barrier(pair);  // rank 1 serves the passive-target operations here
  MPI_Win_free(&win);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const Options o = parse(argc, argv);
  if (ranks < 2) {
    if (rank == 0) std::fprintf(stderr, "dpdk-fi-mpibench: needs 2 ranks or more\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  bool ok = true;
  // An untimed round first: the first size measured after start-up came
  // out 0.2-0.6 us slower than the same size run alone (the 0 B figure
  // read as slower than 8 B's).
  if (!o.sizes.empty()) pingpong(o, rank, 8, &ok);
  std::string json = "{\"ranks\":" + std::to_string(ranks) + ",\"one_way_us\":{";
  std::string means = ",\"one_way_mean_us\":{", tails = ",\"one_way_p99_us\":{";
  for (size_t i = 0; i < o.sizes.size(); ++i) {
    const Spread us = pingpong(o, rank, o.sizes[i], &ok);
    char item[96];
    const char* comma = i ? "," : "";
    std::snprintf(item, sizeof(item), "%s\"%zu\":%.2f", comma, o.sizes[i], us.median);
    json += item;
    std::snprintf(item, sizeof(item), "%s\"%zu\":%.2f", comma, o.sizes[i], us.mean);
    means += item;
    std::snprintf(item, sizeof(item), "%s\"%zu\":%.2f", comma, o.sizes[i], us.p99);
    tails += item;
  }
  json += "}" + means + "}" + tails + "}";
  if (!o.bandwidth.empty()) {
    // Ranks past 1 take no part; the barriers in stream() are theirs too.
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    std::string one = ",\"bandwidth_MBps\":{", both = ",\"bidirectional_MBps\":{";
    for (size_t i = 0; i < o.bandwidth.size(); ++i) {
      double up = 0, two = 0;
      if (pair != MPI_COMM_NULL) {
        up = stream(o, rank, o.bandwidth[i], false, pair);
        two = stream(o, rank, o.bandwidth[i], true, pair);
      }
      char item[96];
      const char* comma = i ? "," : "";
      std::snprintf(item, sizeof(item), "%s\"%zu\":%.1f", comma, o.bandwidth[i], up);
      one += item;
      std::snprintf(item, sizeof(item), "%s\"%zu\":%.1f", comma, o.bandwidth[i], two);
      both += item;
    }
    if (pair != MPI_COMM_NULL) MPI_Comm_free(&pair);
    json += one + "}" + both + "}" + ",\"window\":" + std::to_string(o.window);
  }
  if (o.alltoall != 0) {
    const double us = alltoall(o, ranks, o.alltoall);
    char item[160];
    std::snprintf(item, sizeof(item),
                  ",\"alltoall_bytes\":%zu,\"alltoall_us\":%.1f,\"alltoall_MBps_per_rank\":%.1f",
                  o.alltoall, us, us > 0 ? o.alltoall * (ranks - 1) / us : 0.0);
    json += item;
  }
  if (!o.collectives.empty()) {
    std::vector<double> broadcast, allreduce;
    for (size_t bytes : o.collectives) {
      broadcast.push_back(collective(o, Collective::kBroadcast, bytes));
      allreduce.push_back(collective(o, Collective::kAllreduce, bytes));
    }
    json += ",\"bcast_us\":" + by_size(o.collectives, broadcast, "%.1f") +
            ",\"allreduce_us\":" + by_size(o.collectives, allreduce, "%.1f");
  }
  if (!o.rma.empty()) {
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (pair != MPI_COMM_NULL) {
      const OneSided r = one_sided(o, rank, pair, &ok);
      MPI_Comm_free(&pair);
      // Means, as the OSU one-sided tests report; medians beside them.
      auto means = [](const std::vector<Spread>& v) {
        std::vector<double> m;
        for (const Spread& s : v) m.push_back(s.mean);
        return m;
      };
      auto medians = [](const std::vector<Spread>& v) {
        std::vector<double> m;
        for (const Spread& s : v) m.push_back(s.median);
        return m;
      };
      char item[256];
      std::snprintf(item, sizeof(item),
                    ",\"accumulate_us\":%.2f,\"fetch_and_op_us\":%.2f,\"compare_and_swap_us\":%.2f"
                    ",\"atomics_median_us\":[%.2f,%.2f,%.2f]",
                    r.accumulate.mean, r.fetch_and_op.mean, r.compare_and_swap.mean,
                    r.accumulate.median, r.fetch_and_op.median, r.compare_and_swap.median);
      json += ",\"put_us\":" + by_size(o.rma, means(r.put), "%.2f") +
              ",\"get_us\":" + by_size(o.rma, means(r.get), "%.2f") +
              ",\"put_median_us\":" + by_size(o.rma, medians(r.put), "%.2f") +
              ",\"get_median_us\":" + by_size(o.rma, medians(r.get), "%.2f") + item;
    }
  }
  json += std::string(",\"ok\":") + (ok ? "true" : "false") + "}";
  if (rank == 0) std::printf("%s\n", json.c_str());
  MPI_Finalize();
  return ok ? 0 : 1;
}
