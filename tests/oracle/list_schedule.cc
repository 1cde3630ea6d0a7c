#include "tests/oracle/list_schedule.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

namespace pipetwin::oracle {

namespace {

// What an op is, for the dependency rules: 'F' forward, 'B' backward or backward-input (the
// op whose end sends the gradient on), 'W' backward-weight, 'R' recompute.
char Role(OpKind kind) {
  switch (kind) {
    case OpKind::kForward: return 'F';
    case OpKind::kBackward:
    case OpKind::kBackwardInput: return 'B';
    case OpKind::kBackwardWeight: return 'W';
    case OpKind::kRecompute: return 'R';
    default: return 0;
  }
}

struct Done {
  double end;
  int worker;
};

}  // namespace

double ListScheduleMakespan(const PipelineSchedule& s, const ListScheduleCase& c) {
  const int W = s.WorkerCount();
  std::vector<std::vector<Op>> order(W);
  for (const auto& w : s.workers)
    for (const Op& op : w.ops)
      if (Role(op.kind)) order[w.worker].push_back(op);
  const int G = static_cast<int>(c.forward.size());
  std::map<std::tuple<char, int, int>, Done> done;  // (role, stage, micro-batch)
  // When the input produced by (role, stage, k) is at `worker`, or -1 before it exists.
  auto arrival = [&](char role, int stage, int k, int worker, int cut) -> double {
    auto it = done.find({role, stage, k});
    if (it == done.end()) return -1;
    return it->second.end + (it->second.worker == worker ? 0 : c.transfer.at(cut));
  };
  // The worker of each model stage (one replica each), and per worker when the inputs it has
  // produced for other workers have all arrived there.
  std::vector<int> owner(G, -1);
  for (const auto& w : s.workers)
    for (int g : w.model_stages)
      if (g < G) owner[g] = w.worker;
  std::vector<double> sent_until(W, 0);
  std::vector<size_t> next(W, 0);
  std::vector<double> free_at(W, 0);
  size_t remaining = 0;
  for (const auto& ops : order) remaining += ops.size();
  while (remaining > 0) {
    bool progress = false;
    for (int w = 0; w < W; ++w) {
      while (next[w] < order[w].size()) {
        const Op& op = order[w][next[w]];
        const int g = op.stage, k = op.microbatch;
        const char role = Role(op.kind);
        double start = c.blocking_sends ? std::max(free_at[w], sent_until[w]) : free_at[w];
        bool ready = true;
        auto need = [&](char r, int stage, int cut) {
          const double t = arrival(r, stage, k, w, cut);
          if (t < 0) ready = false;
          start = std::max(start, t);
        };
        double duration = 0;
        const bool split = op.kind == OpKind::kBackwardInput || op.kind == OpKind::kBackwardWeight;
        if (role == 'F') {
          if (g > 0) need('F', g - 1, g - 1);
          duration = c.forward.at(g);
        } else if (role == 'B') {
          need('F', g, g);
          if (g + 1 < G) need('B', g + 1, g);
          // Split: half each (Qi et al. 2024), but stage 0 has no input gradient (its input is
          // data), so its W does the whole backward.
          duration = c.backward.at(g) * (split ? (g == 0 ? 0 : 0.5) : 1);
        } else if (role == 'W') {
          need('B', g, g);
          duration = c.backward.at(g) * (g == 0 ? 1 : 0.5);
        } else {  // 'R'
          need('F', g, g);
          if (c.recompute_in_backward && g + 1 < G) need('B', g + 1, g);
          duration = c.forward.at(g);
        }
        if (!ready) break;
        free_at[w] = start + duration;
        done[{role, g, k}] = {free_at[w], w};
        // The input this op produces for another worker: a forward's for stage g + 1, a
        // backward's (or backward-input's) gradient for stage g - 1.
        if (role == 'F' && g + 1 < G && owner[g + 1] != w)
          sent_until[w] = std::max(sent_until[w], free_at[w] + c.transfer.at(g));
        if (role == 'B' && g > 0 && owner[g - 1] != w)
          sent_until[w] = std::max(sent_until[w], free_at[w] + c.transfer.at(g - 1));
        ++next[w];
        --remaining;
        progress = true;
      }
    }
    if (!progress) throw std::logic_error("list schedule: the compute orders cannot complete");
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

}  // namespace pipetwin::oracle
