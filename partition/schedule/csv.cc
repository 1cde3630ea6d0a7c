// torch.distributed.pipelining's action CSV, both ways.
//
// The CSV is the "compute_only" form torch's PipelineScheduleMulti._dump_csv writes and _load_csv
// reads: one row per rank, one action per cell, "STAGE" + type + "MICROBATCH" ("0F0", "1B3",
// "0I2", "0W2"); empty cells (torch's idle steps) are skipped; an overlapped pair
// "(0F3;1B2)OVERLAP_F_B" (DualPipeV) is its two actions in turn. We also read and write the
// lowered "compute_comms" form with SEND_F/RECV_F/SEND_B/RECV_B cells, and use REDUCE_GRAD
// cells as the update points.
#include <algorithm>
#include <cctype>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "partition/util/error.h"
#include "partition/schedule/check.h"
#include "partition/schedule/format.h"
#include "partition/schedule/internal/lowering.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

namespace {

using schedule_internal::MakeOp;

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  std::string t = s.substr(b, e - b);
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = t.substr(1, t.size() - 2);
  return t;
}

// One parsed cell.
struct Action {
  int stage = 0;
  std::string type;  // F, I, B, W, REDUCE_GRAD, SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD
  int microbatch = -1;
};

Action ParseAction(const std::string& cell, const std::string& file, int line) {
  static const std::vector<std::string> kTypes = {"REDUCE_GRAD", "UNSHARD", "RESHARD", "SEND_F",
                                                  "RECV_F",      "SEND_B",  "RECV_B",  "F",
                                                  "I",           "B",       "W"};
  auto fail = [&]() -> Action {
    throw InputError(file, "line " + std::to_string(line),
                     "unknown action '" + cell + "' (expected a stage, then F, I, B, W, "
                     "REDUCE_GRAD, SEND_F, RECV_F, SEND_B or RECV_B, then the micro-batch: 0F3)");
  };
  size_t i = 0;
  while (i < cell.size() && std::isdigit(static_cast<unsigned char>(cell[i]))) ++i;
  if (i == 0 || i > 6) return fail();
  Action a;
  a.stage = std::stoi(cell.substr(0, i));
  for (const auto& type : kTypes) {
    if (cell.compare(i, type.size(), type) != 0) continue;
    a.type = type;
    const std::string rest = cell.substr(i + type.size());
    const bool no_microbatch = type == "REDUCE_GRAD" || type == "UNSHARD" || type == "RESHARD";
    if (no_microbatch != rest.empty() || rest.size() > 7) return fail();
    for (char c : rest)
      if (!std::isdigit(static_cast<unsigned char>(c))) return fail();
    if (!rest.empty()) a.microbatch = std::stoi(rest);
    return a;
  }
  return fail();
}

// The largest CSV read: 4,096 ranks and as many actions as the compute ops a schedule may hold
// (4,000,000, schedule/build.h), some 200 MB once parsed.
constexpr size_t kMaxRanks = 4096;
constexpr size_t kMaxCells = 4'000'000;

// A cell's actions: the cell itself, or the sub-actions of torch's overlapped pair
// "(0F3;1B2)OVERLAP_F_B" (ScheduleDualPipeV), one after the other as torch's runtime runs them
// when no custom function overlaps them.
std::vector<std::string> SubActions(const std::string& cell, const std::string& file, int line) {
  static const std::string kOverlap = "OVERLAP_F_B";
  if (cell.empty() || cell.front() != '(') return {cell};
  const size_t close = cell.find(')');
  if (close == std::string::npos || cell.substr(close + 1) != kOverlap)
    throw InputError(file, "line " + std::to_string(line),
                     "unknown action '" + cell + "' (expected an overlapped pair as torch writes "
                     "it: (0F3;1B2)OVERLAP_F_B)");
  std::vector<std::string> parts;
  std::string inner = cell.substr(1, close - 1);
  for (size_t start = 0; start <= inner.size();) {
    size_t end = inner.find(';', start);
    if (end == std::string::npos) end = inner.size();
    const std::string part = Trim(inner.substr(start, end - start));
    if (!part.empty()) parts.push_back(part);
    if (parts.size() > kMaxCells)
      throw InputError(file, "line " + std::to_string(line),
                       "more than " + std::to_string(kMaxCells) +
                           " actions (pipetwin's limit for a schedule CSV)");
    start = end + 1;
  }
  if (parts.empty())
    throw InputError(file, "line " + std::to_string(line),
                     "'" + cell + "' overlaps no actions (expected (0F3;1B2)OVERLAP_F_B)");
  return parts;
}


