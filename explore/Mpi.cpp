// Mpi.cpp - a sweep's points as jobs of the MPI executor (see Mpi.h).
#include "explore/Mpi.h"

#include "explore/Evaluate.h"
#include "support/Error.h"

#include <fmt/format.h>

#include <optional>
#include <string>

namespace npuc::explore::mpi {

using nlohmann::json;

void checkSameSweep(const Session &session, const SweepSpec &s) {
  session.checkSame(s.id, [&](const std::string &root) {
    return fmt::format("{}: this rank loaded sweep {}, rank 0 sweep {} (every rank must read the "
                       "same spec, base and models)",
                       s.path, s.id, root);
  });
}

void serve(const SweepSpec &s) {
  std::optional<PreparedModels> models; // prepared with the first point this rank receives
  npuc::mpi::serve([&](const std::string &job) {
    if (!models)
      models.emplace(s);
    return evaluatePoint(s, pointAt(s, std::stoll(job)), *models).dump();
  });
}

void dispatch(const Session &session, const std::vector<Point> &todo,
              const std::function<void(const json &)> &done) {
  std::vector<std::string> jobs;
  for (const Point &p : todo)
    jobs.push_back(std::to_string(p.index));
  npuc::mpi::dispatch(session, jobs,
                      [&](size_t, const std::string &record) { done(json::parse(record)); });
}

} // namespace npuc::explore::mpi
