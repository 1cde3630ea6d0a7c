#include "partition/planners/pipedream/antichain.h"

#include <algorithm>
#include <map>

#include "partition/util/error.h"

namespace pipetwin {

DenseBitset& DenseBitset::operator|=(const DenseBitset& other) {
  for (size_t w = 0; w < words_.size(); ++w) words_[w] |= other.words_[w];
  return *this;
}

bool DenseBitset::Intersects(const DenseBitset& other) const {
  for (size_t w = 0; w < words_.size(); ++w)
    if (words_[w] & other.words_[w]) return true;
  return false;
}

int DenseBitset::Count() const {
  int n = 0;
  for (uint64_t w : words_) n += __builtin_popcountll(w);
  return n;
}

std::vector<int> DenseBitset::Members() const {
  std::vector<int> out;
  for (size_t w = 0; w < words_.size(); ++w)
    for (uint64_t bits = words_[w]; bits; bits &= bits - 1)
      out.push_back(static_cast<int>(w * 64) + __builtin_ctzll(bits));
  return out;
}

namespace {

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// The layer graph once the optimizer has removed Input sources and __getitem__ sinks, with the
// strict predecessors and successors of every layer.
struct RemainingGraph {
  std::vector<PipeDreamLayerRole> roles;
  std::vector<std::vector<int>> successors;  // direct, ascending
  std::vector<DenseBitset> out_bits;         // direct successors as a set
  std::vector<DenseBitset> predecessors;     // strict, transitive
  std::vector<DenseBitset> descendants;      // strict, transitive

