// mpi_checks PART...: the MPI tests as one job, the parts named one after
// another (pingpong, matching, rma; see their files), each with its own
// counts, its "mpi_PART: N checks passed" line on rank 0 and a fresh
// watchdog.  A failed part ends the job: the parts after it would only add
// follow-on errors.  Exit status: 0 when every part passed, 1 when one
// failed, 2 for a part this program does not know or too few ranks.
#include "mpi_test.h"

#include <string_view>

int run_pingpong(mpitest::Test& t);
int run_matching(mpitest::Test& t);
int run_rma(mpitest::Test& t);

namespace {

struct Part {
  std::string_view arg;
  const char* name;
  int (*run)(mpitest::Test&);
};

constexpr Part kParts[] = {
    {"pingpong", "mpi_pingpong", run_pingpong},
    {"matching", "mpi_matching", run_matching},
    {"rma", "mpi_rma", run_rma},
};

const Part* find_part(std::string_view arg) {
  for (const Part& part : kParts)
    if (part.arg == arg) return &part;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  mpitest::Test t("mpi_checks", &argc, &argv);
  int status = argc > 1 ? 0 : 2;
  if (argc <= 1 && t.rank() == 0)
    std::fprintf(stderr, "usage: mpi_checks PART... (pingpong, matching, rma)\n");
  for (int i = 1; i < argc && status == 0; ++i) {
    const Part* part = find_part(argv[i]);
    if (part == nullptr) {
      if (t.rank() == 0)
        std::fprintf(stderr, "mpi_checks: no part '%s' (pingpong, matching, rma)\n", argv[i]);
      status = 2;
      break;
    }
    t.begin(part->name);
    status = part->run(t);
  }
  t.finish();
  return status;
}