std::vector<std::vector<std::pair<Action, int>>> ParseRows(const std::string& text,
                                                           const std::string& file) {
  std::vector<std::vector<std::pair<Action, int>>> rows;  // (action, line)
  int number = 0;
  std::vector<int> empty_lines;
  size_t cells_read = 0;
  // Cells are cut out of the text in place: no copy of a line or of the file is made.
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++number;
    size_t line_end = end;
    if (line_end > start && text[line_end - 1] == '\r') --line_end;
    std::vector<std::pair<Action, int>> row;
    for (size_t c = start; c <= line_end;) {
      const size_t comma =
          std::find(text.begin() + c, text.begin() + line_end, ',') - text.begin();
      const std::string cell = Trim(text.substr(c, comma - c));
      c = comma + 1;
      if (cell.empty()) continue;
      for (const std::string& action : SubActions(cell, file, number)) {
        // Refused as soon as it is seen, not after the whole file is held (kMaxCells); an
        // overlapped pair counts its actions.
        if (++cells_read > kMaxCells)
          throw InputError(file, "line " + std::to_string(number),
                           "more than " + std::to_string(kMaxCells) +
                               " actions (pipetwin's limit for a schedule CSV)");
        row.push_back({ParseAction(action, file, number), number});
      }
    }
    start = end + 1;
    if (row.empty()) {
      empty_lines.push_back(number);
      continue;
    }
    if (!empty_lines.empty())
      throw InputError(file, "line " + std::to_string(empty_lines.front()),
                       "a rank with no actions (every row must hold the rank's actions)");
    if (rows.size() == kMaxRanks)
      throw InputError(file, "line " + std::to_string(number),
                       "more than " + std::to_string(kMaxRanks) +
                           " ranks (pipetwin's limit for a schedule CSV)");
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw InputError(file, "", "no actions (expected one row per rank)");
  return rows;
}

// Positions, replicas and chunks from which stages each row holds. Rows that share a stage are
// replicas of one position and must hold the same stages: one stage each (data parallelism), or
// several (a multi-chunk schedule with data parallelism, or DualPipe's mirror pairs, where ranks
// r and P-1-r both hold stages r and P-1-r). Positions are numbered by their first stage.
void InferLayout(PipelineSchedule& s, const std::vector<std::set<int>>& held,
                 const std::string& file) {
  int G = 0;
  for (const auto& h : held) {
    if (h.empty()) throw InputError(file, "", "a rank runs no forward or backward");
    G = std::max(G, *h.rbegin() + 1);
  }
  const int rows = static_cast<int>(held.size());
  std::map<int, int> holder;  // stage -> the first rank that holds it
  for (int r = 0; r < rows; ++r)
    for (int g : held[r]) {
      auto [it, first] = holder.emplace(g, r);
      if (!first && held[it->second] != held[r])
        throw InputError(file, "rank " + std::to_string(r),
                         "stage " + std::to_string(g) + " is also on rank " +
                             std::to_string(it->second) +
                             ", which holds other stages (ranks that share a stage must hold "
                             "the same stages)");
    }
  for (int g = 0; g < G; ++g)
    if (!holder.count(g)) throw InputError(file, "", "no rank runs stage " + std::to_string(g));
  std::map<int, int> position;  // first stage of a position -> its index
  for (const auto& h : held) position.emplace(*h.begin(), 0);
  int next = 0;
  for (auto& [first, index] : position) index = next++;
  s.stages = next;
  s.replicas.assign(next, 0);
  s.chunks = 0;
  for (const auto& h : held) s.chunks = std::max<int>(s.chunks, h.size());
  for (int r = 0; r < rows; ++r) {
    WorkerProgram w;
    w.worker = r;
    w.model_stages.assign(held[r].begin(), held[r].end());
    w.stage = position.at(*held[r].begin());
    w.replica = s.replicas[w.stage]++;
    s.workers.push_back(w);
  }
}

// Rows into op lists: compute ops, and an AllReduce/Update each time the row has reduced every
// stage it holds once more (REDUCE_GRAD), or one at the end when it never does.
void FillOps(PipelineSchedule& s, const std::vector<std::vector<std::pair<Action, int>>>& rows,
             bool& explicit_comm) {
  explicit_comm = false;
  for (auto& w : s.workers) {
    std::map<int, int> reduced;
    int updates = 0;
    auto chunk_of = [&](int g) {
      auto it = std::find(w.model_stages.begin(), w.model_stages.end(), g);
      return it == w.model_stages.end() ? 0 : static_cast<int>(it - w.model_stages.begin());
    };
    auto sync = [&]() {
      if (s.replicas[w.stage] > 1) {
        Op all_reduce = MakeOp(OpKind::kAllReduce, w.stage, 0, -1);
        all_reduce.buckets = 1;  // torch's REDUCE_GRAD: one all-reduce after the backward
        w.ops.push_back(all_reduce);
      }
      w.ops.push_back(MakeOp(OpKind::kUpdate, w.stage, 0, -1));
      ++updates;
    };
    for (const auto& [a, line] : rows[w.worker]) {
      static const std::map<std::string, OpKind> kKinds = {
          {"F", OpKind::kForward},          {"B", OpKind::kBackward},
          {"I", OpKind::kBackwardInput},    {"W", OpKind::kBackwardWeight},
          {"SEND_F", OpKind::kSendActivation}, {"RECV_F", OpKind::kRecvActivation},
          {"SEND_B", OpKind::kSendGradient},   {"RECV_B", OpKind::kRecvGradient}};
      if (a.type == "REDUCE_GRAD") {
        ++reduced[a.stage];
        bool all = true;
        for (int g : w.model_stages) all = all && reduced[g] > updates;
        if (all) sync();
        continue;
      }
      auto it = kKinds.find(a.type);
      if (it == kKinds.end()) continue;  // UNSHARD / RESHARD: FSDP only, nothing to run here
      Op op = MakeOp(it->second, a.stage, chunk_of(a.stage), a.microbatch);
      explicit_comm = explicit_comm || IsCommunicationOp(op.kind);
      w.ops.push_back(op);
    }
    if (updates == 0) sync();
  }
}