  bool Kept(int layer) const { return roles[layer] == PipeDreamLayerRole::kModel; }
};

// optimizer_graph_hierarchical.py, main: sources whose description starts with "Input" go
// first; then, in one pass over the sinks of what is left, those starting with "__getitem__".
RemainingGraph RemoveIgnoredLayers(const Workload& w) {
  const int n = w.LayerCount();
  RemainingGraph g;
  g.roles.assign(n, PipeDreamLayerRole::kModel);
  for (int v = 0; v < n; ++v)
    if (w.layers[v].inputs.empty() && StartsWith(w.layers[v].description, "Input"))
      g.roles[v] = PipeDreamLayerRole::kInputSource;
  std::vector<std::vector<int>> all_successors = w.Successors();
  for (int v = 0; v < n; ++v) {
    if (!g.Kept(v) || !all_successors[v].empty()) continue;
    if (StartsWith(w.layers[v].description, "__getitem__"))
      g.roles[v] = PipeDreamLayerRole::kGetitemSink;
  }
  g.successors.resize(n);
  g.out_bits.assign(n, DenseBitset(n));
  for (int v = 0; v < n; ++v) {
    if (!g.Kept(v)) continue;
    for (int s : all_successors[v]) {
      if (!g.Kept(s)) continue;
      g.successors[v].push_back(s);
      g.out_bits[v].Set(s);
    }
    std::sort(g.successors[v].begin(), g.successors[v].end());
  }
  // Layers are in topological order: inputs have lower indices.
  g.predecessors.assign(n, DenseBitset(n));
  for (int v = 0; v < n; ++v) {
    if (!g.Kept(v)) continue;
    for (int in : w.layers[v].inputs) {
      if (!g.Kept(in)) continue;
      g.predecessors[v] |= g.predecessors[in];
      g.predecessors[v].Set(in);
    }
  }
  g.descendants.assign(n, DenseBitset(n));
  for (int v = n - 1; v >= 0; --v)
    for (int s : g.successors[v]) {
      g.descendants[v] |= g.descendants[s];
      g.descendants[v].Set(s);
    }
  return g;
}

// graph.py, augment_antichain: the antichain plus each predecessor p of an antichain node a that
// has an edge to a layer neither preceding a nor a itself. Extras first (ascending), then the
// antichain in its own order.
std::vector<int> Augment(const RemainingGraph& g, const std::vector<int>& antichain) {
  const int n = static_cast<int>(g.roles.size());
  DenseBitset extra(n);
  for (int a : antichain) {
    DenseBitset inside = g.predecessors[a];
    inside.Set(a);
    for (int p : g.predecessors[a].Members()) {
      for (int out : g.successors[p])
        if (!inside.Test(out)) {
          extra.Set(p);
          break;
        }
    }
  }
  std::vector<int> augmented = extra.Members();
  augmented.insert(augmented.end(), antichain.begin(), antichain.end());
  return augmented;
}

// graph.py, deaugment_augmented_antichain: drops every listed layer that has another listed
// layer among its descendants, and duplicates; keeps the list's order.
std::vector<int> Deaugment(const RemainingGraph& g, const std::vector<int>& list) {
  DenseBitset listed(static_cast<int>(g.roles.size()));
  for (int v : list) listed.Set(v);
  std::vector<int> out;
  for (int v : list) {
    if (g.descendants[v].Intersects(listed)) continue;
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

// graph.py, next_antichains: replace one augmented layer x by a successor that is not in the
// antichain and none of whose descendants is in the augmented list.
std::vector<std::vector<int>> NextAntichains(const RemainingGraph& g,
                                             const std::vector<int>& antichain,
                                             const std::vector<int>& augmented) {
  const int n = static_cast<int>(g.roles.size());
  DenseBitset in_antichain(n), in_augmented(n);
  for (int v : antichain) in_antichain.Set(v);
  for (int v : augmented) in_augmented.Set(v);
  std::vector<std::vector<int>> next;
  for (int x : augmented) {
    for (int succ : g.successors[x]) {
      if (in_antichain.Test(succ) || g.descendants[succ].Intersects(in_augmented)) continue;
      std::vector<int> replaced = augmented;
      std::replace(replaced.begin(), replaced.end(), x, succ);
      next.push_back(Deaugment(g, replaced));
    }
  }
  return next;
}

std::vector<int> SortedKey(std::vector<int> antichain) {
  std::sort(antichain.begin(), antichain.end());
  return antichain;
}

// graph.py, topological_sort: depth first over the nodes in insertion order, successors in
// insertion order; each finished node goes to the front.
std::vector<int> DepthFirstTopologicalOrder(const std::vector<std::vector<int>>& edges,
                                            const std::vector<int>& insertion_order) {
  std::vector<int> finished;
  std::vector<char> marked(edges.size(), 0);
  for (int root : insertion_order) {
    if (marked[root]) continue;
    std::vector<std::pair<int, size_t>> stack = {{root, 0}};
    marked[root] = 1;
    while (!stack.empty()) {
      const int v = stack.back().first;
      size_t& next_edge = stack.back().second;
      if (next_edge < edges[v].size()) {
        const int w = edges[v][next_edge++];
        if (!marked[w]) marked[w] = 1, stack.push_back({w, 0});
        continue;
      }
      finished.push_back(v);
      stack.pop_back();
    }
  }
  std::reverse(finished.begin(), finished.end());
  return finished;
}

// The first layer, in the workload's order, that no kept layer feeds.
int FirstSource(const RemainingGraph& g, const Workload& workload) {
  for (int v = 0; v < workload.LayerCount(); ++v) {
    if (!g.Kept(v)) continue;
    bool has_input = false;
    for (int in : workload.layers[v].inputs) has_input = has_input || g.Kept(in);
    if (!has_input) return v;
  }
  throw InputError(workload.name, "layers",
                   "PipeDream's planner found no layer left once the Input sources and "
                   "__getitem__ sinks are removed");
}

// The antichain DAG as graph.py's antichain_dag builds it: breadth first from the first source;
// ids in discovery order; every (state, next state) pair found becomes an edge, repeats
// included.
struct AntichainDag {
  std::vector<std::vector<int>> antichains, augmenteds;
  std::vector<std::vector<int>> edges;  // by discovery id, in insertion order
  std::vector<int> insertion_order;     // the DAG's node order (add_edge)
  bool complete = true;
};

// Stops (complete = false) once more than `cap` antichains are found.
AntichainDag DiscoverAntichains(const RemainingGraph& g, int first_source, size_t cap) {
  AntichainDag dag;
  std::map<std::vector<int>, int> id_of;
  std::vector<bool> inserted, expanded;
  auto discover = [&](const std::vector<int>& antichain) {
    auto [it, fresh] =
        id_of.emplace(SortedKey(antichain), static_cast<int>(dag.antichains.size()));
    if (fresh) {
      dag.antichains.push_back(antichain);
      dag.augmenteds.push_back(Augment(g, antichain));
      dag.edges.emplace_back();
      inserted.push_back(false);
      expanded.push_back(false);
    }
    return it->second;
  };
  auto insert_node = [&](int id) {
    if (!inserted[id]) inserted[id] = true, dag.insertion_order.push_back(id);
  };
  std::vector<std::vector<int>> queue = {{first_source}};
  discover(queue[0]);
  for (size_t head = 0; head < queue.size(); ++head) {
    const int id = id_of.at(SortedKey(queue[head]));
    if (expanded[id]) continue;
    expanded[id] = true;
    for (const std::vector<int>& next :
         NextAntichains(g, dag.antichains[id], dag.augmenteds[id])) {
      const int next_id = discover(next);
      if (dag.antichains.size() > cap) {
        dag.complete = false;
        return dag;
      }
      insert_node(id);
      insert_node(next_id);
      dag.edges[id].push_back(next_id);
      queue.push_back(next);
    }
  }
  if (dag.insertion_order.empty()) dag.insertion_order.push_back(0);  // one layer: one state
  return dag;
}

// A state's figures: its output activation (the augmented antichain's), and the compute,
// activation and parameter bytes of everything at or before it (its down set).
void FillState(const Workload& workload, const RemainingGraph& g, AntichainState& state,
               DenseBitset& down) {
  for (int v : state.augmented) {
    state.output_activation_bytes += workload.layers[v].activation_bytes;
    down |= g.predecessors[v];
    down.Set(v);
  }
  for (int v : down.Members()) {
    const Layer& l = workload.layers[v];
    state.compute_s += (l.forward_ms + l.backward_ms) / 1000.0;
    state.activation_bytes += l.activation_bytes;
    state.parameter_bytes += l.parameter_bytes;
  }
}

}  // namespace

AntichainLinearization LinearizeLikePipeDream(const Workload& workload,
                                              size_t max_exact_states) {
  const RemainingGraph g = RemoveIgnoredLayers(workload);
  const int n = workload.LayerCount();
  const AntichainDag dag = DiscoverAntichains(g, FirstSource(g, workload), max_exact_states);
  if (!dag.complete) {
    // The prefixes of the workload's topological order (kept layers only) as a chain of
    // states: state s holds the first s + 1 kept layers; its augmented list is the prefix's
    // layers whose outputs leave it, so its output activation is what a cut after it carries.
    AntichainLinearization out;
    out.roles_ = g.roles;
    out.exact_ = false;
    DenseBitset prefix(n);
    AntichainState sums;
    for (int v = 0; v < n; ++v) {
      if (!g.Kept(v)) continue;
      prefix.Set(v);
      const Layer& l = workload.layers[v];
      sums.compute_s += (l.forward_ms + l.backward_ms) / 1000.0;
      sums.activation_bytes += l.activation_bytes;
      sums.parameter_bytes += l.parameter_bytes;
      AntichainState state = sums;
      for (int u : prefix.Members()) {
        bool leaves = false;
        for (int s : g.successors[u]) leaves = leaves || !prefix.Test(s);
        if (!leaves) continue;
        state.augmented.push_back(u);
        state.output_activation_bytes += workload.layers[u].activation_bytes;
      }
      state.antichain = {v};
      out.states_.push_back(std::move(state));
      out.down_sets_.push_back(prefix);
    }
    const int count = out.StateCount();
    out.ancestor_bits_.assign(count, DenseBitset(count));
    out.ancestors_.resize(count);
    for (int s = 1; s < count; ++s) {
      out.ancestor_bits_[s] = out.ancestor_bits_[s - 1];
      out.ancestor_bits_[s].Set(s - 1);
      out.ancestors_[s] = out.ancestors_[s - 1];
      out.ancestors_[s].push_back(s - 1);
    }
    return out;
  }
  const int count = static_cast<int>(dag.antichains.size());
  const std::vector<int> finished = DepthFirstTopologicalOrder(dag.edges, dag.insertion_order);
  std::vector<int> index_of(count);
  for (int s = 0; s < count; ++s) index_of[finished[s]] = s;

  AntichainLinearization out;
  out.roles_ = g.roles;
  out.states_.resize(count);
  out.down_sets_.assign(count, DenseBitset(n));
  out.ancestor_bits_.assign(count, DenseBitset(count));
  out.ancestors_.resize(count);
  for (int s = 0; s < count; ++s) {
    AntichainState& state = out.states_[s];
    state.antichain = SortedKey(dag.antichains[finished[s]]);
    state.augmented = dag.augmenteds[finished[s]];
    FillState(workload, g, state, out.down_sets_[s]);
  }
  // Ancestors: a state's predecessors and theirs, in topological order.
  for (int s = 0; s < count; ++s)
    for (int next_id : dag.edges[finished[s]]) {
      const int t = index_of[next_id];
      out.ancestor_bits_[t] |= out.ancestor_bits_[s];
      out.ancestor_bits_[t].Set(s);
    }
  for (int s = 0; s < count; ++s) out.ancestors_[s] = out.ancestor_bits_[s].Members();
  return out;
}

std::vector<int> AssignLayersToStages(const AntichainLinearization& states,
                                      const Workload& workload,
                                      const std::vector<int>& stage_end_states) {
  const int n = workload.LayerCount();
  const int last_stage = static_cast<int>(stage_end_states.size()) - 1;
  std::vector<int> stage(n, -1);
  for (int s = 0; s <= last_stage; ++s)
    for (int v : states.DownSet(stage_end_states[s]).Members())
      if (stage[v] < 0) stage[v] = s;
  // A layer no state holds (removed, or unreachable) sits between its inputs' stages and its
  // consumers' stages; inside that interval it follows the layer before it in the order.
  std::vector<int> latest(n, last_stage);  // the earliest stage among a layer's consumers
  for (int v = n - 1; v >= 0; --v) {
    if (stage[v] >= 0) latest[v] = stage[v];
    for (int in : workload.layers[v].inputs) latest[in] = std::min(latest[in], latest[v]);
  }
  int previous = 0;
  for (int v = 0; v < n; ++v) {
    if (stage[v] < 0) {
      int earliest = 0;
      for (int in : workload.layers[v].inputs) earliest = std::max(earliest, stage[in]);
      stage[v] = std::min(std::max(previous, earliest), latest[v]);
    }
    previous = stage[v];
  }
  return stage;
}

std::vector<int> StageContiguousOrder(const std::vector<int>& stage_of_layer) {
  std::vector<int> order(stage_of_layer.size());
  for (size_t v = 0; v < order.size(); ++v) order[v] = static_cast<int>(v);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return stage_of_layer[a] < stage_of_layer[b]; });
  return order;
}

}  // namespace pipetwin