// Peers of explicit SEND/RECV cells, from who runs the matching compute.
void ResolvePeers(PipelineSchedule& s, const std::string& file) {
  schedule_internal::Routing routing(s);
  for (auto& w : s.workers) {
    for (Op& op : w.ops) {
      if (!IsCommunicationOp(op.kind)) continue;
      const int g = op.stage, k = op.microbatch;
      std::string needed;
      switch (op.kind) {
        case OpKind::kSendActivation:
          op.peer_worker = routing.ForwardWorker(g + 1, k);
          needed = std::to_string(g + 1) + "F" + std::to_string(k);
          break;
        case OpKind::kRecvActivation:
          op.peer_worker = routing.ForwardWorker(g - 1, k);
          needed = std::to_string(g - 1) + "F" + std::to_string(k);
          break;
        case OpKind::kSendGradient:
          op.peer_worker = routing.BackwardWorker(g - 1, k);
          needed = std::to_string(g - 1) + "B" + std::to_string(k);
          break;
        default:
          op.peer_worker = routing.BackwardWorker(g + 1, k);
          needed = std::to_string(g + 1) + "B" + std::to_string(k);
          break;
      }
      const bool recv = op.kind == OpKind::kRecvActivation || op.kind == OpKind::kRecvGradient;
      if (op.peer_worker < 0)
        throw InputError(file, "rank " + std::to_string(w.worker),
                         "'" + ActionName(op) + (recv ? "' never gets its send" : "' has no receiver") +
                             ": no rank runs " + needed);
      if (op.peer_worker == w.worker)
        throw InputError(file, "rank " + std::to_string(w.worker),
                         "'" + ActionName(op) + "' communicates with its own rank");
    }
  }
}

}  // namespace

std::string ScheduleToCsv(const PipelineSchedule& s, CsvForm form) {
  const bool communication = form == CsvForm::kWithCommunication;
  std::string out;
  for (const auto& w : s.workers) {
    // One iteration's list updates once, at its end, where torch's lowering puts REDUCE_GRAD
    // itself; only a list that updates several times (PipeDream, 2BW) needs the cells to say
    // where, and torch's compute-only loader refuses them.
    const long updates = std::count_if(w.ops.begin(), w.ops.end(),
                                       [](const Op& op) { return op.kind == OpKind::kUpdate; });
    const bool reduce_cells = communication || updates > 1;
    std::string row;
    auto cell = [&row](const std::string& c) { row += (row.empty() ? "" : ",") + c; };
    for (const Op& op : w.ops) {
      if ((IsComputeOp(op.kind) && op.kind != OpKind::kRecompute) ||
          (communication && IsCommunicationOp(op.kind)))
        cell(ActionName(op));
      if (op.kind == OpKind::kUpdate && reduce_cells)
        for (int g : w.model_stages) cell(std::to_string(g) + "REDUCE_GRAD");
    }
    out += row + "\n";
  }
  return out;
}

PipelineSchedule ScheduleFromCsv(const std::string& text, const std::string& file) {
  const auto rows = ParseRows(text, file);
  PipelineSchedule s;
  s.kind = ScheduleKind::kImported;
  std::vector<std::set<int>> held(rows.size());
  int microbatches = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (const auto& [a, line] : rows[r]) {
      const bool compute = a.type == "F" || a.type == "B" || a.type == "I" || a.type == "W";
      if (!compute) continue;
      held[r].insert(a.stage);
      microbatches = std::max(microbatches, a.microbatch + 1);
    }
  }
  if (microbatches * static_cast<long>(rows.size()) > 4'000'000)
    throw InputError(file, "", "too large a schedule");
  InferLayout(s, held, file);
  s.microbatches = s.microbatches_per_batch = microbatches;
  bool explicit_comm = false;
  FillOps(s, rows, explicit_comm);
  try {
    if (explicit_comm) ResolvePeers(s, file);
    schedule_internal::CheckComputeCoverage(s);
    schedule_internal::AssignWeightVersions(s, schedule_internal::VersionPolicy::kLatest);
    if (explicit_comm) schedule_internal::AnnotateStashes(s);
    else schedule_internal::PlaceCommunication(s);
    ValidateSchedule(s);
  } catch (const InputError& e) {
    if (!e.file().empty()) throw;
    throw InputError(file, "", e.what());
  }
  return s;
}

}  // namespace pipetwin
